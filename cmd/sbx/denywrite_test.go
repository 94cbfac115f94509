//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDenyWriteMissingName: a denyWrite on a name that does not exist yet
// inside a writable root is pinned at creation; creating it every way
// fails (open, rename onto it, a hard link, mkdir of a missing parent),
// the rest of the root stays writable, --dry-run shows the pin, and
// nothing is left behind on the host.
func TestDenyWriteMissingName(t *testing.T) {
	w := t.TempDir()
	writeFile(t, filepath.Join(w, "other"), "other\n")
	writeFile(t, filepath.Join(w, "b", "existing"), "keep\n")
	if err := os.Mkdir(filepath.Join(w, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, w)
	script := `
		echo x > .env 2>/dev/null && echo created-env
		cp other tmp1 && mv tmp1 .env 2>/dev/null && echo renamed-onto-env
		ln other .env 2>/dev/null && echo hardlinked-env
		ln -s other .env 2>/dev/null && echo symlinked-env
		rm -rf .env x 2>/dev/null; echo x > .env 2>/dev/null && echo created-env-after-rm
		mkdir -p x/y 2>/dev/null && echo mkdir-x
		echo x > x/y/.env 2>/dev/null && echo created-deep
		echo x > a/config.json 2>/dev/null && echo created-config
		mv a a2 2>/dev/null && echo moved-a && mkdir a && echo x > a/config.json && echo created-config-in-new-a
		mv b b2 2>/dev/null && echo moved-b && mkdir b && echo x > b/existing && echo replaced-existing
		echo ok > fine && echo wrote-fine
		rm -f tmp1 fine
	`
	r := sh(t, runOpts{dir: w}, script, "--allow-write", ".", "--deny-write", "./.env", "--deny-write", "./x/y/.env", "--deny-write", "./a/config.json", "--deny-write", "./b/existing")
	wantCode(t, r, 0)
	if r.stdout != "wrote-fine\n" {
		t.Errorf("want only the allowed write, got %s", r)
	}
	if after := snapshot(t, w); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Errorf("the tree changed (a pin left behind, or a denied name created):\nbefore %q\nafter  %q", before, after)
	}
	// A Claude Code Edit() deny under an Edit() allow: the same.
	proj := t.TempDir()
	writeFile(t, filepath.Join(proj, "a", "keep"), "")
	writeFile(t, filepath.Join(proj, ".claude", "settings.json"), `{"permissions":{"allow":["Edit(./a/**)"],"deny":["Edit(./a/config.json)"]}}`)
	before = snapshot(t, proj)
	r = sh(t, runOpts{dir: proj}, `echo x > a/config.json 2>/dev/null && echo created-config; echo ok > a/fine && echo wrote-fine; rm -f a/fine`, "--claude-settings")
	wantCode(t, r, 0)
	if r.stdout != "wrote-fine\n" {
		t.Errorf("Edit() deny of a missing file: %s", r)
	}
	if after := snapshot(t, proj); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Errorf("the tree changed:\nbefore %q\nafter  %q", before, after)
	}
	// In a discard region the pin is made in the overlay, never on the
	// host.
	d := hostTempDir(t)
	before = snapshot(t, d)
	r = sh(t, runOpts{dir: d}, `echo x > .env 2>/dev/null && echo created-env; mkdir -p x/y 2>/dev/null && echo mkdir-x; echo ok > fine && echo wrote-fine`, "--discard-writes", d, "--deny-write", "./.env", "--deny-write", "./x/y/.env")
	if r.code != 0 || r.stdout != "wrote-fine\n" {
		t.Errorf("discard region: %s", r)
	}
	if after := snapshot(t, d); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Errorf("the discard region's host tree changed:\nbefore %q\nafter  %q", before, after)
	}
	// --dry-run shows the pin.
	r = sbx(t, runOpts{dir: w}, "--dry-run", "--allow-write", ".", "--deny-write", "./x/y/.env", "--", "true")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"path": "`+filepath.Join(w, "x")+`"`) || !strings.Contains(r.stdout, "denyWrite") {
		t.Errorf("--dry-run does not show the pin of %s/x", w)
	}
	// Control: without the deny the same script creates the names.
	r = sh(t, runOpts{dir: w}, script, "--allow-write", ".")
	if !strings.Contains(r.stdout, "created-env") || !strings.Contains(r.stdout, "created-deep") || !strings.Contains(r.stdout, "replaced-existing") {
		t.Errorf("control: %s", r)
	}
}

// TestDenyWritePinKilled: the pin of a missing denyWrite name is removed
// from the host also when sbx is SIGKILLed mid-run.
func TestDenyWritePinKilled(t *testing.T) {
	w := t.TempDir()
	before := snapshot(t, w)
	cmd := exec.Command(sbxBin, "--allow-write", ".", "--deny-write", "./.env", "--deny-write", "./x/y", "--", "/bin/sh", "-c", "echo started; sleep 30")
	cmd.Dir = w
	cmd.Env = hermeticEnv()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("sandbox did not start: %q", line)
	}
	if _, err := os.Lstat(filepath.Join(w, ".env")); err != nil {
		t.Errorf("control: no pin on the host during the run: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Join(snapshot(t, w), "|") != strings.Join(before, "|") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := snapshot(t, w); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatalf("left behind after SIGKILL of sbx: %q", after)
	}
}
