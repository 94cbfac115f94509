//go:build linux

package main

// Probes against the capture device (network.capture): the command must
// keep no way to change sbx0, its addresses or routes, to reach the TUN
// driver, or to hold the device's descriptor.
//
// Harmless outside a sandbox: every call names its device, and the only
// devices accepted are "sbx0", which exists only in an sbx sandbox's own
// network namespace (anywhere else each call fails with ENODEV before it
// changes anything), and "lo" when the probe runs in a user namespace
// other than the initial one (the tests' control, in a network namespace
// of its own: capabilities there never reach the host's namespaces).

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/sbx-sh/sbx/internal/netioctl"
	"golang.org/x/sys/unix"
)

// initialUserNS reports whether the probe runs in the initial user
// namespace (whose uid_map maps every id to itself).
func initialUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true // unknown: assume the worst
	}
	f := strings.Fields(string(b))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

func ioctlBytes(fd int, req uintptr, arg []byte) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&arg[0])))
	return errno(e)
}

// capdev DEV: every way to change the device DEV with ioctls and
// rtnetlink: down, another address, another MTU, its default route
// deleted, a route for 127.0.0.0/8 through it, the same over netlink.
// Each request names DEV (the routes by device, never "the default
// route" alone).
func capdev(dev string) int {
	switch {
	case dev == "sbx0":
	case dev == "lo" && !initialUserNS():
	default:
		fmt.Fprintf(os.Stderr, "attack: capdev: refusing device %q (sbx0, or lo in a user namespace of its own)\n", dev)
		return 2
	}
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		report("capdev "+dev, err)
		return 1
	}
	report("capdev "+dev, nil, "index="+strconv.Itoa(ifi.Index))
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		report("socket", err)
		return 1
	}
	defer unix.Close(s)
	// The new address stays on the device's own prefix.
	addr := netip.MustParseAddr("198.18.0.3")
	if dev == "lo" {
		addr = netip.MustParseAddr("127.0.0.2")
	}

	fl := netioctl.Ifreq(dev, nil)
	err = ioctlBytes(s, unix.SIOCGIFFLAGS, fl)
	flags := binary.NativeEndian.Uint16(fl[unix.IFNAMSIZ:])
	report("SIOCGIFFLAGS", err, fmt.Sprintf("up=%v", flags&unix.IFF_UP != 0))
	down := make([]byte, 2)
	binary.NativeEndian.PutUint16(down, flags&^unix.IFF_UP)
	report("SIOCSIFFLAGS down", ioctlBytes(s, unix.SIOCSIFFLAGS, netioctl.Ifreq(dev, down)))
	report("SIOCSIFADDR", ioctlBytes(s, unix.SIOCSIFADDR, netioctl.Ifreq(dev, netioctl.SockaddrIn(addr))))
	mtu := make([]byte, 4)
	binary.NativeEndian.PutUint32(mtu, 1280)
	report("SIOCSIFMTU", ioctlBytes(s, unix.SIOCSIFMTU, netioctl.Ifreq(dev, mtu)))

	devName, _ := unix.BytePtrFromString(dev)
	del := &netioctl.Rtentry{Flags: unix.RTF_UP, Dev: uintptr(unsafe.Pointer(devName))}
	copy(del.Dst[:], netioctl.SockaddrIn(netip.IPv4Unspecified()))
	copy(del.Genmask[:], netioctl.SockaddrIn(netip.IPv4Unspecified()))
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s), unix.SIOCDELRT, uintptr(unsafe.Pointer(del)))
	report("SIOCDELRT default", errno(e))
	add := &netioctl.Rtentry{Flags: unix.RTF_UP, Dev: uintptr(unsafe.Pointer(devName))}
	copy(add.Dst[:], netioctl.SockaddrIn(netip.MustParseAddr("127.0.0.0")))
	copy(add.Genmask[:], netioctl.SockaddrIn(netip.MustParseAddr("255.0.0.0")))
	_, _, e = unix.Syscall(unix.SYS_IOCTL, uintptr(s), unix.SIOCADDRT, uintptr(unsafe.Pointer(add)))
	report("SIOCADDRT 127.0.0.0/8", errno(e))
	runtime.KeepAlive(devName)

	netlinkProbes(ifi.Index, addr)
	return 0
}

// nlAttr is one rtattr.
func nlAttr(typ uint16, data []byte) []byte {
	l := unix.SizeofRtAttr + len(data)
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[unix.SizeofRtAttr:], data)
	return b
}

func u32(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}

