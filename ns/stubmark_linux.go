//go:build linux

package ns

import (
	"errors"

	"golang.org/x/sys/unix"
)

// isStub reports whether p has the marker mode of an sbx stub, or is gone:
// a stub the scan saw can be removed by the run that owns it before the
// plan asks, and then it must be planned as missing (a stub), not as a
// real directory to build inside.
func isStub(p string) bool {
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	return err == nil && stubMarked(&st) || errors.Is(err, unix.ENOENT)
}

// HeldStub reports whether p is a stub that a run still holds: it has the
// marker mode and its owners' shared lock is on it (another run in the
// same directory, still going). A look-alike the command made carries no
// lock once the command is gone, so it is not one.
func HeldStub(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !stubMarked(&st) {
		return false
	}
	err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(fd, unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
