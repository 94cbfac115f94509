//go:build linux

package seccomp

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// runBPF interprets the classic BPF program p on a seccomp_data.
func runBPF(t *testing.T, p Program, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var a, x uint32
	var mem [16]uint32
	for pc, steps := 0, 0; steps < 100000; steps++ {
		if pc < 0 || pc*8+8 > len(p) {
			t.Fatalf("pc %d out of the program", pc)
		}
		in := p[pc*8:]
		code := binary.NativeEndian.Uint16(in)
		jt, jf, k := in[2], in[3], binary.NativeEndian.Uint32(in[4:])
		pc++
		src := k
		if code&unix.BPF_X != 0 {
			src = x
		}
		switch code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if k+4 > 64 {
				t.Fatalf("load beyond seccomp_data: %d", k)
			}
			a = binary.LittleEndian.Uint32(data[k:])
			continue
		case unix.BPF_LD | unix.BPF_IMM:
			a = k
			continue
		case unix.BPF_LD | unix.BPF_MEM:
			a = mem[k]
			continue
		case unix.BPF_LDX | unix.BPF_IMM:
			x = k
			continue
		case unix.BPF_LDX | unix.BPF_MEM:
			x = mem[k]
			continue
		case unix.BPF_ST:
			mem[k] = a
			continue
		case unix.BPF_STX:
			mem[k] = x
			continue
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
			continue
		case unix.BPF_MISC | unix.BPF_TXA:
			a = x
			continue
		case unix.BPF_RET | unix.BPF_K:
			return k
		case unix.BPF_RET | unix.BPF_A:
			return a
		}
		switch code & 0x07 {
		case unix.BPF_ALU:
			switch code & 0xf0 {
			case unix.BPF_AND:
				a &= src
			case unix.BPF_OR:
				a |= src
			case unix.BPF_ADD:
				a += src
			case unix.BPF_SUB:
				a -= src
			case unix.BPF_RSH:
				a >>= src
			case unix.BPF_LSH:
				a <<= src
			default:
				t.Fatalf("unknown ALU op %#x", code)
			}
			continue
		case unix.BPF_JMP:
			var cond bool
			switch code & 0xf0 {
			case unix.BPF_JA:
				pc += int(k)
				continue
			case unix.BPF_JEQ:
				cond = a == src
			case unix.BPF_JGT:
				cond = a > src
			case unix.BPF_JGE:
				cond = a >= src
			case unix.BPF_JSET:
				cond = a&src != 0
			default:
				t.Fatalf("unknown jump %#x", code)
			}
			if cond {
				pc += int(jt)
			} else {
				pc += int(jf)
			}
			continue
		}
		t.Fatalf("unknown instruction %#x", code)
	}
	t.Fatal("program does not end")
	return 0
}

// Notify changes what the refused calls return and what the calls that
// make a directory entry return, and nothing else: run in the
// interpreter on every system call number and on socket(2) with every
// family, type and protocol that matters, the Notify program answers
// USER_NOTIF exactly where the plain one answers EPERM, except the calls
// refused quietly (socket(AF_UNIX), MPTCP), which stay EPERM, and on
// mkdir, mknod, rename, link and symlink in all their forms (noted for
// the after-run check); ENOSYS (clone3), the kills and every other
// allowed call are unchanged.
func TestNotifyOnlyChangesRefusals(t *testing.T) {
	createdNrAmd64 := map[uint32]bool{}
	for _, name := range createdEntries {
		if nr, ok := sysNr("amd64", name); ok {
			createdNrAmd64[nr] = true
		}
	}
	if len(createdNrAmd64) != len(createdEntries) {
		t.Fatalf("amd64 numbers of %q: %v", createdEntries, createdNrAmd64)
	}
	const (
		x86_64 = auditArchX86_64
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		notify = unix.SECCOMP_RET_USER_NOTIF
	)
	type call struct {
		nr    uint32
		args  []uint64
		quiet bool
	}
	var calls []call
	for nr := uint32(0); nr < 470; nr++ {
		calls = append(calls, call{nr: nr, args: []uint64{0, 0, 0}})
	}
	for fam := uint64(0); fam < 48; fam++ {
		for _, typ := range []uint64{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_SEQPACKET, unix.SOCK_PACKET} {
			for _, proto := range []uint64{0, unix.IPPROTO_TCP, unix.NETLINK_AUDIT, unix.IPPROTO_MPTCP} {
				args := []uint64{fam, typ, proto}
				quiet := fam == unix.AF_UNIX || (proto == unix.IPPROTO_MPTCP && (fam == unix.AF_INET || fam == unix.AF_INET6))
				calls = append(calls, call{unix.SYS_SOCKET, args, quiet}, call{nr: unix.SYS_SOCKETPAIR, args: args})
			}
		}
	}
	for _, c := range Configs() {
		if c.Notify || c.UnixConnect {
			continue
		}
		plain, err := Compile(c)
		if err != nil {
			continue
		}
		n := c
		n.Notify = true
		withNotify, err := Compile(n)
		if err != nil {
			t.Fatalf("%+v: %v", n, err)
		}
		notified := 0
		for _, cl := range calls {
			p, got := runBPF(t, plain, x86_64, cl.nr, cl.args...), runBPF(t, withNotify, x86_64, cl.nr, cl.args...)
			want := p
			if p == eperm && !cl.quiet {
				want = notify
				notified++
			}
			if createdNrAmd64[cl.nr] && p == unix.SECCOMP_RET_ALLOW {
				want = notify
			}
			if got != want {
				t.Errorf("%+v: call %d %v: %#x with Notify, %#x without; want %#x", c, cl.nr, cl.args, got, p, want)
			}
		}
		if notified == 0 {
			t.Errorf("%+v: no refusal became a notification", c)
		}
	}
}

// TestProbesAreRefused: every probe is a call the filter refuses, under a
// name the notification table knows, with a stated reason; a probe the
// filter did not refuse would be a report about nothing.
func TestProbesAreRefused(t *testing.T) {
	for _, p := range Probes {
		if p.Errno == 0 || p.Runtime == "" || p.Reason == "" {
			t.Errorf("%s: errno, runtime and reason are required", p.Syscall)
		}
		if _, ok := ProbeFor(p.Syscall); !ok {
			t.Errorf("%s: ProbeFor does not find it", p.Syscall)
		}
		if !slices.Contains(deniedCalls, p.Syscall) {
			t.Errorf("%s: not a call the filter refuses", p.Syscall)
		}
	}
	if _, ok := ProbeFor("io_uring_enter"); ok {
		t.Error("io_uring_enter must stay reported")
	}
}
