//go:build linux && (amd64 || arm64)

package rawexec

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IDMapMode says who writes the id maps of a new user namespace.
type IDMapMode int

const (
	// NoIDMap writes no map (no CLONE_NEWUSER, or the Program does it).
	NoIDMap IDMapMode = iota
	// SelfMap: the child writes "deny" to /proc/self/setgroups and then
	// its own uid_map and gid_map, before the Program runs. The kernel
	// allows an unprivileged process only a single-id map of its own
	// uid/gid; the default maps the caller's uid and gid to themselves.
	SelfMap
	// ParentMap: the child waits on a pipe while the parent writes
	// /proc/PID/uid_map, setgroups and gid_map, then runs the Program.
	// Needed for maps the child cannot write itself, such as root's full
	// map, which is the default (0 0 4294967295).
	ParentMap
)

// allowedCloneFlags are the flags Attr.Cloneflags may hold; Start adds
// SIGCHLD and, with Attr.PidFD, CLONE_PIDFD.
const allowedCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Attr describes the child Start creates.
type Attr struct {
	// Path is the program to execve (not looked up in PATH), with
	// Args (argv, including argv[0]) and Env.
	Path string
	Args []string
	Env  []string

	// Files is the child's descriptor layout, as in syscall.ProcAttr:
	// parent descriptor Files[i] becomes the child's i, -1 leaves i
	// closed. It is applied after the Program (whose ops may still use
	// the parent's descriptor numbers) and just before execve; every
	// descriptor from len(Files) up is then marked close-on-exec, even
	// one the parent leaked without O_CLOEXEC.
	Files []int

	// Cloneflags are CLONE_NEW* flags (user, mount, pid, net, ipc, uts,
	// cgroup).
	Cloneflags uintptr

	// IDMap, UIDMap, GIDMap and SetgroupsAllow set up the new user
	// namespace's id maps; nil maps get the mode's default.
	// SetgroupsAllow applies to ParentMap only (SelfMap must deny).
	IDMap          IDMapMode
	UIDMap, GIDMap []syscall.SysProcIDMap
	SetgroupsAllow bool

	// PidFD asks for a pidfd of the child (CLONE_PIDFD).
	PidFD bool

	// Reaper makes the first process the sandbox's PID 1 at the
	// Program's Fork op (see [Program.Fork]); it needs CLONE_NEWPID.
	Reaper *Reaper

	// Early, from [Prespawn], is used instead of a clone when it was
	// made for the same Cloneflags and id maps; otherwise Start
	// abandons it. Either way Start owns it from here on.
	Early *Early

	// Overlap, when not nil, is called once by Start in the caller's
	// goroutine as soon as the child's clone is under way (with an early
	// process: once it has been told to fork, while it clones), and
	// before Start waits for the child's exec: work the caller needs done
	// before the command runs but not before the clone (signal.Notify),
	// done while the child sets up on the other CPU. Whatever it waits
	// for must not depend on Start returning. It is called whenever Start
	// got as far as trying the clone, whether that worked or not; it
	// must not fork.
	Overlap func()
}

// OpError reports the op that failed in the child. The child exited
// without exec'ing and has been reaped, except for an op after a Fork: see
// [Start].
type OpError struct {
	Index  int        // index in the Program, or -1 for an op Start added
	Label  string     // the op's label
	Nr     uintptr    // system call number
	Errno  unix.Errno // 0 if the op succeeded with a result other than Want
	Result uintptr    // the op's result (for a Want failure)
	Want   uintptr
}

func (e *OpError) Error() string {
	where := "setup op"
	if e.Index >= 0 {
		where = "op " + strconv.Itoa(e.Index)
	}
	if e.Errno == 0 {
		return fmt.Sprintf("rawexec: %s (%s): result %d, want %d", where, e.Label, int(e.Result), int(e.Want))
	}
	return fmt.Sprintf("rawexec: %s (%s): %v", where, e.Label, e.Errno)
}

// Unwrap returns the errno, or ErrResult.
func (e *OpError) Unwrap() error {
	if e.Errno == 0 {
		return ErrResult
	}
	return e.Errno
}

// Process is a child started by Start that has exec'd, or with a Reaper
// the first process (the sandbox's PID 1).
type Process struct {
	Pid      int
	pidfd    int
	viaEarly bool // cloned by an early process (tests check the path taken)
}

