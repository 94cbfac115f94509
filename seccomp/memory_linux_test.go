package seccomp

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// These tests read the test process's own memory: process_vm_readv and
// /proc/self/mem need no privilege for that, and need no cgo.

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func TestReadMem(t *testing.T) {
	src := []byte("hello, memory")
	buf := make([]byte, len(src))
	n, err := ReadMem(os.Getpid(), addrOf(src), buf)
	if err != nil || n != len(src) || string(buf) != string(src) {
		t.Fatalf("ReadMem: %d, %v, %q", n, err, buf)
	}
	clear(buf)
	n, err = readProcMem(os.Getpid(), addrOf(src), buf)
	if err != nil || n != len(src) || string(buf) != string(src) {
		t.Fatalf("readProcMem: %d, %v, %q", n, err, buf)
	}
	runtime.KeepAlive(src)
	if _, err := ReadMem(os.Getpid(), 0, buf); err == nil {
		t.Error("reading address 0 succeeded")
	}
}

// twoPages maps a readable page followed by an inaccessible one and
// returns the readable page.
func twoPages(t *testing.T) []byte {
	page := os.Getpagesize()
	m, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	if err := unix.Mprotect(m[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return m[:page]
}

func TestReadString(t *testing.T) {
	pid := os.Getpid()
	p := twoPages(t)
	// A string that ends right before the inaccessible page.
	s := "/run/docker.sock"
	off := len(p) - len(s) - 1
	copy(p[off:], s+"\x00")
	got, err := ReadString(pid, addrOf(p)+uintptr(off), 4096)
	if err != nil || got != s {
		t.Fatalf("ReadString at the end of a page: %q, %v", got, err)
	}
	// No NUL before the inaccessible page: an error, not a hang or garbage.
	copy(p[len(p)-4:], "abcd")
	if got, err := ReadString(pid, addrOf(p)+uintptr(len(p)-4), 4096); err == nil {
		t.Errorf("unterminated string read as %q", got)
	}
	// Longer than max.
	copy(p, strings.Repeat("a", 100)+"\x00")
	if _, err := ReadString(pid, addrOf(p), 50); !errors.Is(err, unix.ENAMETOOLONG) {
		t.Errorf("long string: %v", err)
	}
	if got, err := ReadString(pid, addrOf(p), 100); err != nil || len(got) != 100 {
		t.Errorf("string of exactly max bytes: %d, %v", len(got), err)
	}
	if _, err := ReadString(pid, 0, 10); err == nil {
		t.Error("NULL read as a string")
	}
}

func TestReadSockaddr(t *testing.T) {
	pid := os.Getpid()
	sa := func(path string, extra int) ([]byte, int) {
		b := make([]byte, unix.SizeofSockaddrUnix)
		*(*uint16)(unsafe.Pointer(&b[0])) = unix.AF_UNIX
		copy(b[2:], path)
		return b, 2 + len(path) + extra
	}
	for _, c := range []struct {
		path  string
		extra int
		want  string
	}{
		{"/tmp/x.sock", 1, "/tmp/x.sock"},
		{"/tmp/x.sock", 0, "/tmp/x.sock"},                // not NUL-terminated: the length ends it
		{"/tmp/x.sock\x00junk", 0, "/tmp/x.sock"},        // the first NUL ends it
		{"\x00abstract\x00name", 0, "@abstract\x00name"}, // abstract: every byte counts
		{"", 0, ""}, // unnamed
	} {
		b, n := sa(c.path, c.extra)
		fam, path, err := ReadSockaddr(pid, addrOf(b), n)
		if err != nil || fam != unix.AF_UNIX || path != c.want {
			t.Errorf("%q: %d %q %v, want %q", c.path, fam, path, err, c.want)
		}
	}
	in := make([]byte, unix.SizeofSockaddrInet4)
	*(*uint16)(unsafe.Pointer(&in[0])) = unix.AF_INET
	if fam, path, err := ReadSockaddr(pid, addrOf(in), len(in)); err != nil || fam != unix.AF_INET || path != "" {
		t.Errorf("inet: %d %q %v", fam, path, err)
	}
	if _, _, err := ReadSockaddr(pid, addrOf(in), 129); !errors.Is(err, unix.EINVAL) {
		t.Errorf("oversized address: %v", err)
	}
	if _, _, err := ReadSockaddr(pid, 8, 16); !errors.Is(err, unix.EFAULT) {
		t.Errorf("bad pointer: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	pid := os.Getpid()
	arch := uint32(auditArchX86_64)
	if runtime.GOARCH == "arm64" {
		arch = auditArchAArch64
	}
	nr := func(name string) int {
		for n, s := range sysNames[arch] {
			if s == name {
				return n
			}
		}
		t.Fatalf("%s not in the table", name)
		return -1
	}
	cstr := func(s string) uint64 {
		b := append([]byte(s), 0)
		t.Cleanup(func() { runtime.KeepAlive(b) })
		return uint64(addrOf(b))
	}
	esc := byte('\x1b')
	clonePtr := uint64(unix.CLONE_NEWUSER | unix.CLONE_NEWNET)
	unixSa := make([]byte, unix.SizeofSockaddrUnix)
	*(*uint16)(unsafe.Pointer(&unixSa[0])) = unix.AF_UNIX
	copy(unixSa[2:], "/var/run/docker.sock")
	for _, c := range []struct {
		name string
		args [6]uint64
		want string
	}{
		{"socket", [6]uint64{unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, "AF_PACKET, SOCK_RAW, protocol 0x0003"},
		{"socket", [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, 9}, "AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_AUDIT"},
		{"socket", [6]uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, "AF_INET6, SOCK_STREAM, IPPROTO_MPTCP"},
		{"socket", [6]uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, 0}, "AF_UNIX, SOCK_DGRAM|SOCK_NONBLOCK"},
		{"socket", [6]uint64{99, 1, 0}, "AF_99, SOCK_STREAM"},
		{"ioctl", [6]uint64{0, unix.TIOCSTI, uint64(uintptr(unsafe.Pointer(&esc)))}, `fd 0, TIOCSTI '\x1b'`},
		{"ioctl", [6]uint64{3, 1<<32 | unix.TIOCLINUX, 0}, "fd 3, TIOCLINUX (request 0x10000541c)"},
		{"clone", [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS | uint64(unix.SIGCHLD)}, "CLONE_NEWUSER|CLONE_NEWNS|SIGCHLD"},
		{"clone3", [6]uint64{uint64(uintptr(unsafe.Pointer(&clonePtr))), 88}, "CLONE_NEWUSER|CLONE_NEWNET"},
		{"unshare", [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWTIME | 1<<40}, "CLONE_NEWTIME|CLONE_NEWUSER|0x10000000000"},
		{"setns", [6]uint64{4, unix.CLONE_NEWNET}, "fd 4, CLONE_NEWNET"},
		{"ptrace", [6]uint64{unix.PTRACE_ATTACH, 42}, "PTRACE_ATTACH, pid 42"},
		{"ptrace", [6]uint64{unix.PTRACE_TRACEME}, "PTRACE_TRACEME"},
		{"ptrace", [6]uint64{0x4206, 7}, "PTRACE_SEIZE, pid 7"},
		{"process_vm_readv", [6]uint64{1}, "pid 1"},
		{"mount", [6]uint64{cstr("/host"), cstr("/mnt"), 0, unix.MS_BIND | unix.MS_REC}, `source "/host", target "/mnt", type NULL, MS_BIND|MS_REC`},
		{"mount", [6]uint64{cstr("none"), cstr("/proc\n"), cstr("proc"), 0}, `source "none", target "/proc\n", type "proc", 0x0`},
		{"umount2", [6]uint64{cstr("/")}, `"/"`},
		{"pivot_root", [6]uint64{cstr("."), cstr("old")}, `new_root ".", put_old "old"`},
		{"move_mount", [6]uint64{uint64(0xffffffff_ffffff9c), cstr("a"), 5, cstr("")}, `from AT_FDCWD "a", to fd 5 ""`},
		{"open_tree", [6]uint64{uint64(0xffffff9c), cstr("/etc")}, `AT_FDCWD, "/etc"`},
		{"connect", [6]uint64{3, uint64(addrOf(unixSa)), 2 + 20 + 1}, `fd 3, AF_UNIX "/var/run/docker.sock"`},
	} {
		r := &Request{PID: pid, Arch: arch, Nr: nr(c.name), Syscall: SyscallName(arch, nr(c.name)), Args: c.args}
		sc, detail := Describe(r)
		if sc != c.name || detail != c.want {
			t.Errorf("%s %x: %s %q, want %q", c.name, c.args, sc, detail, c.want)
		}
	}
	runtime.KeepAlive(&esc)
	runtime.KeepAlive(&clonePtr)
	runtime.KeepAlive(unixSa)
	if got := SyscallName(arch, 100000); got != "syscall#100000" {
		t.Errorf("unknown syscall named %q", got)
	}
	if (&Request{}).Valid() {
		t.Error("a Request not from a Listener is valid")
	}
}
