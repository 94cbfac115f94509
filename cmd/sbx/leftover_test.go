//go:build linux

package main

// What one run leaves in a writable place is input to the next run's
// plan: a directory the command made unreadable, or moved below a path
// longer than PATH_MAX, must not hide what the plan looks for (deny
// globs, Claude Code rules, the built-in credential masks, a nested
// repository's protected names). Each test prepares the tree with a
// first sbx run, as an attacker would, and attacks with a second.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// reopen restores dir's mode when the test ends, so the temp dir can go.
func reopen(t *testing.T, dir string) {
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
}

// twoRuns runs prep, then attack, under sbx in dir with flags, and
// returns the attack's result.
func twoRuns(t *testing.T, o runOpts, prep, attack string, flags ...string) result {
	t.Helper()
	r1 := sh(t, o, prep, flags...)
	wantCode(t, r1, 0)
	return sh(t, o, attack, flags...)
}

// The certificates' directory lies at the top of the tree, where the
// protected-name search reads too, and below its depth, where only the
// deny rule's own walk does.
var leftCertDirs = []string{"certs", "a/b/c/certs"}

func TestLeftUnreadableDirStillDenied(t *testing.T) {
	const secret = "FAKE-PRIVATE-KEY-1234"
	cases := []struct {
		name  string
		flags func(settings string) []string
	}{
		{"deny-read glob", func(string) []string {
			return []string{"--allow-write", ".", "--deny-read", "./**/*.pem"}
		}},
		{"Claude Code Read rule", func(settings string) []string {
			return []string{"--allow-write", ".", "--settings", settings}
		}},
		{"discard region", func(string) []string {
			return []string{"--discard-writes", ".", "--deny-read", "./**/*.pem"}
		}},
	}
	for _, tc := range cases {
		for _, certs := range leftCertDirs {
			t.Run(tc.name+" "+certs, func(t *testing.T) {
				dir := t.TempDir()
				if tc.name == "discard region" {
					dir = hostTempDir(t) // an overlay cannot cover the sandbox's own /tmp
				}
				settings := filepath.Join(t.TempDir(), "settings.json")
				writeFile(t, settings, `{"permissions": {"deny": ["Read(./**/*.pem)"]}}`)
				writeFile(t, filepath.Join(dir, certs, "key.pem"), secret)
				writeFile(t, filepath.Join(dir, "notes.txt"), "plain")
				reopen(t, filepath.Join(dir, certs))
				flags := tc.flags(settings)
				if tc.name == "discard region" {
					// A discard region's writes are gone with the run: the
					// tree an earlier run left is the host's own (a
					// --save-changes applied, or a direct write).
					if err := os.Chmod(filepath.Join(dir, certs), 0); err != nil {
						t.Fatal(err)
					}
				} else {
					wantCode(t, sh(t, runOpts{dir: dir}, "chmod 000 "+certs, flags...), 0)
				}
				r := sh(t, runOpts{dir: dir}, "chmod 755 "+certs+"; cat "+certs+"/key.pem; cat notes.txt", flags...)
				if strings.Contains(r.stdout, secret) {
					t.Fatalf("the key was read after its directory was made unreadable by an earlier run: %s", r)
				}
				if !strings.Contains(r.stdout, "plain") {
					t.Fatalf("the rest of the tree should stay readable: %s", r)
				}
			})
		}
	}
}

func TestLeftUnreadableDirStillWriteDenied(t *testing.T) {
	for _, scripts := range []string{"scripts", "a/b/c/scripts"} {
		t.Run(scripts, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, scripts, "build.sh")
			writeFile(t, script, "echo build\n")
			reopen(t, filepath.Join(dir, scripts))
			r := twoRuns(t, runOpts{dir: dir}, "chmod 000 "+scripts,
				"chmod 755 "+scripts+"; echo 'echo planted' > "+scripts+"/build.sh; echo ok > other.txt",
				"--allow-write", ".", "--deny-write", "./**/*.sh")
			os.Chmod(filepath.Join(dir, scripts), 0o755)
			if b, _ := os.ReadFile(script); string(b) != "echo build\n" {
				t.Fatalf("a denied-write file was written after its directory was made unreadable by an earlier run: %q (%s)", b, r)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "other.txt")); string(b) != "ok\n" {
				t.Fatalf("the rest of the tree should stay writable: %s", r)
			}
		})
	}
}

