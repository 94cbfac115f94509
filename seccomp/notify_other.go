//go:build !linux

package seccomp

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The user-notification API is Linux-only; these stubs let portable code
// compile.

var errNotLinux = errors.New("seccomp: user notification is Linux-only")

// ErrNoTasks: see the Linux documentation.
var ErrNoTasks = errors.New("seccomp: no task uses the filter any more")

// DeniedErrno: see the Linux documentation.
const DeniedErrno = unix.EACCES

// Request is one notified system call.
type Request struct {
	ID      uint64
	PID     int
	Arch    uint32
	Nr      int
	Syscall string
	Args    [6]uint64
	IP      uint64
}

// Valid is always false here.
func (r *Request) Valid() bool { return false }

// Response is the answer to a Request.
type Response struct {
	Val      int64
	Errno    unix.Errno
	Continue bool
}

// Listener is Linux-only.
type Listener struct{}

// NewListener closes f and returns a Listener whose methods fail.
func NewListener(f *os.File) *Listener {
	if f != nil {
		f.Close()
	}
	return &Listener{}
}

func (l *Listener) Receive() (*Request, error)                    { return nil, errNotLinux }
func (l *Listener) Respond(uint64, int64, unix.Errno, bool) error { return errNotLinux }
func (l *Listener) Valid(uint64) bool                             { return false }
func (l *Listener) Close() error                                  { return nil }
func Serve(*Listener, func(*Request) Response) error              { return errNotLinux }
func ReadMem(int, uintptr, []byte) (int, error)                   { return 0, errNotLinux }
func ReadString(int, uintptr, int) (string, error)                { return "", errNotLinux }
func ReadSockaddr(int, uintptr, int) (int, string, error)         { return 0, "", errNotLinux }
func Describe(r *Request) (string, string)                        { return r.Syscall, "" }

// UnixAllow is Linux-only.
type UnixAllow struct {
	Notes          []string
	EmulateNonUnix bool
	ConnectNonUnix func(sock int, sockaddr []byte) unix.Errno
}

// UnixDenial describes a refused connect(2).
type UnixDenial struct {
	PID      int
	Path     string
	Resolved string
	Reason   string
	Errno    unix.Errno
}

func (d *UnixDenial) Error() string { return "connect to " + d.Path + " refused (" + d.Reason + ")" }

// NewUnixAllow is Linux-only.
func NewUnixAllow([]string) (*UnixAllow, error) { return nil, errNotLinux }

// Connect refuses everything here.
func (a *UnixAllow) Connect(r *Request) (Response, *UnixDenial) {
	return Response{Errno: unix.EPERM}, &UnixDenial{PID: r.PID, Reason: "not Linux", Errno: unix.EPERM}
}
