package settingsfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Read refuses what is not a small regular file, at once: a FIFO (no
// writer: an open without O_NONBLOCK would block), /dev/zero (endless),
// a link to either, a directory, a file over MaxSize; a link to a
// regular file is read.
func TestRead(t *testing.T) {
	d := t.TempDir()
	fifo := filepath.Join(d, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(d, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := filepath.Join(d, "big")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(d, "ok.json")
	if err := os.WriteFile(ok, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want error
		text string
	}{
		{fifo, ErrNotRegular, "a FIFO"},
		{link("tofifo", fifo), ErrNotRegular, "a FIFO"},
		{"/dev/zero", ErrNotRegular, "a character device"},
		{link("tozero", "/dev/zero"), ErrNotRegular, "a character device"},
		{d, ErrNotRegular, "a directory"},
		{big, ErrTooLarge, "1 MiB"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(c.path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("%s: want %v naming it and %q, got %v", c.path, c.want, c.text, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Read blocked", c.path)
		}
	}
	for _, p := range []string{ok, link("took", ok)} {
		if b, err := Read(p); err != nil || string(b) != `{}` {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
}
