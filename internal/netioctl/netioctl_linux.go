// Package netioctl owns the structures of the network device ioctls
// sbx makes by device name (struct ifreq, sockaddr_in, struct rtentry,
// struct in6_ifreq, struct in6_rtmsg), as byte layouts for the LP64 CPUs
// sbx's full mode runs on: the capture device's set-up (package sandbox)
// and the attack helper's probes against it (internal/attack) use the
// same ones. Layouts reports whether this build's layouts are the
// kernel's.
package netioctl

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ifreq is struct ifreq for device dev: its name, then the first bytes
// of the 24-byte union.
func Ifreq(dev string, union []byte) []byte {
	b := make([]byte, unix.IFNAMSIZ+24)
	copy(b, dev)
	copy(b[unix.IFNAMSIZ:], union)
	return b
}

// SockaddrIn is a struct sockaddr_in for the IPv4 address a.
func SockaddrIn(a netip.Addr) []byte {
	b := make([]byte, unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(b, unix.AF_INET)
	v := a.As4()
	copy(b[4:], v[:])
	return b
}

// Rtentry is struct rtentry (SIOCADDRT, SIOCDELRT on an AF_INET socket).
// Dev, when not 0, points at the device's NUL-terminated name, which the
// caller keeps alive.
type Rtentry struct {
	_       uintptr
	Dst     [16]byte // struct sockaddr
	Gateway [16]byte
	Genmask [16]byte
	Flags   uint16
	_       int16
	_       uintptr
	_       uintptr
	Metric  int16
	Dev     uintptr
	MTU     uintptr
	Window  uintptr
	IRTT    uint16
}

// In6Ifreq is struct in6_ifreq (SIOCSIFADDR on an AF_INET6 socket).
type In6Ifreq struct {
	Addr      [16]byte
	Prefixlen uint32
	Ifindex   int32
}

// In6Rtmsg is struct in6_rtmsg (SIOCADDRT on an AF_INET6 socket).
type In6Rtmsg struct {
	Dst     [16]byte
	Src     [16]byte
	Gateway [16]byte
	Type    uint32
	DstLen  uint16
	SrcLen  uint16
	Metric  uint32
	Info    uintptr
	Flags   uint32
	Ifindex int32
}

// Layouts reports an error when this CPU's layouts of the structures are
// not the kernel's LP64 ones (sizes 120, 24 and 80 bytes).
func Layouts() error {
	if unsafe.Sizeof(Rtentry{}) != 120 || unsafe.Sizeof(In6Ifreq{}) != 24 || unsafe.Sizeof(In6Rtmsg{}) != 80 {
		return errors.New("netioctl: the ioctl structures have other layouts on this CPU")
	}
	return nil
}
