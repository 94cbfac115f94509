//go:build linux

package sandbox

// The capture device (network.capture, package capture): the first
// process creates a TUN device in the sandbox's network namespace,
// addresses it, gives it the default routes for IPv4 and IPv6, and hands
// its descriptor to the supervisor ("capture" on the control socket),
// which runs the user-space stack on it. The command never holds it:
// the descriptor is sent and closed before the fork, and the command
// keeps no capability to change the device, its routes or the files
// that point at the resolver (dropCapsOps; the view binds them
// read-only).
//
// Everything is an ioctl by device name, so the program needs no
// netlink and reads nothing back: the device's index is chosen before it
// exists (TUNSETIFINDEX), which the IPv6 calls take.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"unsafe"

	"github.com/sbx-sh/sbx/capture"
	"github.com/sbx-sh/sbx/internal/rawexec"
	"golang.org/x/sys/unix"
)

const (
	// captureDev is the device's name inside the sandbox.
	captureDev = "sbx0"
	// captureIndex is its interface index: a fresh namespace holds only
	// lo (1) and, where their modules are loaded, the tunnels' fallback
	// devices, all numbered from 1 up.
	captureIndex = 4096
)

// ifreq is struct ifreq: the name, then a 24-byte union.
func ifreq(union []byte) []byte {
	b := make([]byte, unix.IFNAMSIZ+24)
	copy(b, captureDev)
	copy(b[unix.IFNAMSIZ:], union)
	return b
}

