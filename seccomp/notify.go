package seccomp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The user-notification API's platform-neutral types, declared once for
// every OS. The API itself (Listener, Serve, UnixAllow, the readers of a
// target's memory) exists on Linux only; nothing portable calls it.

// ErrNoTasks is returned by Receive once no task uses the filter any more
// (every task that had it has exited and been reaped): no notification
// can ever come again. Kernels before 5.8 do not signal this; there
// Receive waits until Close.
var ErrNoTasks = errors.New("seccomp: no task uses the filter any more")

// Request is one notified system call.
type Request struct {
	ID uint64 // the kernel's cookie for this notification
	// PID is the calling thread's ID (a TID, not necessarily the
	// process's PID), in the receiver's PID namespace (0 if the thread is
	// not visible there). /proc/PID/... and process_vm_readv accept it.
	PID  int
	Arch uint32 // AUDIT_ARCH_*
	Nr   int
	// Syscall is the name of Nr for Arch from a static table covering
	// the calls the filter notifies (x86_64 and arm64), or "syscall#N".
	Syscall string
	Args    [6]uint64
	IP      uint64

	l interface{ Valid(id uint64) bool } // the Listener it came from
}

// Valid reports whether the notification is still pending, that is
// whether the calling task still exists and still waits for this answer.
// Anything read through the PID (memory, /proc/PID/...) describes the
// target only if Valid is true after the reading: a PID can be reused as
// soon as the target dies. A Request not obtained from Receive is never
// valid.
func (r *Request) Valid() bool {
	return r.l != nil && r.l.Valid(r.ID)
}

// Response is the answer to a Request. The zero Response makes the call
// return 0 without running it. Errno, when set, is the error the call
// fails with (Val is ignored). Continue lets the kernel run the call as
// if the filter had allowed it; the kernel then reads the arguments and
// the memory they point to again, so Continue must never follow a
// security decision made on that memory (see Listener).
type Response struct {
	Val      int64
	Errno    unix.Errno
	Continue bool
}

// DeniedErrno is what a connect(2) to a pathname Unix socket outside the
// allow-list fails with: EACCES, the errno the kernel itself gives when
// the socket file is not writable, so programs print "permission denied"
// rather than a misleading "connection refused" (the server is there) or
// a generic EPERM. Abstract addresses get EPERM, as Landlock's
// abstract-socket scope answers.
const DeniedErrno = unix.EACCES

// UnixDenial describes a refused connect(2), for the violation record.
type UnixDenial struct {
	PID int
	// Path is the address as the command gave it: a path (possibly
	// relative), or "@name" for an abstract socket.
	Path string
	// Resolved is the file Path resolved to in the command's view, when
	// resolution got that far.
	Resolved string
	Reason   string
	Errno    unix.Errno
}

func (d *UnixDenial) Error() string {
	s := fmt.Sprintf("connect to %q refused (%s)", d.Path, d.Reason)
	if d.Resolved != "" && d.Resolved != d.Path {
		s = fmt.Sprintf("connect to %q (%s) refused (%s)", d.Path, d.Resolved, d.Reason)
	}
	return s
}
