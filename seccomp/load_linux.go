package seccomp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LoadThread installs prog on the calling OS thread only (no TSYNC) after
// setting no_new_privs on it. The caller must have locked the goroutine to
// its thread and must never unlock it: the thread is meant to fork the
// sandboxed command and then die.
//
// A program compiled with Notify or UnixConnect and loaded this way has
// no listener: every notified call fails with ENOSYS.
func LoadThread(prog Program) error {
	_, err := load(prog, 0)
	return err
}

// LoadThreadListener is LoadThread with SECCOMP_FILTER_FLAG_NEW_LISTENER:
// it returns the filter's user-notification descriptor (close-on-exec,
// non-blocking), for NewListener here or in another process (it can be
// passed with SCM_RIGHTS). Where the kernel has it (5.19+), the filter is
// loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV too: once the
// supervisor has received a notification, only a fatal signal interrupts
// the waiting call. Without that flag, a signal (a Go program's runtime
// sends its threads SIGURG all the time) withdraws a notification the
// supervisor is already acting on, and the call is restarted and notified
// again — after the supervisor may have connected the socket.
//
// The kernel allows one listener in a task's filter stack: if a filter
// already loaded on this thread (or inherited, e.g. an outer sandbox) has
// one, the load fails with EBUSY.
func LoadThreadListener(prog Program) (*os.File, error) {
	fd, err := load(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	if errors.Is(err, unix.EINVAL) {
		// Before 5.19 the kernel refuses the unknown flag.
		fd, err = load(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	}
	if err != nil {
		return nil, err
	}
	// The kernel creates the descriptor close-on-exec. Non-blocking makes
	// os.NewFile register it with the runtime's poller, so that a Close
	// wakes a Receive blocked in another goroutine.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seccomp: listener: %w", err)
	}
	return os.NewFile(uintptr(fd), "seccomp-notify"), nil
}

func load(prog Program, flags uintptr) (int, error) {
	if len(prog) == 0 || len(prog)%8 != 0 {
		return -1, fmt.Errorf("seccomp: program of %d bytes is not a BPF program", len(prog))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return -1, fmt.Errorf("seccomp: loading filter: %w", errno)
	}
	return int(r), nil
}
