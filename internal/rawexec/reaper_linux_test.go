//go:build linux && (amd64 || arm64)

package rawexec

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sandbox is a first process started with a Reaper, and the parent's ends
// of its pipes.
type sandbox struct {
	proc     *Process
	err      error    // Start's error (with a live proc: the forked child failed)
	status   *os.File // Reaper.Status, read end
	lifeline *os.File // Reaper.Lifeline, write end
	ack      *os.File // Reaper.Ack, write end (nil: no Ack)
	stdin    *os.File // the command's 0, write end
	out      *bufio.Reader
	outF     *os.File // the command's 1 and 2, read end
	keep     []int    // Reaper.Keep
	dial     int      // Reaper.Dial, the parent's end (-1: none)
	waited   bool
}

type sbOpts struct {
	prog       *Program // holds the Fork; nil: a Program with only a Fork
	path       string
	args       []string
	ack        bool
	exit       *Program
	signals    []unix.Signal
	cloneflags uintptr // 0: allNS
	env        []string
	dial       bool   // serve dials (Reaper.Dial)
	early      *Early // start through this early process
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// startSandbox starts o's command under a reaper. Start's error is in
// sb.err; the test fails if Start returned no Process.
func startSandbox(t *testing.T, o sbOpts) *sandbox {
	t.Helper()
	prog := o.prog
	if prog == nil {
		prog = &Program{}
		prog.Fork("fork")
	}
	a := nsAttr()
	if o.cloneflags != 0 {
		a.Cloneflags = o.cloneflags
	}
	a.Path, a.Args = o.path, o.args
	if o.env != nil {
		a.Env = o.env
	}
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	stR, stW := pipe(t)
	llR, llW := pipe(t)
	sb := &sandbox{status: stR, lifeline: llW, stdin: inW, outF: outR, out: bufio.NewReader(outR), dial: -1}
	closeLater := []*os.File{inR, outW, stW, llR}
	r := &Reaper{Lifeline: int(llR.Fd()), Status: int(stW.Fd()), Ack: -1, Dial: -1, Signals: o.signals, Exit: o.exit}
	if o.ack {
		ackR, ackW := pipe(t)
		sb.ack = ackW
		r.Ack = int(ackR.Fd())
		closeLater = append(closeLater, ackR)
	}
	r.Keep = []int{r.Lifeline, r.Status}
	if r.Ack >= 0 {
		r.Keep = append(r.Keep, r.Ack)
	}
	var dialChild *os.File
	if o.dial {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		sb.dial = fds[0]
		dialChild = os.NewFile(uintptr(fds[1]), "dial")
		closeLater = append(closeLater, dialChild)
		r.Dial = fds[1]
		r.Keep = append(r.Keep, r.Dial)
	}
	sb.keep = r.Keep
	a.Reaper = r
	a.Files = []int{int(inR.Fd()), int(outW.Fd()), int(outW.Fd())}
	early := o.early != nil
	if a.Early = o.early; a.Early == nil {
		early = prespawn(t, a)
	}
	sb.proc, sb.err = Start(prog, a)
	if early && sb.proc != nil && !sb.proc.viaEarly {
		t.Error("Start did not use the early process")
	}
	for _, f := range closeLater {
		f.Close()
	}
	t.Cleanup(func() {
		// Whatever happened, the sandbox goes away with its lifeline.
		sb.lifeline.Close()
		if sb.ack != nil {
			sb.ack.Close()
		}
		sb.stdin.Close()
		if sb.dial >= 0 {
			unix.Close(sb.dial)
		}
		if sb.proc != nil && !sb.waited {
			// A test that stopped early: SIGKILL to PID 1 ends the whole
			// pid namespace, even if the first process is stuck.
			sb.proc.Signal(unix.SIGKILL)
			sb.proc.Wait()
		}
		if sb.proc != nil {
			sb.proc.Release()
		}
		sb.status.Close()
		sb.outF.Close()
	})
	if sb.proc == nil {
		t.Fatalf("Start: no Process, error %v", sb.err)
	}
	return sb
}

func (sb *sandbox) record(t *testing.T) Record {
	t.Helper()
	sb.status.SetReadDeadline(time.Now().Add(20 * time.Second))
	r, err := ReadRecord(sb.status)
	if err != nil {
		t.Fatalf("reading a record: %v", err)
	}
	return r
}

func (sb *sandbox) expect(t *testing.T, kind uint32) Record {
	t.Helper()
	r := sb.record(t)
	if r.Kind != kind {
		t.Fatalf("record %+v, want kind %d", r, kind)
	}
	return r
}

// started checks the Started record: the command is PID 2.
func (sb *sandbox) started(t *testing.T) {
	t.Helper()
	if r := sb.expect(t, RecordStarted); r.Pid != 2 {
		t.Errorf("Started: pid %d, want 2 (the first process is PID 1)", r.Pid)
	}
}

// exited reads the Exited record and returns the command's status.
func (sb *sandbox) exited(t *testing.T) unix.WaitStatus {
	t.Helper()
	return unix.WaitStatus(sb.expect(t, RecordExited).Status)
}

// done acks if needed, then expects Done, EOF on Status and the first
// process's exit with status 0.
func (sb *sandbox) done(t *testing.T) {
	t.Helper()
	if sb.ack != nil {
		if _, err := sb.ack.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	sb.expect(t, RecordDone)
	sb.status.SetReadDeadline(time.Now().Add(20 * time.Second))
	if r, err := ReadRecord(sb.status); err != io.EOF {
		t.Errorf("after Done: %+v, %v; want EOF", r, err)
	}
	ws, err := sb.proc.Wait()
	sb.waited = true
	if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("first process: %v %v, want exit 0", ws, err)
	}
}

// readAll reads the command's output to EOF, failing if EOF does not come
// within d (some process still holds the pipe).
func (sb *sandbox) readAll(t *testing.T, d time.Duration) string {
	t.Helper()
	sb.outF.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(sb.out)
	if err != nil {
		t.Fatalf("command output: %q, %v (a process still holds the pipe)", b, err)
	}
	return string(b)
}

func (sb *sandbox) readLine(t *testing.T) string {
	t.Helper()
	sb.outF.SetReadDeadline(time.Now().Add(20 * time.Second))
	l, err := sb.out.ReadString('\n')
	if err != nil {
		t.Fatalf("command output: %q, %v", l, err)
	}
	return l
}

func wantStatusExit(t *testing.T, ws unix.WaitStatus, code int) {
	t.Helper()
	if !ws.Exited() || ws.ExitStatus() != code {
		t.Errorf("command status %#x (%v), want exit %d", uint32(ws), ws, code)
	}
}

func wantStatusSignal(t *testing.T, ws unix.WaitStatus, sig unix.Signal) {
	t.Helper()
	if !ws.Signaled() || ws.Signal() != sig {
		t.Errorf("command status %#x (%v), want killed by %v", uint32(ws), ws, sig)
	}
}

type procInfo struct {
	pid, ppid int
	state     string
	comm      string
}

// children lists the processes whose parent is pid (zombies included).
func children(t *testing.T, pid int) []procInfo {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []procInfo
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if ppid == pid {
			out = append(out, procInfo{pid: p, ppid: ppid, state: f[0], comm: s[open+1 : close]})
		}
	}
	return out
}