// PidFD returns the child's pidfd (close-on-exec, owned by the Process
// until Release), or -1 if Attr.PidFD was not set.
func (p *Process) PidFD() int { return p.pidfd }

// Wait waits for the child to exit and reaps it.
func (p *Process) Wait() (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(p.Pid, &ws, 0, nil)
		if err != unix.EINTR {
			return ws, err
		}
	}
}

// Signal sends sig to the child, through the pidfd if there is one (so
// it cannot hit a reused pid).
func (p *Process) Signal(sig unix.Signal) error {
	if p.pidfd >= 0 {
		return unix.PidfdSendSignal(p.pidfd, sig, nil, 0)
	}
	return unix.Kill(p.Pid, sig)
}

// Release closes the pidfd, if any.
func (p *Process) Release() error {
	if p.pidfd < 0 {
		return nil
	}
	err := unix.Close(p.pidfd)
	p.pidfd = -1
	return err
}

// launch is the op list Start runs: its own ops around the Program's.
type launch struct {
	ops    []op
	labels []string
	index  []int // index in the caller's Program, -1 for Start's ops
	keep   []any
	fork   int // index in ops of the Fork op, -1 if none
	rp     *reaper
}

func (l *launch) append(p *Program, fromCaller bool) {
	for i := range p.ops {
		l.ops = append(l.ops, p.ops[i])
		l.labels = append(l.labels, p.labels[i])
		if fromCaller {
			l.index = append(l.index, i)
		} else {
			l.index = append(l.index, -1)
		}
	}
	l.keep = append(l.keep, p.keep...)
}

// Use reports whether [Start] will use e for attr: it was made for the
// same Cloneflags and id maps and its setup, Prespawn's ops included, is
// done and succeeded (Use waits for that). What those ops did may be
// looked at once Use reports true; with false they may not have run, and
// Start clones as usual. A nil e reports false.
func (e *Early) Use(attr *Attr) bool {
	return e != nil && e.matches(attr) && e.ready()
}

// Start clones a child in the namespaces of attr.Cloneflags that runs, in
// order: the id-map setup, prog, the descriptor layout of attr.Files, and
// execve of attr.Path. It returns once the child has exec'd, or, if an op
// failed, an *OpError naming it after reaping the child.
//
// With attr.Reaper, the Process is the first process and the command is
// its forked child: Start returns once the forked child has exec'd. A
// failure before the Fork op (or of the Fork itself) is as above: the
// first process is reaped and Start returns (nil, *OpError). A failure
// after the Fork op (an op after it, the descriptor layout or execve)
// happens in the forked child, which exits with status 127: the first
// process lives on and reports it (Exited with status 127, then Done), so
// Start returns BOTH the live *Process and the *OpError, and does not wait
// for the first process: the caller reads the records, acks and calls
// Wait as usual.
func Start(prog *Program, attr *Attr) (*Process, error) {
	if attr != nil && attr.Early != nil {
		defer attr.Early.Abandon() // a no-op once it has started
		if !attr.Early.matches(attr) {
			attr.Early.Abandon()
		}
	}
	if prog == nil {
		prog = &Program{}
	}
	if err := checkStart(prog, attr); err != nil {
		return nil, err
	}
	s := &starter{attr: attr, early: attr.Early, errR: -1, errW: -1, syncp: [2]int{-1, -1}}
	if s.early != nil && !s.early.ready() {
		s.early = nil // its setup failed: the clone below meets the same error and reports it
	}
	s.parentMap = attr.IDMap == ParentMap && s.early == nil
	defer s.close()
	if err := s.pipes(); err != nil {
		return nil, err
	}
	l, err := s.compile(prog)
	if err != nil {
		return nil, err
	}
	proc, err := s.clone(l)
	if err != nil {
		return nil, err
	}
	return s.wait(l, proc)
}

// starter is one Start's state between its stages: checks, pipes,
// compile, clone and wait.
type starter struct {
	attr      *Attr
	early     *Early // nil: a clone of its own
	parentMap bool   // the parent writes the id maps (ParentMap without an early process)
	errR      int    // the error pipe, read end
	errW      int    // and the child's end, -1 once closed
	syncp     [2]int // ParentMap: the child waits on it for the maps
	nextfd    int    // the descriptor layout's first free number
	mapErr    error  // ParentMap: writing the maps failed
	overlaps  bool   // Attr.Overlap has been called
}

