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

// The sandbox's first process runs no second Go runtime (issue 15): it is
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
		if !strings.Contains(r.stdout, "Threads:\t1\n") || strings.Contains(r.stdout, "__sbx_init") || !strings.Contains(r.stdout, "me=2\n") {
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
	if r.code != 0 || !strings.Contains(r.stdout, "Threads:\t1\n") || strings.Contains(r.stdout, "__sbx_init") || !strings.Contains(r.stdout, "me=2\n") {
		t.Fatalf("--publish: the sandbox's first process is not a one-thread clone of the supervisor: %s", r)
	}
	// Control: a plan over rawexec's op limit (a writable tree with
	// thousands of protected names) needs the Go init, and shows it.
	big := hostTempDir(t)
	os.Chmod(big, 0o755)
	for i := range 1100 {
		git := filepath.Join(big, fmt.Sprintf("repo%d", i), ".git")
		if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(git, "config"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = sh(t, runOpts{dir: d}, `tr '\0' ' ' < /proc/1/cmdline`, "--allow-write", big)
	if r.code != 0 || !strings.Contains(r.stdout, "__sbx_init") {
		t.Fatalf("control: %s", r)
	}
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
