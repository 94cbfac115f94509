//go:build linux && amd64

package rawexec

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An Early is a first process cloned before its Program exists (see
// [Prespawn]). Pass it to [Start] in [Attr.Early]; Start uses it when it
// was made for the same namespaces and id maps and otherwise abandons it
// and clones as usual. An Early that is never started must be abandoned.
type Early struct {
	pid     int
	flags   uintptr
	mode    IDMapMode
	maps    []idMapFile          // ParentMap: written by Start; SelfMap: written by the early process
	mem     []byte               // the header (s) and the early process's stack
	ops     *Program             // Prespawn's ops, which the early process reads
	callFn  func(unsafe.Pointer) // Call's, kept alive
	callArg unsafe.Pointer
	s       *earlyShared
	mu      sync.Mutex
	done    bool // started, abandoned or failed
	pending bool // started: finish has yet to reap it
}

// Stages of the early process (earlyShared.stage, a futex word that the
// kernel clears when the early process exits: CLONE_CHILD_CLEARTID).
const (
	earlyStarting = 0x8000_0001
	earlyReady    = 0x8000_0002
	earlyForked   = 0x8000_0003 // the first process is cloned (or failed to be: errno)
)

// Commands to it (earlyShared.cmd, a futex word).
const (
	earlyWait = 0
	earlyGo   = 1
	earlyCall = 2 // call s.call, then wait for Go
)

// earlyShared is the header the supervisor and the early process share
// (the early process runs in the supervisor's memory until it forks the
// first process). It lies outside the Go heap, in the same mapping as the
// early process's stack; the only Go pointer in it, h, is kept alive by
// Start while the early process reads it.
type earlyShared struct {
	stage    uint32
	cmd      uint32
	ppid     uintptr
	unshare  uintptr
	mask     uint64 // the supervisor thread's signal mask, restored in the first process
	nfiles   uintptr
	files    [3]earlyFile
	h        *handoff
	ops      []op                 // Prespawn's ops
	slots    [numSlots]uintptr    // theirs
	call     func(unsafe.Pointer) // Call's
	callArg  unsafe.Pointer
	called   uint32  // 1 once it has returned (a futex word)
	pid      uintptr // the first process, in the supervisor's pid namespace
	tid      int32   // the same, stored by the kernel at the clone (CLONE_PARENT_SETTID)
	pidfd    int32
	ign      uint64 // the signals ignored at Prespawn (bit sig-1), as the early process found them
	setIgn   uint64 // the signals the first process must ignore (bit set) or not...
	fixIgn   uint64 // ...among these: those whose disposition changed since Prespawn
	cargs    cloneArgs
	errno    uint32    // of the first process's clone
	failStep uint32    // the setup step that failed (earlyStep*), 0 if none
	failErr  uint32    // and its errno (for a debugger: Start falls back)
	buf      [512]byte // the SelfMap files' paths and contents
}

// cloneArgs is struct clone_args, clone3's first version (64 bytes).
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64
}

// earlyFile is one /proc/self file the early process writes (SelfMap).
type earlyFile struct{ path, data, n uintptr }

// handoff is what Start gives the early process: the first process's
// clone flags and runOps's arguments.
type handoff struct {
	flags uintptr
	ops   []op
	errFD uintptr
	rp    *reaper
}

// Steps of the early process's setup, for the error message.
const (
	earlyStepDeathSig = 1 + iota
	earlyStepParent
	earlyStepSignals
	earlyStepUnshare
	earlyStepOps
	earlyStepMap // + file index
)

// futex(2) operations (not in x/sys/unix) and AT_FDCWD as an argument.
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
	// The stage word is waited on and woken with shared futex ops: the
	// kernel's wake at the early process's exit (CLONE_CHILD_CLEARTID) is
	// a shared FUTEX_WAKE, which a private wait never sees.
	futexWait = 0
	futexWake = 1
	atFDCWD   = ^uintptr(99)
)

