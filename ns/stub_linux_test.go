//go:build linux

package ns

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStubMarker: a stub carries its marker from the call that creates
// it, whatever the umask; a second run shares it; look-alikes that are
// not stubs (writable, sticky but with content, plain) are not marked and
// not removed; a stub is removed only by the last run that holds it.
func TestStubMarker(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o077))
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n) }

	f1, err := createStub(at(".bashrc"), at(".bashrc"), false)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(at(".bashrc"), &st); err != nil {
		t.Fatal(err)
	}
	if !f1.created || !f1.marked || st.Mode&unix.S_ISVTX == 0 || st.Mode&0o222 != 0 {
		t.Fatalf("new file stub: created %v marked %v mode %o", f1.created, f1.marked, st.Mode)
	}
	f2, err := createStub(at(".bashrc"), at(".bashrc"), false)
	if err != nil {
		t.Fatal(err)
	}
	if f2.created || !f2.marked || f2.ino != f1.ino {
		t.Fatalf("second run: created %v marked %v, inode %d want %d", f2.created, f2.marked, f2.ino, f1.ino)
	}
	d, err := createStub(at(".git"), at(".git"), true)
	if err != nil {
		t.Fatal(err)
	}
	if !d.created || !d.marked || !isStub(at(".git")) {
		t.Fatalf("directory stub: created %v marked %v isStub %v", d.created, d.marked, isStub(at(".git")))
	}
	if !isStub(at("gone")) {
		t.Error("a name gone since the scan must be planned as a stub")
	}

	// Look-alikes: real files and directories the user made.
	for _, f := range []struct {
		name, content string
		mode          uint32
	}{
		{".profile", "", 0o644},
		{".zshrc", "", 0o1644},             // sticky, but writable
		{".gitconfig", "[user]\n", 0o1444}, // the marker mode, but not empty
	} {
		if err := os.WriteFile(at(f.name), []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(at(f.name), f.mode); err != nil {
			t.Fatal(err)
		}
		s, err := createStub(at(f.name), at(f.name), false)
		if err != nil {
			t.Fatal(err)
		}
		if s.created || s.marked {
			t.Errorf("real %s (mode %o) taken for a stub", f.name, f.mode)
		}
		s.release()
	}
	if err := os.Mkdir(at(".vscode"), 0o1755); err != nil {
		t.Fatal(err)
	}
	if isStub(at(".vscode")) {
		t.Error("a writable sticky directory taken for a stub")
	}

	// The second run ends first: the first still holds the stub.
	f2.remove(at("no-mount"), at(".bashrc"))
	if _, err := os.Lstat(at(".bashrc")); err != nil {
		t.Fatalf("a run removed a stub another run holds: %v", err)
	}
	f1.remove(at("no-mount"), at(".bashrc"))
	d.remove(at("no-mount"), at(".git"))
	for _, n := range []string{".bashrc", ".git"} {
		if _, err := os.Lstat(at(n)); !os.IsNotExist(err) {
			t.Errorf("stub %s left behind: %v", n, err)
		}
	}
	for _, n := range []string{".profile", ".zshrc", ".gitconfig", ".vscode"} {
		if _, err := os.Lstat(at(n)); err != nil {
			t.Errorf("real %s gone: %v", n, err)
		}
	}
}
