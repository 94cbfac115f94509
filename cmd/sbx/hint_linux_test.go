//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestHintNamesCause runs each cause of the failure hint once for real:
// a refused host names the host and the --allow-domain that allows it
// (which then works), a missing pty names --allow-pty (which then works);
// neither gets the generic read-only hint. (Writes: TestWriteHint.)
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
