package seccomp

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

type flagName struct {
	v    uint64
	name string
}

var cloneFlags = []flagName{
	{unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWNS, "CLONE_NEWNS"},
	{unix.CLONE_NEWPID, "CLONE_NEWPID"}, {unix.CLONE_NEWNET, "CLONE_NEWNET"},
	{unix.CLONE_NEWIPC, "CLONE_NEWIPC"}, {unix.CLONE_NEWUTS, "CLONE_NEWUTS"},
	{unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
	{unix.CLONE_VM, "CLONE_VM"}, {unix.CLONE_FS, "CLONE_FS"}, {unix.CLONE_FILES, "CLONE_FILES"},
	{unix.CLONE_SIGHAND, "CLONE_SIGHAND"}, {unix.CLONE_PIDFD, "CLONE_PIDFD"},
	{unix.CLONE_PTRACE, "CLONE_PTRACE"}, {unix.CLONE_VFORK, "CLONE_VFORK"},
	{unix.CLONE_PARENT, "CLONE_PARENT"}, {unix.CLONE_THREAD, "CLONE_THREAD"},
	{unix.CLONE_SYSVSEM, "CLONE_SYSVSEM"}, {unix.CLONE_SETTLS, "CLONE_SETTLS"},
	{unix.CLONE_PARENT_SETTID, "CLONE_PARENT_SETTID"}, {unix.CLONE_CHILD_CLEARTID, "CLONE_CHILD_CLEARTID"},
	{unix.CLONE_UNTRACED, "CLONE_UNTRACED"}, {unix.CLONE_CHILD_SETTID, "CLONE_CHILD_SETTID"},
	{unix.CLONE_IO, "CLONE_IO"},
}

// unshareFlags are the flags unshare(2) and setns(2) take; CLONE_NEWTIME
// lives in clone(2)'s exit-signal byte, so it is named only here.
var unshareFlags = append([]flagName{{unix.CLONE_NEWTIME, "CLONE_NEWTIME"}}, cloneFlags...)

func flagString(v uint64, names []flagName) string {
	var parts []string
	for _, f := range names {
		if v&f.v == f.v && f.v != 0 {
			parts = append(parts, f.name)
			v &^= f.v
		}
	}
	if v != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%#x", v))
	}
	return strings.Join(parts, "|")
}

var familyNames = []string{
	"AF_UNSPEC", "AF_UNIX", "AF_INET", "AF_AX25", "AF_IPX", "AF_APPLETALK", "AF_NETROM",
	"AF_BRIDGE", "AF_ATMPVC", "AF_X25", "AF_INET6", "AF_ROSE", "AF_DECnet", "AF_NETBEUI",
	"AF_SECURITY", "AF_KEY", "AF_NETLINK", "AF_PACKET", "AF_ASH", "AF_ECONET", "AF_ATMSVC",
	"AF_RDS", "AF_SNA", "AF_IRDA", "AF_PPPOX", "AF_WANPIPE", "AF_LLC", "AF_IB", "AF_MPLS",
	"AF_CAN", "AF_TIPC", "AF_BLUETOOTH", "AF_IUCV", "AF_RXRPC", "AF_ISDN", "AF_PHONET",
	"AF_IEEE802154", "AF_CAIF", "AF_ALG", "AF_NFC", "AF_VSOCK", "AF_KCM", "AF_QIPCRTR",
	"AF_SMC", "AF_XDP", "AF_MCTP",
}

// FamilyName names a socket address family ("AF_PACKET").
func FamilyName(f int) string {
	if f >= 0 && f < len(familyNames) {
		return familyNames[f]
	}
	return "AF_" + strconv.Itoa(f)
}

var sockTypes = map[uint64]string{
	unix.SOCK_STREAM: "SOCK_STREAM", unix.SOCK_DGRAM: "SOCK_DGRAM", unix.SOCK_RAW: "SOCK_RAW",
	unix.SOCK_RDM: "SOCK_RDM", unix.SOCK_SEQPACKET: "SOCK_SEQPACKET", unix.SOCK_DCCP: "SOCK_DCCP",
	unix.SOCK_PACKET: "SOCK_PACKET",
}

func sockTypeString(t uint64) string {
	t &= 0xffffffff
	s, ok := sockTypes[t&0xf]
	if !ok {
		s = "SOCK_" + strconv.FormatUint(t&0xf, 10)
	}
	if t&unix.SOCK_NONBLOCK != 0 {
		s += "|SOCK_NONBLOCK"
	}
	if t&unix.SOCK_CLOEXEC != 0 {
		s += "|SOCK_CLOEXEC"
	}
	if rest := t &^ (0xf | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC); rest != 0 {
		s += fmt.Sprintf("|%#x", rest)
	}
	return s
}

