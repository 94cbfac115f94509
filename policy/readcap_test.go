package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildWithin runs Build(in) and fails the test when it takes longer
// than d (a hang is a failure, not a stuck suite).
func buildWithin(t *testing.T, in Input, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Build(in); done <- err }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatalf("Build did not return within %v", d)
		return nil
	}
}

// A settings file in the tree that is not a regular file (a FIFO, a
// link to /dev/zero or to a FIFO, a directory) or is over 1 MiB is
// refused at once with one line naming it: no hang on the FIFO, no
// memory growth on /dev/zero.
func TestSettingsFileMustBeRegularAndSmall(t *testing.T) {
	in := input(t)
	fifo := filepath.Join(in.Cwd, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(in.Cwd, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	toFifo := filepath.Join(in.Cwd, "tofifo.json")
	if err := os.Symlink(fifo, toFifo); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(in.Cwd, "dir.json")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(in.Cwd, "big.json")
	mustWrite(t, big, `{"network": {}, "filesystem": {"denyRead": ["`+strings.Repeat("/x", 5<<20)+`"]}}`)
	// /dev/zero last and with a short bound: read without a cap it
	// grows memory by some 100 MB/s until the bound ends the test.
	for _, c := range []struct{ f, want string }{{fifo, "a FIFO"}, {toFifo, "a FIFO"}, {dir, "a directory"}, {big, "1 MiB"}, {zero, "a character device"}} {
		f, want := c.f, c.want
		in.Settings = []string{f}
		err := buildWithin(t, in, 3*time.Second)
		if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: want one line naming it and %q, got %v", f, want, err)
		}
		var se *SettingsError
		if !errors.As(err, &se) {
			t.Errorf("%s: not a settings error: %v", f, err)
		}
	}
	// A symlink to a regular file is read as the file.
	real := filepath.Join(in.Cwd, "real.json")
	mustWrite(t, real, `{"network": {}, "filesystem": {}}`)
	link := filepath.Join(in.Cwd, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	in.Settings = []string{link}
	if err := buildWithin(t, in, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
