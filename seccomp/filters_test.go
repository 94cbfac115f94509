//go:build linux && amd64

package seccomp

import (
	"encoding/binary"
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

// TestEmbeddedFilters runs every embedded program on the calls the
// filter is about, so the embedded bytes are checked against the
// documented deny list without libseccomp.
func TestEmbeddedFilters(t *testing.T) {
	const (
		x86_64 = auditArchX86_64
		i386   = 0x40000003
		allow  = unix.SECCOMP_RET_ALLOW
		kill   = unix.SECCOMP_RET_KILL_PROCESS
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		notify = unix.SECCOMP_RET_USER_NOTIF
	)
	for _, c := range Configs() {
		p, err := Compile(c)
		if (c.UnixConnect && c.AllowUnixSockets) || ((c.ObserveWrites || c.ObserveReads) && !c.Notify) {
			if err == nil {
				t.Errorf("%+v: compiled, but it is not a valid combination", c)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		// eperm is what a refused call gets: EPERM, or a notification
		// the supervisor answers with EPERM.
		eperm := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		if c.Notify {
			eperm = notify
		}
		// quiet: refused by the kernel whatever the configuration.
		const quiet = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		type tc struct {
			name string
			arch uint32
			nr   uint32
			args []uint64
			want uint32
		}
		cases := []tc{
			{"read", x86_64, unix.SYS_READ, nil, allow},
			{"execve", x86_64, unix.SYS_EXECVE, nil, allow},
			{"i386 call", i386, 1, nil, kill},
			{"x32 call", x86_64, unix.SYS_READ | 0x40000000, nil, kill},
			{"clone3", x86_64, unix.SYS_CLONE3, nil, enosys},
			{"clone plain", x86_64, unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, allow},
			{"clone newuser", x86_64, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
			{"unshare files", x86_64, unix.SYS_UNSHARE, []uint64{unix.CLONE_FILES}, allow},
			{"unshare newns", x86_64, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWNS | unix.CLONE_FILES}, eperm},
			{"unshare newtime", x86_64, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWTIME}, eperm},
			{"ioctl TCGETS", x86_64, unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, allow},
			{"ioctl TIOCSTI", x86_64, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, eperm},
			{"ioctl TIOCSTI high bits", x86_64, unix.SYS_IOCTL, []uint64{0, 0xdead00000000 | unix.TIOCSTI}, eperm},
			{"ioctl TIOCLINUX", x86_64, unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, eperm},
			{"socket inet stream", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, allow},
			{"socket inet raw", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_RAW, 0}, eperm},
			{"socket inet6 packet", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_PACKET, 0}, eperm},
			{"socket inet6 mptcp", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, quiet},
			{"socket packet", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
			{"socket family high bits", x86_64, unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
			{"socket netlink route", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, allow},
			{"socket netlink audit", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, eperm},
			{"socketpair unix stream", x86_64, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, allow},
		}
		for _, n := range []uint32{
			unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
			unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
			unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_OPEN_TREE,
			unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
			unix.SYS_MOUNT_SETATTR, unix.SYS_SETNS, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
			unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_KEXEC_LOAD,
			unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
			unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_LOOKUP_DCOOKIE, unix.SYS_QUOTACTL,
			unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
			unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
			unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS_NFSSERVCTL,
		} {
			cases = append(cases, tc{"denied call", x86_64, n, nil, eperm})
		}
		unixWant, unixDgram, pairDgram, dgramWant, connectWant := uint32(quiet), uint32(quiet), eperm, eperm, uint32(allow)
		if c.AllowUnixSockets {
			unixWant, unixDgram, pairDgram = allow, allow, allow
		}
		if c.UnixConnect {
			unixWant, connectWant = allow, notify
		}
		if c.AllowDatagram {
			dgramWant = allow
		}
		cases = append(cases,
			tc{"socket unix", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, unixWant},
			tc{"socket unix seqpacket", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0}, unixWant},
			tc{"socket unix dgram", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, unixDgram},
			tc{"socketpair unix dgram", x86_64, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, pairDgram},
			tc{"socketpair unix raw", x86_64, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_RAW, 0}, pairDgram},
			tc{"connect", x86_64, unix.SYS_CONNECT, []uint64{3, 0, 16}, connectWant},
			tc{"socket inet dgram", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, dgramWant},
			tc{"socket inet6 dgram", x86_64, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, 0}, dgramWant},
		)
		// File calls: observed (notified, answered Continue) or allowed.
		rd, wr := uint32(allow), uint32(allow)
		if c.ObserveReads {
			rd = notify
		}
		if c.ObserveWrites || c.ObserveReads {
			wr = notify
		}
		wrOnly := uint32(allow) // write calls that are not opens
		if c.ObserveWrites {
			wrOnly = notify
		}
		cases = append(cases,
			tc{"openat rdonly", x86_64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDONLY | unix.O_CLOEXEC}, rd},
			tc{"open rdonly", x86_64, unix.SYS_OPEN, []uint64{0, unix.O_RDONLY | unix.O_DIRECTORY}, rd},
			tc{"openat wronly", x86_64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_WRONLY}, wr},
			tc{"openat rdwr", x86_64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDWR | unix.O_CLOEXEC}, wr},
			tc{"openat creat rdonly", x86_64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT}, wr},
			tc{"openat trunc", x86_64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_TRUNC}, wr},
			tc{"openat wronly high bits", x86_64, unix.SYS_OPENAT, []uint64{0, 0, 1<<32 | unix.O_WRONLY}, wr},
			tc{"open creat", x86_64, unix.SYS_OPEN, []uint64{0, unix.O_CREAT | unix.O_WRONLY}, wr},
			tc{"creat", x86_64, unix.SYS_CREAT, nil, wr},
			tc{"openat2", x86_64, unix.SYS_OPENAT2, nil, wr},
			tc{"mkdirat", x86_64, unix.SYS_MKDIRAT, nil, wrOnly},
			tc{"unlinkat", x86_64, unix.SYS_UNLINKAT, nil, wrOnly},
			tc{"renameat2", x86_64, unix.SYS_RENAMEAT2, nil, wrOnly},
			tc{"rename", x86_64, unix.SYS_RENAME, nil, wrOnly},
			tc{"linkat", x86_64, unix.SYS_LINKAT, nil, wrOnly},
			tc{"symlinkat", x86_64, unix.SYS_SYMLINKAT, nil, wrOnly},
			tc{"fchmodat", x86_64, unix.SYS_FCHMODAT, nil, wrOnly},
			tc{"fchownat", x86_64, unix.SYS_FCHOWNAT, nil, wrOnly},
			tc{"truncate", x86_64, unix.SYS_TRUNCATE, nil, wrOnly},
			tc{"fchmod (a descriptor)", x86_64, unix.SYS_FCHMOD, nil, allow},
			tc{"newfstatat", x86_64, unix.SYS_NEWFSTATAT, nil, allow},
		)
		for _, k := range cases {
			if got := runBPF(t, p, k.arch, k.nr, k.args...); got != k.want {
				t.Errorf("%+v: %s (nr %d, args %#x): got %#x, want %#x", c, k.name, k.nr, k.args, got, k.want)
			}
		}
	}
}

// Notify changes what the refused calls return and nothing else: run in
// the interpreter on every system call number and on socket(2) with
// every family, type and protocol that matters, the Notify program
// answers USER_NOTIF exactly where the plain one answers EPERM, except
// the calls refused quietly (socket(AF_UNIX), MPTCP), which stay EPERM;
// ENOSYS (clone3), the kills and every allowed call are unchanged.
func TestNotifyOnlyChangesRefusals(t *testing.T) {
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
			if got != want {
				t.Errorf("%+v: call %d %v: %#x with Notify, %#x without; want %#x", c, cl.nr, cl.args, got, p, want)
			}
		}
		if notified == 0 {
			t.Errorf("%+v: no refusal became a notification", c)
		}
	}
}