const (
	guardSize  = 4096
	earlyStack = 64 << 10
	earlyMem   = earlyStack + 4096
)

var errNoEarly = errors.New("rawexec: no early process")

// earlyTestUnshare is added to the early process's unshare flags: a test
// sets an invalid one to make its setup fail.
var earlyTestUnshare uintptr

// subreaper counts the early processes whose first process has yet to be
// reparented to this process (PR_SET_CHILD_SUBREAPER is on while > 0).
var subreaper struct {
	sync.Mutex
	n int
}

func subreaperHold() error {
	subreaper.Lock()
	defer subreaper.Unlock()
	if subreaper.n == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("rawexec: PR_SET_CHILD_SUBREAPER: %w", err)
		}
	}
	subreaper.n++
	return nil
}

func subreaperRelease() {
	subreaper.Lock()
	defer subreaper.Unlock()
	subreaper.n--
	if subreaper.n == 0 {
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// Prespawn clones the early process of a later [Start] with
// attr.Cloneflags, attr.IDMap, attr.UIDMap and attr.GIDMap (the rest of
// attr is not used). The early process shares this process's memory and
// descriptor table, creates the namespaces and (SelfMap) writes its id
// maps on the other CPU while the caller builds the Program, then waits.
// At Start it forks the first process, which from there on is what a
// plain Start's child would be (and becomes this process's child: the
// caller is a child subreaper until then), and exits.
//
// The early process dies with the thread that called Prespawn
// (PR_SET_PDEATHSIG), so a caller that exits without Start leaves
// nothing behind; a caller that goes on without it calls Abandon.
//
// ops (may be nil) run in the early process once it is set up, before it
// waits: system calls that need its namespaces but nothing of the plan,
// such as bringing up the loopback. They may not Fork, Store or compare
// (they run in the caller's memory), and a failing one makes the early
// process unusable: Start then clones as usual and the caller's own ops
// meet the same failure.
func Prespawn(attr *Attr, ops *Program) (*Early, error) {
	if ops != nil {
		if err := ops.Err(); err != nil {
			return nil, err
		}
		if err := checkSkips(ops, "early ops: "); err != nil {
			return nil, err
		}
		for i := range ops.ops {
			if ops.ops[i].flags&(flagStore|flagCmp|flagFork) != 0 {
				return nil, fmt.Errorf("rawexec: early op %d (%s) stores, compares or forks", i, ops.labels[i])
			}
		}
	}
	if attr.Cloneflags&^allowedCloneFlags != 0 || attr.Cloneflags&unix.CLONE_NEWUSER == 0 {
		return nil, fmt.Errorf("rawexec: Prespawn needs CLONE_NEWUSER and CLONE_NEW* flags only, not %#x", attr.Cloneflags)
	}
	if attr.IDMap != SelfMap && attr.IDMap != ParentMap {
		return nil, errors.New("rawexec: Prespawn needs SelfMap or ParentMap")
	}
	e := &Early{flags: attr.Cloneflags, mode: attr.IDMap, ops: ops}
	if attr.IDMap == ParentMap {
		e.maps = idMapFiles(attr)
	} else {
		e.maps = selfMapFiles(attr)
	}
	mem, err := unix.Mmap(-1, 0, earlyMem, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("rawexec: early stack: %w", err)
	}
	e.mem = mem
	// Guard pages: the lowest, below the command's vfork stack (the lower
	// half), and the one between that stack and the first process's (the
	// upper half). The header lies above the stack: an overflow runs down.
	for _, off := range []int{0, earlyStack/2 - guardSize} {
		if err := unix.Mprotect(mem[off:off+guardSize], unix.PROT_NONE); err != nil {
			unix.Munmap(mem)
			return nil, fmt.Errorf("rawexec: early stack guard: %w", err)
		}
	}
	// The header above the stack: an overflow runs off the mapping's
	// low end, not into the header.
	e.s = (*earlyShared)(unsafe.Pointer(&mem[earlyStack]))
	s := e.s
	s.stage = earlyStarting
	if ops != nil {
		s.ops = ops.ops // kept alive by e.ops
	}
	s.ppid = uintptr(os.Getpid())
	s.unshare = attr.Cloneflags | earlyTestUnshare
	s.pidfd = -1
	if attr.IDMap == SelfMap {
		if err := e.placeSelfMaps(); err != nil {
			unix.Munmap(mem)
			return nil, err
		}
	}
	// The first process is a copy of this thread's early process: give it
	// this thread's mask back (BeforeFork blocks every signal).
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, 0,
		uintptr(unsafe.Pointer(&s.mask)), 8, 0, 0); errno != 0 {
		unix.Munmap(mem)
		return nil, fmt.Errorf("rawexec: sigprocmask: %w", errno)
	}
	if err := subreaperHold(); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	// The early process starts with every signal blocked (BeforeFork),
	// on its own stack, and never runs Go code that needs the runtime.
	fn, stack, ctid := funcval(&earlyEntry), uintptr(unsafe.Pointer(s))&^15, uintptr(unsafe.Pointer(&s.stage))
	runtimeBeforeFork() // from here to runtimeAfterFork: no stack growth
	pid, errno := rawClone(unix.CLONE_VM|unix.CLONE_FILES|unix.CLONE_CHILD_CLEARTID|uintptr(syscall.SIGCHLD),
		stack, ctid, fn, unsafe.Pointer(s))
	runtimeAfterFork()
	if errno != 0 {
		subreaperRelease()
		unix.Munmap(mem)
		return nil, fmt.Errorf("rawexec: early clone: %w", syscall.Errno(errno))
	}
	e.pid = int(pid)
	return e, nil
}

// rawClone clones a process that runs fn(arg) on stack, fn being the
// funcval of a func(unsafe.Pointer)-shaped nosplit function that never
// returns; ctid is the CLONE_CHILD_CLEARTID word (0: none).
// Implemented in assembly.
//
//go:noescape
func rawClone(flags, stack, ctid, fn uintptr, arg unsafe.Pointer) (pid, errno uintptr)

// funcval returns the funcval pointer a func variable holds, for
// rawClone.
func funcval[F any](f *F) uintptr { return *(*uintptr)(unsafe.Pointer(f)) }

// earlyLoad and earlyStore are atomic loads and stores for the early
// process (assembly: sync/atomic is instrumented under the race
// detector).
//
//go:noescape
func earlyLoad(p *uint32) uint32

//go:noescape
func earlyStore(p *uint32, v uint32)

// selfMapFiles are the SelfMap files in the order the kernel needs.
func selfMapFiles(attr *Attr) []idMapFile {
	uidMap, gidMap := attr.UIDMap, attr.GIDMap
	if uidMap == nil {
		uidMap = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	}
	if gidMap == nil {
		gidMap = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return []idMapFile{
		{"setgroups", []byte("deny")},
		{"uid_map", formatIDMap(uidMap)},
		{"gid_map", formatIDMap(gidMap)},
	}
}

// placeSelfMaps copies the SelfMap files' paths and contents into the
// header, where the early process finds them.
func (e *Early) placeSelfMaps() error {
	s, off := e.s, 0
	put := func(b []byte) uintptr {
		if off+len(b) > len(s.buf) {
			return 0
		}
		p := uintptr(unsafe.Pointer(&s.buf[off]))
		off += copy(s.buf[off:], b)
		return p
	}
	for i, f := range e.maps {
		path := put(append([]byte("/proc/self/"+f.name), 0))
		data := put(f.data)
		if path == 0 || data == 0 {
			return errors.New("rawexec: id maps too long for an early process")
		}
		s.files[i] = earlyFile{path: path, data: data, n: uintptr(len(f.data))}
	}
	s.nfiles = uintptr(len(e.maps))
	return nil
}

// earlyEntry is earlyMain as a func value, which rawClone's child calls.
var earlyEntry = earlyMain

// earlyMain is the early process (see Prespawn). It runs in the
// supervisor's memory, on its own stack, while the supervisor goes on: it
// follows runChild's rules and writes only the header. It never returns.
// Its frame is small: runOps's chain of nosplit frames starts here.
//
//go:nosplit
//go:norace
func earlyMain(s *earlyShared) {
	earlySetup(s)
	if i, _, e := interp(s.ops, 0, &s.slots); i < uint(len(s.ops)) {
		earlyFail(s, earlyStepOps, e)
	}
	earlyStore(&s.stage, earlyReady)
	syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&s.stage)), futexWake, 1, 0, 0, 0)
	earlyWaitGo(s)
	h := s.h
	// The first process: a copy of the supervisor's memory as it is now
	// (the Program in it) and of the descriptor table, in the namespaces
	// made by earlySetup (PID 1 of the new pid namespace). clone3 has the
	// kernel store its pid (and pidfd) before it runs, so a supervisor
	// that sees this process die still knows whether it exists.
	s.cargs.flags = uint64(h.flags&^0xff) | unix.CLONE_PARENT_SETTID
	s.cargs.exitSignal = uint64(h.flags & 0xff)
	s.cargs.pidfd = uint64(uintptr(unsafe.Pointer(&s.pidfd)))
	s.cargs.parentTID = uint64(uintptr(unsafe.Pointer(&s.tid)))
	r, _, e := syscall.RawSyscall6(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&s.cargs)), unsafe.Sizeof(s.cargs), 0, 0, 0, 0)
	if e == syscall.ENOSYS { // before 5.3
		r, _, e = syscall.RawSyscall6(syscall.SYS_CLONE, h.flags, 0, uintptr(unsafe.Pointer(&s.pidfd)), 0, 0, 0)
	}
	if e == 0 && r == 0 {
		earlyFixSignals(s)
		syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&s.mask)), 0, 8, 0, 0)
		earlyRunChild(h.ops, h.errFD, h.rp, true) // never returns
	}
	s.pid = r
	s.errno = uint32(e)
	earlyStore(&s.stage, earlyForked)
	syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&s.stage)), futexWake, 1, 0, 0, 0)
	earlyExit(0)
}

