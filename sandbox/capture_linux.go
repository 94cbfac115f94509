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
	"strings"
	"unsafe"

	"github.com/sbx-sh/sbx/capture"
	"github.com/sbx-sh/sbx/internal/netioctl"
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

// ifreq is struct ifreq for the capture device.
func ifreq(union []byte) []byte { return netioctl.Ifreq(captureDev, union) }

// captureOps create and configure the capture device and send it over
// ctl. They run in the first process before the mount view is built
// (the host's /dev/net/tun is still there).
func captureOps(p *rawexec.Program, ctl int, names *capture.Names) error {
	if err := captureLayouts(); err != nil {
		return err
	}
	const open = "capture: opening /dev/net/tun (sbx doctor checks it; --capture off runs without)"
	tun := p.Syscall(open, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/dev/net/tun"), rawexec.Imm(unix.O_RDWR|unix.O_CLOEXEC)).Save()
	deviceOps(p, tun, names)
	sendOps(p, "capture: handing the device to the supervisor", ctl, "capture", tun)
	return nil
}

// captureLayouts checks that the ioctl structures have the layouts the
// kernel reads: LP64's, the full mode's CPUs.
func captureLayouts() error {
	if netioctl.Layouts() != nil {
		return fmt.Errorf("capture: not built for this CPU; run with --capture off")
	}
	return nil
}

// earlyCaptureOps are captureOps for the early process (Prespawn), which
// shares the supervisor's descriptor table: the device is made off the
// supervisor's path while the plan is built, and its descriptor is moved
// to number fd, which reserveFD holds for it (the early process may not
// write the supervisor's memory). When /dev/net/tun cannot be opened
// nothing is made, and the first process tries again as without an early
// process. The supervisor looks at fd once rawexec.Early.Use says the
// early process is done (earlyDevice).
func earlyCaptureOps(p *rawexec.Program, names *capture.Names, fd int) error {
	if err := captureLayouts(); err != nil {
		return err
	}
	const open = "capture: opening /dev/net/tun"
	tun := p.NewSlot()
	c := p.Syscall(open, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/dev/net/tun"), rawexec.Imm(unix.O_RDWR|unix.O_CLOEXEC)).
		SaveTo(tun).Ignore(unix.EACCES, unix.EPERM, unix.ENOENT)
	from := p.Len()
	deviceOps(p, tun, names)
	p.Syscall("capture: the device for the supervisor", unix.SYS_DUP3, tun, rawexec.Int(fd), rawexec.Imm(unix.O_CLOEXEC))
	p.Syscall("capture: the device for the supervisor", unix.SYS_CLOSE, tun)
	c.SkipIfIgnored(p.Len() - from)
	return p.Err()
}

// earlyDevice reports whether fd is the capture device the early process
// made: a TUN device named captureDev.
func earlyDevice(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 10 || unix.Minor(st.Rdev) != 200 {
		return false
	}
	name, _, ok := tunIff(fd)
	return ok && name == captureDev
}

// vnetHdr reports whether the TUN device fd was made with IFF_VNET_HDR.
func vnetHdr(fd int) bool {
	_, flags, ok := tunIff(fd)
	return ok && flags&unix.IFF_VNET_HDR != 0
}

// tunIff is the name and flags of the TUN device attached to fd
// (TUNGETIFF); ok is false for anything else.
func tunIff(fd int) (name string, flags uint16, ok bool) {
	ifr := make([]byte, unix.IFNAMSIZ+24)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNGETIFF, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return "", 0, false
	}
	name, _, _ = strings.Cut(string(ifr[:unix.IFNAMSIZ]), "\x00")
	return name, binary.NativeEndian.Uint16(ifr[unix.IFNAMSIZ:]), true
}

// earlyDeviceFD is the descriptor number the early process moves its
// device to: the last of the 64 a process's table starts with (a higher
// one would grow the table the early process shares with the
// supervisor, which waits out an RCU grace period, 10-20 ms).
const earlyDeviceFD = 63

// reserveFD holds earlyDeviceFD with /dev/null until the early process
// puts its device there, so that nothing else in sbx gets that number
// meanwhile. It fails when the number is in use (inherited).
func reserveFD() (int, bool) {
	if _, err := unix.FcntlInt(earlyDeviceFD, unix.F_GETFD, 0); err == nil {
		return -1, false
	}
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	defer unix.Close(null)
	if null == earlyDeviceFD || unix.Dup3(null, earlyDeviceFD, unix.O_CLOEXEC) != nil {
		return -1, false
	}
	return earlyDeviceFD, true
}

// deviceOps make the TUN device on the open /dev/net/tun in slot tun,
// address it, bring it up and give it the default routes.
func deviceOps(p *rawexec.Program, tun rawexec.Slot, names *capture.Names) {
	dev4, dev6, res4, _ := names.DeviceAddrs()
	idx := make([]byte, 4)
	binary.NativeEndian.PutUint32(idx, captureIndex)
	p.Syscall("capture: device index", unix.SYS_IOCTL, tun, rawexec.Imm(unix.TUNSETIFINDEX), rawexec.Bytes(idx))
	flags := make([]byte, 2)
	// IFF_VNET_HDR: a virtio_net_hdr before every packet, which lets the
	// stack hand its TCP sums to this kernel's local delivery, which
	// skips them (capture.Config.VnetHdr). A kernel that refuses the flag
	// (EINVAL) gets the plain device; the supervisor asks the device
	// which it is (vnetHdr).
	binary.NativeEndian.PutUint16(flags, unix.IFF_TUN|unix.IFF_NO_PI|unix.IFF_VNET_HDR)
	p.Syscall("capture: creating the TUN device", unix.SYS_IOCTL, tun, rawexec.Imm(unix.TUNSETIFF), rawexec.Bytes(ifreq(flags))).
		Ignore(unix.EINVAL).SkipIfOK(1)
	plain := make([]byte, 2)
	binary.NativeEndian.PutUint16(plain, unix.IFF_TUN|unix.IFF_NO_PI)
	p.Syscall("capture: creating the TUN device", unix.SYS_IOCTL, tun, rawexec.Imm(unix.TUNSETIFF), rawexec.Bytes(ifreq(plain)))
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
		{"capture: device address", unix.SIOCSIFADDR, ifreq(netioctl.SockaddrIn(dev4))},
		{"capture: device netmask", unix.SIOCSIFNETMASK, ifreq(netioctl.SockaddrIn(mask))},
		{"capture: device MTU", unix.SIOCSIFMTU, ifreq(mtu)},
		{"capture: device up", unix.SIOCSIFFLAGS, ifreq(up)},
	} {
		p.Syscall(c.label, unix.SYS_IOCTL, s4, rawexec.Imm(c.req), rawexec.Bytes(c.arg))
	}
	// The default route through the resolver's address, which lies on
	// the device's own prefix: no device pointer in the request.
	rt := &netioctl.Rtentry{Flags: unix.RTF_UP | unix.RTF_GATEWAY}
	copy(rt.Dst[:], netioctl.SockaddrIn(netip.IPv4Unspecified()))
	copy(rt.Gateway[:], netioctl.SockaddrIn(res4))
	copy(rt.Genmask[:], netioctl.SockaddrIn(netip.IPv4Unspecified()))
	p.Syscall("capture: IPv4 default route", unix.SYS_IOCTL, s4, rawexec.Imm(unix.SIOCADDRT), rawexec.Ptr(rt))
	p.Syscall("capture: socket", unix.SYS_CLOSE, s4)

	// IPv6 where the kernel has it: a machine without it gets IPv4 only.
	s6 := p.NewSlot()
	p.Syscall("capture: IPv6 socket", unix.SYS_SOCKET, rawexec.Imm(unix.AF_INET6), rawexec.Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), rawexec.Imm(0)).
		SaveTo(s6).Ignore(unix.EAFNOSUPPORT).SkipIfIgnored(3)
	a6 := &netioctl.In6Ifreq{Addr: dev6.As16(), Prefixlen: 48, Ifindex: captureIndex}
	// IPv6 disabled on the device (disable_ipv6) refuses the address.
	p.Syscall("capture: IPv6 device address", unix.SYS_IOCTL, s6, rawexec.Imm(unix.SIOCSIFADDR), rawexec.Ptr(a6)).
		Ignore(unix.EACCES).SkipIfIgnored(1)
	r6 := &netioctl.In6Rtmsg{Metric: 1024, Flags: unix.RTF_UP, Ifindex: captureIndex}
	p.Syscall("capture: IPv6 default route", unix.SYS_IOCTL, s6, rawexec.Imm(unix.SIOCADDRT), rawexec.Ptr(r6))
	p.Syscall("capture: IPv6 socket", unix.SYS_CLOSE, s6)
}

// unusedDeviceOps take down a device the early process made for a run
// that turned out to have no capture (settings that turn it off): down,
// it has no routes, and the command's traffic fails at once as without.
func unusedDeviceOps(p *rawexec.Program) {
	s := p.Syscall("capture: unused device", unix.SYS_SOCKET, rawexec.Imm(unix.AF_INET), rawexec.Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), rawexec.Imm(0)).Save()
	p.Syscall("capture: unused device down", unix.SYS_IOCTL, s, rawexec.Imm(unix.SIOCSIFFLAGS), rawexec.Bytes(ifreq(make([]byte, 2)))).Ignore(unix.ENODEV)
	p.Syscall("capture: unused device", unix.SYS_CLOSE, s)
}

// serveCapture runs the stack on the device f until ctx is done, then
// closes f (the device, persistent, goes with the namespace).
func (ns *ctlSide) serveCapture(ctx context.Context, f *os.File) {
	defer ns.wg.Done()
	defer f.Close()
	err := capture.Serve(ctx, int(f.Fd()), capture.Config{Policy: ns.proxy, Names: ns.pl.Net.names, Started: relaying, VnetHdr: vnetHdr(int(f.Fd()))})
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx: %v\n", err)
	}
}
