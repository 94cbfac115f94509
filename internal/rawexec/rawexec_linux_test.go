//go:build linux && (amd64 || arm64)

package rawexec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// These tests start real children on the real kernel. They pass as root
// (ParentMap with the full id map) and as an unprivileged user (SelfMap).

const allNS = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

var testEnv = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}

// nsAttr returns an Attr for a child in new user, mount, pid, net, ipc and
// uts namespaces with the id-map mode this user can use.
func nsAttr() *Attr {
	a := &Attr{Cloneflags: allNS, IDMap: SelfMap, Env: testEnv, PidFD: true}
	if os.Getuid() == 0 {
		a.IDMap = ParentMap
	}
	return a
}

type result struct {
	stdout, stderr string
	status         unix.WaitStatus
	viaEarly       bool // the first process was cloned by an early process
}

// runSh starts `sh -c script` after prog with stdin /dev/null and stdout
// and stderr captured, waits for it and returns what it printed. extra
// descriptors become 3, 4, ...
func runSh(t *testing.T, prog *Program, attr *Attr, script string, extra ...int) result {
	t.Helper()
	attr.Path = "/bin/sh"
	attr.Args = []string{"sh", "-c", script}
	return run(t, prog, attr, extra...)
}

func run(t *testing.T, prog *Program, attr *Attr, extra ...int) result {
	t.Helper()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	attr.Files = append([]int{int(null.Fd()), int(outW.Fd()), int(errW.Fd())}, extra...)
	early := prespawn(t, attr)
	proc, err := Start(prog, attr)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("Start: %v", err)
	}
	if early && !proc.viaEarly {
		t.Fatal("Start did not use the early process")
	}
	defer proc.Release()
	stderr := make(chan []byte)
	go func() { b, _ := io.ReadAll(errR); stderr <- b }()
	stdout, _ := io.ReadAll(outR)
	r := result{stdout: string(stdout), stderr: string(<-stderr), viaEarly: proc.viaEarly}
	outR.Close()
	errR.Close()
	if r.status, err = proc.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return r
}

// testEarly: run and startSandbox start through an early process
// (TestEarlySuite sets it in a second run of this test binary).
var testEarly = os.Getenv(earlyEnv) != ""

const earlyEnv = "RAWEXEC_TEST_EARLY"

// prespawn gives attr an early process made for it when testEarly is
// set, and reports whether it did.
func prespawn(t *testing.T, attr *Attr) bool {
	t.Helper()
	if !testEarly || attr.Early != nil || attr.Cloneflags&unix.CLONE_NEWUSER == 0 || attr.IDMap == NoIDMap {
		return false
	}
	e, err := Prespawn(attr, nil)
	if err != nil {
		t.Fatalf("Prespawn: %v", err)
	}
	attr.Early = e
	return true
}

func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if !r.status.Exited() || r.status.ExitStatus() != code {
		t.Fatalf("status %v (exited %v, code %d), want exit %d; stdout %q, stderr %q",
			r.status, r.status.Exited(), r.status.ExitStatus(), code, r.stdout, r.stderr)
	}
}

// noChildren fails unless this process has no children at all, exited or
// not: wait4(-1, WNOHANG) returns 0 for a running child, its pid for a
// zombie (reaping it), and ECHILD only when there is none.
func noChildren(t *testing.T) {
	t.Helper()
	var ws unix.WaitStatus
	pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
	if err != unix.ECHILD {
		t.Fatalf("wait4(-1, WNOHANG) = %d, %v; want ECHILD (the failed child was not reaped)", pid, err)
	}
}