// netlinkProbes sends rtnetlink requests for the device index idx and
// reports each acknowledgement's error.
func netlinkProbes(idx int, addr netip.Addr) {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		report("netlink socket", err)
		return
	}
	defer unix.Close(s)
	_ = unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 3})
	if err := unix.Bind(s, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		report("netlink bind", err)
		return
	}
	oif := nlAttr(unix.RTA_OIF, u32(uint32(idx)))
	rtmsg := func(family, dstLen, table, proto, scope, typ uint8) []byte {
		return []byte{family, dstLen, 0, 0, table, proto, scope, typ, 0, 0, 0, 0}
	}
	lo := netip.MustParseAddr("127.0.0.0").As4()
	a := addr.As4()
	ifinfo := make([]byte, unix.SizeofIfInfomsg)
	ifinfo[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(ifinfo[4:], uint32(idx))
	binary.NativeEndian.PutUint32(ifinfo[8:], 0)            // flags: not up
	binary.NativeEndian.PutUint32(ifinfo[12:], unix.IFF_UP) // change: up
	ifaddr := []byte{unix.AF_INET, 32, 0, unix.RT_SCOPE_HOST, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(ifaddr[4:], uint32(idx))
	const create = unix.NLM_F_CREATE | unix.NLM_F_EXCL
	for i, m := range []struct {
		name  string
		typ   uint16
		flags uint16
		body  []byte
	}{
		{"RTM_DELROUTE default", unix.RTM_DELROUTE, 0,
			append(rtmsg(unix.AF_INET, 0, unix.RT_TABLE_MAIN, 0, unix.RT_SCOPE_NOWHERE, 0), oif...)},
		{"RTM_DELROUTE default6", unix.RTM_DELROUTE, 0,
			append(rtmsg(unix.AF_INET6, 0, unix.RT_TABLE_MAIN, 0, unix.RT_SCOPE_NOWHERE, 0), oif...)},
		{"RTM_NEWROUTE 127.0.0.0/8", unix.RTM_NEWROUTE, create,
			append(append(rtmsg(unix.AF_INET, 8, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_LINK, unix.RTN_UNICAST), nlAttr(unix.RTA_DST, lo[:])...), oif...)},
		{"RTM_NEWLINK down", unix.RTM_NEWLINK, 0, ifinfo},
		{"RTM_NEWADDR", unix.RTM_NEWADDR, create,
			append(append(ifaddr, nlAttr(unix.IFA_LOCAL, a[:])...), nlAttr(unix.IFA_ADDRESS, a[:])...)},
	} {
		msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(m.body))
		msg = append(msg, m.body...)
		binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
		binary.NativeEndian.PutUint16(msg[4:], m.typ)
		binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|m.flags)
		binary.NativeEndian.PutUint32(msg[8:], uint32(i+1))
		if err := unix.Sendto(s, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			report(m.name, err)
			continue
		}
		report(m.name, nlAck(s, uint32(i+1)))
	}
}

// nlAck reads the acknowledgement of request seq: nil or its errno.
func nlAck(s int, seq uint32) error {
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(s, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return syscall.Errno(-code)
			}
			return nil
		}
	}
}

// tun DIR: open the TUN clone device, make a node of its own (character
// 10,200) in DIR and open that, and on each descriptor that opened ask
// for a device (TUNSETIFF "sbxatk0", a new one: never sbx0), which is
// closed at once and so goes away.
func tun(dir string) {
	try := func(name, path string) {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		report("open "+name, err)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		flags := make([]byte, 2)
		binary.NativeEndian.PutUint16(flags, unix.IFF_TUN|unix.IFF_NO_PI)
		report("TUNSETIFF "+name, ioctlBytes(fd, unix.TUNSETIFF, netioctl.Ifreq("sbxatk0", flags)))
	}
	_, err := os.Stat("/dev/net")
	report("stat /dev/net", err)
	try("/dev/net/tun", "/dev/net/tun")
	node := filepath.Join(dir, fmt.Sprintf("sbx-tun-%d", os.Getpid()))
	err = unix.Mknod(node, unix.S_IFCHR|0o600, int(unix.Mkdev(10, 200)))
	report("mknod", err)
	if err == nil {
		try("mknod", node)
		_ = os.Remove(node)
	}
}

// tunfds: every descriptor of every process this one can see that points
// at the TUN driver ("/dev/net/tun" or "anon_inode:[tun]" style names).
// Prints one "tunfd PID FD: TARGET" line for each it finds, then
// "list /proc/self/fd" and "list /proc/1/fd" with their errno, and
// "tunfds: OK N" with the count.
func tunfds() {
	found := 0
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd"
		entries, err := os.ReadDir(dir)
		if p.Name() == "1" {
			report("list /proc/1/fd", err, strconv.Itoa(len(entries)))
		}
		for _, e := range entries {
			l := make([]byte, 4096)
			n, err := unix.Readlink(dir+"/"+e.Name(), l)
			if err == nil && strings.Contains(string(l[:n]), "tun") {
				fmt.Printf("tunfd %s %s: %s\n", p.Name(), e.Name(), l[:n])
				found++
			}
		}
	}
	entries, err := os.ReadDir("/proc/self/fd")
	report("list /proc/self/fd", err, strconv.Itoa(len(entries)))
	report("tunfds", nil, strconv.Itoa(found))
}

// netns: a child in a new user and network namespace of its own, which
// lists its interfaces and dials the capture's resolver address; a
// namespace that was made has only its own lo and no route.
func netns() {
	c := exec.Command(self(), "netns-inside")
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	report("clone_newuser_newnet", c.Run())
}

func netnsInside() {
	ifs, err := net.Interfaces()
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	report("netns interfaces", err, strings.Join(names, ","))
	if err != nil || len(names) != 1 || names[0] != "lo" {
		return // not a fresh namespace: dial nothing
	}
	c, err := net.DialTimeout("tcp4", "198.18.0.2:53", 2*time.Second)
	if err == nil {
		c.Close()
	}
	report("netns dial 198.18.0.2:53", err)
}

// bindover SRC DST: bind-mount SRC over DST (undone when it worked).
func bindover(src, dst string) {
	err := unix.Mount(src, dst, "", unix.MS_BIND, "")
	if err == nil {
		_ = unix.Unmount(dst, unix.MNT_DETACH)
	}
	report("bind "+dst, err)
}
