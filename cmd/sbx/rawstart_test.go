//go:build linux && (amd64 || arm64)

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sandbox's first process runs no second Go runtime: it is
// a clone of the supervisor that never execs sbx (its command line is the
// supervisor's, not init's), and it has one thread where a Go runtime has
// several.
func TestFirstProcessIsNotAGoRuntime(t *testing.T) {
	d := hostTempDir(t)
	os.Chmod(d, 0o755)
	// The empty root (denyRead "/") too, with what the shell needs.
	empty := []string{"--deny-read", "/"}
	for _, p := range []string{"/usr", "/bin", "/lib", "/lib64", "/etc"} {
		if _, err := os.Stat(p); err == nil {
			empty = append(empty, "--allow-read", p)
		}
	}
	for _, flags := range [][]string{nil, {"--allow-write", d}, {"--allow-domain", "localhost"}, {"--discard-writes", d}, empty} {
		r := sh(t, runOpts{dir: d}, `grep '^Threads:' /proc/1/status; tr '\0' ' ' < /proc/1/cmdline; echo; echo "me=$$"`, flags...)
		if r.code != 0 {
			t.Fatalf("%v: %s", flags, r)
		}
		if !strings.Contains(r.stdout, "Threads:\t1\n") || !strings.Contains(r.stdout, "me=2\n") {
			t.Fatalf("%v: the sandbox's first process is not a one-thread clone of the supervisor: %s", flags, r)
		}
	}
	// A published port takes the raw start too (PID 1 dials for it).
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := sh(t, runOpts{dir: d}, `grep '^Threads:' /proc/1/status; tr '\0' ' ' < /proc/1/cmdline; echo; echo "me=$$"`, "--publish", fmt.Sprintf("%d:8080", port))
	if r.code != 0 || !strings.Contains(r.stdout, "Threads:\t1\n") || !strings.Contains(r.stdout, "me=2\n") {
		t.Fatalf("--publish: the sandbox's first process is not a one-thread clone of the supervisor: %s", r)
	}
}

// A plan of 1,200 repositories in one writable tree (each with .git/ and
// a .bashrc, so the protected-name plan runs to thousands of mounts)
// starts through the one launch path — the first process is the
// one-thread clone of the supervisor, as for any plan — and every
// repository is still protected: a write to one repository's .git/hooks
// or .bashrc fails, a write to an ordinary file of it succeeds. (A plan
// over 4,096 system calls once took a second, slower start path; there
// is one path now, whatever the plan's size.)
func TestLargePlanOnePath(t *testing.T) {
	big := manyRepos(t, 1200)
	r := sh(t, runOpts{dir: big}, `grep '^Threads:' /proc/1/status; tr '\0' ' ' < /proc/1/cmdline; echo
echo new > r7/f && echo wrote-f
echo bad > r7/.git/hooks/x && echo wrote-hook
echo bad >> r1200/.bashrc && echo wrote-bashrc
echo bad >> r1/.git/config && echo wrote-config
exit 0`, "--allow-write", big)
	if r.code != 0 || !strings.Contains(r.stdout, "Threads:\t1\n") {
		t.Fatalf("the large plan did not start through the raw start: %s", r)
	}
	if !strings.Contains(r.stdout, "wrote-f") {
		t.Fatalf("a write to an ordinary file of a repository failed: %s", r)
	}
	for _, w := range []string{"wrote-hook", "wrote-bashrc", "wrote-config"} {
		if strings.Contains(r.stdout, w) {
			t.Fatalf("a protected name took a write (%s): %s", w, r)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(big, "r7", "f")); string(b) != "new\n" {
		t.Fatalf("r7/f on the host: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(big, "r7", ".git", "hooks", "x")); err == nil {
		t.Fatal("the hook was written on the host")
	}
	for _, p := range []string{"r1200/.bashrc", "r1/.git/config"} {
		if b, _ := os.ReadFile(filepath.Join(big, p)); len(b) != 0 {
			t.Fatalf("%s on the host: %q", p, b)
		}
	}
}

// manyRepos is a writable tree of n repositories r1..rn, each with
// .git/hooks, .git/config, a .bashrc and an ordinary file f: its plan
// protects thousands of names.
func manyRepos(t *testing.T, n int) string {
	t.Helper()
	big := hostTempDir(t)
	os.Chmod(big, 0o755)
	for i := 1; i <= n; i++ {
		repo := filepath.Join(big, fmt.Sprintf("r%d", i))
		if err := os.MkdirAll(filepath.Join(repo, ".git", "hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{".git/config", ".bashrc", "f"} {
			if err := os.WriteFile(filepath.Join(repo, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return big
}

// The first process is a copy of the supervisor: its memory holds what
// the supervisor holds (the caller's whole environment, real credential
// values). The command can read none of it, cannot use its descriptors
// (the status pipe, where a forged record would fake an exit status),
// and cannot stop or kill it.
func TestFirstProcessIsOutOfReach(t *testing.T) {
	env := append(hermeticEnv(), "CI_JOB_TOKEN=raw-start-secret-1f2e") // removed from the command's environment
	// sbx's own arguments too: /proc/PID/cmdline needs no ptrace access,
	// so PID 1 zeroes its copy of them (a --set-env value may be a
	// credential the settings mask).
	r := sh(t, runOpts{env: env}, `
cat /proc/1/cmdline /proc/1/environ /proc/1/mem /proc/1/maps 2>/dev/null
for f in /proc/1/fd/*; do printf '\002\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' > "$f" 2>/dev/null && echo "wrote $f"; done
kill -STOP 1 2>/dev/null; kill -KILL 1 2>/dev/null
sleep 0.2
echo alive; exit 3`, "--set-env", "SBX_ARGV_PROBE=argv-secret-7c1d")
	if r.code != 3 || strings.Contains(r.stdout, "raw-start-secret") || strings.Contains(r.stdout, "argv-secret") || strings.Contains(r.stdout, "wrote") || !strings.Contains(r.stdout, "alive") {
		t.Fatalf("the first process was reachable: %s", r)
	}
}