func TestExitStatus(t *testing.T) {
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	wantExit(t, run(t, nil, a), 0)

	r := runSh(t, nil, nsAttr(), "echo pid=$$; exit 7")
	wantExit(t, r, 7)
	if r.stdout != "pid=1\n" { // first process of the new pid namespace
		t.Errorf("stdout %q, want pid=1", r.stdout)
	}

	// The signal mask that runtime_BeforeFork blocked is restored (a
	// blocked mask would survive execve), and only what the parent
	// ignores is ignored.
	self, _ := os.ReadFile("/proc/self/status")
	_, ign, _ := strings.Cut(string(self), "\nSigIgn:\t")
	ign, _, _ = strings.Cut(ign, "\n")
	// (grep, not sh: dash clears its mask at startup.)
	a = nsAttr()
	a.Path, a.Args = "/usr/bin/grep", []string{"grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"}
	r = run(t, nil, a)
	wantExit(t, r, 0)
	if want := "SigBlk:\t0000000000000000\nSigIgn:\t" + ign + "\n"; r.stdout != want {
		t.Errorf("signal state after exec:\n%s\nwant:\n%s", r.stdout, want)
	}

	// Without namespaces, too.
	r = runSh(t, nil, &Attr{Env: testEnv}, "exit 3")
	wantExit(t, r, 3)
	noChildren(t)
}

func TestOpError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	var p Program
	p.Syscall("getpid", unix.SYS_GETPID)
	p.Syscall("open the missing file", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(missing),
		Imm(unix.O_RDONLY|unix.O_CLOEXEC))
	p.Syscall("not reached", unix.SYS_GETPID)
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	proc, err := Start(&p, a)
	if err == nil {
		proc.Wait()
		t.Fatal("Start succeeded, want the open to fail")
	}
	var oe *OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not an *OpError", err, err)
	}
	if oe.Index != 1 || oe.Label != "open the missing file" || oe.Nr != unix.SYS_OPENAT || oe.Errno != unix.ENOENT {
		t.Errorf("OpError %+v, want index 1, the open's label and ENOENT", *oe)
	}
	if !errors.Is(err, unix.ENOENT) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("errors.Is(%v, ENOENT) is false", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "op 1 (open the missing file)") || !strings.Contains(msg, "no such file") {
		t.Errorf("message %q lacks the index, label or errno", msg)
	}
	noChildren(t)

	// A result other than Want.
	var q Program
	null := q.Syscall("open /dev/null", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(os.DevNull),
		Imm(unix.O_RDONLY|unix.O_CLOEXEC)).Save()
	q.Syscall("read a byte", unix.SYS_READ, null, Bytes(make([]byte, 1)), Imm(1)).Want(1)
	_, err = Start(&q, a)
	if !errors.Is(err, ErrResult) || !errors.As(err, &oe) || oe.Index != 1 || oe.Result != 0 || oe.Want != 1 {
		t.Errorf("short read: error %v, want an OpError for op 1 wrapping ErrResult", err)
	}
	noChildren(t)

	// An ignored errno is not an error.
	var r Program
	r.Syscall("open the missing file", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(missing),
		Imm(unix.O_RDONLY|unix.O_CLOEXEC)).Ignore(unix.EACCES, unix.ENOENT)
	wantExit(t, run(t, &r, a), 0)

	// The parent failing to write the id maps (a zero-sized map is
	// invalid) fails Start with that error; the waiting child is reaped.
	c := nsAttr()
	c.IDMap = ParentMap
	c.UIDMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 0}}
	c.Path, c.Args = "/bin/true", []string{"true"}
	if _, err = Start(nil, c); err == nil || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "uid_map") {
		t.Errorf("invalid parent-written map: error %v, want EINVAL writing uid_map", err)
	}
	noChildren(t)

	// execve itself failing is reported as Start's op.
	b := nsAttr()
	b.Path, b.Args = missing, []string{"x"}
	_, err = Start(nil, b)
	if !errors.As(err, &oe) || oe.Index != -1 || oe.Label != "execve "+missing || !errors.Is(err, unix.ENOENT) {
		t.Errorf("exec of a missing file: error %v, want the execve op with ENOENT", err)
	}
	noChildren(t)
}

