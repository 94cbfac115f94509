//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Paths mean what they say (issue 25): globs, symlinks in the checkout,
// and denied writes on names that do not exist yet.

// catEach is a shell script that cats each file and prints "NAME: ok" or
// "NAME: denied".
func catEach(files ...string) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString("if cat " + q(f) + " >/dev/null 2>&1; then echo " + q(f) + ": ok; else echo " + q(f) + ": denied; fi\n")
	}
	return b.String()
}

// TestGlobDoubleStarHides: --deny-read './**/*.pem' hides key.pem at
// every depth (before, filepath.Glob matched one level: a/key.pem only),
// and what it does not match stays readable.
func TestGlobDoubleStarHides(t *testing.T) {
	w := t.TempDir()
	for _, f := range []string{"key.pem", "a/key.pem", "a/b/key.pem", "a/b/notes.txt"} {
		writeFile(t, filepath.Join(w, f), "SECRET-"+f+"\n")
	}
	r := sh(t, runOpts{dir: w}, catEach("key.pem", "a/key.pem", "a/b/key.pem", "a/b/notes.txt"), "--deny-read", "./**/*.pem")
	wantCode(t, r, 0)
	want := "key.pem: denied\na/key.pem: denied\na/b/key.pem: denied\na/b/notes.txt: ok\n"
	if r.stdout != want {
		t.Errorf("got\n%s\nwant\n%s", r.stdout, want)
	}
	// Control: without the deny all four are read.
	r = sh(t, runOpts{dir: w}, catEach("key.pem", "a/key.pem", "a/b/key.pem"))
	if strings.Contains(r.stdout, "denied") {
		t.Errorf("control: %s", r)
	}
}

// TestGlobThatCannotMatch: --deny-read './secrets[prod]' beside a file
// named "secrets[prod]" hid nothing, silently; it is now refused (125,
// one line saying how to write it literally), and the escaped form hides
// the file. A malformed pattern is refused too.
func TestGlobThatCannotMatch(t *testing.T) {
	w := t.TempDir()
	writeFile(t, filepath.Join(w, "secrets[prod]"), "SECRET\n")
	r := sbx(t, runOpts{dir: w}, "--deny-read", "./secrets[prod]", "--", "cat", "secrets[prod]")
	wantCode(t, r, 125)
	if strings.Contains(r.stdout, "SECRET") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, `secrets\[prod\]`) {
		t.Errorf("want one line proposing the escape, got %s", r)
	}
	r = sbx(t, runOpts{dir: w}, "--deny-read", `./secrets\[prod\]`, "--", "cat", "secrets[prod]")
	if r.code == 0 || strings.Contains(r.stdout, "SECRET") {
		t.Errorf("the escaped deny did not hide the file: %s", r)
	}
	wantRefused(t, []string{"--deny-read", "./a["}, []string{"--deny-read", "./*/../x"}, []string{"--allow-write", "./[z"})
}