// earlyFixSignals gives the first process the dispositions the
// supervisor has now, where they changed since Prespawn (a signal it
// ignored then and handles now, through signal.Notify, is the default for
// the command; one it ignores now is ignored), as Go's own fork child
// would have them. Every signal is still blocked here.
//
//go:nosplit
//go:norace
func earlyFixSignals(s *earlyShared) {
	var (
		act [4]uintptr // SIG_DFL, or SIG_IGN in act[0]
		i   uintptr
	)
	for i = 1; i <= 64; i++ {
		if s.fixIgn&(1<<(i-1)) == 0 {
			continue
		}
		act[0] = 0
		if s.setIgn&(1<<(i-1)) != 0 {
			act[0] = 1
		}
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, i, uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
}

// ignoredNow is the set of signals this process ignores (bit sig-1).
func ignoredNow() uint64 {
	var act [4]uintptr
	var set uint64
	for i := uintptr(1); i <= 64; i++ {
		if i == uintptr(syscall.SIGKILL) || i == uintptr(syscall.SIGSTOP) {
			continue
		}
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, i, 0, uintptr(unsafe.Pointer(&act)), 8, 0, 0); e == 0 && act[0] == 1 {
			set |= 1 << (i - 1)
		}
	}
	return set
}

// earlyWaitGo waits for Start, running Call's function once it comes (at
// the latest before the fork). It exits the process on any other
// command.
//
//go:nosplit
//go:norace
func earlyWaitGo(s *earlyShared) {
	var (
		c      uint32
		called bool
	)
	for {
		c = earlyLoad(&s.cmd)
		if c != earlyWait && c != earlyCall && c != earlyGo {
			earlyExit(0)
		}
		if c != earlyWait && !called {
			called = true
			if s.call != nil {
				s.call(s.callArg)
			}
			earlyStore(&s.called, 1)
			syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&s.called)), futexWakePrivate, 1, 0, 0, 0)
		}
		if c == earlyGo {
			return
		}
		syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&s.cmd)), futexWaitPrivate, uintptr(c), 0, 0, 0)
	}
}