func TestBuilderLimits(t *testing.T) {
	var p Program
	for i := 0; i < MaxSlots; i++ {
		p.Syscall("getpid", unix.SYS_GETPID).Save()
	}
	if err := p.Err(); err != nil {
		t.Fatalf("%d slots: %v", MaxSlots, err)
	}
	p.Syscall("getpid", unix.SYS_GETPID).Save()
	if p.Err() == nil {
		t.Error("no error for one slot too many")
	}
	if _, err := Start(&p, &Attr{Path: "/bin/true"}); err == nil {
		t.Error("Start ran a program with a build error")
	}

	// The op limit is a sanity bound (lowered here: MaxOps ops are
	// hundreds of megabytes).
	defer func(n int) { opLimit = n }(opLimit)
	opLimit = 100
	var q Program
	for i := 0; i <= opLimit; i++ {
		q.Syscall("getpid", unix.SYS_GETPID)
	}
	if !errors.Is(q.Err(), ErrTooLong) || q.Len() != opLimit {
		t.Errorf("after %d ops: Len %d, Err %v", opLimit+1, q.Len(), q.Err())
	}
	opLimit = MaxOps

	var r Program
	r.Syscall("nul", unix.SYS_GETPID, String("a\x00b"))
	if r.Err() == nil {
		t.Error("no error for a string with NUL")
	}
	var s Program
	s.Syscall("too many", unix.SYS_GETPID, Imm(1), Imm(2), Imm(3), Imm(4), Imm(5), Imm(6), Imm(7))
	s.Syscall("x", unix.SYS_GETPID).Ignore(1, 2, 3, 4)
	if s.Err() == nil {
		t.Error("no error for 7 arguments")
	}
	var u Program
	u.Syscall("x", unix.SYS_GETPID).Ignore(1, 2, 3, 4)
	if u.Err() == nil {
		t.Error("no error for 4 ignored errnos")
	}
	var v Program
	v.StoreAt("unaligned", make([]byte, 8), 1, Slot{1})
	if v.Err() == nil {
		t.Error("no error for an unaligned StoreAt")
	}
}

// A Program is as long as its plan needs: far over the 4,096 ops that
// once sent large plans to a fallback, it runs and execs.
func TestLongProgram(t *testing.T) {
	var p Program
	const n = 100_000
	p.Grow(n)
	for range n {
		p.Syscall("getpid", unix.SYS_GETPID)
	}
	p.Syscall("last", unix.SYS_GETPID).Want(^uintptr(0)) // never true: the child reports this op
	_, err := Start(&p, &Attr{Path: "/bin/true"})
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != n || oe.Label != "last" {
		t.Fatalf("a program of %d ops: %v, want the report of op %d", n+1, err, n)
	}
	p = Program{}
	for range n {
		p.Syscall("getpid", unix.SYS_GETPID)
	}
	proc, err := Start(&p, &Attr{Path: "/bin/true"})
	if err != nil {
		t.Fatalf("a program of %d ops: %v", n, err)
	}
	if ws, err := proc.Wait(); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("exit %v %v", ws, err)
	}
}

func TestSkip(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	fail := func(p *Program) {
		p.Syscall("must be skipped", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(missing), Imm(unix.O_RDONLY))
	}
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}

	// An ignored failure skips the op after it; a success skips the
	// following two (a Store and a syscall).
	var p Program
	s := p.Syscall("ignored failure", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(missing),
		Imm(unix.O_RDONLY)).Ignore(unix.ENOENT).SkipIfIgnored(1).SkipIfOK(0).Save()
	fail(&p)
	p.Syscall("success", unix.SYS_GETPID).SkipIfOK(2).SkipIfIgnored(0)
	p.Store("must be skipped", new(int32), s)
	fail(&p)
	wantExit(t, run(t, &p, a), 0)

	// Without a skip the same failures stop the program.
	var q Program
	q.Syscall("ignored failure", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(missing),
		Imm(unix.O_RDONLY)).Ignore(unix.ENOENT).SkipIfOK(1)
	fail(&q)
	var oe *OpError
	if _, err := Start(&q, a); !errors.As(err, &oe) || oe.Index != 1 {
		t.Errorf("error %v, want op 1 to fail", err)
	}

	var r Program
	r.Syscall("skips too far", unix.SYS_GETPID).SkipIfOK(1)
	if _, err := Start(&r, a); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("a skip past the end: error %v", err)
	}
	noChildren(t)
}

