//go:build linux && cgo

package seccomp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"runtime"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// nsFlags are the clone/unshare flags that create namespaces.
var nsFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

const low32 = 0xffffffff

// targets are the architectures go generate ./seccomp compiles programs
// for, from any machine: libseccomp targets a foreign architecture as
// well as its own. Both are little-endian, as the exported bytes are.
var targets = map[string]libseccomp.ScmpArch{"amd64": libseccomp.ArchAMD64, "arm64": libseccomp.ArchARM64}

// compileLibseccomp builds the filter for c on this machine's
// architecture (compileFor).
func compileLibseccomp(c Config) (Program, error) { return compileFor(c, runtime.GOARCH) }

// compileFor builds the filter for c with libseccomp, for the Go
// architecture goarch, and exports it as BPF. This is the filter's
// definition: go generate ./seccomp runs it (TestGeneratedFilters -update)
// for every Config and every target and embeds the programs in
// filters_GOARCH.go, which is what sbx loads. It lives in a test file so
// that no sbx binary links libseccomp.
//
// The filter holds goarch's architecture alone, so its architecture check
// kills every other audit arch: i386 and x32 on amd64 (x32 by x32Guard),
// and 32-bit ARM (compat) on arm64. Rules are named, and libseccomp
// numbers them for the target; a call the target does not have (open,
// creat, mkdir … on arm64; iopl on arm64) is left out.
func compileFor(c Config, goarch string) (Program, error) {
	arch, ok := targets[goarch]
	if !ok {
		return nil, fmt.Errorf("seccomp: no target %s", goarch)
	}
	if c.UnixConnect && c.AllowUnixSockets {
		return nil, errors.New("seccomp: UnixConnect (an allow-list of Unix sockets) and AllowUnixSockets (every Unix socket) exclude each other")
	}
	if (c.ObserveWrites || c.ObserveReads) && !c.Notify {
		return nil, errors.New("seccomp: observing file calls needs Notify (a supervisor that answers)")
	}
	if c.ObserveNet && !c.Notify {
		return nil, errors.New("seccomp: observing network calls needs Notify (a supervisor that answers)")
	}
	// eperm is the action of every deny rule: EPERM from the kernel, or a
	// user notification that the supervisor answers (Notify).
	eperm := libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	if c.Notify {
		eperm = libseccomp.ActNotify
	}
	// quiet refuses in the kernel even with Notify: calls ordinary
	// programs make all the time, which are no sign of trouble and would
	// each cost a round trip to the supervisor only to be refused
	// unreported. socket(AF_UNIX): glibc tries nscd's socket on every
	// name and user lookup (a connect to a socket path is what is
	// decided and reported). MPTCP: Go (1.24+) tries it for every
	// listener before falling back to TCP.
	quiet := libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	f, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	defer f.Release()
	native, err := libseccomp.GetNativeArch()
	if err != nil {
		return nil, fmt.Errorf("seccomp: native arch: %w", err)
	}
	if arch != native {
		if err := f.AddArch(arch); err != nil {
			return nil, fmt.Errorf("seccomp: adding %s: %w", goarch, err)
		}
		if err := f.RemoveArch(native); err != nil {
			return nil, fmt.Errorf("seccomp: removing %s: %w", native, err)
		}
	}
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	// A binary tree of syscall numbers, not a chain: the kernel runs the
	// filter once per syscall number when it loads it (its action
	// cache), and a chain of ~250 comparisons made that 0.1 ms of every
	// run; and each filtered call walks the tree, not the chain.
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("seccomp: binary-tree optimization: %w", err)
	}
	// The loader sets no_new_privs itself; the exported program must not
	// depend on libseccomp doing it.
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp: nnp attribute: %w", err)
	}
	rule := func(name string, act libseccomp.ScmpAction, conds ...libseccomp.ScmpCondition) error {
		if sc, err := libseccomp.GetSyscallFromNameByArch(name, arch); err != nil || sc < 0 {
			return nil // not on the target
		}
		// A rule names a call in the native numbering; libseccomp
		// translates it for each architecture of the filter.
		sc, err := libseccomp.GetSyscallFromName(name)
		if err != nil {
			return fmt.Errorf("seccomp: %s is on %s but not known natively (%s): generate on an amd64 or arm64 machine", name, goarch, native)
		}
		if len(conds) == 0 {
			err = f.AddRule(sc, act)
		} else {
			err = f.AddRuleConditional(sc, act, conds)
		}
		if err != nil {
			return fmt.Errorf("seccomp: rule for %s: %w", name, err)
		}
		return nil
	}
	cond := func(arg uint, op libseccomp.ScmpCompareOp, v ...uint64) libseccomp.ScmpCondition {
		cd, err := libseccomp.MakeCondition(arg, op, v...)
		if err != nil {
			panic(err) // static arguments: a bug, not input
		}
		return cd
	}
	for _, name := range deniedCalls {
		if err := rule(name, eperm); err != nil {
			return nil, err
		}
	}
	if err := rule("clone3", libseccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return nil, err
	}
	for _, fl := range nsFlags {
		if err := rule("unshare", eperm, cond(0, libseccomp.CompareMaskedEqual, fl, fl)); err != nil {
			return nil, err
		}
		if err := rule("clone", eperm, cond(0, libseccomp.CompareMaskedEqual, fl, fl)); err != nil {
			return nil, err
		}
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		if err := rule("ioctl", eperm, cond(1, libseccomp.CompareMaskedEqual, low32, req)); err != nil {
			return nil, err
		}
	}
	// Socket families: everything the kernel knows except the allowed ones.
	allowed := map[uint64]bool{unix.AF_INET: true, unix.AF_INET6: true, unix.AF_NETLINK: true}
	if c.AllowUnixSockets {
		allowed[unix.AF_UNIX] = true
	}
	for fam := uint64(0); fam < 64; fam++ {
		if allowed[fam] || (fam == unix.AF_UNIX && c.UnixConnect) {
			continue
		}
		act := eperm
		if fam == unix.AF_UNIX {
			act = quiet
		}
		if err := rule("socket", act, cond(0, libseccomp.CompareMaskedEqual, low32, fam)); err != nil {
			return nil, err
		}
	}
	if !c.AllowUnixSockets {
		// Stream and seqpacket Unix sockets reach a socket path only
		// through connect(2), which the supervisor decides (UnixConnect)
		// or which needs socket(AF_UNIX), refused above. Every other
		// type is refused, socketpair included: a datagram socket from
		// socketpair sends to any path with sendto(2) (journald, syslog),
		// and unix_create turns SOCK_RAW into SOCK_DGRAM.
		calls := []string{"socketpair"}
		if c.UnixConnect {
			calls = append(calls, "socket")
		}
		for typ := uint64(0); typ <= 0xf; typ++ {
			if typ == unix.SOCK_STREAM || typ == unix.SOCK_SEQPACKET {
				continue
			}
			for _, call := range calls {
				act := eperm
				if call == "socket" {
					act = quiet
				}
				if err := rule(call, act,
					cond(0, libseccomp.CompareMaskedEqual, low32, unix.AF_UNIX),
					cond(1, libseccomp.CompareMaskedEqual, 0xf, typ)); err != nil {
					return nil, err
				}
			}
		}
	}
	if c.UnixConnect || c.ObserveNet {
		if err := rule("connect", libseccomp.ActNotify); err != nil {
			return nil, err
		}
	}
	if c.ObserveNet {
		// sendto with a destination; a plain send(2) is sendto with a
		// NULL one, not notified. sendmsg and sendmmsg are not: their
		// destination is in memory, so every one would be notified,
		// the sandbox's own hand-over of the listener (a sendmsg made
		// under the filter it hands over) included.
		if err := rule("sendto", libseccomp.ActNotify, cond(4, libseccomp.CompareNotEqual, 0)); err != nil {
			return nil, err
		}
	}
	if err := observeRules(c, rule, cond); err != nil {
		return nil, err
	}
	if err := setIDRules(eperm, rule, cond); err != nil {
		return nil, err
	}
	// Netlink: route only (getifaddrs); audit, uevents and the rest refused.
	for proto := uint64(1); proto < 32; proto++ {
		if err := rule("socket", eperm,
			cond(0, libseccomp.CompareMaskedEqual, low32, unix.AF_NETLINK),
			cond(2, libseccomp.CompareMaskedEqual, low32, proto)); err != nil {
			return nil, err
		}
	}
	for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
		// Raw and packet-style sockets.
		for _, typ := range []uint64{unix.SOCK_RAW, unix.SOCK_PACKET} {
			if err := rule("socket", eperm,
				cond(0, libseccomp.CompareMaskedEqual, low32, fam),
				cond(1, libseccomp.CompareMaskedEqual, 0xf, typ)); err != nil {
				return nil, err
			}
		}
		if !c.AllowDatagram {
			if err := rule("socket", eperm,
				cond(0, libseccomp.CompareMaskedEqual, low32, fam),
				cond(1, libseccomp.CompareMaskedEqual, 0xf, unix.SOCK_DGRAM)); err != nil {
				return nil, err
			}
		}
		if err := rule("socket", quiet,
			cond(0, libseccomp.CompareMaskedEqual, low32, fam),
			cond(2, libseccomp.CompareMaskedEqual, low32, unix.IPPROTO_MPTCP)); err != nil {
			return nil, err
		}
	}
	prog, err := export(f)
	if err != nil {
		return nil, err
	}
	if goarch == "amd64" {
		prog = append(x32Guard(), prog...)
	}
	return prog, nil
}

