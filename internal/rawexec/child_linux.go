//go:build linux && (amd64 || arm64)

package rawexec

import (
	"syscall"
	"unsafe"
)

// The runtime's fork hooks, the same ones syscall.forkAndExecInChild1
// uses. The runtime pushes them into package syscall with //go:linkname,
// which is what lets these bodyless declarations resolve
// (go.dev/issue/67401).

//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

//go:linkname runtimeAfterForkInChild syscall.runtime_AfterForkInChild
func runtimeAfterForkInChild()

// report is what a failing child writes to the error pipe: a single
// write of 16 bytes, atomic on a pipe.
type report struct {
	index  uint32 // index in the op list; len(ops) if the list ran out
	errno  uint32 // 0 when a Want check failed
	result uint64
}

const childFailStatus = 127

// forkExec clones a child that runs ops and returns, in the parent, the
// child's pid. Like syscall.forkAndExecInChild1 it must not grow the
// stack between runtimeBeforeFork and runtimeAfterFork: everything it
// calls there is nosplit. The caller holds syscall.ForkLock and the OS
// thread. rp is nil unless ops hold a Fork op.
//
//go:norace
func forkExec(ops []op, flags uintptr, errFD uintptr, pidfd *int32, rp *reaper) (pid uintptr, errno syscall.Errno) {
	runtimeBeforeFork()
	// clone's 3rd argument is the parent_tid pointer on both amd64 and
	// arm64 (they differ in the order of the 4th and 5th, passed as 0);
	// with CLONE_PIDFD the kernel stores the pidfd there.
	pid, _, errno = syscall.RawSyscall6(syscall.SYS_CLONE, flags|uintptr(syscall.SIGCHLD), 0,
		uintptr(unsafe.Pointer(pidfd)), 0, 0, 0)
	if errno != 0 || pid != 0 {
		runtimeAfterFork()
		return pid, errno
	}
	runChild(ops, errFD, rp, false) // never returns
	return 0, 0
}

// runChild runs ops in the child. It runs without a working Go runtime
// (see the package documentation): nosplit, no allocation, no bounds
// checks that can fail (loop bounds and masked indexes), raw system calls
// only. It ends in the ops' execve or in exit_group; at a Fork op the
// first process turns into the reaper (reaperRun, which never returns)
// and the forked child goes on with the ops after it. signalsSet: the
// signal handlers and mask are the command's already (the early
// process's first process: see earlyMain).
//
//go:nosplit
//go:norace
func runChild(ops []op, errFD uintptr, rp *reaper, signalsSet bool) {
	var (
		slots [numSlots]uintptr
		r1    uintptr
		pid   uintptr
		e     syscall.Errno
		i     uint
	)

	if !signalsSet {
		// Restore the signal mask and reset handlers: BeforeFork
		// blocked every signal, and a blocked mask survives execve.
		runtimeAfterForkInChild()
	}

	i, r1, e = interp(ops, 0, &slots)
	if i < uint(len(ops)) && ops[i].flags&flagFork != 0 && rp != nil {
		if rp.vstack != 0 {
			// The command runs the ops after the Fork in
			// cmdMain and execs or exits: only the first
			// process returns.
			pid, e = reaperVfork(rp, uintptr(i+1), &slots)
		} else {
			pid, e = reaperFork(rp)
		}
		if e == 0 {
			if pid != 0 {
				reaperRun(rp, errFD, pid) // never returns
			}
			i, r1, e = interp(ops, i+1, &slots)
		}
	}
	childFail(errFD, i, r1, e)
}

// childFail reports the op at i on errFD and exits with childFailStatus.
// interp returns at the failing op, at a Fork op (there is none left
// here), or past the end: the list ends in execve, so running out of ops
// means it was built wrongly, and the report says len(ops).
//
//go:nosplit
//go:norace
func childFail(errFD uintptr, i uint, r1 uintptr, e syscall.Errno) {
	var rep report
	rep.index = uint32(i)
	rep.errno = uint32(e)
	rep.result = uint64(r1)
	syscall.RawSyscall6(syscall.SYS_WRITE, errFD, uintptr(unsafe.Pointer(&rep)), unsafe.Sizeof(rep), 0, 0, 0)
	for {
		syscall.RawSyscall6(syscall.SYS_EXIT_GROUP, childFailStatus, 0, 0, 0, 0, 0)
	}
}

// interp interprets ops from index i with the registers in slots. It
// returns the index of the op it stopped at with that op's result and
// errno: a failing op (errno 0 for a Want mismatch), a Fork op (result and
// errno 0), or an index >= len(ops) when it ran out of ops. It follows
// runChild's rules.
//
//go:nosplit
//go:norace
func interp(ops []op, i uint, slots *[numSlots]uintptr) (uint, uintptr, syscall.Errno) {
	var (
		a  [6]uintptr
		o  *op
		r1 uintptr
		e  syscall.Errno
		j  uint
	)
	// i is unsigned: i < len(ops) proves ops[i] in bounds.
	for ; i < uint(len(ops)); i++ {
		o = &ops[i]
		if o.flags&(flagStore|flagCmp|flagFork) != 0 {
			if o.flags&flagFork != 0 {
				return i, 0, 0
			}
			if o.flags&flagStore != 0 {
				*(*int32)(o.dst) = int32(slots[o.args[0]&slotMask])
			} else if *(*uint64)(o.dst) != uint64(o.want) {
				i += uint(o.skipOK)
			}
			continue
		}
		a = o.args
		for j = 0; j < 6; j++ {
			if o.ref&(1<<j) != 0 {
				a[j] = slots[a[j]&slotMask]
			}
		}
		r1, _, e = syscall.RawSyscall6(o.nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if e != 0 {
			if o.flags&flagIgnoreAll == 0 && uint16(e) != o.ignore[0] &&
				uint16(e) != o.ignore[1] && uint16(e) != o.ignore[2] {
				return i, r1, e
			}
			r1 = ^uintptr(0)
			i += uint(o.skipIg)
		} else if o.flags&flagWant != 0 && r1 != o.want {
			return i, r1, 0
		} else {
			i += uint(o.skipOK)
		}
		if o.save != 0 {
			slots[(o.save-1)&slotMask] = r1
		}
	}
	return i, 0, 0
}