func TestIDMap(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	type tc struct {
		name     string
		mode     IDMapMode
		uidMap   []syscall.SysProcIDMap
		want     string // uid_map and gid_map, fields joined by spaces
		wantUser string
	}
	self := fmt.Sprintf("%d %d 1\n%d %d 1\n", uid, uid, gid, gid)
	cases := []tc{{name: "self", mode: SelfMap, want: self, wantUser: strconv.Itoa(uid)}}
	if uid == 0 {
		cases = append(cases, tc{name: "parent-full", mode: ParentMap, want: "0 0 4294967295\n0 0 4294967295\n", wantUser: "0"})
	} else {
		single := []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		cases = append(cases, tc{name: "parent-single", mode: ParentMap, uidMap: single, want: self, wantUser: strconv.Itoa(uid)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &Attr{Cloneflags: allNS, IDMap: c.mode, Env: testEnv, UIDMap: c.uidMap}
			if c.uidMap != nil {
				a.GIDMap = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			}
			r := runSh(t, nil, a, "cat /proc/self/uid_map /proc/self/gid_map; id -u")
			wantExit(t, r, 0)
			var got strings.Builder
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			for _, l := range lines[:len(lines)-1] {
				got.WriteString(strings.Join(strings.Fields(l), " ") + "\n")
			}
			if got.String() != c.want || lines[len(lines)-1] != c.wantUser {
				t.Errorf("inside: %q, want maps %q and id -u %s", r.stdout, c.want, c.wantUser)
			}
		})
	}
	// The host's own map is the initial one (nothing leaked out).
	if b, _ := os.ReadFile("/proc/self/uid_map"); uid == 0 && !strings.Contains(string(b), "4294967295") {
		t.Errorf("host uid_map %q", b)
	}
}

