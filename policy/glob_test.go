package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// globTree makes key.pem, a/key.pem, a/b/key.pem, a file named
// "secrets[prod]" and one named "secretsp" in a fresh working directory.
func globTree(t *testing.T) Input {
	t.Helper()
	in := input(t)
	for _, f := range []string{"key.pem", "a/key.pem", "a/b/key.pem", "a/b/c.txt", "secrets[prod]", "star*"} {
		writeTestFile(t, filepath.Join(in.Cwd, f))
	}
	return in
}

func writeTestFile(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGlobDoubleStarCLI: "**" in a CLI or srt path is zero or more
// directories (gitignore), as in Claude Code rules: ./**/*.pem matches
// key.pem, a/key.pem and a/b/key.pem. filepath.Glob, used before, took
// "**" for "*" and matched a/key.pem only.
func TestGlobDoubleStarCLI(t *testing.T) {
	in := globTree(t)
	j := func(p string) string { return filepath.Join(in.Cwd, p) }
	pems := []string{j("a/b/key.pem"), j("a/key.pem"), j("key.pem")}
	for _, tc := range []struct {
		pat  string
		want []string
	}{
		{"./**/*.pem", pems},
		{"**/*.pem", pems},
		{in.Cwd + "/**/*.pem", pems},
		{"./a/**", []string{j("a")}},
		{"./a/**/c.txt", []string{j("a/b/c.txt")}},
		{"./*/b", []string{j("a/b")}},
		{`./secrets\[prod\]`, []string{j("secrets[prod]")}},
		{`./star\*`, []string{j("star*")}},
		{`./secrets[p]rod`, nil},
	} {
		in.DenyRead = []string{tc.pat}
		p, err := Build(in)
		if err != nil {
			t.Errorf("%s: %v", tc.pat, err)
			continue
		}
		var got []string
		for _, d := range p.Filesystem.DenyRead {
			if Within(d, in.Cwd) {
				got = append(got, d)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("--deny-read %s:\n got %q\nwant %q", tc.pat, got, tc.want)
		}
	}
	// The same for settings files and allowWrite.
	f := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(f, []byte(`{"network":{},"filesystem":{"denyWrite":["./**/*.pem"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	in.DenyRead, in.Settings = nil, []string{f}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range pems {
		if !slices.Contains(p.Filesystem.DenyWrite, w) {
			t.Errorf("srt denyWrite ./**/*.pem: %s missing from %q", w, p.Filesystem.DenyWrite)
		}
	}
}

// TestGlobBadPatterns: a malformed pattern, and a deny glob that matches
// nothing while its literal text names an existing file, are one-line
// errors (exit 125), from flags, srt files and Claude Code rules alike.
func TestGlobBadPatterns(t *testing.T) {
	in := globTree(t)
	for _, tc := range []struct {
		deny, want string
	}{
		{"./a[", `denyRead "./a[": malformed glob "a["; fix the brackets or escape them with \`},
		{`./a\`, `malformed glob`},
		{"./*/../x", `".." after a glob is not supported`},
		{"./**/../x", `".." after a glob is not supported`},
		{"./secrets[prod]", `denyRead "./secrets[prod]": the glob matches nothing, but ` + filepath.Join(in.Cwd, "secrets[prod]") + ` exists; to name that file write it literally`},
	} {
		in.DenyRead = []string{tc.deny}
		_, err := Build(in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", tc.deny, err, tc.want)
		}
	}
	// The escape the message proposes works.
	in.DenyRead = []string{`./secrets\[prod\]`}
	if p, err := Build(in); err != nil || !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, "secrets[prod]")) {
		t.Errorf("escaped: %v", err)
	}
	// An allow glob that matches nothing is fine (nothing to open).
	in.DenyRead, in.AllowRead = nil, []string{"./secrets[prod]"}
	if p, err := Build(in); err != nil || !strings.Contains(strings.Join(p.Notes, "\n"), `escape the glob characters: ./secrets\[prod\]`) {
		t.Errorf("allowRead glob matching nothing: %v (a note expected)", err)
	}
	// srt's literal form names the file.
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, []byte(`{"network":{},"filesystem":{"denyRead":[{"path":"./secrets[prod]","literal":true}]}}`), 0o644)
	in.AllowRead, in.Settings = nil, []string{f}
	if p, err := Build(in); err != nil || !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, "secrets[prod]")) {
		t.Errorf("literal: %v", err)
	}
	// A Claude Code deny rule: the same trap.
	_, err := parsePermissions("s.json", json.RawMessage(`{"deny": ["Read(./secrets[prod])"]}`), in.Cwd, in.Cwd, in.Home)
	if err == nil || !strings.Contains(err.Error(), `the glob matches nothing, but `+filepath.Join(in.Cwd, "secrets[prod]")+` exists`) || !strings.Contains(err.Error(), `Read(./secrets\[prod\])`) {
		t.Errorf("Claude rule: %v", err)
	}
	pr, err := parsePermissions("s.json", json.RawMessage(`{"deny": ["Read(./secrets\\[prod\\])"]}`), in.Cwd, in.Cwd, in.Home)
	if err != nil || !slices.Equal(pr.denyRead, []string{filepath.Join(in.Cwd, "secrets[prod]")}) {
		t.Errorf("Claude rule escaped: %v %q", err, pr.denyRead)
	}
}
