//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Paths mean what they say: globs, symlinks in the checkout,
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

// fakeHome is a HOME made by the test, holding .ssh/id_rsa ("KEY") and an
// empty .config/autostart, and the environment that names it.
func fakeHome(t *testing.T) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	writeFile(t, filepath.Join(home, ".ssh", "id_rsa"), "PRIVATE-KEY\n")
	if err := os.MkdirAll(filepath.Join(home, ".config", "autostart"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range hermeticEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return home, append(env, "HOME="+home)
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestAttackLinkInCheckoutLiftsMask: a symlink in the working tree to
// ~/.ssh (or into ~/.config/autostart) made an allow entry on it lift the
// built-in mask (or write to the host). Such a grant is now refused, exit
// 125 and one line naming the link, at any depth of the path, for
// --allow-read, --reads declared, --allow-write and settings files.
func TestAttackLinkInCheckoutLiftsMask(t *testing.T) {
	home, env := fakeHome(t)
	w := t.TempDir()
	mustSymlink(t, filepath.Join(home, ".ssh"), filepath.Join(w, "src"))
	mustSymlink(t, filepath.Join(home, ".ssh"), filepath.Join(w, "docs"))
	mustSymlink(t, filepath.Join(home, ".config", "autostart"), filepath.Join(w, "out"))
	mustSymlink(t, home, filepath.Join(w, "a", "b"))
	writeFile(t, filepath.Join(w, "s.json"), `{"network":{},"filesystem":{"allowRead":["./src"]}}`)
	for _, args := range [][]string{
		{"--allow-read", "src", "--", "cat", "src/id_rsa"},
		{"--reads", "declared", "--allow-read", "docs", "--", "/bin/cat", filepath.Join(home, ".ssh", "id_rsa")},
		{"--allow-read", "a/b/.ssh/id_rsa", "--", "cat", "a/b/.ssh/id_rsa"},
		{"--allow-write", "out", "--", "/bin/sh", "-c", "echo pwned > out/evil.desktop"},
		{"--settings", "s.json", "--", "cat", "src/id_rsa"},
	} {
		r := sbx(t, runOpts{dir: w, env: env}, args...)
		if r.code != 125 || strings.Contains(r.stdout, "PRIVATE-KEY") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "symlink") || !strings.Contains(r.stderr, "name the target itself") {
			t.Errorf("%q: want 125 and one line naming the link, got %s", args, r)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(home, ".config", "autostart")); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
	// Allowed: the target named itself; a link inside the tree to
	// inside it.
	r := sbx(t, runOpts{dir: w, env: env}, "--allow-read", "~/.ssh", "--", "cat", "src/id_rsa")
	if r.code != 0 || r.stdout != "PRIVATE-KEY\n" {
		t.Errorf("--allow-read ~/.ssh (the literal mask): %s", r)
	}
	if err := os.Mkdir(filepath.Join(w, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "real", filepath.Join(w, "inside"))
	r = sbx(t, runOpts{dir: w, env: env}, "--allow-write", "inside", "--", "/bin/sh", "-c", "echo ok > inside/f")
	if b, _ := os.ReadFile(filepath.Join(w, "real", "f")); r.code != 0 || string(b) != "ok\n" {
		t.Errorf("--allow-write through a link inside the tree: %s", r)
	}
}

// TestAttackLinkOutsideTreeLiftsMask: an allow entry outside the working
// tree that reaches ~/.ssh through a symlink (at any depth of its path)
// does not re-open the mask; the run goes on, the key stays hidden.
func TestAttackLinkOutsideTreeLiftsMask(t *testing.T) {
	home, env := fakeHome(t)
	l := t.TempDir()
	mustSymlink(t, filepath.Join(home, ".ssh"), filepath.Join(l, "keys"))
	mustSymlink(t, home, filepath.Join(l, "a", "b"))
	for _, args := range [][]string{
		{"--allow-read", filepath.Join(l, "keys"), "--", "/bin/sh", "-c", "cat " + q(l) + "/keys/id_rsa; cat ~/.ssh/id_rsa; true"},
		{"--allow-read", filepath.Join(l, "a/b/.ssh/id_rsa"), "--", "/bin/sh", "-c", "cat " + q(l) + "/a/b/.ssh/id_rsa; cat ~/.ssh/id_rsa; true"},
		{"--allow-write", filepath.Join(l, "keys"), "--", "/bin/sh", "-c", "cat " + q(l) + "/keys/id_rsa; echo x > ~/.ssh/authorized_keys; true"},
	} {
		r := sbx(t, runOpts{env: env}, args...)
		if r.code != 0 || strings.Contains(r.stdout, "PRIVATE-KEY") {
			t.Errorf("%q: the key was read through the link: %s", args, r)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".ssh", "authorized_keys")); err == nil {
		t.Errorf("written into ~/.ssh through the link")
	}
	r := sbx(t, runOpts{env: env}, "--dry-run", "--allow-read", filepath.Join(l, "keys"), "--", "true")
	if !strings.Contains(r.stdout, "re-opening a credential mask takes its literal path") {
		t.Errorf("--dry-run: no note")
	}
}
