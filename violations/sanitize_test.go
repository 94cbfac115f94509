package violations

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	const R = "\uFFFD"
	tests := []struct {
		name, in, want string
		max            int
	}{
		{"plain", "/home/u/x", "/home/u/x", MaxField},
		{"empty", "", "", MaxField},
		{"unicode kept", "/tmp/café/日本/😀", "/tmp/café/日本/😀", MaxField},
		{"escape sequence", "/tmp/\x1b[31mred", "/tmp/" + R + "[31mred", MaxField},
		{"newline and cr", "a\nb\rc", "a" + R + "b" + R + "c", MaxField},
		{"tab nul del", "a\tb\x00c\x7fd", "a" + R + "b" + R + "c" + R + "d", MaxField},
		{"c1", "a\u0085b\u009bc", "a" + R + "b" + R + "c", MaxField},
		{"bidi override", "/tmp/\u202etxt.exe", "/tmp/" + R + "txt.exe", MaxField},
		{"bidi all", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c", strings.Repeat(R, 12), MaxField},
		{"other format chars", "a\u200bb\ufeffc\u00add\U000E0041", "a" + R + "b" + R + "c" + R + "d" + R, MaxField},
		{"line separators", "a\u2028b\u2029c", "a" + R + "b" + R + "c", MaxField},
		{"invalid utf-8", "a\xffb\xc3", "a" + R + "b" + R, MaxField},
		{"surrogate encoding", "a\xed\xa0\x80b", "a" + R + R + R + "b", MaxField},
		{"replacement char kept", "a\uFFFDb", "a\uFFFDb", MaxField},
		{"fits exactly", strings.Repeat("a", 10), strings.Repeat("a", 10), 10},
		{"cut ascii", strings.Repeat("a", 11), strings.Repeat("a", 7) + Ellipsis, 10},
		{"cut on rune boundary", strings.Repeat("é", 6), strings.Repeat("é", 3) + Ellipsis, 10},
		{"cut after 4-byte rune", "ab😀😀", "ab😀" + Ellipsis, 9},
		{"cut before 4-byte rune", "ab😀😀", "ab" + Ellipsis, 8},
		{"replacement growth counted", strings.Repeat("\xff", 3), R + R + R, 10},
		{"replacement growth cut", strings.Repeat("\xff", 4), R + R + Ellipsis, 10},
		{"tiny max", "abcdef", Ellipsis, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sanitize(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Sanitize(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if max := max(tt.max, len(Ellipsis)); len(got) > max {
				t.Errorf("len %d > %d", len(got), max)
			}
			if !utf8.ValidString(got) {
				t.Errorf("invalid UTF-8 %q", got)
			}
			if again := Sanitize(got, tt.max); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestSanitizeBoundedWork(t *testing.T) {
	huge := strings.Repeat("\x1b", 10<<20)
	got := Sanitize(huge, MaxField)
	if len(got) > MaxField || !strings.HasSuffix(got, Ellipsis) {
		t.Fatalf("len %d, suffix %q", len(got), got[len(got)-3:])
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = Sanitize("/home/user/project/file.go", MaxField) }); allocs != 0 {
		t.Errorf("clean ASCII allocates %v times", allocs)
	}
}

func TestSanitizedRecord(t *testing.T) {
	r := Record{Kind: "k\n", Action: "a\n", Source: "s\n", Exe: "e\n", Command: strings.Repeat("c", 300) + "\n",
		Path: "p\n", Resolved: "r\n", Host: "h\n", Syscall: "y\n", Detail: "d\n", Rule: "u\n"}
	s := r.Sanitized()
	for _, f := range []string{s.Kind, s.Action, s.Source, s.Exe, s.Command, s.Path, s.Resolved, s.Host, s.Syscall, s.Detail, s.Rule} {
		if strings.ContainsAny(f, "\n") {
			t.Errorf("field %q not sanitised", f)
		}
	}
	if len(s.Command) > MaxCommand || !strings.HasSuffix(s.Command, Ellipsis) {
		t.Errorf("command %d bytes: %q", len(s.Command), s.Command)
	}
}