// observedWrites are the path-based calls that create, change or remove
// something whatever their arguments (Config.ObserveWrites). Calls on a
// descriptor (fchmod, ftruncate, ...) are not observed: the descriptor was
// opened, and observed, before.
var observedWrites = []string{
	"creat", "openat2",
	"mkdir", "mkdirat", "mknod", "mknodat", "rmdir", "unlink", "unlinkat",
	"rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
	"chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat", "truncate",
}

// writeIntent are the open flags that make an open a write.
var writeIntent = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC}

// observeRules adds the user notifications of Config.ObserveWrites and
// ObserveReads.
func observeRules(c Config, rule func(string, libseccomp.ScmpAction, ...libseccomp.ScmpCondition) error,
	cond func(uint, libseccomp.ScmpCompareOp, ...uint64) libseccomp.ScmpCondition) error {
	notify := libseccomp.ActNotify
	if c.Notify && !c.ObserveWrites {
		for _, name := range createdEntries {
			if err := rule(name, notify); err != nil {
				return err
			}
		}
	}
	if c.ObserveReads {
		for _, name := range []string{"open", "openat", "openat2", "creat"} {
			if err := rule(name, notify); err != nil {
				return err
			}
		}
	}
	if !c.ObserveWrites {
		return nil
	}
	for _, name := range observedWrites {
		if c.ObserveReads && (name == "creat" || name == "openat2") {
			continue
		}
		if err := rule(name, notify); err != nil {
			return err
		}
	}
	if c.ObserveReads {
		return nil
	}
	for _, fl := range writeIntent {
		if err := rule("open", notify, cond(1, libseccomp.CompareMaskedEqual, fl, fl)); err != nil {
			return err
		}
		if err := rule("openat", notify, cond(2, libseccomp.CompareMaskedEqual, fl, fl)); err != nil {
			return err
		}
	}
	return nil
}