func TestLeftUnreadableConfigStillMasksCredentials(t *testing.T) {
	const secret = "FAKE-GH-TOKEN-5678"
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".config", "gh", "hosts.yml"), "oauth_token: "+secret+"\n")
	writeFile(t, filepath.Join(home, ".config", "other", "x.conf"), "x\n")
	reopen(t, filepath.Join(home, ".config"))
	env := append(hermeticEnv(), "HOME="+home)
	o := runOpts{dir: home, env: env}
	// With a search depth of 1 the protected-name search reads HOME
	// alone, and only the mask's own resolution sees ~/.config.
	shallow := filepath.Join(t.TempDir(), "depth.json")
	writeFile(t, shallow, `{"network": {}, "filesystem": {}, "mandatoryDenySearchDepth": 1}`)
	for _, flags := range [][]string{{"--allow-write", "."}, {"--allow-write", ".", "--settings", shallow}} {
		os.Chmod(filepath.Join(home, ".config"), 0o755)
		r := twoRuns(t, o, "chmod 000 .config", "chmod 755 .config; cat .config/gh/hosts.yml", flags...)
		if strings.Contains(r.stdout, secret) {
			t.Fatalf("%q: a built-in credential mask was skipped after an earlier run made its parent unreadable: %s", flags, r)
		}
	}
	// Allowed path: with the tree as it should be, the rest of
	// ~/.config is there and the credentials are not.
	os.Chmod(filepath.Join(home, ".config"), 0o755)
	r := sh(t, o, "cat .config/other/x.conf; cat .config/gh/hosts.yml", "--allow-write", ".")
	if !strings.Contains(r.stdout, "x") || strings.Contains(r.stdout, secret) {
		t.Fatalf("want ~/.config readable and ~/.config/gh masked: %s", r)
	}
}

func TestLeftUnreadableNestedGitStillProtected(t *testing.T) {
	// The repository's .git closed (read by the search, or only named
	// by it: a/b is as deep as it lists), or the repository itself.
	for _, tc := range []struct{ repo, closed string }{
		{"sub", "sub/.git"}, {"a/b", "a/b/.git"}, {"sub", "sub"},
	} {
		t.Run(tc.closed, func(t *testing.T) {
			dir := t.TempDir()
			repo := filepath.Join(dir, tc.repo)
			gitDir := filepath.Join(repo, ".git")
			writeFile(t, filepath.Join(gitDir, "HEAD"), "ref: refs/heads/main\n")
			writeFile(t, filepath.Join(gitDir, "config"), "[core]\n")
			if err := os.MkdirAll(filepath.Join(gitDir, "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			reopen(t, filepath.Join(dir, tc.closed))
			marker := filepath.Join(dir, "marker")
			r := twoRuns(t, runOpts{dir: dir}, "chmod 000 "+tc.closed,
				"chmod 755 "+tc.closed+"; printf '#!/bin/sh\\ntouch "+marker+"\\n' > "+tc.repo+"/.git/hooks/pre-commit; echo '[core]fsmonitor = touch "+marker+"' >> "+tc.repo+"/.git/config; echo ok > file",
				"--allow-write", ".")
			os.Chmod(filepath.Join(dir, tc.closed), 0o755)
			if _, err := os.Lstat(filepath.Join(gitDir, "hooks", "pre-commit")); err == nil {
				t.Fatalf("a hook was planted in a nested repository an earlier run made unreadable: %s", r)
			}
			if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]\n" {
				t.Fatalf("a nested repository's config was written after an earlier run made it unreadable: %q (%s)", b, r)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "file")); string(b) != "ok\n" {
				t.Fatalf("the working tree should stay writable: %s", r)
			}
			// Allowed path: with the repository readable, its files are
			// protected and its working tree is writable, as always.
			r = sh(t, runOpts{dir: dir}, "echo x > "+tc.repo+"/.git/hooks/pre-commit; echo ok2 > "+tc.repo+"/file", "--allow-write", ".")
			if _, err := os.Lstat(filepath.Join(gitDir, "hooks", "pre-commit")); err == nil {
				t.Fatalf("hooks should stay protected: %s", r)
			}
			if b, _ := os.ReadFile(filepath.Join(repo, "file")); string(b) != "ok2\n" {
				t.Fatalf("the working tree should stay writable: %s", r)
			}
		})
	}
}