// Call has the early process call fn(arg) while the caller goes on
// (Start lets it return before the fork), in the early process's
// namespaces and in the caller's memory, on the early stack. fn must
// follow the rules of the child code (see the package documentation:
// //go:nosplit and //go:norace, no allocation, no panics, raw system
// calls only) and write only memory the caller leaves alone until Start
// returns; nothing checks this. It is best effort: with an early process
// that turns out unusable fn never runs, so the caller's Program must
// check what fn did and do the rest. Call may be called once.
func (e *Early) Call(fn func(unsafe.Pointer), arg unsafe.Pointer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return errNoEarly
	}
	if e.callFn != nil {
		return errors.New("rawexec: Call called twice")
	}
	e.callFn, e.callArg = fn, arg // kept alive while the early process may call
	e.s.call, e.s.callArg = fn, arg
	atomic.StoreUint32(&e.s.cmd, earlyCall)
	syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&e.s.cmd)), futexWakePrivate, 1, 0, 0, 0)
	return nil
}

// waitCalled waits until Call's function has returned in the early
// process (or it is gone); for tests.
func (e *Early) waitCalled() {
	for atomic.LoadUint32(&e.s.called) == 0 && atomic.LoadUint32(&e.s.stage) != 0 {
		syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&e.s.called)), futexWaitPrivate, 0, 0, 0, 0)
	}
}

