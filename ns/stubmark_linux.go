//go:build linux

package ns

import "golang.org/x/sys/unix"

// isStub reports whether p carries the marker of an sbx stub.
func isStub(p string) bool {
	_, err := unix.Lgetxattr(p, stubXattr, nil)
	return err == nil
}
