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
	v := &Discards{Overlays: []Overlay{{Path: "/r", upperFD: open(upper), lowerFD: open(lower)}}}
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

// A directory cursor never steps up into a directory other than the one
// it came down from: a tree moved under it gives an error, and the cursor
// is closed.
func TestDirCursorMovedTree(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(base, "c"), 0o755)
	root, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	c, err := newCursor(root)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if err := c.goTo([]string{"a", "b"}, false); err != nil {
		t.Fatal(err)
	}
	// Control: up and down again.
	if err := c.up(); err != nil || c.goTo([]string{"a", "b"}, false) != nil {
		t.Fatalf("control: %v", err)
	}
	if err := os.Rename(filepath.Join(base, "a", "b"), filepath.Join(base, "c", "b")); err != nil {
		t.Fatal(err)
	}
	if err := c.up(); err == nil {
		t.Fatal("stepped up into c, which the cursor never came down from")
	}
	if err := c.down("x", true, 0o755); err == nil || c.goTo(nil, false) == nil {
		t.Fatal("a cursor that failed to step up must refuse every later step")
	}
	if _, err := os.Stat(filepath.Join(base, "c", "x")); err == nil {
		t.Fatal("made a directory after failing")
	}
}