// setIDRules refuses a set-id bit in the mode of every call that takes
// the mode as an argument (setIDCalls): chmod and its kin, creat, mknod,
// and open/openat when the flags create a file. With Notify the
// action is the notification, which the supervisor answers EPERM
// (SetIDMode) before anything else, observed calls included.
func setIDRules(act libseccomp.ScmpAction, rule func(string, libseccomp.ScmpAction, ...libseccomp.ScmpCondition) error,
	cond func(uint, libseccomp.ScmpCompareOp, ...uint64) libseccomp.ScmpCondition) error {
	for _, sc := range setIDCalls {
		for _, bit := range []uint64{modeSetUID, modeSetGID} {
			mode := cond(uint(sc.Mode), libseccomp.CompareMaskedEqual, bit, bit)
			if sc.Flags < 0 {
				if err := rule(sc.Name, act, mode); err != nil {
					return err
				}
				continue
			}
			for _, fl := range setIDOpenFlags {
				if err := rule(sc.Name, act, mode, cond(uint(sc.Flags), libseccomp.CompareMaskedEqual, fl, fl)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// export writes the BPF through a memfd: libseccomp before 2.6 has no
// in-memory export.
func export(f *libseccomp.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("sbx-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "sbx-seccomp")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	prog, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return nil, fmt.Errorf("seccomp: reading exported filter: %w", err)
	}
	return prog, nil
}

// x32Guard kills a process that makes an x32 system call (native arch,
// number with bit 30 set). libseccomp's x86_64 filter lets those through
// to the default action; kernels built with CONFIG_X86_X32_ABI would then
// run them. The guard is prepended; BPF jumps are relative, so the
// libseccomp program after it is unchanged.
func x32Guard() []byte {
	const (
		ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		archX8 = auditArchX86_64
	)
	ins := []unix.SockFilter{
		{Code: ldAbs, K: 4},                      // A = arch
		{Code: jeq, Jt: 0, Jf: 3, K: archX8},     // not x86_64: let libseccomp decide
		{Code: ldAbs, K: 0},                      // A = nr
		{Code: jge, Jt: 0, Jf: 1, K: 0x40000000}, // x32 bit set?
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
	}
	out := make([]byte, 0, 8*len(ins))
	for _, in := range ins {
		out = binary.NativeEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out
}

// libseccompVersion is the linked libseccomp's version.
func libseccompVersion() string {
	a, b, c := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

var update = flag.Bool("update", false, "rewrite filters_GOARCH.go from libseccomp (go generate ./seccomp)")

// TestGeneratedFilters checks the embedded programs of every target
// against libseccomp compiling the same Config now (the other target's
// table is read from its source file), or with -update writes them.
func TestGeneratedFilters(t *testing.T) {
	if *update {
		for goarch := range targets {
			var b bytes.Buffer
			fmt.Fprintf(&b, "// Code generated by go generate ./seccomp (TestGeneratedFilters -update) with libseccomp %s; DO NOT EDIT.\n\n", libseccompVersion())
			fmt.Fprintf(&b, "package seccomp\n\nconst generatedWith = %q\n\nvar generated = []generatedProgram{\n", libseccompVersion())
			for _, c := range Configs() {
				p, err := compileFor(c, goarch)
				if err != nil {
					fmt.Fprintf(&b, "\t// %#v: %v\n", c, err)
					continue
				}
				fmt.Fprintf(&b, "\t{%#v, %q},\n", c, string(p))
			}
			fmt.Fprintf(&b, "}\n")
			src, err := format.Source(bytes.ReplaceAll(b.Bytes(), []byte("seccomp.Config{"), []byte("Config{")))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("filters_"+goarch+".go", src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for goarch := range targets {
		table, version := sourceTable(t, goarch)
		if v := libseccompVersion(); v != version {
			t.Logf("%s: the embedded programs come from libseccomp %s, this machine has %s: their bytes may differ (TestTables still checks what they do); run go generate ./seccomp here to compare", goarch, version, v)
			continue
		}
		for _, c := range Configs() {
			want, werr := compileFor(c, goarch)
			got, ok := table[c]
			if werr != nil {
				if ok {
					t.Errorf("%s %+v: libseccomp refuses it (%v), yet a program is embedded", goarch, c, werr)
				}
				continue
			}
			if !ok || !bytes.Equal(got, want) {
				t.Errorf("%s %+v: the embedded program is not libseccomp's (%d vs %d bytes): run go generate ./seccomp", goarch, c, len(got), len(want))
			}
		}
	}
}