// earlyRunChild is runChild, called through a variable: the linker
// checks every chain of nosplit frames against the goroutine stack's
// guard (792 bytes), and runChild's chain from earlyMain exceeds it by a
// few words; the early process and the first process run on the 64 KiB
// early stack.
var earlyRunChild = runChild

// cmdEntry is cmdMain as a func value, which rawClone's child calls.
var cmdEntry = cmdMain

// reaperVfork is reaperFork for the first process of an early process:
// it blocks the signals and opens the signalfd the same way, then clones
// the command with CLONE_VM|CLONE_VFORK on the early stack's lower half
// (the first process runs at its top), where cmdMain runs the ops from
// start with a copy of slots. The first process sleeps until the command
// has exec'd or exited, so the command copies no page tables and its
// execve tears none down. It returns the command's pid.
//
//go:nosplit
//go:norace
func reaperVfork(rp *reaper, start uintptr, slots *[numSlots]uintptr) (uintptr, syscall.Errno) {
	s := rp.s
	if e := reaperSignals(rp); e != 0 {
		return 0, e
	}
	s.vstart = start
	s.vslots = *slots
	pid, errno := rawClone(unix.CLONE_VM|unix.CLONE_VFORK|uintptr(syscall.SIGCHLD), rp.vstack, 0, rp.vfn, unsafe.Pointer(rp))
	if errno != 0 {
		return 0, syscall.Errno(errno)
	}
	s.pid = pid
	return pid, 0
}

// cmdMain is the command between reaperVfork and execve, in the first
// process's memory (which sleeps meanwhile), on its own stack. It never
// returns.
//
//go:nosplit
//go:norace
func cmdMain(rp *reaper) {
	var (
		slots [numSlots]uintptr
		r1    uintptr
		e     syscall.Errno
		i     uint
	)
	slots = rp.s.vslots
	// The command starts with the mask the first process had: a blocked
	// mask would survive execve.
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK,
		uintptr(unsafe.Pointer(&rp.s.oldmask)), 0, 8, 0, 0)
	syscall.RawSyscall6(syscall.SYS_CLOSE, rp.s.sigfd, 0, 0, 0, 0, 0)
	i, r1, e = interp(rp.vops, uint(rp.s.vstart), &slots)
	childFail(rp.verr, i, r1, e)
}

