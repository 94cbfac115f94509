// Package settingsfile owns how sbx reads a settings file: a regular
// file (after symlinks) of at most MaxSize bytes, opened without
// blocking. A settings file may lie in a repository, written by whoever
// can push a branch: a link to /dev/zero would grow sbx's memory without
// end, a FIFO would hang it, a huge file would cost time before anything
// is checked. Each is refused with an error naming the file.
//
// Both readers of settings use it: policy (every layer) and check (the
// command gate's `sbx check --settings`).
package settingsfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxSize is the largest settings file read: 1 MiB holds some 40,000
// path or domain entries, far beyond any hand-written or generated
// policy seen, and parses in well under a second.
const MaxSize = 1 << 20

// ErrNotRegular and ErrTooLarge mark the refusals (errors.Is).
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than the 1 MiB a settings file may be")
)

// Read returns the contents of the settings file at path. It refuses
// anything but a regular file (a FIFO, a device such as /dev/zero, a
// socket, a directory, or a symlink to one), and a file larger than
// MaxSize, without reading past MaxSize+1 bytes or blocking on the open.
func Read(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, st); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path be swapped for a FIFO after the stat,
	// the open still returns at once (and the fstat below refuses it).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s grew past 1 MiB while read: %w", path, ErrTooLarge)
	}
	return data, nil
}

func check(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, %w", path, kind(st.Mode()), ErrNotRegular)
	}
	if st.Size() > MaxSize {
		return fmt.Errorf("%s is %d bytes, %w", path, st.Size(), ErrTooLarge)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}