// sockaddr4 is a struct sockaddr_in for a.
func sockaddr4(a netip.Addr) []byte {
	b := make([]byte, unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(b, unix.AF_INET)
	v := a.As4()
	copy(b[4:], v[:])
	return b
}

// rtentry is struct rtentry (LP64, the only layout of the CPUs the full
// mode runs on).
type rtentry struct {
	pad1    uintptr
	dst     [16]byte
	gateway [16]byte
	genmask [16]byte
	flags   uint16
	pad2    int16
	pad3    uintptr
	pad4    uintptr
	metric  int16
	dev     uintptr
	mtu     uintptr
	window  uintptr
	irtt    uint16
}

// in6Ifreq is struct in6_ifreq.
type in6Ifreq struct {
	addr      [16]byte
	prefixlen uint32
	ifindex   int32
}

// in6Rtmsg is struct in6_rtmsg.
type in6Rtmsg struct {
	dst     [16]byte
	src     [16]byte
	gateway [16]byte
	typ     uint32
	dstLen  uint16
	srcLen  uint16
	metric  uint32
	info    uintptr
	flags   uint32
	ifindex int32
}

// captureOps create and configure the capture device and send it over
// ctl. They run in the first process before the mount view is built
// (the host's /dev/net/tun is still there).
func captureOps(p *rawexec.Program, ctl int, names *capture.Names) error {
	// The layouts the kernel reads are LP64's, the full mode's CPUs.
	if unsafe.Sizeof(rtentry{}) != 120 || unsafe.Sizeof(in6Ifreq{}) != 24 || unsafe.Sizeof(in6Rtmsg{}) != 80 {
		return fmt.Errorf("capture: not built for this CPU; run with --capture off")
	}
	dev4, dev6, res4, _ := names.DeviceAddrs()
	const open = "capture: opening /dev/net/tun (sbx doctor checks it; --capture off runs without)"
	tun := p.Syscall(open, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/dev/net/tun"), rawexec.Imm(unix.O_RDWR|unix.O_CLOEXEC)).Save()
	idx := make([]byte, 4)
	binary.NativeEndian.PutUint32(idx, captureIndex)
	p.Syscall("capture: device index", unix.SYS_IOCTL, tun, rawexec.Imm(unix.TUNSETIFINDEX), rawexec.Bytes(idx))
	flags := make([]byte, 2)
	binary.NativeEndian.PutUint16(flags, unix.IFF_TUN|unix.IFF_NO_PI)
	p.Syscall("capture: creating the TUN device", unix.SYS_IOCTL, tun, rawexec.Imm(unix.TUNSETIFF), rawexec.Bytes(ifreq(flags)))
	// Persistent: the supervisor's close at the end of the run then only
	// detaches, and the device goes with the namespace, which the kernel
	// tears down in the background. Without it that close unregisters the
	// device and waits out an RCU barrier, 15-30 ms on this kernel, on
	// the path to sbx's exit (docs/benchmarks.md, "Capture"). The
	// command cannot take the device over: it holds no capability in the
	// namespace's user namespace (dropCapsOps) and the supervisor's
	// descriptor stays attached as long as the command runs.
	p.Syscall("capture: keeping the device", unix.SYS_IOCTL, tun, rawexec.Imm(unix.TUNSETPERSIST), rawexec.Imm(1))

	s4 := p.Syscall("capture: socket", unix.SYS_SOCKET, rawexec.Imm(unix.AF_INET), rawexec.Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), rawexec.Imm(0)).Save()
	mask := netip.AddrFrom4([4]byte{255, 254, 0, 0}) // capture.V4Range is a /15
	mtu := make([]byte, 4)
	binary.NativeEndian.PutUint32(mtu, capture.DefaultMTU)
	up := make([]byte, 2)
	// SIOCSIFFLAGS sets the changeable flags whole: a TUN device's own
	// are NOARP and MULTICAST (POINTOPOINT is kept by the kernel).
	binary.NativeEndian.PutUint16(up, unix.IFF_UP|unix.IFF_NOARP|unix.IFF_MULTICAST)
	for _, c := range []struct {
		label string
		req   uintptr
		arg   []byte
	}{
		{"capture: device address", unix.SIOCSIFADDR, ifreq(sockaddr4(dev4))},
		{"capture: device netmask", unix.SIOCSIFNETMASK, ifreq(sockaddr4(mask))},
		{"capture: device MTU", unix.SIOCSIFMTU, ifreq(mtu)},
		{"capture: device up", unix.SIOCSIFFLAGS, ifreq(up)},
	} {
		p.Syscall(c.label, unix.SYS_IOCTL, s4, rawexec.Imm(c.req), rawexec.Bytes(c.arg))
	}
	// The default route through the resolver's address, which lies on
	// the device's own prefix: no device pointer in the request.
	rt := &rtentry{flags: unix.RTF_UP | unix.RTF_GATEWAY}
	copy(rt.dst[:], sockaddr4(netip.IPv4Unspecified()))
	copy(rt.gateway[:], sockaddr4(res4))
	copy(rt.genmask[:], sockaddr4(netip.IPv4Unspecified()))
	p.Syscall("capture: IPv4 default route", unix.SYS_IOCTL, s4, rawexec.Imm(unix.SIOCADDRT), rawexec.Ptr(rt))
	p.Syscall("capture: socket", unix.SYS_CLOSE, s4)

	// IPv6 where the kernel has it: a machine without it gets IPv4 only.
	s6 := p.NewSlot()
	p.Syscall("capture: IPv6 socket", unix.SYS_SOCKET, rawexec.Imm(unix.AF_INET6), rawexec.Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), rawexec.Imm(0)).
		SaveTo(s6).Ignore(unix.EAFNOSUPPORT).SkipIfIgnored(3)
	a6 := &in6Ifreq{addr: dev6.As16(), prefixlen: 48, ifindex: captureIndex}
	// IPv6 disabled on the device (disable_ipv6) refuses the address.
	p.Syscall("capture: IPv6 device address", unix.SYS_IOCTL, s6, rawexec.Imm(unix.SIOCSIFADDR), rawexec.Ptr(a6)).
		Ignore(unix.EACCES).SkipIfIgnored(1)
	r6 := &in6Rtmsg{metric: 1024, flags: unix.RTF_UP, ifindex: captureIndex}
	p.Syscall("capture: IPv6 default route", unix.SYS_IOCTL, s6, rawexec.Imm(unix.SIOCADDRT), rawexec.Ptr(r6))
	p.Syscall("capture: IPv6 socket", unix.SYS_CLOSE, s6)

	sendOps(p, "capture: handing the device to the supervisor", ctl, "capture", tun)
	return nil
}

// serveCapture runs the stack on the device f until ctx is done, then
// closes f (the device, persistent, goes with the namespace).
func (ns *ctlSide) serveCapture(ctx context.Context, f *os.File) {
	defer ns.wg.Done()
	defer f.Close()
	err := capture.Serve(ctx, int(f.Fd()), capture.Config{Policy: ns.proxy, Names: ns.pl.Net.names})
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx: %v\n", err)
	}
}
