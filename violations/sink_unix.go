//go:build linux || darwin

package violations

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenFile opens path the way --violations FILE does: for appending
// (O_APPEND|O_CREATE|O_WRONLY|O_CLOEXEC|O_NOFOLLOW), created with mode 0600
// (less under a stricter umask). An existing file keeps its mode: sbx never
// widens it, nor narrows what its owner chose. A symbolic link in the last
// component is refused, not followed. The file is opened non-blocking, so a
// FIFO without a reader is an error rather than a hang, and a FIFO with one
// is, on Linux, written through the runtime poller, so that closing the
// sink unblocks a write stuck on a reader that stopped reading.
func OpenFile(path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("violations: empty file name")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("violations: %w: %s is a symbolic link, which is not followed; name the file itself, or pass an open descriptor (--violations-fd)", err, path)
		}
		if errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("violations: %w: %s is a FIFO with no reader", err, path)
		}
		return nil, fmt.Errorf("violations: %w", err)
	}
	return f, nil
}

// FileSink opens path with OpenFile and writes JSON Lines to it; use
// NewSink(OpenFile(path)) for another format.
func FileSink(path string) (Sink, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	return NewSink(f, FormatJSON)
}

// FDSink writes records in format to the already open descriptor fd (for
// --violations-fd N). It is an error if fd is not open, or open read-only.
// The sink writes to a close-on-exec duplicate of fd, never numbered 0–2, and
// closes only that: fd itself stays open (it may be sbx's stderr) and is
// the caller's to close — or to keep from the sandboxed command.
func FDSink(fd int, format string) (Sink, error) {
	if _, err := ParseFormat(format); err != nil {
		return nil, err
	}
	if fd < 0 {
		return nil, fmt.Errorf("violations: descriptor %d: not a descriptor", fd)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("violations: descriptor %d: %w", fd, err)
	}
	if acc := fl & unix.O_ACCMODE; acc != unix.O_WRONLY && acc != unix.O_RDWR {
		return nil, fmt.Errorf("violations: descriptor %d is not open for writing", fd)
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("violations: descriptor %d: dup: %w", fd, err)
	}
	return NewSink(os.NewFile(uintptr(nfd), "violations-fd "+strconv.Itoa(fd)), format)
}
