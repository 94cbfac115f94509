package seccomp

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// NetCall is what a notified network call names (Config.ObserveNet).
type NetCall struct {
	Syscall string
	// Dest is the inet or inet6 destination the call names; invalid when
	// it names none (a sendmsg without msg_name, a Unix or netlink
	// address, AF_UNSPEC).
	Dest netip.AddrPort
	// SockType is the socket's type (SOCK_STREAM, SOCK_DGRAM, ...), read
	// only when Dest is not a loopback address (Reachable is false) or
	// its port is 53 (DNS); 0 otherwise.
	SockType int
	// Payload is the start of the data a sendto sends, at most
	// PayloadMax bytes, read only when SockType is. A name lookup's
	// question is there.
	Payload []byte
}

// PayloadMax is how much of a sent datagram InspectNet reads.
const PayloadMax = 512

// Reachable reports whether a destination can be reached from a network
// namespace that holds only its loopback interface: 127.0.0.0/8, ::1,
// IPv4-mapped loopback, and the unspecified address (which the kernel
// sends to the local host).
func Reachable(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsUnspecified()
}

// InspectNet reads the destination of a notified connect or sendto; ok is false for any other call. It reads the command's
// memory, which may change after it was read: the result is for the
// record only, and the call must be answered Continue (the kernel then
// decides on what it reads itself). Only a destination that is not
// reachable (Reachable), or port 53, costs more than one read: the
// socket's type (a stream socket's send ignores the address) and the
// payload.
func InspectNet(r *Request) (nc *NetCall, ok bool, err error) {
	nc = &NetCall{Syscall: r.Syscall}
	var payload func() []byte // sendto's data, read only when needed
	switch r.Syscall {
	case "connect":
		sa, err := readSockaddr(r.PID, uintptr(r.Args[1]), int(int32(r.Args[2])))
		if err != nil {
			return nc, true, err
		}
		nc.Dest = inetDest(sa)
	case "sendto":
		sa, err := readSockaddr(r.PID, uintptr(r.Args[4]), int(int32(r.Args[5])))
		if err != nil {
			return nc, true, err
		}
		nc.Dest = inetDest(sa)
		payload = func() []byte { return readPrefix(r.PID, uintptr(r.Args[1]), r.Args[2]) }
	default:
		return nil, false, nil
	}
	if !nc.Dest.IsValid() || (Reachable(nc.Dest.Addr()) && nc.Dest.Port() != 53) {
		return nc, true, nil
	}
	nc.SockType = socketType(r)
	if payload != nil {
		nc.Payload = payload()
	}
	return nc, true, nil
}

// inetDest decodes an AF_INET or AF_INET6 socket address, with the
// kernel's minimum lengths; anything else is the zero AddrPort.
func inetDest(sa []byte) netip.AddrPort {
	if len(sa) < 2 {
		return netip.AddrPort{}
	}
	switch binary.LittleEndian.Uint16(sa[0:]) {
	case unix.AF_INET:
		if len(sa) < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), binary.BigEndian.Uint16(sa[2:]))
	case unix.AF_INET6:
		if len(sa) < 24 { // SIN6_LEN_RFC2133
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa[8:24])), binary.BigEndian.Uint16(sa[2:]))
	}
	return netip.AddrPort{}
}

// readPrefix reads up to PayloadMax bytes at addr; nil when unreadable.
func readPrefix(pid int, addr uintptr, n uint64) []byte {
	if addr == 0 || n == 0 {
		return nil
	}
	b := make([]byte, min(n, PayloadMax))
	m, err := ReadMem(pid, addr, b)
	if err != nil {
		return nil
	}
	return b[:m]
}

// socketType is the type of the caller's socket Args[0] (pidfd_getfd),
// 0 when it cannot be read. Only inet sockets count: another family
// refuses an inet address by itself.
func socketType(r *Request) int {
	pidfd, err := threadPidfd(r.PID)
	if err != nil {
		return 0
	}
	defer unix.Close(pidfd)
	sock, err := unix.PidfdGetfd(pidfd, int(int32(r.Args[0])), 0)
	if err != nil {
		return 0
	}
	defer unix.Close(sock)
	if d, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || (d != unix.AF_INET && d != unix.AF_INET6) {
		return 0
	}
	t, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return 0
	}
	return t
}