var netlinkProtos = map[uint64]string{
	0: "NETLINK_ROUTE", 2: "NETLINK_USERSOCK", 3: "NETLINK_FIREWALL", 4: "NETLINK_SOCK_DIAG",
	5: "NETLINK_NFLOG", 6: "NETLINK_XFRM", 7: "NETLINK_SELINUX", 8: "NETLINK_ISCSI",
	9: "NETLINK_AUDIT", 10: "NETLINK_FIB_LOOKUP", 11: "NETLINK_CONNECTOR", 12: "NETLINK_NETFILTER",
	13: "NETLINK_IP6_FW", 14: "NETLINK_DNRTMSG", 15: "NETLINK_KOBJECT_UEVENT", 16: "NETLINK_GENERIC",
	18: "NETLINK_SCSITRANSPORT", 19: "NETLINK_ECRYPTFS", 20: "NETLINK_RDMA", 21: "NETLINK_CRYPTO",
	22: "NETLINK_SMC",
}

var ipProtos = map[uint64]string{
	unix.IPPROTO_ICMP: "IPPROTO_ICMP", unix.IPPROTO_TCP: "IPPROTO_TCP", unix.IPPROTO_UDP: "IPPROTO_UDP",
	unix.IPPROTO_ICMPV6: "IPPROTO_ICMPV6", unix.IPPROTO_SCTP: "IPPROTO_SCTP",
	unix.IPPROTO_UDPLITE: "IPPROTO_UDPLITE", unix.IPPROTO_RAW: "IPPROTO_RAW",
	unix.IPPROTO_MPTCP: "IPPROTO_MPTCP",
}

func socketDetail(fam, typ, proto uint64) string {
	fam &= 0xffffffff
	proto &= 0xffffffff
	s := FamilyName(int(fam)) + ", " + sockTypeString(typ)
	switch {
	case fam == unix.AF_NETLINK && netlinkProtos[proto] != "":
		s += ", " + netlinkProtos[proto]
	case (fam == unix.AF_INET || fam == unix.AF_INET6) && ipProtos[proto] != "":
		s += ", " + ipProtos[proto]
	case fam == unix.AF_PACKET:
		// The protocol is an ethertype in network byte order.
		s += fmt.Sprintf(", protocol %#04x", (proto>>8|proto<<8)&0xffff)
	case proto != 0:
		s += ", protocol " + strconv.FormatUint(proto, 10)
	}
	return s
}

var ioctlNames = map[uint64]string{
	unix.TIOCSTI: "TIOCSTI", unix.TIOCLINUX: "TIOCLINUX",
	unix.TIOCSCTTY: "TIOCSCTTY", unix.TIOCSETD: "TIOCSETD", unix.TIOCCONS: "TIOCCONS",
}

var ptraceRequests = map[uint64]string{
	0: "PTRACE_TRACEME", 1: "PTRACE_PEEKTEXT", 2: "PTRACE_PEEKDATA", 3: "PTRACE_PEEKUSR",
	4: "PTRACE_POKETEXT", 5: "PTRACE_POKEDATA", 6: "PTRACE_POKEUSR", 7: "PTRACE_CONT",
	8: "PTRACE_KILL", 9: "PTRACE_SINGLESTEP", 16: "PTRACE_ATTACH", 17: "PTRACE_DETACH",
	24:     "PTRACE_SYSCALL",
	0x4200: "PTRACE_SETOPTIONS", 0x4201: "PTRACE_GETEVENTMSG", 0x4202: "PTRACE_GETSIGINFO",
	0x4203: "PTRACE_SETSIGINFO", 0x4204: "PTRACE_GETREGSET", 0x4205: "PTRACE_SETREGSET",
	0x4206: "PTRACE_SEIZE", 0x4207: "PTRACE_INTERRUPT", 0x4208: "PTRACE_LISTEN",
	0x4209: "PTRACE_PEEKSIGINFO", 0x420a: "PTRACE_GETSIGMASK", 0x420b: "PTRACE_SETSIGMASK",
	0x420c: "PTRACE_SECCOMP_GET_FILTER", 0x420d: "PTRACE_SECCOMP_GET_METADATA",
	0x420e: "PTRACE_GET_SYSCALL_INFO",
}

// ptraceX86 are x86's register requests; arm64 has none of these numbers.
var ptraceX86 = map[uint64]string{
	12: "PTRACE_GETREGS", 13: "PTRACE_SETREGS", 14: "PTRACE_GETFPREGS", 15: "PTRACE_SETFPREGS",
}

var mountFlags = []flagName{
	{unix.MS_RDONLY, "MS_RDONLY"}, {unix.MS_NOSUID, "MS_NOSUID"}, {unix.MS_NODEV, "MS_NODEV"},
	{unix.MS_NOEXEC, "MS_NOEXEC"}, {unix.MS_REMOUNT, "MS_REMOUNT"}, {unix.MS_BIND, "MS_BIND"},
	{unix.MS_MOVE, "MS_MOVE"}, {unix.MS_REC, "MS_REC"}, {unix.MS_PRIVATE, "MS_PRIVATE"},
	{unix.MS_SLAVE, "MS_SLAVE"}, {unix.MS_SHARED, "MS_SHARED"}, {unix.MS_UNBINDABLE, "MS_UNBINDABLE"},
}

