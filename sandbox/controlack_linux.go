//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// isSocket reports whether fd is a socket (a --control-fd that can
// carry acknowledgments back).
func isSocket(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}

// sendNoWait sends b on the socket fd, or nothing when it would block
// (or the peer is gone: no SIGPIPE).
func sendNoWait(fd int, b []byte) error {
	return unix.Sendto(fd, b, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
}
