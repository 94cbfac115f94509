package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The namespace test: the kernel's own TCP/IP in a fresh user+network
// namespace, a real TUN device, and sbx's stack on its other end in the
// host namespace, the way the supervisor will run it. Nothing leaves the
// machine: the namespace has no route but the device, and the proxy
// dials the host's 127.0.0.1 only.

const (
	childEnv  = "SBX_CAPTURE_TUN_CHILD"
	tunPrefix = "fd12:3456:789a::/48"
)

// openTUN opens /dev/net/tun as an IFF_TUN|IFF_NO_PI|IFF_VNET_HDR device
// named name, as sbx makes its device (Config.VnetHdr).
func openTUN(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	var ifr [unix.IFNAMSIZ + 64]byte
	copy(ifr[:], name)
	*(*uint16)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("TUNSETIFF %s: %w", name, e)
	}
	return fd, nil
}

func TestTUNNamespace(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("child side runs in TestTUNNamespaceChild")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) to configure the device")
	}
	// The child's root maps to our uid, so it can open the device iff we
	// can. Distributions make /dev/net/tun 0666; some containers 0600.
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("this user cannot open /dev/net/tun (%v): capture would be unavailable here", err)
	}
	unix.Close(fd)

	port, seen := loopbackServer(t)
	p, rec := testProxy(t, []string{"test.localhost", "other.localhost", fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("[::1]:%d", port)}, []string{"denied.localhost"})
	names, err := NewNames(netip.MustParsePrefix(tunPrefix))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[0])
	childEnd := os.NewFile(uintptr(pair[1]), "fd-pass")
	var out strings.Builder
	cmd := exec.Command(os.Args[0], "-test.run=^TestTUNNamespaceChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", "SBX_CAPTURE_TUN_PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{childEnd}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a child in a new user+network namespace: %v", err)
	}
	childEnd.Close()
	// Receive the device from the child, as the supervisor will.
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(pair[0], buf, oob, 0)
	var tun int = -1
	if err == nil {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil && len(msgs) == 1 {
			if fds, perr := unix.ParseUnixRights(&msgs[0]); perr == nil && len(fds) == 1 {
				tun = fds[0]
			}
		}
	}
	if tun < 0 {
		_ = cmd.Wait()
		t.Fatalf("no device from the child (%v):\n%s", err, out.String())
	}
	defer unix.Close(tun)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, tun, Config{Policy: p, Names: names, VnetHdr: true}) }()
	_, _ = unix.Write(pair[0], []byte{1}) // go
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err = <-waitErr:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		err = <-waitErr
	}
	cancel()
	if serr := <-served; serr != nil {
		t.Error(serr)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	t.Logf("child:\n%s", out.String())
	for _, want := range []string{fmt.Sprintf("test.localhost:%d/v4", port), fmt.Sprintf("test.localhost:%d/v6", port)} {
		select {
		case got := <-seen:
			if got != want {
				t.Errorf("server saw %q, want %q", got, want)
			}
		default:
			t.Errorf("server did not see %s", want)
		}
	}
	select {
	case got := <-seen:
		t.Errorf("server saw an extra request %q", got)
	default:
	}
	var kinds []string
	for _, r := range rec.all() {
		kinds = append(kinds, r.Proto+" "+r.Host+" "+r.Rule)
	}
	want := []string{"dns denied.localhost denied.localhost", "capture test.localhost sni-mismatch",
		"capture test.localhost address-guard", "udp test.localhost protocol",
		"icmp test.localhost protocol", "icmp test.localhost protocol"}
	if strings.Join(kinds, "; ") != strings.Join(want, "; ") {
		t.Errorf("records:\n got %q\nwant %q", kinds, want)
	}
}