// earlySetup makes the early process ready or exits it.
//
//go:nosplit
//go:norace
func earlySetup(s *earlyShared) {
	var (
		act [4]uintptr // struct kernel_sigaction: handler, flags, restorer, mask
		dfl [4]uintptr
		r   uintptr
		e   syscall.Errno
		i   uintptr
	)
	if _, _, e = syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0, 0); e != 0 {
		earlyFail(s, earlyStepDeathSig, e)
	}
	if r, _, _ = syscall.RawSyscall6(syscall.SYS_GETPPID, 0, 0, 0, 0, 0, 0); r != s.ppid {
		earlyFail(s, earlyStepParent, 0) // the supervisor is already gone
	}
	// The handlers are copies of the supervisor's Go handlers: back to the
	// default, as execve would do and Go's fork child does (signals
	// ignored stay ignored). Every signal stays blocked here.
	for i = 1; i <= 64; i++ {
		if i == uintptr(syscall.SIGKILL) || i == uintptr(syscall.SIGSTOP) {
			continue
		}
		if _, _, e = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, i, 0, uintptr(unsafe.Pointer(&act)), 8, 0, 0); e != 0 {
			continue
		}
		if act[0] == 1 { // SIG_IGN: stays (as across execve)
			s.ign |= 1 << (i - 1)
		}
		if act[0] != 0 && act[0] != 1 { // neither SIG_DFL nor SIG_IGN
			if _, _, e = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, i, uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
				earlyFail(s, earlyStepSignals, e)
			}
		}
	}
	if _, _, e = syscall.RawSyscall6(syscall.SYS_UNSHARE, s.unshare, 0, 0, 0, 0, 0); e != 0 {
		earlyFail(s, earlyStepUnshare, e)
	}
	for i = 0; i < s.nfiles && i < 3; i++ {
		r, _, e = syscall.RawSyscall6(syscall.SYS_OPENAT, atFDCWD, s.files[i].path,
			uintptr(syscall.O_WRONLY|syscall.O_CLOEXEC), 0, 0, 0)
		if e != 0 {
			earlyFail(s, earlyStepMap+uint32(i), e)
		}
		_, _, e = syscall.RawSyscall6(syscall.SYS_WRITE, r, s.files[i].data, s.files[i].n, 0, 0, 0)
		syscall.RawSyscall6(syscall.SYS_CLOSE, r, 0, 0, 0, 0, 0)
		if e != 0 {
			earlyFail(s, earlyStepMap+uint32(i), e)
		}
	}
}

//go:nosplit
//go:norace
func earlyFail(s *earlyShared, step uint32, e syscall.Errno) {
	s.failStep = step
	s.failErr = uint32(e)
	earlyExit(1)
}

//go:nosplit
//go:norace
func earlyExit(code uintptr) {
	for {
		syscall.RawSyscall6(syscall.SYS_EXIT, code, 0, 0, 0, 0, 0)
	}
}

// matches reports whether e was made for attr.
func (e *Early) matches(attr *Attr) bool {
	if attr.Cloneflags != e.flags || attr.IDMap != e.mode {
		return false
	}
	var want []idMapFile
	if e.mode == ParentMap {
		want = idMapFiles(attr)
	} else {
		want = selfMapFiles(attr)
	}
	return slices.EqualFunc(want, e.maps, func(a, b idMapFile) bool {
		return a.name == b.name && string(a.data) == string(b.data)
	})
}

// await waits until the early process's stage is want or 0 (the kernel
// cleared it: the early process exited) and returns which.
func (e *Early) await(want uint32) uint32 {
	for {
		v := atomic.LoadUint32(&e.s.stage)
		if v == want || v == 0 {
			return v
		}
		syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&e.s.stage)),
			futexWait, uintptr(v), 0, 0, 0)
	}
}

