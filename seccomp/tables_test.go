//go:build linux

package seccomp

import (
	"encoding/binary"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedCalls get EPERM unconditionally.
var deniedCalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "setns",
	"add_key", "request_key", "keyctl",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "quotactl",
	"acct", "swapon", "swapoff", "reboot", "syslog", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "uselib", "nfsservctl",
}

// audit architectures the tables are run against, besides their own.
const (
	auditArchI386 = 0x40000003
	auditArchARM  = 0x40000028 // 32-bit ARM, arm64's compat mode
	auditArchRV64 = 0xc00000f3
)

// auditArch is each target's own audit architecture.
var auditArch = map[string]uint32{"amd64": auditArchX86_64, "arm64": auditArchAArch64}

// extraNumbers are calls the filter never names but the tests run, by
// target (checked against libseccomp in TestSyscallNamesMatchLibseccomp).
var extraNumbers = map[string]map[string]uint32{
	"amd64": {"read": 0, "write": 1, "execve": 59, "newfstatat": 262},
	"arm64": {"read": 63, "write": 64, "execve": 221, "newfstatat": 79},
}

// sysNr is name's number on goarch, from the package's own table
// (sysNames) or extraNumbers; false when goarch has no such call.
func sysNr(goarch, name string) (uint32, bool) {
	if n, ok := extraNumbers[goarch][name]; ok {
		return n, true
	}
	for nr, nm := range sysNames[auditArch[goarch]] {
		if nm == name {
			return uint32(nr), true
		}
	}
	return 0, false
}

// sourceTable reads the programs embedded for goarch from
// filters_GOARCH.go, whichever architecture the tests run on: the arm64
// table is checked on amd64 machines too.
func sourceTable(t *testing.T, goarch string) (map[Config]Program, string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "filters_"+goarch+".go", nil, 0)
	if err != nil {
		t.Fatalf("%s: %v", goarch, err)
	}
	table := map[Config]Program{}
	version := ""
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok || len(vs.Values) != 1 {
				continue
			}
			switch vs.Names[0].Name {
			case "generatedWith":
				version, _ = strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			case "generated":
				for _, el := range vs.Values[0].(*ast.CompositeLit).Elts {
					pair := el.(*ast.CompositeLit).Elts
					var c Config
					cv := reflect.ValueOf(&c).Elem()
					for _, fe := range pair[0].(*ast.CompositeLit).Elts {
						kv := fe.(*ast.KeyValueExpr)
						cv.FieldByName(kv.Key.(*ast.Ident).Name).SetBool(kv.Value.(*ast.Ident).Name == "true")
					}
					prog, err := strconv.Unquote(pair[1].(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					table[c] = Program(prog)
				}
			}
		}
	}
	if len(table) == 0 || version == "" {
		t.Fatalf("filters_%s.go holds no programs", goarch)
	}
	return table, version
}

