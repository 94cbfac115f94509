//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHintNamesCause runs each cause of the failure hint once for real:
// a refused host names the host and the --allow-domain that allows it
// (which then works), a missing pty names --allow-pty (which then works);
// neither gets a line about writes. (Writes: TestWriteHint.)
func TestHintNamesCause(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	r := sbx(t, runOpts{}, "--allow-domain", "allowed.example", "--", curl, "-sf", "-o", "/dev/null", s.URL+"/x")
	want := "after 1 refused host: " + hp + " (--allow-domain 127.0.0.1)"
	if r.code == 0 || sbxHint(r.stderr) == "" || !strings.Contains(sbxHint(r.stderr), want) || strings.Contains(r.stderr, "read-only") {
		t.Fatalf("refused host: want the hint %q, got %s", want, r)
	}
	if c.n.Load() != 0 {
		t.Fatal("the refused host was reached")
	}
	r = sbx(t, runOpts{}, "--allow-domain", "127.0.0.1", "--", curl, "-sf", "-o", "/dev/null", s.URL+"/x")
	if r.code != 0 || r.stderr != "" || c.n.Load() != 1 {
		t.Fatalf("the hint's --allow-domain: %s", r)
	}

	py := needTool(t, "python3")
	open := `import os; m, s = os.openpty(); print("pty", os.ttyname(s))`
	r = sbx(t, runOpts{}, "--observe-files", "writes", "--", py, "-c", open)
	want = "finding no pseudo-terminal: /dev/ptmx is absent unless --allow-pty"
	if r.code == 0 || !strings.Contains(sbxHint(r.stderr), want) || strings.Contains(r.stderr, "read-only") {
		t.Fatalf("missing pty: want the hint %q, got %s", want, r)
	}
	r = sbx(t, runOpts{}, "--observe-files", "writes", "--allow-pty", "--", py, "-c", open)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pty /dev/pts/") || r.stderr != "" {
		t.Fatalf("--allow-pty: %s", r)
	}
}

// sbxHint is the failure hint line of stderr ("sbx: the command exited …").
func sbxHint(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "sbx: the command exited") {
			return l
		}
	}
	return ""
}

// TestHintQuietUnlessTheSandbox: a command that fails on its own with
// nothing refused gets no line from sbx (false, exit 3, a Ctrl-C, a read
// of a file that is not there, a write under no observation); a program
// the view leaves out (127) and a masked file run (126) get theirs; and
// of several refused writes the one that ended the command is named
// first, the tool's incidental log writes after it.
func TestHintQuietUnlessTheSandbox(t *testing.T) {
	d := hostTempDir(t)
	writeFile(t, filepath.Join(d, "secret", "tool"), "#!/bin/sh\necho ran\n")
	os.Chmod(filepath.Join(d, "secret", "tool"), 0o755)
	for _, c := range []struct {
		script string
		code   int
		flags  []string
	}{
		{"false", 1, nil},
		{"exit 3", 3, nil},
		{"kill -INT $$", 130, nil},
		{"cat /nonexistent-sbx-file", 1, []string{"--observe-files", "all"}},
		{"echo x > here.txt", 2, nil},
	} {
		r := sh(t, runOpts{dir: d}, c.script, c.flags...)
		if r.code != c.code || strings.Contains(r.stderr, "sbx:") {
			t.Errorf("%q: want exit %d and no line from sbx, got %s", c.script, c.code, r)
		}
	}
	r := sh(t, runOpts{dir: d}, "secret/tool", "--deny-read", filepath.Join(d, "secret"))
	if r.code != 127 && r.code != 126 || !strings.Contains(sbxHint(r.stderr), "masked") {
		t.Errorf("a masked program: want 126 or 127 and the hint, got %s", r)
	}
	other := hostTempDir(t)
	writeFile(t, filepath.Join(other, "tool"), "#!/bin/sh\necho ran\n")
	os.Chmod(filepath.Join(other, "tool"), 0o755)
	r = sbx(t, runOpts{dir: d}, "--reads", "declared", "--", "/bin/sh", "-c", filepath.Join(other, "tool"))
	if r.code != 127 || !strings.Contains(sbxHint(r.stderr), "outside the declared reads") {
		t.Errorf("a program outside the declared reads: want 127 and the hint, got %s", r)
	}

	home := hostTempDir(t)
	env := append(hermeticEnv(), "HOME="+home)
	os.MkdirAll(filepath.Join(home, ".npm", "_logs"), 0o755)
	// A tool that writes its log (refused, shrugged off), then fails on
	// the output directory it needs, then writes its log again.
	script := `for i in 1 2 3 4; do echo log 2>/dev/null > ` + home + `/.npm/_logs/$i-debug.log; done
		mkdir .nyc_output || { echo log 2>/dev/null > ` + home + `/.npm/_logs/5-debug.log; exit 1; }`
	r = sh(t, runOpts{dir: d, env: env}, script, "--observe-files", "writes")
	h := sbxHint(r.stderr)
	if r.code != 1 || !strings.HasPrefix(h, "sbx: the command exited 1 after 6 refused writes: "+filepath.Join(d, ".nyc_output")+" (--allow-write "+d+"), ~/.npm/_logs/") {
		t.Fatalf("want the mkdir named first, then the logs: %s", r)
	}
}

// TestHintWeakerTellsTheTruth: under --weaker-nested /tmp is the host's
// and, outside allowWrite, not writable; nothing sbx prints claims a
// private one. A program the policy hides is refused by Landlock (126),
// and the hint says that, not "a masked placeholder".
func TestHintWeakerTellsTheTruth(t *testing.T) {
	d := hostTempDir(t)
	writeFile(t, filepath.Join(d, "secret", "tool"), "#!/bin/sh\necho ran\n")
	os.Chmod(filepath.Join(d, "secret", "tool"), 0o755)
	name := filepath.Join(os.TempDir(), fmt.Sprintf("sbx-weaker-%d", os.Getpid()))
	defer os.Remove(name)
	r := sh(t, runOpts{dir: d}, "echo x > "+name, "--weaker-nested")
	if r.code == 0 || strings.Contains(r.stderr, "private") || !strings.Contains(r.stderr, "/tmp is the host's") {
		t.Fatalf("a write to the host's /tmp: want a failure and no claim of a private /tmp, got %s", r)
	}
	if _, err := os.Stat(name); err == nil {
		t.Fatal("the write reached the host's /tmp")
	}
	r = sh(t, runOpts{dir: d}, "secret/tool", "--weaker-nested", "--deny-read", filepath.Join(d, "secret"))
	if r.code != 126 || !strings.Contains(sbxHint(r.stderr), "under --weaker-nested, Landlock refuses") || strings.Contains(r.stderr, "placeholder") {
		t.Fatalf("a hidden program under --weaker-nested: want 126 and Landlock's hint, got %s", r)
	}
}
