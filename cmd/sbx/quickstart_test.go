//go:build linux

package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeQuickStart runs the README's quick-start demo (the first
// command after `bash scripts/setup.sh &&`) as written, with bin/sbx this
// build, in a directory standing for the clone: the demo's command runs
// (id prints), its write goes to a fresh temporary directory, the write to
// /etc is refused, and nothing appears in the clone, so git status stays
// empty and scripts/release.sh can run next.
func TestReadmeQuickStart(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const setup = "    bash scripts/setup.sh && "
	demo := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, setup) {
			demo = strings.TrimPrefix(line, setup)
			break
		}
	}
	if demo == "" {
		t.Fatalf("the README has no line %q…", setup)
	}
	clone, tmp := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(clone, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sbxBin, filepath.Join(clone, "bin", "sbx")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", demo)
	cmd.Dir = clone
	cmd.Env = append(hermeticEnv(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	t.Logf("%s: %v\n%s", demo, err, out)
	if !strings.Contains(string(out), "uid=") {
		t.Errorf("the demo's command did not run")
	}
	if _, err := os.Stat("/etc/nope"); err == nil {
		t.Errorf("/etc/nope exists")
	}
	var written []string
	_ = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, strings.TrimPrefix(p, tmp+"/"))
		}
		return nil
	})
	if len(written) != 1 || filepath.Base(written[0]) != "built-here" {
		t.Errorf("the demo wrote %q into $TMPDIR, want one built-here in a directory of its own", written)
	}
	var inClone []string
	_ = filepath.WalkDir(clone, func(p string, d fs.DirEntry, err error) error {
		if p != clone {
			inClone = append(inClone, strings.TrimPrefix(p, clone+"/"))
		}
		return nil
	})
	if strings.Join(inClone, " ") != "bin bin/sbx" {
		t.Errorf("the demo left %q in the clone, want only bin/sbx (ignored by git)", inClone)
	}
}
