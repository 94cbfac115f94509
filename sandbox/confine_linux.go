//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/sbx-sh/sbx/internal/userns"
	"github.com/sbx-sh/sbx/seccomp"
	"golang.org/x/sys/unix"
)

// startConfined starts the command from a dedicated OS thread that is
// confined first: Landlock, every capability dropped (bounding and
// ambient sets too, securebits locked), no_new_privs, seccomp. The forked
// command inherits exactly that thread's credentials and filter. The
// thread is never released: it exits with its goroutine, and the Go
// runtime creates later threads from its clean template thread, so the
// rest of the process stays unconfined.
//
// With a notifying filter (Plan.Seccomp.Notify or UnixConnect) it also
// returns the filter's listener, for the supervisor.
//
// It returns the command's pid; the caller reaps it with wait4. The
// command is started with syscall.ForkExec, not os.StartProcess: the
// latter probes pidfd support on first use (one more fork) and, given a
// nil environment, passes on the caller's own.
func startConfined(pl *Plan, path string, files []*os.File) (int, *os.File, error) {
	type result struct {
		pid      int
		listener *os.File
		err      error
	}
	ch := make(chan result, 1)
	var confine func()
	confine = func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if unix.Gettid() == unix.Getpid() {
			// This is the main thread, the thread-group leader. It must
			// not be the confined one: signals and ptrace access to this
			// process are checked against the leader's credentials and
			// Landlock domain, so the command (in the same domain) could
			// signal sbx. Hold it, locked, while the work runs on a
			// goroutine that therefore gets another thread.
			done := make(chan struct{})
			go func() { confine(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		if _, err := pl.Landlock.RestrictThread(); err != nil {
			ch <- result{err: err}
			return
		}
		if err := dropCaps(); err != nil {
			ch <- result{err: err}
			return
		}
		var listener *os.File
		if pl.Seccomp.Notify || pl.Seccomp.UnixConnect {
			l, err := seccomp.LoadThreadListener(pl.Filter)
			if errors.Is(err, unix.EBUSY) && !pl.Seccomp.UnixConnect {
				// An outer sandbox already listens on this filter stack
				// (one listener per stack): enforce the same rules
				// without reporting them.
				err = loadPlain(pl.Seccomp)
			} else if errors.Is(err, unix.EBUSY) {
				err = fmt.Errorf("seccomp: an outer sandbox already uses seccomp user notification, which network.allowUnixSockets needs: %w", err)
			}
			if err != nil {
				ch <- result{err: err}
				return
			}
			listener = l
		} else if err := seccomp.LoadThread(pl.Filter); err != nil {
			ch <- result{err: err}
			return
		}
		fds := make([]uintptr, len(files))
		for i, f := range files {
			fds[i] = f.Fd() // a nil file is -1: closed in the command
		}
		env := pl.Env
		if env == nil {
			env = []string{}
		}
		pid, err := syscall.ForkExec(path, pl.Argv, &syscall.ProcAttr{
			Dir:   pl.Dir,
			Env:   env,
			Files: fds,
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
		runtime.KeepAlive(files)
		if err != nil {
			err = &os.PathError{Op: "fork/exec", Path: path, Err: err}
			if listener != nil {
				listener.Close()
				listener = nil
			}
		}
		ch <- result{pid, listener, err}
	}
	go confine()
	r := <-ch
	return r.pid, r.listener, r.err
}

// loadPlain compiles and loads the filter without notification.
func loadPlain(c seccomp.Config) error {
	c.Notify, c.ObserveNet = false, false
	prog, err := seccomp.Compile(c)
	if err != nil {
		return err
	}
	return seccomp.LoadThread(prog)
}

// dropCaps empties every capability set of the calling thread and locks
// the securebits so that executing a setuid-root or file-capability binary,
// or running as uid 0, gains nothing.
func dropCaps() error {
	last := userns.LastCap()
	havePcap := hasCap(unix.CAP_SETPCAP)
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && havePcap {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	if havePcap {
		// NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, each locked; KEEP_CAPS off but locked.
		const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
			return fmt.Errorf("locking securebits: %w", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing capabilities: %w", err)
	}
	return nil
}

func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// closeExtraFDs marks every descriptor from 3 up close-on-exec, so
// nothing the caller leaked to sbx, and nothing sbx opened, reaches the
// command unless passed explicitly.
func closeExtraFDs() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// signalCommand sends sig to the command's process group (the command is
// a session leader, so its pipeline gets it as from a terminal), or to
// the command alone when the group is gone.
func signalCommand(pid int, sig unix.Signal) {
	if unix.Kill(-pid, sig) != nil {
		_ = unix.Kill(pid, sig)
	}
}

// waitStatusCode maps a wait status to the sbx exit status convention.
func waitStatusCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 125
}

// forwarded are the signals relayed to the command.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}
