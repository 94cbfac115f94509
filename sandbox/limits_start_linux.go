//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/sbx-sh/sbx/internal/rawexec"
	"golang.org/x/sys/unix"
)

// limitsStart is a run's part of the limits (limits.go): its cgroup, and
// the pipe on which the first process reports, at the end, how full the
// private tmpfs is.
type limitsStart struct {
	cg         *cgroupRun
	statR      *os.File
	statW      *os.File
	statfs     unix.Statfs_t
	init       int
	statfsRead bool
}

// limitsBegin makes the run's cgroup (when the plan uses one) and the
// tmpfs report's pipe, and adds the first process's ops: joining the
// cgroup before anything else (before it forks the command), and the
// tmpfs's statfs at the end (before the view's own exit ops, whose
// failure would skip it).
func (l *launch) limitsBegin(prog *rawexec.Program) error {
	lp := l.pl.Limits
	if lp == nil {
		return nil
	}
	var err error
	if l.lim.cg, err = lp.makeCgroup(); err != nil {
		return err
	}
	for _, f := range l.lim.cg.procsFiles() {
		prog.Syscall("limits: joining the run's cgroup", unix.SYS_WRITE, rawexec.Imm(int(f.Fd())), rawexec.Bytes([]byte("0")), rawexec.Imm(1)).Want(1)
		prog.Syscall("limits: joining the run's cgroup", unix.SYS_CLOSE, rawexec.Imm(int(f.Fd())))
	}
	if _, ok := lp.uses("tmpSize"); ok {
		if l.lim.statR, l.lim.statW, err = os.Pipe(); err != nil {
			return fmt.Errorf("pipe: %w", err)
		}
		_ = l.lim.statR.Fd()
		st := &l.lim.statfs
		l.exit.Syscall("limits: statfs /tmp", unix.SYS_STATFS, rawexec.String("/tmp"), rawexec.Ptr(st)).
			Ignore(unix.ENOENT, unix.EACCES, unix.EINTR)
		l.exit.Syscall("limits: reporting /tmp", unix.SYS_WRITE, rawexec.Imm(int(l.lim.statW.Fd())), rawexec.Ptr(st), rawexec.Imm(int(unsafe.Sizeof(*st)))).
			Ignore(unix.EPIPE, unix.EAGAIN, unix.EINTR)
	}
	return nil
}

// rlimitOps sets the rlimits of the plan in the command, soft and hard
// (the command cannot raise them: that needs CAP_SYS_RESOURCE in the
// host's user namespace).
func (l *launch) rlimitOps(prog *rawexec.Program) {
	lp := l.pl.Limits
	if lp == nil {
		return
	}
	v := lp.values
	set := func(label string, res int, cur, max uint64) {
		prog.Syscall("limits: "+label, unix.SYS_PRLIMIT64, rawexec.Imm(0), rawexec.Imm(res), rawexec.Ptr(&unix.Rlimit{Cur: cur, Max: max}), rawexec.Imm(0))
	}
	if u, ok := lp.uses("pids"); ok && !lp.cgroupUse("pids") && u.Mechanism != "" {
		set("RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(v.Pids), uint64(v.Pids))
	}
	if _, ok := lp.uses("memory"); ok && !lp.cgroupUse("memory") {
		set("RLIMIT_DATA", unix.RLIMIT_DATA, uint64(v.Memory), uint64(v.Memory))
	}
	if _, ok := lp.uses("cpuTime"); ok {
		s := rlimitSeconds(v.CPUTime.Seconds())
		set("RLIMIT_CPU", unix.RLIMIT_CPU, s, s+1)
	}
	if _, ok := lp.uses("fileSize"); ok {
		set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(v.FileSize), uint64(v.FileSize))
	}
	if _, ok := lp.uses("openFiles"); ok {
		set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, uint64(v.OpenFiles), uint64(v.OpenFiles))
	}
}

// limitsStarted closes the supervisor's copies of what the first process
// now holds, and starts the CPU-time watch.
func (l *launch) limitsStarted(proc *rawexec.Process) {
	l.lim.cg.closeProcs()
	if l.lim.statW != nil {
		l.lim.statW.Close()
		l.lim.statW = nil
	}
	if proc != nil {
		l.lim.init = proc.Pid
		l.lim.cg.watchCPU(proc.Pid)
	}
}

// limitsExitOps are the first process's last exit ops, after the
// view's (whose failure skips them; then the cgroup is removed after its
// exit): it leaves the run's cgroups, being the sandbox's last process
// by then, so that they are empty at its Done and go at once instead of
// after its exit, whose teardown of the namespaces (0.4-10 ms here) the
// supervisor would wait for. keep are the descriptors they use.
func (l *launch) limitsExitOps() (keep []int) {
	for _, f := range l.lim.cg.leaveFiles() {
		l.exit.Syscall("limits: leaving the run's cgroup", unix.SYS_WRITE, rawexec.Imm(int(f.Fd())), rawexec.Bytes([]byte("0")), rawexec.Imm(1)).Ignore()
		keep = append(keep, int(f.Fd()))
	}
	return keep
}

// limitsEnd records the limits the run hit, once every process of the
// sandbox is gone (final: the first process wrote its last record), and
// removes the run's cgroup.
func (l *launch) limitsEnd(proc *rawexec.Process, ws unix.WaitStatus, exited, final bool) {
	lp := l.pl.Limits
	if lp == nil {
		return
	}
	cg := l.lim.cg
	cg.endWatch()
	if final && l.lim.statR != nil {
		var buf [unsafe.Sizeof(unix.Statfs_t{})]byte
		if n, _ := l.lim.statR.Read(buf[:]); n == len(buf) {
			l.lim.statfs = *(*unix.Statfs_t)(unsafe.Pointer(&buf[0]))
			l.lim.statfsRead = true
		}
	}
	for _, r := range limitRecords(lp, cg, ws, exited, l.lim.statfsRead, &l.lim.statfs) {
		l.col.Add(r)
	}
	if cg != nil && proc != nil && !(final && cg.removeNow()) {
		// The first process's exit, not waited for otherwise, is what
		// empties the cgroup when it did not leave it.
		_, _ = proc.Wait()
	}
	cg.remove()
	l.lim.cg = nil
}

// limitsCleanup releases what limitsBegin made when the run ends early.
func (l *launch) limitsCleanup() {
	l.lim.cg.remove()
	for _, f := range []*os.File{l.lim.statR, l.lim.statW} {
		if f != nil {
			f.Close()
		}
	}
}
