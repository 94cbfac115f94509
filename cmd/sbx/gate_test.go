//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGateOnShellString: with the gate enabled in settings, -c refuses
// (125, nothing run) exactly what `sbx check` refuses, and runs what it
// accepts.
func TestGateOnShellString(t *testing.T) {
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "s.json"), `{"network":{},"filesystem":{"allowWrite":["."]},
		"commands":{"enabled":true,"allowedPrefixes":["echo <word>", "touch <file>"]}}`)
	for _, c := range []struct {
		cmd    string
		accept bool
	}{
		{"touch made", true},
		{"touch made && curl x", false},
		{"touch $(id)", false},
		{"rm -rf .", false},
		{"touch ../escape", false},
	} {
		chk := sbx(t, runOpts{dir: d}, "check", "--settings", "s.json", "--", c.cmd)
		if (chk.code == 0) != c.accept {
			t.Fatalf("sbx check %q: %s", c.cmd, chk)
		}
		r := sbx(t, runOpts{dir: d}, "--settings", "s.json", "-c", c.cmd)
		if c.accept {
			wantCode(t, r, 0)
		} else {
			wantCode(t, r, 125)
			if !strings.Contains(r.stderr, "refused by the gate") {
				t.Errorf("%q: %s", c.cmd, r)
			}
		}
	}
}

// TestProfileCommand: `sbx profile --os darwin` prints a Seatbelt profile
// for the same flags, on any OS, and runs nothing.
func TestProfileCommand(t *testing.T) {
	d := t.TempDir()
	r := sbx(t, runOpts{dir: d}, "profile", "--os", "darwin", "--deny-read", d, "--allow-write", d)
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "(version 1)") || !strings.Contains(r.stdout, d) {
		t.Fatalf("not a profile for these flags: %s", r.stdout)
	}
	wantCode(t, sbx(t, runOpts{dir: d}, "profile", "--os", "plan9"), 125)
	wantCode(t, sbx(t, runOpts{dir: d}, "profile", "--", "true"), 125)
}
