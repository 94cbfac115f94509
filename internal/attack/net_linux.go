//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dial NETWORK ADDR: connect (tcp, tcp6, udp, udp6) to ADDR and send one
// line; for TCP also read one line back. Prints "dial NETWORK ADDR: OK
// reply" or the errno. A UDP send "succeeding" only means the datagram
// left the socket: the test checks its own listener received nothing.
func dial(network, addr string) {
	name := "dial " + network + " " + addr
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		report(name, err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(c, "probe from the sandbox\n"); err != nil {
		report(name, err)
		return
	}
	if strings.HasPrefix(network, "udp") {
		report(name, nil, "sent")
		return
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	report(name, err, strings.TrimSpace(line))
}

// get URL: an HTTP GET with Go's default client, which honours the
// HTTP_PROXY / HTTPS_PROXY / NO_PROXY environment.
func get(url string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		report("get "+url, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	report("get "+url, nil, resp.Status, strings.TrimSpace(string(b)))
}

// serve NETWORK ADDR: listen, print "listening", answer one connection
// with "hello from inside", exit.
func serve(network, addr string) {
	l, err := net.Listen(network, addr)
	if err != nil {
		report("listen "+addr, err)
		return
	}
	defer l.Close()
	fmt.Println("listening")
	os.Stdout.Sync()
	c, err := l.Accept()
	if err != nil {
		report("accept", err)
		return
	}
	fmt.Fprintln(c, "hello from inside")
	c.Close()
	report("served", nil)
}

// unix PATH...: connect to each Unix socket path, send a line, read one.
func dialUnix(paths []string) {
	for _, p := range paths {
		name := "unix " + p
		c, err := net.DialTimeout("unix", p, 3*time.Second)
		if err != nil {
			report(name, err)
			continue
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintln(c, "probe from the sandbox")
		line, err := bufio.NewReader(c).ReadString('\n')
		report(name, err, strings.TrimSpace(line))
		c.Close()
	}
}

// denyOne makes exactly one system call of a kind the sandbox refuses,
// with raw syscalls (so neither libc nor the Go runtime adds or retries
// one), and reports its result.
func denyOne(name string) {
	var e syscall.Errno
	buf := make([]byte, 8)
	switch name {
	case "ptrace":
		_, _, e = unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, 1, 0, 0, 0, 0)
		if e == 0 {
			_, _, _ = unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, 1, 0, 0, 0, 0)
		}
	case "process_vm_readv":
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&buf[0])), Len: 8}}
		_, _, e = unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, 1, uintptr(unsafe.Pointer(&local[0])), 1, uintptr(unsafe.Pointer(&remote[0])), 1, 0)
	case "io_uring_setup":
		var params [120]byte
		var fd uintptr
		fd, _, e = unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
	case "io_uring_enter":
		// No ring: the kernel would answer EBADF; the filter refuses it
		// first.
		_, _, e = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, ^uintptr(0), 0, 0, 0, 0, 0)
	case "unshare":
		_, _, e = unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS, 0, 0)
	case "mount":
		src, _ := unix.BytePtrFromString("none")
		dst, _ := unix.BytePtrFromString("/nonexistent-sbx-probe")
		fs, _ := unix.BytePtrFromString("tmpfs")
		_, _, e = unix.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(src)), uintptr(unsafe.Pointer(dst)), uintptr(unsafe.Pointer(fs)), 0, 0, 0)
	case "socket_packet":
		var fd uintptr
		fd, _, e = unix.RawSyscall(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
	case "tiocsti":
		c := byte('Z')
		_, _, e = unix.RawSyscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	default:
		fmt.Fprintf(os.Stderr, "attack: deny: unknown call %q\n", name)
		os.Exit(2)
	}
	report("deny "+name, errno(e))
}

// flood makes n refused system calls (ptrace PTRACE_SEIZE of pid 1) and
// reports how many were refused with EPERM.
func flood(n int) {
	refused := 0
	for i := 0; i < n; i++ {
		_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, 1, 0, 0, 0, 0)
		if e == unix.EPERM {
			refused++
		} else if e == 0 {
			_, _, _ = unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, 1, 0, 0, 0, 0)
		}
	}
	report("flood", nil, strconv.Itoa(refused))
}

// netNone ADDR NAME: the calls that reach for the network under --net
// none, each once: a TCP connect to ADDR:443, a UDP connect to ADDR:53
// (glibc's resolver), a UDP sendto of a DNS query for NAME to ADDR:53
// (musl's), and the same three to 127.0.0.1 (the sandbox's own
// loopback, ports nothing listens on). It first reads /proc/net/dev and
// refuses, sending nothing, unless its network namespace holds the
// loopback interface alone: then no datagram or SYN can leave it,
// whatever ADDR is.
func netNone(addr, name string) int {
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		report("netnone interfaces", err)
		return 1
	}
	var ifs []string
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, ':'); i > 0 {
			ifs = append(ifs, strings.TrimSpace(line[:i]))
		}
	}
	if len(ifs) != 1 || ifs[0] != "lo" {
		fmt.Printf("netnone: refusing: interfaces %q, not lo alone\n", ifs)
		return 1
	}
	for _, dst := range []string{addr, "127.0.0.1"} {
		ip := net.ParseIP(dst).To4()
		if ip == nil {
			usage()
		}
		var a [4]byte
		copy(a[:], ip)
		tcp, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			report("netnone socket", err)
			return 1
		}
		report("tcp connect "+dst+":443", unix.Connect(tcp, &unix.SockaddrInet4{Addr: a, Port: 443}))
		unix.Close(tcp)
		for _, how := range []string{"connect", "sendto"} {
			udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				report("netnone socket", err)
				return 1
			}
			sa := &unix.SockaddrInet4{Addr: a, Port: 53}
			if how == "connect" {
				err = unix.Connect(udp, sa)
			} else {
				err = unix.Sendto(udp, dnsQuery(name), 0, sa)
			}
			report("udp "+how+" "+dst+":53", err)
			unix.Close(udp)
		}
	}
	return 0
}

// dnsQuery is a DNS query for name's A record.
func dnsQuery(name string) []byte {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(name, ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 1, 0, 1)
}