// describeMax bounds the strings Describe reads from the target.
const describeMax = 256

// Describe decodes a notified call for a person: the syscall name and a
// detail such as "AF_PACKET, SOCK_RAW, protocol 0x0003", "TIOCSTI 'x'",
// "CLONE_NEWUSER|CLONE_NEWNS" or, for the mount family, the paths read
// from the target's memory. Strings from memory are quoted (Go syntax, so
// control characters cannot reach a terminal raw) and, like all target
// memory, may have changed since: they are for the record, never for a
// decision.
func Describe(r *Request) (syscall string, detail string) {
	a := r.Args
	str := func(i int) string {
		if a[i] == 0 {
			return "NULL"
		}
		s, err := ReadString(r.PID, uintptr(a[i]), describeMax)
		if err != nil {
			return "?"
		}
		return strconv.Quote(s)
	}
	fd := func(i int) string {
		if int32(a[i]) == unix.AT_FDCWD {
			return "AT_FDCWD"
		}
		return "fd " + strconv.Itoa(int(int32(a[i])))
	}
	syscall = r.Syscall
	switch syscall {
	case "socket", "socketpair":
		detail = socketDetail(a[0], a[1], a[2])
	case "connect":
		detail = fd(0)
		if fam, path, err := ReadSockaddr(r.PID, uintptr(a[1]), int(int32(a[2]))); err == nil {
			detail += ", " + FamilyName(fam)
			if fam == unix.AF_UNIX {
				detail += " " + strconv.Quote(path)
			}
		}
	case "ioctl":
		req := a[1] & 0xffffffff
		name, ok := ioctlNames[req]
		if !ok {
			name = fmt.Sprintf("%#x", req)
		}
		detail = fd(0) + ", " + name
		if req == unix.TIOCSTI || req == unix.TIOCLINUX {
			// The character pushed, or TIOCLINUX's subcode.
			var b [1]byte
			if n, err := ReadMem(r.PID, uintptr(a[2]), b[:]); err == nil && n == 1 {
				if req == unix.TIOCSTI {
					detail += " " + strconv.QuoteRune(rune(b[0]))
				} else {
					detail += " subcode " + strconv.Itoa(int(b[0]))
				}
			}
		}
		if a[1]>>32 != 0 {
			detail += fmt.Sprintf(" (request %#x)", a[1])
		}
	case "clone":
		flags := a[0]
		detail = flagString(flags&^0xff, cloneFlags)
		if sig := unix.Signal(flags & 0xff); sig != 0 {
			if n := unix.SignalName(sig); n != "" {
				detail += "|" + n
			} else {
				detail += fmt.Sprintf("|signal %d", sig)
			}
		}
	case "clone3":
		// struct clone_args starts with the flags.
		var b [8]byte
		if n, err := ReadMem(r.PID, uintptr(a[0]), b[:]); err == nil && n == 8 {
			detail = flagString(binary.NativeEndian.Uint64(b[:]), unshareFlags)
		}
	case "unshare":
		detail = flagString(a[0], unshareFlags)
	case "setns":
		detail = fd(0)
		if a[1] != 0 {
			detail += ", " + flagString(a[1], unshareFlags)
		}
	case "ptrace":
		req := a[0] & 0xffffffff
		name, ok := ptraceRequests[req]
		if !ok && r.Arch == auditArchX86_64 {
			name, ok = ptraceX86[req]
		}
		if !ok {
			name = "request " + strconv.FormatUint(req, 10)
		}
		detail = name
		if req != 0 {
			detail += ", pid " + strconv.Itoa(int(int32(a[1])))
		}
	case "process_vm_readv", "process_vm_writev":
		detail = "pid " + strconv.Itoa(int(int32(a[0])))
	case "mount":
		detail = "source " + str(0) + ", target " + str(1) + ", type " + str(2) +
			", " + flagString(a[3]&0xffffffff, mountFlags)
	case "umount2", "chroot", "swapon", "swapoff", "acct":
		detail = str(0)
	case "pivot_root":
		detail = "new_root " + str(0) + ", put_old " + str(1)
	case "open_tree", "fspick", "mount_setattr":
		detail = fd(0) + ", " + str(1)
	case "move_mount":
		detail = "from " + fd(0) + " " + str(1) + ", to " + fd(2) + " " + str(3)
	case "fsopen":
		detail = str(0)
	case "chmod", "creat", "mkdir", "mknod", "open":
		detail = str(0)
	case "fchmodat", "fchmodat2", "mkdirat", "mknodat", "openat":
		detail = fd(0) + ", " + str(1)
	case "fchmod":
		detail = fd(0)
	}
	if mode, ok := SetIDMode(r); ok {
		detail += ", " + ModeString(mode)
	}
	return syscall, detail
}