// TestTUNNamespaceChild is the sandbox's side of TestTUNNamespace: it
// runs only as that test's child, in the new namespaces.
func TestTUNNamespaceChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as TestTUNNamespace's child")
	}
	port, _ := strconv.Atoi(os.Getenv("SBX_CAPTURE_TUN_PORT"))
	names, _ := NewNames(netip.MustParsePrefix(tunPrefix))
	s4, s6, r4, _ := names.DeviceAddrs()
	fd, err := openTUN("sbx0")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", "sbx0", "mtu", strconv.Itoa(DefaultMTU), "up"},
		{"addr", "add", s4.String() + "/15", "dev", "sbx0"},
		{"-6", "addr", "add", s6.String() + "/48", "dev", "sbx0", "nodad"},
		{"route", "add", "default", "dev", "sbx0"},
		{"-6", "route", "add", "default", "dev", "sbx0"},
	} {
		if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		t.Fatalf("send the device: %v", err)
	}
	unix.Close(fd)
	if _, err := unix.Read(3, make([]byte, 1)); err != nil { // the stack is up
		t.Fatal(err)
	}
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", netip.AddrPortFrom(r4, 53).String())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// An allowed name, over IPv4 and IPv6, to the host's loopback server.
	for _, fam := range []string{"ip4", "ip6"} {
		addrs, err := res.LookupNetIP(ctx, fam, "test.localhost")
		if err != nil || len(addrs) != 1 {
			t.Fatalf("lookup %s test.localhost: %v %v", fam, addrs, err)
		}
		t.Logf("test.localhost %s: %v", fam, addrs[0])
		target := netip.AddrPortFrom(addrs[0], uint16(port)).String()
		hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, target)
			}}}
		resp, err := hc.Get(fmt.Sprintf("http://test.localhost:%d/v%s", port, fam[2:]))
		if err != nil {
			t.Fatalf("GET over %s: %v", fam, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello from the host" {
			t.Fatalf("body %q", body)
		}
	}

	// A denied name: NXDOMAIN.
	_, err = res.LookupNetIP(ctx, "ip4", "denied.localhost")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Errorf("denied.localhost: %v, want not found", err)
	}

	// SNI naming another allowed name: refused, nothing reaches the server.
	addrs, _ := res.LookupNetIP(ctx, "ip4", "test.localhost")
	c, err := net.Dial("tcp", netip.AddrPortFrom(addrs[0], uint16(port)).String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _ = tlsHello(c, "other.localhost") }()
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("SNI mismatch: read %d, %v", n, err)
	}
	c.Close()

	// An allowed name at a port the address guard refuses (127.0.0.1 is
	// listed for one port only): ECONNREFUSED, decided before the
	// handshake.
	if c, err := net.Dial("tcp", netip.AddrPortFrom(addrs[0], uint16(port+1)).String()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused port: %v, want ECONNREFUSED", err)
		if c != nil {
			c.Close()
		}
	}

	// UDP to another port: ICMP port unreachable, so ECONNREFUSED.
	u, err := net.Dial("udp", netip.AddrPortFrom(addrs[0], 9999).String())
	if err != nil {
		t.Fatal(err)
	}
	_ = u.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = u.Write([]byte("datagram"))
	_, err = u.Read(make([]byte, 10))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("UDP to 9999: %v, want ECONNREFUSED", err)
	}
	u.Close()

	// A ping, twice, to each family's address: no reply (the stack would
	// answer for any address), one record per address.
	addrs6, _ := res.LookupNetIP(ctx, "ip6", "test.localhost")
	for _, dst := range []netip.Addr{addrs[0], addrs6[0]} {
		if reply := ping(t, dst); reply {
			t.Errorf("ping %v was answered", dst)
		}
	}
}

// ping sends two ICMP echo requests to dst from a raw socket and reports
// whether any reply came within a second.
func ping(t *testing.T, dst netip.Addr) bool {
	dst = dst.Unmap()
	family, proto, typ := unix.AF_INET6, unix.IPPROTO_ICMPV6, byte(128)
	var sa unix.Sockaddr = &unix.SockaddrInet6{Addr: dst.As16()}
	if dst.Is4() {
		family, proto, typ = unix.AF_INET, unix.IPPROTO_ICMP, 8
		sa = &unix.SockaddrInet4{Addr: dst.As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		t.Fatalf("raw socket: %v", err)
	}
	defer unix.Close(fd)
	msg := []byte{typ, 0, 0, 0, 0x12, 0x34, 0, 1, 's', 'b', 'x'}
	if !dst.Is6() { // the kernel sums ICMPv6 itself
		var sum uint32
		for i := 0; i+1 < len(msg); i += 2 {
			sum += uint32(msg[i])<<8 | uint32(msg[i+1])
		}
		sum += uint32(msg[len(msg)-1]) << 8
		for sum > 0xffff {
			sum = sum>>16 + sum&0xffff
		}
		msg[2], msg[3] = byte(^sum>>8), byte(^sum)
	}
	for i := 0; i < 2; i++ {
		if err := unix.Sendto(fd, msg, 0, sa); err != nil {
			t.Fatalf("ping %v: %v", dst, err)
		}
	}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
	buf := make([]byte, 1500)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return false
		}
		off := 0
		if !dst.Is6() {
			off = int(buf[0]&0x0f) * 4 // raw IPv4 sockets see the IP header
		}
		if n > off && (buf[off] == 0 || buf[off] == 129) { // echo reply
			return true
		}
	}
}
