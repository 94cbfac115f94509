package policy

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestBraceAlternatives(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"*.{pem,key}", []string{"*.pem", "*.key"}},
		{"./{secret,sub}/**", []string{"./secret/**", "./sub/**"}},
		{"{a,b}{c,d}", []string{"ac", "ad", "bc", "bd"}},
		{"x{a,{b,c}}y", []string{"xay", "xby", "xcy"}},
		{"{a}", []string{"{a}"}},
		{"{a}{b,c}", []string{"{a}b", "{a}c"}},
		{`\{a,b}`, []string{`\{a,b}`}},
		{`{a\,b}`, []string{`{a\,b}`}},
		{"{a,}", []string{"a", ""}},
		{"{a,b", []string{"{a,b"}},
	} {
		if got := braceAlternatives(c.in); !slices.Equal(got, c.want) {
			t.Errorf("braceAlternatives(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if n := len(braceAlternatives("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")); n != maxBraceAlternatives {
		t.Errorf("unbounded: %d", n)
	}
}

// TestDenyBraces: a deny with braces hides each alternative, through
// both spellings (a denyRead glob, a Read() rule), at any depth; the
// literal name is hidden too where it exists.
func TestDenyBraces(t *testing.T) {
	in := input(t)
	for _, f := range []string{"a.pem", "sub/b.key", "sub/c.txt", "secret/x", "{odd,name}"} {
		mustWrite(t, filepath.Join(in.Cwd, f), "x")
	}
	want := []string{"a.pem", "sub/b.key", "secret", "{odd,name}"}
	check := func(p *Policy, how string) {
		for _, w := range want {
			if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, w)) {
				t.Errorf("%s: %s not denied: %v", how, w, p.Filesystem.DenyRead)
			}
		}
		if slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, "sub/c.txt")) {
			t.Errorf("%s: c.txt denied", how)
		}
	}
	in.DenyRead = []string{"./**/*.{pem,key}", "./{secret,nothing}", "./{odd,name}"}
	check(mustBuild(t, in), "denyRead")
	in.DenyRead = nil
	f := filepath.Join(t.TempDir(), "s.json")
	mustWrite(t, f, `{"permissions": {"deny": ["Read(**/*.{pem,key})", "Read(./{secret,nothing})", "Read(./{odd,name})"]}}`)
	in.Settings = []string{f}
	check(mustBuild(t, in), "Read()")
}