// overlap calls Attr.Overlap, once.
func (s *starter) overlap() {
	if s.overlaps {
		return
	}
	s.overlaps = true
	if s.attr.Overlap != nil {
		s.attr.Overlap()
	}
}

// checkStart checks prog and attr before anything is made.
func checkStart(prog *Program, attr *Attr) error {
	if err := prog.Err(); err != nil {
		return err
	}
	if attr == nil || attr.Path == "" {
		return errors.New("rawexec: no Path to exec")
	}
	if attr.Cloneflags&^allowedCloneFlags != 0 {
		return fmt.Errorf("rawexec: unsupported clone flags %#x", attr.Cloneflags&^allowedCloneFlags)
	}
	if attr.IDMap != NoIDMap && attr.Cloneflags&unix.CLONE_NEWUSER == 0 {
		return errors.New("rawexec: id maps need CLONE_NEWUSER")
	}
	for i, fd := range attr.Files {
		if fd < -1 {
			return fmt.Errorf("rawexec: Files[%d] = %d", i, fd)
		}
	}
	if err := checkSkips(prog, ""); err != nil {
		return err
	}
	return checkReaper(prog, attr)
}

// pipes makes the error pipe (its write end above every descriptor the
// layout reads) and, for ParentMap, the sync pipe.
func (s *starter) pipes() error {
	var errp [2]int
	if err := unix.Pipe2(errp[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("rawexec: pipe: %w", err)
	}
	s.errR, s.errW = errp[0], errp[1]
	if s.parentMap {
		if err := unix.Pipe2(s.syncp[:], unix.O_CLOEXEC); err != nil {
			s.syncp = [2]int{-1, -1}
			return fmt.Errorf("rawexec: pipe: %w", err)
		}
	}
	// The descriptor layout's first free number, above every descriptor
	// it reads, as in syscall.forkAndExecInChild1. The error pipe must
	// survive the shuffle, so it moves above it.
	nextfd := len(s.attr.Files)
	for _, fd := range s.attr.Files {
		nextfd = max(nextfd, fd)
	}
	nextfd++
	if s.errW < nextfd {
		nfd, err := unix.FcntlInt(uintptr(s.errW), unix.F_DUPFD_CLOEXEC, nextfd)
		if err != nil {
			return fmt.Errorf("rawexec: moving the error pipe: %w", err)
		}
		unix.Close(s.errW)
		s.errW = nfd
	}
	s.nextfd = max(nextfd, s.errW+1)
	return nil
}

// close closes what is left of the pipes.
func (s *starter) close() {
	if s.errR >= 0 {
		unix.Close(s.errR)
	}
	s.closeErrW()
	for _, fd := range s.syncp {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

func (s *starter) closeErrW() {
	if s.errW >= 0 {
		unix.Close(s.errW)
		s.errW = -1
	}
}

// compile is the op list the child runs: Start's own ops (the id maps)
// around prog's, then the descriptor layout and execve; and the
// reaper's part.
func (s *starter) compile(prog *Program) (*launch, error) {
	attr := s.attr
	// Everything the child touches is allocated now.
	argv, err := syscall.SlicePtrFromStrings(attr.Args)
	if err != nil {
		return nil, fmt.Errorf("rawexec: argv: %w", err)
	}
	envv, err := syscall.SlicePtrFromStrings(attr.Env)
	if err != nil {
		return nil, fmt.Errorf("rawexec: env: %w", err)
	}
	var pre, post Program
	if s.parentMap {
		one := make([]byte, 1)
		pre.Syscall("id map: close sync pipe writer", unix.SYS_CLOSE, Imm(s.syncp[1]))
		pre.Syscall("id map: wait for the parent", unix.SYS_READ, Imm(s.syncp[0]), Bytes(one), Imm(1)).Want(1)
	}
	if attr.IDMap == SelfMap && s.early == nil {
		uidMap, gidMap := attr.UIDMap, attr.GIDMap
		if uidMap == nil {
			uidMap = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		}
		if gidMap == nil {
			gidMap = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		}
		pre.WriteFile("id map: setgroups", "/proc/self/setgroups", []byte("deny"))
		pre.WriteFile("id map: uid_map", "/proc/self/uid_map", formatIDMap(uidMap))
		pre.WriteFile("id map: gid_map", "/proc/self/gid_map", formatIDMap(gidMap))
	}
	compileLayout(&post, attr.Files, s.nextfd)
	post.Syscall("execve "+attr.Path, unix.SYS_EXECVE, String(attr.Path), Ptr(&argv[0]), Ptr(&envv[0]))
	post.keep = append(post.keep, argv, envv)
	if err := errors.Join(pre.Err(), post.Err()); err != nil {
		return nil, err
	}
	l := &launch{}
	total := len(pre.ops) + len(prog.ops) + len(post.ops)
	l.ops, l.labels, l.index = make([]op, 0, total), make([]string, 0, total), make([]int, 0, total)
	l.append(&pre, false)
	l.fork = -1
	if prog.fork != 0 {
		l.fork = len(l.ops) + prog.fork - 1
	}
	l.append(prog, true)
	l.append(&post, false)
	if len(l.ops) > maxTotalOps {
		return nil, fmt.Errorf("rawexec: %d ops, at most %d", len(l.ops), maxTotalOps)
	}
	if attr.Reaper != nil {
		l.rp = compileReaper(attr.Reaper)
		if attr.Reaper.Exit != nil {
			l.keep = append(l.keep, attr.Reaper.Exit.keep...)
		}
	}
	return l, nil
}

// clone starts the child (through the early process when there is one)
// and, for ParentMap, writes its id maps. The Process it returns may
// have failed already: wait reads its report.
func (s *starter) clone(l *launch) (*Process, error) {
	flags := s.attr.Cloneflags
	pidfd := int32(-1)
	var pidfdp *int32
	if s.attr.PidFD {
		flags |= unix.CLONE_PIDFD
		pidfdp = &pidfd
	}
	var maps []idMapFile
	if s.parentMap {
		maps = idMapFiles(s.attr) // formatted now: the child waits for them
	}
	var (
		pid0  uintptr
		errno syscall.Errno
		err   error
	)
	syscall.ForkLock.Lock() // the first process copies the descriptor table
	if s.early != nil {
		// The early process forks the first process: the clone with its
		// namespaces (and the id maps) are done already.
		pid0, pidfd, err = s.early.start(l, flags&unix.CLONE_PIDFD, uintptr(s.errW), s.overlap)
	} else {
		// No LockOSThread: runtimeBeforeFork keeps the goroutine on
		// its thread until runtimeAfterFork, as in syscall.forkExec,
		// and the first LockOSThread of a process starts the
		// runtime's template thread (0.08 ms on the start's path).
		pid0, errno = forkExec(l.ops, flags, uintptr(s.errW), pidfdp, l.rp)
	}
	syscall.ForkLock.Unlock()
	s.overlap() // if the early process did not
	s.closeErrW()
	if err == nil && errno != 0 {
		err = fmt.Errorf("rawexec: clone: %w", errno)
	}
	if err != nil {
		runtime.KeepAlive(l)
		return nil, err
	}
	proc := &Process{Pid: int(pid0), pidfd: int(pidfd), viaEarly: s.early != nil}
	if s.parentMap {
		unix.Close(s.syncp[0])
		s.syncp[0] = -1
		err = writeIDMaps(proc.Pid, maps)
		if err == nil {
			_, err = unix.Write(s.syncp[1], []byte{1})
		}
		// On an error the child reads EOF, reports and exits.
		unix.Close(s.syncp[1])
		s.syncp[1] = -1
		if err != nil {
			s.mapErr = err
		}
	}
	return proc, nil
}

// wait reads the child's report: none (EOF) once it has exec'd, an op's
// failure otherwise (see Start for a failure after the Fork).
func (s *starter) wait(l *launch, proc *Process) (*Process, error) {
	var rep report
	n, err := readFull(s.errR, unsafe.Slice((*byte)(unsafe.Pointer(&rep)), unsafe.Sizeof(rep)))
	runtime.KeepAlive(l)
	// The early process exited right after its clone: reap it now (the
	// first process is this process's child from then on, and the
	// subreaper attribute goes).
	s.early.finish()
	mapErr := s.mapErr
	if n == 0 && err == nil && mapErr == nil {
		return proc, nil // EOF: the child exec'd
	}
	if l.fork >= 0 && mapErr == nil && err == nil && n == int(unsafe.Sizeof(rep)) &&
		int(rep.index) > l.fork && int(rep.index) < len(l.ops) {
		// The forked child failed; the first process reports it.
		return proc, l.opError(&rep)
	}
	// The child failed (or the parent did): make sure it is gone, then
	// reap it.
	if n != int(unsafe.Sizeof(rep)) {
		proc.Signal(unix.SIGKILL)
	}
	proc.Wait()
	proc.Release()
	switch {
	case mapErr != nil:
		return nil, fmt.Errorf("rawexec: writing the id maps: %w", mapErr)
	case err != nil:
		return nil, fmt.Errorf("rawexec: reading the child's report: %w", err)
	case n != int(unsafe.Sizeof(rep)):
		return nil, fmt.Errorf("rawexec: short report from the child (%d bytes)", n)
	}
	if int(rep.index) >= len(l.ops) {
		return nil, errors.New("rawexec: the child ran out of ops without exec'ing")
	}
	return nil, l.opError(&rep)
}

func (l *launch) opError(rep *report) *OpError {
	i := int(rep.index)
	return &OpError{
		Index:  l.index[i],
		Label:  l.labels[i],
		Nr:     l.ops[i].nr,
		Errno:  unix.Errno(rep.errno),
		Result: uintptr(rep.result),
		Want:   l.ops[i].want,
	}
}

// checkSkips checks that p's skips stay inside p and do not jump over its
// Fork op.
func checkSkips(p *Program, what string) error {
	for i := range p.ops {
		n := int(max(p.ops[i].skipOK, p.ops[i].skipIg))
		if i+1+n > len(p.ops) {
			return fmt.Errorf("rawexec: %sop %d (%s) skips %d ops, past the end of the program", what, i, p.labels[i], n)
		}
		if f := p.fork - 1; p.fork != 0 && i < f && i+n >= f {
			return fmt.Errorf("rawexec: %sop %d (%s) skips %d ops, over the Fork (op %d)", what, i, p.labels[i], n, f)
		}
	}
	return nil
}

// checkReaper checks Fork and Attr.Reaper.
func checkReaper(prog *Program, attr *Attr) error {
	r := attr.Reaper
	switch {
	case r == nil && prog.fork == 0:
		return nil
	case r == nil:
		return errors.New("rawexec: the Program has a Fork but Attr.Reaper is nil")
	case prog.fork == 0:
		return errors.New("rawexec: Attr.Reaper needs a Fork in the Program")
	case attr.Cloneflags&unix.CLONE_NEWPID == 0:
		// kill(-1, SIGKILL) must stay inside the sandbox.
		return errors.New("rawexec: Attr.Reaper needs CLONE_NEWPID")
	}
	keep := make(map[int]bool)
	for _, fd := range r.Keep {
		if fd < 0 || fd > 1<<30 {
			return fmt.Errorf("rawexec: Reaper.Keep holds %d", fd)
		}
		keep[fd] = true
	}
	for _, f := range []struct {
		name string
		fd   int
	}{{"Lifeline", r.Lifeline}, {"Status", r.Status}, {"Ack", r.Ack}, {"Dial", r.Dial}} {
		if f.fd < -1 || f.fd >= 0 && !keep[f.fd] {
			return fmt.Errorf("rawexec: Reaper.%s (%d) is not in Reaper.Keep", f.name, f.fd)
		}
	}
	for _, sig := range r.Signals {
		if sig < 1 || sig > 64 || sig == unix.SIGKILL || sig == unix.SIGSTOP || sig == unix.SIGCHLD {
			return fmt.Errorf("rawexec: Reaper.Signals: cannot forward %v", sig)
		}
	}
	if e := r.Exit; e != nil {
		if err := e.Err(); err != nil {
			return err
		}
		if e.fork != 0 {
			return errors.New("rawexec: Reaper.Exit has a Fork")
		}
		if err := checkSkips(e, "Reaper.Exit: "); err != nil {
			return err
		}
	}
	return nil
}

// compileReaper builds what the first process reads (r is checked).
func compileReaper(r *Reaper) *reaper {
	rp := &reaper{
		mask:     1 << (unix.SIGCHLD - 1),
		lifeline: uintptr(r.Lifeline),
		status:   uintptr(r.Status),
		ack:      uintptr(r.Ack), // -1 is noFD
		dial:     uintptr(r.Dial),
		s:        new(reaperState),
	}
	rp.setupDial()
	for _, sig := range r.Signals {
		rp.mask |= 1 << (sig - 1)
	}
	for _, fd := range r.Keep {
		rp.keep = append(rp.keep, uint32(fd))
	}
	slices.Sort(rp.keep)
	rp.keep = slices.Compact(rp.keep)
	if r.Exit != nil {
		rp.exit = slices.Clone(r.Exit.ops)
	}
	return rp
}

// compileLayout appends the ops that turn parent descriptors files[i]
// into the child's i, as syscall.forkAndExecInChild1 does: first move
// every source that a lower target would overwrite above nextfd, then
// dup3 each into place (clearing close-on-exec), then mark everything
// from len(files) up close-on-exec.
func compileLayout(p *Program, files []int, nextfd int) {
	fd := append([]int(nil), files...)
	for i := range fd {
		if fd[i] >= 0 && fd[i] < i {
			p.Syscall(fmt.Sprintf("fd layout: move %d out of the way", fd[i]), unix.SYS_DUP3,
				Imm(fd[i]), Imm(nextfd), Imm(unix.O_CLOEXEC))
			fd[i] = nextfd
			nextfd++
		}
	}
	for i := range fd {
		switch {
		case fd[i] == -1:
			p.Syscall(fmt.Sprintf("fd layout: close %d", i), unix.SYS_CLOSE, Imm(i)).Ignore(unix.EBADF)
		case fd[i] == i:
			// dup3(i, i) fails; clear close-on-exec instead.
			p.Syscall(fmt.Sprintf("fd layout: keep %d", i), unix.SYS_FCNTL, Imm(i), Imm(unix.F_SETFD), Imm(0))
		default:
			p.Syscall(fmt.Sprintf("fd layout: %d -> %d", fd[i], i), unix.SYS_DUP3, Imm(fd[i]), Imm(i), Imm(0))
		}
	}
	// Kernels before 5.11 lack CLOSE_RANGE_CLOEXEC (EINVAL) or close_range
	// (ENOSYS); there only descriptors opened with O_CLOEXEC are closed,
	// which is Go's own guarantee.
	p.Syscall("fd layout: close-on-exec the rest", unix.SYS_CLOSE_RANGE,
		Imm(len(files)), Imm(^uint32(0)), Imm(unix.CLOSE_RANGE_CLOEXEC)).Ignore(unix.ENOSYS, unix.EINVAL)
}

func formatIDMap(m []syscall.SysProcIDMap) []byte {
	var b strings.Builder
	for _, e := range m {
		fmt.Fprintf(&b, "%d %d %d\n", e.ContainerID, e.HostID, e.Size)
	}
	return []byte(b.String())
}

var fullIDMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}

// idMapFile is one file of the child's /proc/PID that writeIDMaps writes.
type idMapFile struct {
	name string
	data []byte
}

// idMapFiles are the child's maps for ParentMap, in the order the kernel
// needs: uid_map, then setgroups (before gid_map), then gid_map.
func idMapFiles(attr *Attr) []idMapFile {
	uidMap, gidMap := attr.UIDMap, attr.GIDMap
	if uidMap == nil {
		uidMap = fullIDMap
	}
	if gidMap == nil {
		gidMap = fullIDMap
	}
	setgroups := "deny"
	if attr.SetgroupsAllow {
		setgroups = "allow"
	}
	return []idMapFile{
		{"uid_map", formatIDMap(uidMap)},
		{"setgroups", []byte(setgroups)},
		{"gid_map", formatIDMap(gidMap)},
	}
}

// writeIDMaps writes maps (from idMapFiles) into /proc/pid.
func writeIDMaps(pid int, maps []idMapFile) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	for _, f := range maps {
		if err := writeExisting(dir+f.name, f.data); err != nil {
			return err
		}
	}
	return nil
}

func writeExisting(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n, err := unix.Write(fd, data)
	if err == nil && n != len(data) {
		err = unix.EIO
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// readFull reads until b is full or EOF.
func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}
