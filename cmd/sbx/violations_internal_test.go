//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRedactSetEnv(t *testing.T) {
	in := []string{"--set-env", "TOK=s3cret", "--set-env=A=b=c", "-set-env", "X=y", "--allow-read", "K=V", "--", "sh", "--set-env", "Z=z"}
	want := []string{"--set-env", "TOK=…", "--set-env=A=…", "-set-env", "X=…", "--allow-read", "K=V", "--", "sh", "--set-env", "Z=z"}
	if got := redactSetEnv(in); !slices.Equal(got, want) {
		t.Errorf("redactSetEnv:\n got %q\nwant %q", got, want)
	}
	if in[1] != "TOK=s3cret" {
		t.Error("the caller's args were changed")
	}
}

// TestViolationRecordHidesSetEnv: a record's command line never shows a
// --set-env value (a violations file in the working tree is readable by
// the command during the run, so a masked token would leak through it).
func TestViolationRecordHidesSetEnv(t *testing.T) {
	d := t.TempDir()
	vf := filepath.Join(d, "v.jsonl")
	r := sh(t, runOpts{dir: d}, `echo x > /etc/sbx-nope 2>/dev/null; true`,
		"--set-env", "MYTOK=REALSECRET456", "--violations", vf, "--observe-files", "writes", "--quiet-violations")
	wantCode(t, r, 0)
	b, err := os.ReadFile(vf)
	if err != nil || !strings.Contains(string(b), "sbx-nope") {
		t.Fatalf("no record of the refused write (else this test proves nothing): %q %v", b, err)
	}
	if strings.Contains(string(b), "REALSECRET456") || !strings.Contains(string(b), "MYTOK=…") {
		t.Fatalf("the record shows the value: %s", b)
	}
}