// deepName is one component of the deep tree: 250 bytes.
var deepName = strings.Repeat("d", 250)

// makeDeep makes levels nested directories named deepName below dir,
// one component at a time (the full path is longer than PATH_MAX), and
// writes name with content at the bottom.
func makeDeep(t *testing.T, dir string, levels int, name, content string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < levels; i++ {
		if err := unix.Mkdirat(fd, deepName, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, deepName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(f, []byte(content))
	unix.Close(f)
}

func TestLeftDeepTreeStillDenied(t *testing.T) {
	const secret = "FAKE-DEEP-KEY-9012"
	const levels = 18 // 18 × 251 bytes: well past PATH_MAX
	dir := t.TempDir()
	makeDeep(t, dir, levels, "key.pem", secret)
	writeFile(t, filepath.Join(dir, "notes.txt"), "plain")
	// The command brings the key up to a short path one rename at a
	// time (each path it names stays short), then reads it.
	attack := `N=` + deepName + `; p=.; i=0
while [ $i -lt ` + "18" + ` ]; do
  if mv "$p/$N" "$p/s" 2>/dev/null; then p="$p/s"; else p="$p/$N"; fi
  i=$((i+1))
done
cat "$p/key.pem"; cat notes.txt`
	for _, flags := range [][]string{
		{"--allow-write", ".", "--deny-read", "./**/*.pem"},
		{"--deny-read", "./**/*.pem"}, // read-only: the key cannot come up, and the walk must still not skip it
	} {
		r := sh(t, runOpts{dir: dir}, attack, flags...)
		if strings.Contains(r.stdout, secret) {
			t.Fatalf("%q: a key below a path longer than PATH_MAX was read: %s", flags, r)
		}
		if !strings.Contains(r.stdout, "plain") {
			t.Fatalf("%q: the rest of the tree should stay readable: %s", flags, r)
		}
	}
}

func TestNormalTreeDenyGlobsUnaffected(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "certs", "key.pem"), "FAKE-KEY")
	writeFile(t, filepath.Join(dir, "certs", "ca.txt"), "ca")
	writeFile(t, filepath.Join(dir, "scripts", "build.sh"), "echo build\n")
	r := sh(t, runOpts{dir: dir}, "cat certs/ca.txt; cat certs/key.pem; echo new > certs/new.txt; cat certs/new.txt; echo x > scripts/build.sh",
		"--allow-write", ".", "--deny-read", "./**/*.pem", "--deny-write", "./**/*.sh")
	if !strings.Contains(r.stdout, "ca") || !strings.Contains(r.stdout, "new") || strings.Contains(r.stdout, "FAKE-KEY") {
		t.Fatalf("want the directory readable and writable, only the key hidden: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "scripts", "build.sh")); string(b) != "echo build\n" {
		t.Fatalf("the denied-write file was written: %s", r)
	}
	if strings.Contains(r.stderr, "denied whole") || strings.Contains(r.stderr, "read-only whole") {
		t.Fatalf("a readable tree should be searched, not denied whole: %s", r)
	}
}