func TestTmpfsMount(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "host-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var p Program
	p.Syscall("make mounts private", unix.SYS_MOUNT, Imm(0), String("/"), Imm(0),
		Imm(unix.MS_REC|unix.MS_PRIVATE), Imm(0))
	p.Syscall("mount tmpfs", unix.SYS_MOUNT, String("tmpfs"), String(dir), String("tmpfs"),
		Imm(unix.MS_NOSUID|unix.MS_NODEV), String("mode=0700"))
	a := nsAttr()
	a.Path, a.Args = "/bin/sh", []string{"sh", "-c", `cd "$1" && ls -A && echo inside > inside-file && cat inside-file &&
		grep -c " $1 .* - tmpfs " /proc/self/mountinfo`, "sh", dir}
	r := run(t, &p, a)
	wantExit(t, r, 0)
	if r.stdout != "inside\n1\n" { // no host-file, our file, one tmpfs at dir
		t.Errorf("inside: %q (stderr %q), want an empty tmpfs at %s", r.stdout, r.stderr, dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "host-file" {
		t.Errorf("host view of %s: %v %v, want only host-file", dir, ents, err)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(b, []byte(" "+dir+" ")) {
		t.Errorf("the tmpfs at %s is visible on the host", dir)
	}
}

func lastCap(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// dropPrivileges appends what sbx does before exec: the bounding set,
// ambient set and capability sets emptied, and no_new_privs.
func dropPrivileges(t *testing.T, p *Program) {
	for c := 0; c <= lastCap(t); c++ {
		p.Syscall("drop bounding cap "+strconv.Itoa(c), unix.SYS_PRCTL, Imm(unix.PR_CAPBSET_DROP), Imm(c))
	}
	p.Syscall("clear ambient caps", unix.SYS_PRCTL, Imm(unix.PR_CAP_AMBIENT), Imm(unix.PR_CAP_AMBIENT_CLEAR_ALL), Imm(0), Imm(0), Imm(0))
	hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := &[2]unix.CapUserData{}
	p.Syscall("capset 0", unix.SYS_CAPSET, Ptr(hdr), Ptr(data))
	p.Syscall("no_new_privs", unix.SYS_PRCTL, Imm(unix.PR_SET_NO_NEW_PRIVS), Imm(1), Imm(0), Imm(0), Imm(0))
}

func TestCapabilitiesAndNoNewPrivs(t *testing.T) {
	var p Program
	dropPrivileges(t, &p)
	r := runSh(t, &p, nsAttr(), `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status`)
	wantExit(t, r, 0)
	want := "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n"
	if r.stdout != want {
		t.Errorf("inside:\n%s\nwant:\n%s", r.stdout, want)
	}
}

func TestSeccomp(t *testing.T) {
	// uname(2) fails with EPERM; everything else is allowed.
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_UNAME, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := &unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	script := `uname -s; echo rc=$?`

	r := runSh(t, nil, nsAttr(), script)
	if r.stdout != "Linux\nrc=0\n" {
		t.Fatalf("without the filter: %q %q", r.stdout, r.stderr)
	}
	var p Program
	dropPrivileges(t, &p)
	p.Syscall("seccomp", unix.SYS_SECCOMP, Imm(unix.SECCOMP_SET_MODE_FILTER), Imm(0), Ptr(fprog))
	r = runSh(t, &p, nsAttr(), script)
	wantExit(t, r, 0)
	if r.stdout != "rc=1\n" || !strings.Contains(r.stderr, "not permitted") {
		t.Errorf("with the filter: stdout %q, stderr %q; want uname to fail with EPERM", r.stdout, r.stderr)
	}
}

func TestFileLayout(t *testing.T) {
	aR, aW := pipe(t)
	defer aR.Close()
	bR, bW := pipe(t)
	defer bR.Close()
	// A descriptor the parent leaked without close-on-exec.
	leak, err := unix.Dup(int(bR.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	if leak > 60 {
		t.Skipf("leaked descriptor %d is above the range the child checks", leak)
	}
	parentStderr, err := os.Readlink("/proc/self/fd/2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bW.WriteString("ping\n"); err != nil {
		t.Fatal(err)
	}
	bW.Close()

	// 3 and 4 are the pipes; 5 is the parent's 2, which the layout
	// overwrites in the child with the stderr pipe before it reaches 5.
	script := `echo pong >&3; read x <&4; echo "got=$x"
		i=0; while [ $i -le 64 ]; do [ -e /proc/self/fd/$i ] && echo "fd=$i"; i=$((i+1)); done
		readlink /proc/self/fd/5`
	r := runSh(t, nil, nsAttr(), script, int(aW.Fd()), int(bR.Fd()), 2)
	aW.Close()
	wantExit(t, r, 0)
	want := "got=ping\nfd=0\nfd=1\nfd=2\nfd=3\nfd=4\nfd=5\n" + parentStderr + "\n"
	if r.stdout != want {
		t.Errorf("inside:\n%s\nwant:\n%s(stderr %q)", r.stdout, want, r.stderr)
	}
	if b, _ := io.ReadAll(aR); string(b) != "pong\n" {
		t.Errorf("read %q from the pipe the child had as fd 3, want pong", b)
	}
}

// TestStoreAt passes a descriptor opened in the child back to the parent
// with SCM_RIGHTS: the descriptor number exists only in the child, so it
// reaches the control message only through a stored slot.
func TestStoreAt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("hello from the child's fd"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])

	oob := unix.UnixRights(-1) // the fd is filled in by the child
	dataOff := unix.CmsgLen(0) // the header, aligned: where the descriptor goes
	payload := []byte("x")
	iov := &unix.Iovec{Base: &payload[0]}
	iov.SetLen(len(payload))
	msg := &unix.Msghdr{Iov: iov, Control: &oob[0]}
	msg.Iovlen = 1
	msg.SetControllen(len(oob))

	var p Program
	fd := p.Syscall("open the file", unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(file),
		Imm(unix.O_RDONLY|unix.O_CLOEXEC)).Save()
	p.StoreAt("put the fd in the cmsg", oob, dataOff, fd)
	p.Syscall("send the fd", unix.SYS_SENDMSG, Imm(sp[1]), Ptr(msg), Imm(0)).Want(1)
	p.Syscall("close the fd", unix.SYS_CLOSE, fd)
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	wantExit(t, run(t, &p, a), 0)

	buf, roob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(sp[0], buf, roob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	scms, err := unix.ParseSocketControlMessage(roob[:oobn])
	if err != nil || len(scms) != 1 {
		t.Fatalf("control messages %v, %v", scms, err)
	}
	fds, err := unix.ParseUnixRights(&scms[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("rights %v, %v", fds, err)
	}
	f := os.NewFile(uintptr(fds[0]), "received")
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "hello from the child's fd" {
		t.Errorf("received descriptor reads %q", b)
	}
	// The parent's buffer is untouched: the child stored into its copy.
	if got := *(*int32)(unsafe.Pointer(&oob[dataOff])); got != -1 {
		t.Errorf("parent's control buffer holds %d, want -1", got)
	}
}

// TestNoSecondRuntime checks the package's purpose: the process
// that runs the program (the sandbox's first process) is a one-thread
// clone of the parent that has not exec'd anything, so no second Go
// runtime ever starts. The program reads the child's own /proc/self/status
// and /proc/self/auxv before it execs the command.
func TestNoSecondRuntime(t *testing.T) {
	stR, stW := pipe(t)
	defer stR.Close()
	auxR, auxW := pipe(t)
	defer auxR.Close()
	buf := make([]byte, 8192)

	var p Program
	fd, n := p.NewSlot(), p.NewSlot()
	for _, f := range []struct {
		path string
		out  *os.File
	}{{"/proc/self/status", stW}, {"/proc/self/auxv", auxW}} {
		p.Syscall("open "+f.path, unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(f.path),
			Imm(unix.O_RDONLY|unix.O_CLOEXEC)).SaveTo(fd)
		p.Syscall("read "+f.path, unix.SYS_READ, fd, Bytes(buf), Imm(len(buf))).SaveTo(n)
		p.Syscall("send "+f.path, unix.SYS_WRITE, Imm(f.out.Fd()), Bytes(buf), n)
		p.Syscall("close "+f.path, unix.SYS_CLOSE, fd)
	}
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	wantExit(t, run(t, &p, a), 0)
	stW.Close()
	auxW.Close()
	status, _ := io.ReadAll(stR)
	auxv, _ := io.ReadAll(auxR)

	if !bytes.Contains(status, []byte("\nThreads:\t1\n")) {
		t.Errorf("the child had more than one thread:\n%s", status)
	}
	// Name is the comm of a process that has not exec'd since the clone.
	self, _ := os.ReadFile("/proc/self/status")
	if name := firstLine(self); firstLine(status) != name {
		t.Errorf("child %q, parent %q: the child exec'd before its program ran", firstLine(status), name)
	}
	// The aux vector is set by execve and copied by fork: identical means
	// the child is the parent's image, never re-exec'd.
	selfAuxv, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		t.Fatal(err)
	}
	if len(auxv) == 0 || !bytes.Equal(auxv, selfAuxv) {
		t.Errorf("the child's auxv (%d bytes) differs from the parent's (%d bytes): it was exec'd", len(auxv), len(selfAuxv))
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

func TestPidFD(t *testing.T) {
	a := nsAttr()
	a.Path, a.Args = "/bin/sh", []string{"sh", "-c", "read x"}
	r, w := pipe(t)
	defer w.Close()
	a.Files = []int{int(r.Fd())}
	proc, err := Start(nil, a)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Release()
	if proc.PidFD() < 0 {
		t.Fatal("no pidfd")
	}
	if err := proc.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ws, err := proc.Wait()
	if err != nil || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("Wait: %v %v, want killed by SIGKILL", ws, err)
	}
	if err := proc.Signal(unix.SIGKILL); err != unix.ESRCH {
		t.Errorf("signal after reaping through the pidfd: %v, want ESRCH", err)
	}
}

// BenchmarkStartWait measures Start+Wait of /bin/true in new user, mount,
// pid, net, ipc and uts namespaces.
func BenchmarkStartWait(b *testing.B) {
	a := nsAttr()
	a.PidFD = false
	a.Path, a.Args = "/bin/true", []string{"true"}
	for b.Loop() {
		proc, err := Start(nil, a)
		if err != nil {
			b.Fatal(err)
		}
		if ws, err := proc.Wait(); err != nil || ws.ExitStatus() != 0 {
			b.Fatal(ws, err)
		}
	}
}

// osExecNS is os/exec's attributes for a start in allNS with the id map
// Start would use: root's full map, or the caller's own ids.
func osExecNS() *syscall.SysProcAttr {
	sys := &syscall.SysProcAttr{Cloneflags: allNS}
	if os.Getuid() == 0 {
		sys.UidMappings = fullIDMap
		sys.GidMappings = fullIDMap
	} else {
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return sys
}

// BenchmarkOSExec is the same start with os/exec, for comparison.
func BenchmarkOSExec(b *testing.B) {
	sys := osExecNS()
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		cmd.Env = testEnv
		cmd.SysProcAttr = sys
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReexecGo is today's sbx shape, for comparison: os/exec starts
// this Go binary again (a second runtime), which then execs /bin/true.
func BenchmarkReexecGo(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	sys := osExecNS()
	for b.Loop() {
		cmd := exec.Command(self)
		cmd.Env = append([]string{helperEnv + "=1"}, testEnv...)
		cmd.SysProcAttr = sys
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

const helperEnv = "RAWEXEC_TEST_EXEC_TRUE"

func TestMain(m *testing.M) {
	if port := os.Getenv(listenEnv); port != "" {
		listenHelper(port)
	}
	if os.Getenv(helperEnv) != "" {
		err := syscall.Exec("/bin/true", []string{"true"}, testEnv)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestStartOverlap: Start calls Attr.Overlap once, after the clone and
// before it waits for the exec, so the child's program may wait for what
// Overlap does (sbx's command waits so, before its execve, for the
// supervisor's signal handlers). Through TestEarlySuite it runs through an
// early process too.
func TestStartOverlap(t *testing.T) {
	gateR, gateW := pipe(t)
	defer gateR.Close()
	defer gateW.Close()
	calls := 0
	a := nsAttr()
	a.Overlap = func() {
		calls++
		gateW.Write([]byte("x"))
	}
	// Without the byte, the child reads EOF once this closes the gate
	// (its own copy of the write end closed by the first op): Start then
	// fails instead of hanging.
	stop := time.AfterFunc(10*time.Second, func() { gateW.Close() })
	defer stop.Stop()
	var p Program
	p.Syscall("close the gate's write end", unix.SYS_CLOSE, Imm(int(gateW.Fd())))
	p.Syscall("wait for the gate", unix.SYS_READ, Imm(int(gateR.Fd())), Bytes(make([]byte, 1)), Imm(1)).Want(1)
	r := runSh(t, &p, a, "echo ran")
	wantExit(t, r, 0)
	if r.stdout != "ran\n" || calls != 1 {
		t.Fatalf("stdout %q, Overlap called %d times; want the command run after one call", r.stdout, calls)
	}

	// A child that fails: Overlap is still called once.
	calls = 0
	var q Program
	q.Syscall("fail", unix.SYS_CLOSE, Imm(1<<20)) // EBADF
	a = nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	a.Overlap = func() { calls++ }
	if proc, err := Start(&q, a); err == nil {
		proc.Wait()
		t.Fatal("Start succeeded, want the close to fail")
	}
	if calls != 1 {
		t.Errorf("Overlap called %d times for a failing child, want 1", calls)
	}
	noChildren(t)
}