// reap waits until the early process has exited, reaps it and releases
// what it held: the subreaper attribute and its stack, which may be
// unmapped only now (the kernel clears the stage word once the process
// no longer runs in this memory).
func (e *Early) reap() {
	e.await(0)
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(e.pid, &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	subreaperRelease()
	unix.Munmap(e.mem)
}

// Abandon ends an early process that will not be started. It is safe
// to call more than once, and after Start.
func (e *Early) Abandon() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return
	}
	e.done = true
	unix.Kill(e.pid, unix.SIGKILL)
	e.reap()
}

// ready waits until the early process has made its namespaces (and
// SelfMap's maps) and reports true, or reports false, having reaped and
// released it, if its setup failed (failStep says where) or it was
// abandoned. Start then clones as usual, which meets the same error and
// reports it.
func (e *Early) ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return false
	}
	if e.await(earlyReady) == earlyReady {
		return true
	}
	e.done = true
	e.reap()
	return false
}

// start hands the launch to the early process (ready has returned true):
// it writes root's maps (ParentMap), and the early process forks the
// first process and exits; overlap runs while it does. start returns the first
// process's pid and pidfd (-1 without CLONE_PIDFD) once it is cloned;
// the early process may still be exiting: finish waits for that.
func (e *Early) start(l *launch, flags uintptr, errFD uintptr, overlap func()) (pid uintptr, pidfd int32, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return 0, -1, errNoEarly
	}
	e.done = true
	if e.mode == ParentMap {
		if err := writeIDMaps(e.pid, e.maps); err != nil {
			unix.Kill(e.pid, unix.SIGKILL)
			e.reap()
			return 0, -1, fmt.Errorf("rawexec: writing the id maps: %w", err)
		}
	}
	if l.rp != nil {
		// The command is vforked on the early stack's lower half.
		l.rp.vstack = uintptr(unsafe.Pointer(&e.mem[earlyStack/2-guardSize]))
		l.rp.vfn = funcval(&cmdEntry)
		l.rp.verr = errFD
		l.rp.vops = l.ops
	}
	// The dispositions may have changed since Prespawn (signal.Notify
	// on a signal that was ignored): the first process takes today's.
	if now := ignoredNow(); now != e.s.ign {
		e.s.setIgn, e.s.fixIgn = now, now^e.s.ign
	}
	h := &handoff{flags: flags | uintptr(syscall.SIGCHLD), ops: l.ops, errFD: errFD, rp: l.rp}
	e.s.h = h
	atomic.StoreUint32(&e.s.cmd, earlyGo)
	syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&e.s.cmd)), futexWakePrivate, 1, 0, 0, 0)
	overlap()
	e.await(earlyForked)
	runtime.KeepAlive(h)
	runtime.KeepAlive(e.ops)
	runtime.KeepAlive(e.callArg)
	// The stage may read 0 already (the kernel clears it at the exit
	// that follows earlyForked); pid and errno were written before, and
	// tid and pidfd by the kernel at the clone itself, so a first process
	// whose early process died right after cloning it is known too.
	pid, pidfd, errno := e.s.pid, e.s.pidfd, syscall.Errno(e.s.errno)
	if pid == 0 && e.s.tid > 0 {
		pid, errno = uintptr(e.s.tid), 0
	}
	if errno != 0 || pid == 0 {
		e.reap()
		if errno == 0 {
			return 0, -1, errors.New("rawexec: the early process died")
		}
		return 0, -1, fmt.Errorf("rawexec: clone: %w", errno)
	}
	e.pending = true
	return pid, pidfd, nil
}

// finish waits for a started early process to exit, reaps it (the first
// process is this process's child from then on) and releases its stack.
func (e *Early) finish() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.pending {
		return
	}
	e.pending = false
	e.reap()
}
