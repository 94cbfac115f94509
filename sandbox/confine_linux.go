//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

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
func startConfined(pl *Plan, path string, files []*os.File) (*os.Process, *os.File, error) {
	type result struct {
		proc     *os.Process
		listener *os.File
		err      error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
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
		// os.StartProcess passes on the caller's own environment when
		// Env is nil (--clear-env with nothing passed): in the weaker
		// mode that is sbx's, credentials included.
		env := pl.Env
		if env == nil {
			env = []string{}
		}
		proc, err := os.StartProcess(path, pl.Argv, &os.ProcAttr{
			Dir:   pl.Dir,
			Env:   env,
			Files: files,
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
		if err != nil && listener != nil {
			listener.Close()
			listener = nil
		}
		ch <- result{proc, listener, err}
	}()
	r := <-ch
	return r.proc, r.listener, r.err
}

// loadPlain compiles and loads the filter without notification.
func loadPlain(c seccomp.Config) error {
	c.Notify = false
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
	last := lastCap()
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

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n := 0
	for _, ch := range b {
		if ch >= '0' && ch <= '9' {
			n = n*10 + int(ch-'0')
		}
	}
	return n
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
