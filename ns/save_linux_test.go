//go:build linux

package ns

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A link planted in the --save-changes tree (the directory or any part
// of files/<path>) is never followed out of it.
func TestSaveChangesFollowsNoLinks(t *testing.T) {
	base := t.TempDir()
	upper, lower, outside := filepath.Join(base, "upper"), filepath.Join(base, "lower"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(upper, "sub"), lower, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(upper, "sub", "evil"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	v := &View{Overlays: []Overlay{{Path: "/r", upperFD: open(upper), lowerFD: open(lower)}}}
	changes := []Change{{Path: "/r/sub/evil", Detail: "created"}}
	for _, plant := range []string{"files", "files/r", "files/r/sub"} {
		save := filepath.Join(base, "save-"+filepath.Base(plant))
		if err := os.MkdirAll(filepath.Join(save, filepath.Dir(plant)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(save, plant)); err != nil {
			t.Fatal(err)
		}
		if err := v.SaveChanges(open(save), changes); err == nil {
			t.Errorf("%s planted as a link: saved anyway", plant)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Fatalf("%s planted as a link: written outside the tree: %v", plant, ents)
		}
	}
	// Control: without a link the file is saved.
	save := filepath.Join(base, "save-clean")
	if err := os.Mkdir(save, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.SaveChanges(open(save), changes); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(save, "files", "r", "sub", "evil")); err != nil || string(b) != "x" {
		t.Fatalf("control: %v %q", err, b)
	}
}