// runVM runs p in golang.org/x/net/bpf's interpreter, an implementation
// independent of runBPF. It loads words big-endian (network order), so
// each 32-bit field of seccomp_data is written big-endian at its native
// (little-endian) offset.
func runVM(t *testing.T, p Program, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	raw := make([]bpf.Instruction, len(p)/8)
	for i := range raw {
		in := p[i*8:]
		raw[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.NativeEndian.Uint32(in[4:])}.Disassemble()
	}
	vm, err := bpf.NewVM(raw)
	if err != nil {
		t.Fatalf("x/net/bpf rejects the program: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], nr)
	binary.BigEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
	}
	got, err := vm.Run(data)
	if err != nil {
		t.Fatalf("x/net/bpf: %v", err)
	}
	return uint32(got)
}

// TestEmbeddedFilters runs every embedded program of every target
// (amd64, arm64) in two interpreters on the calls the filter is about,
// with each target's own numbers: every denied call, the conditional
// rules, a set of calls that must pass, and calls made with every other
// audit architecture. TestGeneratedFilters checks the same bytes against
// libseccomp.
func TestEmbeddedFilters(t *testing.T) {
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		kill   = unix.SECCOMP_RET_KILL_PROCESS
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		notify = unix.SECCOMP_RET_USER_NOTIF
		// quiet: refused by the kernel whatever the configuration.
		quiet = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	for _, goarch := range []string{"amd64", "arm64"} {
		table, _ := sourceTable(t, goarch)
		if goarch == runtime.GOARCH {
			// What this build embeds is what the source says.
			for c, p := range table {
				if got, err := Compile(c); err != nil || string(got) != string(p) {
					t.Fatalf("%s %+v: Compile disagrees with filters_%s.go", goarch, c, goarch)
				}
			}
		}
		own := auditArch[goarch]
		foreign := []uint32{auditArchI386, auditArchARM, auditArchRV64, auditArchX86_64, auditArchAArch64}
		for _, c := range Configs() {
			p, ok := table[c]
			if (c.UnixConnect && c.AllowUnixSockets) || ((c.ObserveWrites || c.ObserveReads || c.ObserveNet) && !c.Notify) {
				if ok {
					t.Errorf("%s %+v: a program for an invalid combination", goarch, c)
				}
				continue
			}
			if !ok {
				t.Fatalf("%s %+v: no program", goarch, c)
			}
			eperm := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
			if c.Notify {
				eperm = notify
			}
			type tc struct {
				name string
				args []uint64
				want uint32
			}
			cases := []tc{
				{"read", nil, allow},
				{"write", nil, allow},
				{"execve", nil, allow},
				{"clone3", nil, enosys},
				{"clone", []uint64{uint64(unix.SIGCHLD)}, allow},
				{"clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
				{"unshare", []uint64{unix.CLONE_FILES}, allow},
				{"unshare", []uint64{unix.CLONE_NEWNS | unix.CLONE_FILES}, eperm},
				{"unshare", []uint64{unix.CLONE_NEWTIME}, eperm},
				{"ioctl", []uint64{0, unix.TCGETS}, allow},
				{"ioctl", []uint64{0, unix.TIOCSTI}, eperm},
				{"ioctl", []uint64{0, 0xdead00000000 | unix.TIOCSTI}, eperm},
				{"ioctl", []uint64{0, unix.TIOCLINUX}, eperm},
				{"socket", []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, allow},
				{"socket", []uint64{unix.AF_INET, unix.SOCK_RAW, 0}, eperm},
				{"socket", []uint64{unix.AF_INET6, unix.SOCK_PACKET, 0}, eperm},
				{"socket", []uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, quiet},
				{"socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
				{"socket", []uint64{1<<32 | unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
				{"socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, allow},
				{"socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, eperm},
				{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, allow},
				{"fchmod", nil, allow},
				{"newfstatat", nil, allow},
			}
			for _, name := range deniedCalls {
				cases = append(cases, tc{name, nil, eperm})
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
			// Network calls naming a destination (ObserveNet).
			sendtoAddr := uint32(allow)
			if c.ObserveNet {
				connectWant, sendtoAddr = notify, notify
			}
			cases = append(cases,
				tc{"socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, unixWant},
				tc{"socket", []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0}, unixWant},
				tc{"socket", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, unixDgram},
				tc{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, pairDgram},
				tc{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_RAW, 0}, pairDgram},
				tc{"connect", []uint64{3, 0, 16}, connectWant},
				tc{"socket", []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, dgramWant},
				tc{"socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, 0}, dgramWant},
				tc{"sendto", []uint64{3, 0x1000, 10, 0, 0, 0}, allow},
				tc{"sendto", []uint64{3, 0x1000, 10, 0, 0x2000, 16}, sendtoAddr},
				tc{"sendto", []uint64{3, 0x1000, 10, 0, 1 << 32, 16}, sendtoAddr},
				tc{"sendmsg", []uint64{3, 0x1000, 0}, allow},
				tc{"sendmmsg", []uint64{3, 0x1000, 2, 0}, allow},
			)
			// File calls: observed (notified, answered Continue) or allowed.
			rd, wr, wrOnly := uint32(allow), uint32(allow), uint32(allow)
			if c.ObserveReads {
				rd = notify
			}
			if c.ObserveWrites || c.ObserveReads {
				wr = notify
			}
			if c.ObserveWrites {
				wrOnly = notify
			}
			// New directory entries other than an open: notified under
			// Notify, for the after-run check (Config.Notify).
			cr := uint32(allow)
			if c.Notify || c.ObserveWrites {
				cr = notify
			}
			cases = append(cases,
				tc{"openat", []uint64{0, 0, unix.O_RDONLY | unix.O_CLOEXEC}, rd},
				tc{"open", []uint64{0, unix.O_RDONLY | unix.O_DIRECTORY}, rd},
				tc{"openat", []uint64{0, 0, unix.O_WRONLY}, wr},
				tc{"openat", []uint64{0, 0, unix.O_RDWR | unix.O_CLOEXEC}, wr},
				tc{"openat", []uint64{0, 0, unix.O_CREAT}, wr},
				tc{"openat", []uint64{0, 0, unix.O_TRUNC}, wr},
				tc{"openat", []uint64{0, 0, 1<<32 | unix.O_WRONLY}, wr},
				tc{"open", []uint64{0, unix.O_CREAT | unix.O_WRONLY}, wr},
				tc{"creat", nil, wr},
				tc{"openat2", nil, wr},
				tc{"mkdirat", nil, cr},
				tc{"unlinkat", nil, wrOnly},
				tc{"renameat2", nil, cr},
				tc{"rename", nil, cr},
				tc{"linkat", nil, cr},
				tc{"symlinkat", nil, cr},
				tc{"fchmodat", nil, wrOnly},
				tc{"fchownat", nil, wrOnly},
				tc{"truncate", nil, wrOnly},
			)
			// Set-id bits: refused (or notified, and then refused by the
			// supervisor) whatever else observes the call.
			for _, k := range setIDCases {
				want := map[string]uint32{"setid": eperm, "rd": rd, "wr": wr, "wrOnly": wrOnly, "created": cr, "allow": allow}[k.want]
				cases = append(cases, tc{k.name, k.args, want})
			}
			ran := 0
			for _, k := range cases {
				n, ok := sysNr(goarch, k.name)
				if !ok {
					continue // not a call of this architecture (open, creat, iopl on arm64)
				}
				ran++
				if got := runBPF(t, p, own, n, k.args...); got != k.want {
					t.Errorf("%s %+v: %s (nr %d, args %#x): got %#x, want %#x", goarch, c, k.name, n, k.args, got, k.want)
				}
				if got := runVM(t, p, own, n, k.args...); got != k.want {
					t.Errorf("%s %+v: x/net/bpf: %s (nr %d, args %#x): got %#x, want %#x", goarch, c, k.name, n, k.args, got, k.want)
				}
			}
			if ran < 60 {
				t.Errorf("%s %+v: only %d cases ran", goarch, c, ran)
			}
			// Any call made with another audit architecture kills:
			// i386 and x32 on amd64, 32-bit ARM on arm64.
			for _, arch := range foreign {
				if arch == own {
					continue
				}
				for _, n := range []uint32{0, 1, 59, 63, 221} {
					if got := runVM(t, p, arch, n); got != kill {
						t.Errorf("%s %+v: arch %#x call %d: got %#x, want kill", goarch, c, arch, n, got)
					}
				}
			}
			if goarch == "amd64" {
				if got := runBPF(t, p, own, 0|0x40000000); got != kill {
					t.Errorf("%s %+v: an x32 call: got %#x, want kill", goarch, c, got)
				}
			}
		}
	}
}

// setIDCases are calls with and without set-id bits in their mode, and
// what the filter does with them: "setid" is refused (EPERM, or the
// notification the supervisor answers EPERM); the others are what the
// call gets anyway ("rd" an open without write intent, "wr" one with,
// "wrOnly" an observed write, "allow" nothing).
var setIDCases = []struct {
	name string
	args []uint64
	want string
}{
	{"chmod", []uint64{0, 0o4755}, "setid"},
	{"chmod", []uint64{0, 0o2755}, "setid"},
	{"chmod", []uint64{0, 0o755}, "wrOnly"},
	{"chmod", []uint64{0, 0o1777}, "wrOnly"}, // sticky is not set-id
	{"chmod", []uint64{0, 0xffffffff00000000 | 0o4755}, "setid"},
	{"fchmod", []uint64{3, 0o6755}, "setid"},
	{"fchmod", []uint64{3, 0o755}, "allow"},
	{"fchmodat", []uint64{atFDCWD, 0, 0o6755}, "setid"},
	{"fchmodat", []uint64{atFDCWD, 0, 0o644}, "wrOnly"},
	{"fchmodat2", []uint64{atFDCWD, 0, 0o4000, unix.AT_SYMLINK_NOFOLLOW}, "setid"},
	{"fchmodat2", []uint64{atFDCWD, 0, 0o755, 0}, "wrOnly"},
	{"creat", []uint64{0, 0o4755}, "setid"},
	{"creat", []uint64{0, 0o644}, "wr"},
	{"open", []uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, "setid"},
	{"open", []uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o644}, "wr"},
	{"open", []uint64{0, unix.O_RDONLY, 0o6755}, "rd"}, // no create: the mode is not read
	{"openat", []uint64{atFDCWD, 0, unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, 0o2755}, "setid"},
	{"openat", []uint64{atFDCWD, 0, unix.O_TMPFILE | unix.O_RDWR, 0o4700}, "setid"},
	{"openat", []uint64{atFDCWD, 0, unix.O_RDONLY | unix.O_CLOEXEC, 0o6755}, "rd"},
	{"openat", []uint64{atFDCWD, 0, unix.O_CREAT | unix.O_WRONLY, 0o755}, "wr"},
	{"mkdir", []uint64{0, 0o2775}, "created"}, // the kernel drops set-id bits of mkdir's mode
	{"mkdir", []uint64{0, 0o755}, "created"},
	{"mkdirat", []uint64{atFDCWD, 0, 0o4755}, "created"},
	{"mkdirat", []uint64{atFDCWD, 0, 0o1777}, "created"},
	{"mknod", []uint64{0, unix.S_IFREG | 0o4755, 0}, "setid"},
	{"mknodat", []uint64{atFDCWD, 0, unix.S_IFREG | 0o2755, 0}, "setid"},
	{"mknodat", []uint64{atFDCWD, 0, unix.S_IFIFO | 0o644, 0}, "created"},
}

const atFDCWD = uint64(0xffffffffffffff9c) // AT_FDCWD (-100) as a register holds it

// SetIDMode, the supervisor's reading of a notified call, agrees with the
// filter on every case: refused exactly when the filter refuses.
func TestSetIDModeAgreesWithFilter(t *testing.T) {
	for _, k := range setIDCases {
		r := &Request{Syscall: k.name}
		copy(r.Args[:], k.args)
		_, got := SetIDMode(r)
		if got != (k.want == "setid") {
			t.Errorf("SetIDMode(%s %#o) = %v, the filter says %s", k.name, k.args, got, k.want)
		}
	}
	if _, ok := SetIDMode(&Request{Syscall: "openat2", Args: [6]uint64{0, 0, 0, 0o4755}}); ok {
		t.Error("openat2's arguments are pointers; SetIDMode must not read them as a mode")
	}
	if got := ModeString(0o106755); got != "mode 06755 (setuid, setgid)" {
		t.Errorf("ModeString = %q", got)
	}
}
