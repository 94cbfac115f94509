//go:build linux

package ns

import (
	"errors"

	"golang.org/x/sys/unix"
)

// isStub reports whether p carries the marker of an sbx stub, or is gone:
// a stub the scan saw can be removed by the run that owns it before the
// plan asks, and then it must be planned as missing (a stub), not as a
// real directory to build inside.
func isStub(p string) bool {
	_, err := unix.Lgetxattr(p, stubXattr, nil)
	return err == nil || errors.Is(err, unix.ENOENT)
}