func TestReaperExitStatus(t *testing.T) {
	sb := startSandbox(t, sbOpts{path: "/bin/true", args: []string{"true"}})
	if sb.err != nil {
		t.Fatal(sb.err)
	}
	sb.started(t)
	wantStatusExit(t, sb.exited(t), 0)
	sb.done(t)

	sb = startSandbox(t, sbOpts{path: "/bin/sh", args: []string{"sh", "-c", "echo pid=$$; exit 7"}})
	sb.started(t)
	wantStatusExit(t, sb.exited(t), 7)
	if out := sb.readAll(t, 5*time.Second); out != "pid=2\n" {
		t.Errorf("output %q, want pid=2", out)
	}
	sb.done(t)

	sb = startSandbox(t, sbOpts{path: "/bin/sh", args: []string{"sh", "-c", "kill -USR1 $$; sleep 5"}})
	sb.started(t)
	wantStatusSignal(t, sb.exited(t), unix.SIGUSR1)
	sb.done(t)
	noChildren(t)
}

// TestReaperOrphans: an orphan reparented to the first process is reaped
// while the command runs (no zombie), and a background process is killed
// when the command ends, before Exited.
func TestReaperOrphans(t *testing.T) {
	sb := startSandbox(t, sbOpts{path: "/bin/sh", args: []string{"sh", "-c", "(sleep 1 &); echo forked; read x; echo bye"}})
	sb.started(t)
	if l := sb.readLine(t); l != "forked\n" {
		t.Fatalf("output %q", l)
	}
	// The subshell has exited: its sleep is the first process's child.
	var orphan int
	for deadline := time.Now().Add(5 * time.Second); orphan == 0 && time.Now().Before(deadline); {
		for _, c := range children(t, sb.proc.Pid) {
			if c.comm == "sleep" {
				orphan = c.pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if orphan == 0 {
		t.Fatalf("no orphaned sleep under the first process: %+v", children(t, sb.proc.Pid))
	}
	// Once it exits, the first process reaps it: it must vanish, not
	// stay a zombie.
	gone := false
	for deadline := time.Now().Add(10 * time.Second); !gone && time.Now().Before(deadline); {
		_, err := os.Stat("/proc/" + strconv.Itoa(orphan))
		gone = errors.Is(err, os.ErrNotExist)
		time.Sleep(10 * time.Millisecond)
	}
	if !gone {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(orphan) + "/stat")
		t.Fatalf("orphan %d was not reaped: %s", orphan, b)
	}
	if c := children(t, sb.proc.Pid); len(c) != 1 || c[0].comm != "sh" {
		t.Errorf("children of the first process %+v, want only the command", c)
	}
	sb.stdin.Write([]byte("x\n"))
	wantStatusExit(t, sb.exited(t), 0)
	sb.done(t)

	// A background process outlives its shell until the first process
	// ends the sandbox: Exited comes only once everything is gone, so
	// the output pipe (which the background sleep holds) is at EOF.
	begin := time.Now()
	sb = startSandbox(t, sbOpts{ack: true, path: "/bin/sh", args: []string{"sh", "-c", "sleep 100 & echo bg; exit 5"}})
	sb.started(t)
	wantStatusExit(t, sb.exited(t), 5)
	if c := children(t, sb.proc.Pid); len(c) != 0 {
		t.Errorf("at Exited the first process still has children: %+v", c)
	}
	if out := sb.readAll(t, 2*time.Second); out != "bg\n" {
		t.Errorf("output %q", out)
	}
	sb.done(t)
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestReaperSignals(t *testing.T) {
	sigs := []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP}

	// SIGTERM to the first process reaches the command (which leads no
	// group here: the fallback kill(pid)).
	sb := startSandbox(t, sbOpts{signals: sigs, path: "/bin/sh",
		args: []string{"sh", "-c", `trap "exit 42" TERM; echo ready; while :; do sleep 0.05; done`}})
	sb.started(t)
	sb.readLine(t)
	if err := sb.proc.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wantStatusExit(t, sb.exited(t), 42)
	sb.done(t)

	// With setsid after the Fork the command leads a group, and the
	// signal reaches all of it: the shell's trap waits for its
	// background job, which exits only on its own SIGTERM.
	var p Program
	p.Fork("fork")
	p.Syscall("setsid", unix.SYS_SETSID)
	sb = startSandbox(t, sbOpts{prog: &p, signals: sigs, path: "/bin/sh",
		args: []string{"sh", "-c", `trap "wait; exit 43" TERM
			(trap "echo bg-term; exit 0" TERM; echo bg-ready; while :; do sleep 0.05; done) &
			wait`}})
	sb.started(t)
	if l := sb.readLine(t); l != "bg-ready\n" {
		t.Fatalf("output %q", l)
	}
	if err := sb.proc.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wantStatusExit(t, sb.exited(t), 43)
	// (dash may also print "Terminated" for the subshell's sleep.)
	if out := sb.readAll(t, 5*time.Second); !strings.Contains(out, "bg-term\n") {
		t.Errorf("output %q, want bg-term from the background job", out)
	}
	sb.done(t)

	// SIGINT kills a plain sleep. An ignored disposition survives fork
	// and execve (a test binary run as a shell's background job ignores
	// SIGINT), so an op after the Fork resets it: a zeroed struct
	// sigaction is SIG_DFL.
	var q Program
	q.Fork("fork")
	q.Syscall("SIGINT: default action", unix.SYS_RT_SIGACTION, Imm(unix.SIGINT), Bytes(make([]byte, 32)), Imm(0), Imm(8))
	sb = startSandbox(t, sbOpts{prog: &q, signals: sigs, path: "/bin/sleep", args: []string{"sleep", "100"}})
	sb.started(t)
	if err := sb.proc.Signal(unix.SIGINT); err != nil {
		t.Fatal(err)
	}
	wantStatusSignal(t, sb.exited(t), unix.SIGINT)
	sb.done(t)

	// A signal not in Signals is not forwarded (and, sent to PID 1 with
	// the default action, ignored): the command keeps running.
	sb = startSandbox(t, sbOpts{signals: sigs, path: "/bin/sh", args: []string{"sh", "-c", "echo ready; read x; exit 9"}})
	sb.started(t)
	sb.readLine(t)
	if err := sb.proc.Signal(unix.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	sb.stdin.Write([]byte("x\n"))
	wantStatusExit(t, sb.exited(t), 9)
	sb.done(t)
}

// TestReaperLifeline: closing the parent's end of the lifeline kills the
// command and everything it started, and still yields Exited and Done.
func TestReaperLifeline(t *testing.T) {
	begin := time.Now()
	sb := startSandbox(t, sbOpts{path: "/bin/sh", args: []string{"sh", "-c", "sleep 100 & sleep 100 & echo up; sleep 100"}})
	sb.started(t)
	sb.readLine(t)
	if n := len(children(t, sb.proc.Pid)); n != 1 {
		t.Errorf("first process has %d children, want 1 (the command)", n)
	}
	sb.lifeline.Close()
	wantStatusSignal(t, sb.exited(t), unix.SIGKILL)
	if out := sb.readAll(t, 2*time.Second); out != "" {
		t.Errorf("output %q", out)
	}
	sb.done(t)
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("took %v", d)
	}

	// Data on the lifeline stops the sandbox too.
	sb = startSandbox(t, sbOpts{path: "/bin/sleep", args: []string{"sleep", "100"}})
	sb.started(t)
	sb.lifeline.Write([]byte("stop"))
	wantStatusSignal(t, sb.exited(t), unix.SIGKILL)
	sb.done(t)
}

// statxIno returns the buffer a statx op fills and the offset of stx_ino.
func statxIno() ([]byte, int) {
	buf := make([]byte, unsafe.Sizeof(unix.Statx_t{}))
	return buf, int(unsafe.Offsetof(unix.Statx_t{}.Ino))
}

// unlinkIfSame is an Exit program that unlinks path only if its inode is
// ino.
func unlinkIfSame(path string, ino uint64) *Program {
	var e Program
	buf, off := statxIno()
	e.Syscall("statx", unix.SYS_STATX, Int(unix.AT_FDCWD), String(path),
		Imm(unix.AT_SYMLINK_NOFOLLOW), Imm(unix.STATX_INO), Bytes(buf))
	e.SkipIfNotEqual("same inode?", buf, off, ino, 1)
	e.Syscall("unlink", unix.SYS_UNLINKAT, Int(unix.AT_FDCWD), String(path), Imm(0))
	return &e
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestReaperAckAndExit(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(f, &st); err != nil {
		t.Fatal(err)
	}

	// The right inode: unlinked, but only after the ack.
	sb := startSandbox(t, sbOpts{ack: true, exit: unlinkIfSame(f, st.Ino), path: "/bin/true", args: []string{"true"}})
	sb.started(t)
	wantStatusExit(t, sb.exited(t), 0)
	time.Sleep(200 * time.Millisecond)
	if !exists(f) {
		t.Fatal("Exit ran before the ack")
	}
	sb.done(t)
	if exists(f) {
		t.Error("the file is still there after Done: Exit did not unlink it")
	}

	// Another inode: kept (no Ack here: Exit runs right after Exited).
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(f, &st); err != nil {
		t.Fatal(err)
	}
	sb = startSandbox(t, sbOpts{exit: unlinkIfSame(f, st.Ino+1), path: "/bin/true", args: []string{"true"}})
	sb.started(t)
	sb.exited(t)
	sb.done(t)
	if !exists(f) {
		t.Error("Exit unlinked a file whose inode differs")
	}

	// An unignored failure ends Exit early; Done still comes.
	var e Program
	e.Syscall("unlink missing", unix.SYS_UNLINKAT, Int(unix.AT_FDCWD), String(filepath.Join(dir, "missing")), Imm(0))
	e.Syscall("unlink f", unix.SYS_UNLINKAT, Int(unix.AT_FDCWD), String(f), Imm(0))
	sb = startSandbox(t, sbOpts{exit: &e, path: "/bin/true", args: []string{"true"}})
	sb.started(t)
	sb.exited(t)
	sb.done(t)
	if !exists(f) {
		t.Error("Exit went on after a failed op")
	}
	// Ignored, it goes on.
	var g Program
	g.Syscall("unlink missing", unix.SYS_UNLINKAT, Int(unix.AT_FDCWD), String(filepath.Join(dir, "missing")), Imm(0)).Ignore(unix.ENOENT)
	g.Syscall("unlink f", unix.SYS_UNLINKAT, Int(unix.AT_FDCWD), String(f), Imm(0))
	sb = startSandbox(t, sbOpts{exit: &g, path: "/bin/true", args: []string{"true"}})
	sb.started(t)
	sb.exited(t)
	sb.done(t)
	if exists(f) {
		t.Error("Exit stopped at an ignored failure")
	}
}

// TestReaperForkedChildFails: a failure after the Fork gives both the
// live first process and the error; the first process reports 127.
func TestReaperForkedChildFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	var p Program
	p.Syscall("getpid", unix.SYS_GETPID)
	p.Fork("fork")
	p.Syscall("chdir to a missing dir", unix.SYS_CHDIR, String(missing))
	sb := startSandbox(t, sbOpts{prog: &p, ack: true, path: "/bin/true", args: []string{"true"}})
	var oe *OpError
	if !errors.As(sb.err, &oe) || oe.Index != 2 || oe.Label != "chdir to a missing dir" || oe.Errno != unix.ENOENT {
		t.Fatalf("Start: error %v, want an OpError for op 2 (the chdir) with ENOENT", sb.err)
	}
	sb.started(t)
	wantStatusExit(t, sb.exited(t), childFailStatus)
	sb.done(t)

	// execve itself.
	sb = startSandbox(t, sbOpts{path: missing, args: []string{"x"}})
	if !errors.As(sb.err, &oe) || oe.Index != -1 || oe.Label != "execve "+missing || oe.Errno != unix.ENOENT {
		t.Fatalf("Start: error %v, want the execve op with ENOENT", sb.err)
	}
	sb.started(t)
	wantStatusExit(t, sb.exited(t), childFailStatus)
	sb.done(t)

	// Before the Fork the first process fails: no Process, reaped.
	var q Program
	q.Syscall("chdir to a missing dir", unix.SYS_CHDIR, String(missing))
	q.Fork("fork")
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	a.Reaper = &Reaper{Lifeline: -1, Status: -1, Ack: -1, Dial: -1}
	proc, err := Start(&q, a)
	if proc != nil || !errors.As(err, &oe) || oe.Index != 0 {
		t.Errorf("failure before the Fork: %v, %v; want no Process and an OpError for op 0", proc, err)
	}
	noChildren(t)
}

func TestReaperRefused(t *testing.T) {
	var fork Program
	fork.Fork("fork")
	r := &Reaper{Lifeline: -1, Status: 1, Ack: -1, Dial: -1, Keep: []int{1}}
	for _, c := range []struct {
		name string
		prog *Program
		attr Attr
		want string
	}{
		{"fork without reaper", &fork, Attr{Cloneflags: allNS}, "Reaper is nil"},
		{"reaper without fork", nil, Attr{Cloneflags: allNS, Reaper: r}, "needs a Fork"},
		{"no pid namespace", &fork, Attr{Cloneflags: unix.CLONE_NEWUSER, Reaper: r}, "CLONE_NEWPID"},
		{"status not kept", &fork, Attr{Cloneflags: allNS, Reaper: &Reaper{Lifeline: -1, Status: 1, Ack: -1, Dial: -1}}, "Status (1) is not in"},
		{"dial not kept", &fork, Attr{Cloneflags: allNS, Reaper: &Reaper{Lifeline: -1, Status: 1, Ack: -1, Dial: 5, Keep: []int{1}}}, "Dial (5) is not in"},
		{"forward SIGCHLD", &fork, Attr{Cloneflags: allNS, Reaper: &Reaper{Lifeline: -1, Status: 1, Ack: -1, Dial: -1, Keep: []int{1},
			Signals: []unix.Signal{unix.SIGCHLD}}}, "cannot forward"},
		{"fork in exit", &fork, Attr{Cloneflags: allNS, Reaper: &Reaper{Lifeline: -1, Status: 1, Ack: -1, Dial: -1, Keep: []int{1},
			Exit: &fork}}, "Exit has a Fork"},
	} {
		c.attr.Path = "/bin/true"
		if _, err := Start(c.prog, &c.attr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	var over Program
	over.Syscall("getpid", unix.SYS_GETPID).SkipIfOK(1)
	over.Fork("fork")
	if _, err := Start(&over, &Attr{Path: "/bin/true", Cloneflags: allNS, Reaper: r}); err == nil || !strings.Contains(err.Error(), "over the Fork") {
		t.Errorf("skip over the Fork: error %v", err)
	}
	var two Program
	two.Fork("a")
	two.Fork("b")
	if two.Err() == nil {
		t.Error("no error for a second Fork")
	}
	var cmp Program
	cmp.SkipIfNotEqual("unaligned", make([]byte, 16), 4, 0, 0)
	if cmp.Err() == nil {
		t.Error("no error for an unaligned SkipIfNotEqual")
	}
	noChildren(t)
}

// TestReaperProcessState inspects the first process while the command
// runs: PID 1 of its namespace, one thread, only Keep and its signalfd
// open, SIGCHLD and the forwarded signals blocked; and the command starts
// with an empty signal mask.
func TestReaperProcessState(t *testing.T) {
	sigs := []unix.Signal{unix.SIGTERM, unix.SIGINT}
	sb := startSandbox(t, sbOpts{signals: sigs, ack: true, path: "/bin/sh", args: []string{"sh", "-c", "echo ready; read x"}})
	sb.started(t)
	sb.readLine(t)
	pid := strconv.Itoa(sb.proc.Pid)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) string {
		_, v, _ := strings.Cut(string(status), "\n"+name+":\t")
		v, _, _ = strings.Cut(v, "\n")
		return v
	}
	if v := field("Threads"); v != "1" {
		t.Errorf("first process: Threads %q, want 1", v)
	}
	if v := field("NSpid"); !strings.HasSuffix(v, "\t1") {
		t.Errorf("first process: NSpid %q, want PID 1 in the new namespace", v)
	}
	var want uint64 = 1 << (unix.SIGCHLD - 1)
	for _, s := range sigs {
		want |= 1 << (s - 1)
	}
	if blk, err := strconv.ParseUint(field("SigBlk"), 16, 64); err != nil || blk&want != want {
		t.Errorf("first process: SigBlk %q, want at least %#x", field("SigBlk"), want)
	}
	ents, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	signalfds := 0
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		if l, _ := os.Readlink("/proc/" + pid + "/fd/" + e.Name()); l == "anon_inode:[signalfd]" {
			signalfds++
			continue
		}
		got = append(got, n)
	}
	slices.Sort(got)
	keep := slices.Sorted(slices.Values(sb.keep))
	if !slices.Equal(got, keep) || signalfds != 1 {
		t.Errorf("first process has descriptors %v and %d signalfds, want Keep %v and one signalfd", got, signalfds, keep)
	}
	sb.stdin.Write([]byte("x\n"))
	wantStatusExit(t, sb.exited(t), 0)
	sb.done(t)

	// The command's own mask (grep: sh would reset its mask).
	sb = startSandbox(t, sbOpts{signals: sigs, path: "/usr/bin/grep", args: []string{"grep", "-E", "^SigBlk:", "/proc/self/status"}})
	sb.started(t)
	wantStatusExit(t, sb.exited(t), 0)
	if out := sb.readAll(t, 5*time.Second); out != "SigBlk:\t0000000000000000\n" {
		t.Errorf("command: %q, want an empty signal mask", out)
	}
	sb.done(t)
}
