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
