package seccomp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's user-notification structures (linux/seccomp.h).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type seccompNotifSizes struct {
	Notif, Resp, Data uint16
}

const (
	ioctlNotifRecv    = unix.SECCOMP_IOCTL_NOTIF_RECV // _IOWR('!', 0, struct seccomp_notif)
	ioctlNotifSend    = unix.SECCOMP_IOCTL_NOTIF_SEND // _IOWR('!', 1, struct seccomp_notif_resp)
	ioctlNotifIDValid = 0x40082102                    // _IOW('!', 2, __u64)
	// SECCOMP_IOCTL_NOTIF_SET_FLAGS (_IOW('!', 4, __u64); the flags are
	// the argument itself) and SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP.
	ioctlNotifSetFlags = 0x40082104
	notifFDSyncWakeUp  = 1
)

var notifSizes = sync.OnceValue(func() seccompNotifSizes {
	s := seccompNotifSizes{
		Notif: uint16(unsafe.Sizeof(seccompNotif{})),
		Resp:  uint16(unsafe.Sizeof(seccompNotifResp{})),
		Data:  uint16(unsafe.Sizeof(seccompData{})),
	}
	var k seccompNotifSizes
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&k)))
	if errno == 0 {
		// The kernel's structures may have grown: buffers must be at
		// least as large as its, and we read our prefix.
		s.Notif = max(s.Notif, k.Notif)
		s.Resp = max(s.Resp, k.Resp)
		s.Data = max(s.Data, k.Data)
	}
	return s
})

// Listener reads a seccomp filter's user notifications and answers them.
//
// Security notes for handlers. A notified task waits in the kernel, but
// its other threads, and other processes sharing its memory or its file
// table, keep running: memory read from the target (paths, socket
// addresses) and the objects its descriptors name can change after they
// were read. A decision must therefore act on the supervisor's own copy
// of what it read (as UnixAllow.Connect does: it connects a duplicate of
// the socket to the path it checked) and never be "read, check, then
// Continue" for anything security-relevant. After reading through the
// PID, call Request.Valid before acting, so that a reused PID is not
// taken for the target.
//
// When the Listener is closed (or the supervisor dies) while the filter
// lives, every notified call fails with ENOSYS: the sandbox fails
// closed, but with an errno programs do not expect for, say, connect(2).
// That needs the listener's last descriptor closed: a copy left in
// another process keeps the notifications pending.
type Listener struct {
	f      *os.File
	rc     syscall.RawConn
	err    error
	closed atomic.Bool

	// wake is an eventfd that Close signals, for Serve, which waits on a
	// thread of its own rather than in the runtime's poller. mu guards
	// it; -1 once closed.
	mu   sync.Mutex
	wake int
}

// NewListener wraps a notification descriptor (from LoadThreadListener,
// possibly received from another process). It takes ownership of f: f is
// closed and the Listener keeps its own non-blocking duplicate,
// registered with the Go runtime's poller.
func NewListener(f *os.File) *Listener {
	l := &Listener{wake: -1}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		l.err = fmt.Errorf("seccomp: listener: %w", err)
		return l
	}
	nfd := -1
	cerr := rc.Control(func(fd uintptr) {
		nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	f.Close()
	if cerr != nil {
		err = cerr
	}
	if err == nil {
		if err = unix.SetNonblock(nfd, true); err != nil {
			unix.Close(nfd)
		}
	}
	if err != nil {
		l.err = fmt.Errorf("seccomp: listener: %w", err)
		return l
	}
	// The caller waits for each answer: wake the receiver on the
	// caller's CPU, and the caller on the receiver's (Linux 6.6; older
	// kernels refuse the flag and keep the ordinary wake-ups).
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(nfd), ioctlNotifSetFlags, notifFDSyncWakeUp)
	l.f = os.NewFile(uintptr(nfd), "seccomp-notify")
	if l.rc, err = l.f.SyscallConn(); err != nil {
		l.f.Close()
		l.err = fmt.Errorf("seccomp: listener: %w", err)
		return l
	}
	if l.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		l.f.Close()
		l.wake = -1
		l.err = fmt.Errorf("seccomp: listener: eventfd: %w", err)
	}
	return l
}

func (l *Listener) wrap(op string, err error) error {
	if l.closed.Load() || errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("seccomp: %s: %w", op, os.ErrClosed)
	}
	return fmt.Errorf("seccomp: %s: %w", op, err)
}

// Receive blocks until a notification arrives and returns it. Errors:
// one wrapping os.ErrClosed once Close was called (Close wakes a blocked
// Receive); ErrNoTasks once no task can notify any more; one wrapping
// unix.ENOENT when the notification was withdrawn before it could be read
// (the target was killed): call Receive again. EINTR is retried. Calls
// are serialised; only one process should receive from a filter.
func (l *Listener) Receive() (*Request, error) {
	w, err := l.waiter()
	if err != nil {
		return nil, err
	}
	defer w.close()
	return w.receive()
}

func (l *Listener) request(n *seccompNotif) *Request {
	return &Request{
		ID:      n.ID,
		PID:     int(n.PID),
		Arch:    n.Data.Arch,
		Nr:      int(n.Data.Nr),
		Syscall: SyscallName(n.Data.Arch, int(n.Data.Nr)),
		Args:    n.Data.Args,
		IP:      n.Data.IP,
		l:       l,
	}
}

// Respond answers notification id: the call returns val, or fails with
// errno when errno is not 0, or runs as if allowed when continue_ is true
// (val and errno are then ignored). An error wrapping unix.ENOENT means
// the target no longer waits (it was killed, or a signal interrupted the
// call, which the kernel then restarts as a new notification).
func (l *Listener) Respond(id uint64, val int64, errno unix.Errno, continue_ bool) error {
	if l.err != nil {
		return l.err
	}
	sz := notifSizes()
	buf := make([]uint64, (int(sz.Resp)+7)/8)
	r := (*seccompNotifResp)(unsafe.Pointer(&buf[0]))
	r.ID = id
	if continue_ {
		r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else if errno != 0 {
		r.Error = -int32(errno)
	} else {
		r.Val = val
	}
	var opErr unix.Errno
	err := l.rc.Control(func(fd uintptr) {
		for {
			_, _, opErr = unix.Syscall(unix.SYS_IOCTL, fd, ioctlNotifSend, uintptr(unsafe.Pointer(&buf[0])))
			if opErr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		return l.wrap("respond", err)
	}
	if opErr != 0 {
		return l.wrap("respond", opErr)
	}
	return nil
}

// Valid reports whether notification id is still pending
// (SECCOMP_IOCTL_NOTIF_ID_VALID).
func (l *Listener) Valid(id uint64) bool {
	if l.err != nil {
		return false
	}
	var opErr unix.Errno
	err := l.rc.Control(func(fd uintptr) {
		for {
			_, _, opErr = unix.Syscall(unix.SYS_IOCTL, fd, ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
			if opErr != unix.EINTR {
				return
			}
		}
	})
	return err == nil && opErr == 0
}

// Close closes the listener, waking a Receive blocked in another
// goroutine. Pending and future notifications of the filter then fail
// with ENOSYS in the target.
func (l *Listener) Close() error {
	if l.err != nil {
		return nil
	}
	l.mu.Lock()
	l.closed.Store(true)
	if l.wake >= 0 {
		one := [8]byte{1}
		_, _ = unix.Write(l.wake, one[:])
		unix.Close(l.wake)
		l.wake = -1
	}
	l.mu.Unlock()
	return l.f.Close()
}

// Serve receives notifications until l is closed or no task uses the
// filter any more (then it returns nil), and answers each with h. A
// connect(2) is handled in its own goroutine (its handler may block in
// connect without holding up the others; there is at most one pending
// notification per target thread); every other call is handled on the
// receiving goroutine, which saves a goroutine hand-off per call on the
// hot path of observed file calls, so h must not block on those. A panic
// in h is answered EPERM. Serve returns after every handler has returned.
func Serve(l *Listener, h func(*Request) Response) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	// The notified task waits for every answer, so the receiver waits on a
	// thread of its own, blocked in ppoll(2) on the listener and Close's
	// eventfd, instead of in the runtime's poller: per notification that
	// is one ppoll, RECV and SEND, where the poller's round (a non-blocking
	// poll, epoll_pwait, the wake-ups of a parked goroutine, poll again)
	// cost about twice the system calls and, on this project's VMs, a
	// third of the observer's time per call.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, err := l.waiter()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	if err != nil {
		return err
	}
	defer w.close()
	for {
		r, err := w.receive()
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOENT):
			continue
		case errors.Is(err, os.ErrClosed), errors.Is(err, ErrNoTasks):
			return nil
		default:
			return err
		}
		answer := func() {
			resp := Response{Errno: unix.EPERM}
			func() {
				defer func() { _ = recover() }()
				resp = h(r)
			}()
			// ENOENT: the target is gone or was interrupted; ErrClosed:
			// the kernel answers ENOSYS itself. Nothing to do either way.
			_ = l.Respond(r.ID, resp.Val, resp.Errno, resp.Continue)
		}
		if r.Syscall != "connect" {
			answer()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer()
		}()
	}
}

// waiter is Serve's own hold on the listener: duplicates of its
// descriptor and of the wake eventfd, so that Close, which closes the
// Listener's, can neither pull a descriptor from under a blocked ppoll
// nor leave Serve polling a number the process has reused.
type waiter struct {
	l        *Listener
	fd, wake int
	buf      []uint64
}

func (l *Listener) waiter() (*waiter, error) {
	if l.err != nil {
		return nil, l.err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake < 0 {
		return nil, l.wrap("serve", os.ErrClosed)
	}
	w := &waiter{l: l, fd: -1, buf: make([]uint64, (int(notifSizes().Notif)+7)/8)}
	var err error
	if w.wake, err = unix.FcntlInt(uintptr(l.wake), unix.F_DUPFD_CLOEXEC, 0); err != nil {
		return nil, l.wrap("serve", err)
	}
	cerr := l.rc.Control(func(fd uintptr) {
		w.fd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if cerr != nil || err != nil {
		unix.Close(w.wake)
		if cerr != nil {
			err = cerr
		}
		return nil, l.wrap("serve", err)
	}
	return w, nil
}

func (w *waiter) close() {
	unix.Close(w.fd)
	unix.Close(w.wake)
}

// receive is Receive: it blocks in ppoll(2) on the calling thread. RECV
// itself would sleep past Close and ignores O_NONBLOCK, so it is called
// only once ppoll reports a notification.
func (w *waiter) receive() (*Request, error) {
	for {
		if w.l.closed.Load() {
			return nil, w.l.wrap("receive", os.ErrClosed)
		}
		pfd := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake), Events: unix.POLLIN}}
		if _, err := unix.Ppoll(pfd, nil, nil); err != nil {
			if err == unix.EINTR {
				continue
			}
			return nil, w.l.wrap("receive", err)
		}
		if pfd[1].Revents != 0 {
			return nil, w.l.wrap("receive", os.ErrClosed)
		}
		switch re := pfd[0].Revents; {
		case re&unix.POLLIN != 0:
		case re&unix.POLLHUP != 0:
			return nil, ErrNoTasks
		case re&(unix.POLLERR|unix.POLLNVAL) != 0:
			return nil, w.l.wrap("receive", fmt.Errorf("poll events %#x", re))
		default:
			continue
		}
		clear(w.buf) // the kernel insists on a zeroed buffer
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(w.fd), ioctlNotifRecv, uintptr(unsafe.Pointer(&w.buf[0])))
		switch errno {
		case 0:
			return w.l.request((*seccompNotif)(unsafe.Pointer(&w.buf[0]))), nil
		case unix.EINTR:
			continue
		case unix.ENOENT:
			return nil, fmt.Errorf("seccomp: receive: notification withdrawn: %w", unix.ENOENT)
		}
		return nil, w.l.wrap("receive", errno)
	}
}

// ReadMem reads the memory of process pid at addr into buf with
// process_vm_readv(2), falling back to /proc/PID/mem where that call is
// unavailable or refused. It returns the number of bytes read, which is
// short when the range runs into unmapped memory. Like every read of a
// target's memory, the result may be stale by the time it is used.
func ReadMem(pid int, addr uintptr, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err == nil {
		return n, nil
	}
	if err == unix.ENOSYS || err == unix.EPERM || err == unix.EACCES {
		if m, perr := readProcMem(pid, addr, buf); perr == nil {
			return m, nil
		}
	}
	return 0, fmt.Errorf("seccomp: reading memory of %d at %#x: %w", pid, addr, err)
}

func readProcMem(pid int, addr uintptr, buf []byte) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if int64(addr) < 0 {
		return 0, unix.EFAULT
	}
	n, err := f.ReadAt(buf, int64(addr))
	if n > 0 {
		return n, nil
	}
	if err == nil {
		err = unix.EFAULT
	}
	return 0, err
}

// ReadString reads a NUL-terminated string of at most max bytes (NUL not
// counted) from process pid at addr. A string with no NUL in the first
// max bytes is an error wrapping unix.ENAMETOOLONG.
func ReadString(pid int, addr uintptr, max int) (string, error) {
	if addr == 0 {
		return "", fmt.Errorf("seccomp: reading string: %w", unix.EFAULT)
	}
	page := os.Getpagesize()
	var out []byte
	for len(out) <= max {
		// Never cross a page in one read: the next page may be unmapped
		// while the string ends on this one.
		chunk := page - int((addr+uintptr(len(out)))%uintptr(page))
		chunk = min(chunk, max+1-len(out))
		b := make([]byte, chunk)
		n, err := ReadMem(pid, addr+uintptr(len(out)), b)
		if err != nil {
			return "", err
		}
		if i := bytes.IndexByte(b[:n], 0); i >= 0 {
			return string(append(out, b[:i]...)), nil
		}
		out = append(out, b[:n]...)
		if n < chunk {
			return "", fmt.Errorf("seccomp: reading string at %#x: %w", addr, unix.EFAULT)
		}
	}
	return "", fmt.Errorf("seccomp: string at %#x longer than %d bytes: %w", addr, max, unix.ENAMETOOLONG)
}

// sockaddrMax is sizeof(struct sockaddr_storage), the most connect(2)
// accepts.
const sockaddrMax = 128

// readSockaddr copies the n-byte socket address at addr, with the
// kernel's own length checks (move_addr_to_kernel).
func readSockaddr(pid int, addr uintptr, n int) ([]byte, error) {
	if n < 0 || n > sockaddrMax {
		return nil, unix.EINVAL
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	m, err := ReadMem(pid, addr, b)
	if err != nil {
		return nil, unix.EFAULT
	}
	if m < n {
		return nil, unix.EFAULT
	}
	return b, nil
}

// unixPath decodes the path of an AF_UNIX address: "" for an unnamed one,
// "@name" for an abstract one (the whole name, NULs included), else the
// path up to its first NUL, as the kernel reads it.
func unixPath(sa []byte) (path string, abstract bool) {
	if len(sa) <= 2 {
		return "", false
	}
	p := sa[2:]
	if p[0] == 0 {
		return "@" + string(p[1:]), true
	}
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p), false
}

// ReadSockaddr reads the n-byte socket address at addr in process pid and
// returns its family and, for AF_UNIX, its path (abstract names as
// "@name", "" for an unnamed address).
func ReadSockaddr(pid int, addr uintptr, n int) (family int, path string, err error) {
	sa, err := readSockaddr(pid, addr, n)
	if err != nil {
		return 0, "", fmt.Errorf("seccomp: reading socket address: %w", err)
	}
	if len(sa) < 2 {
		return 0, "", fmt.Errorf("seccomp: socket address of %d bytes: %w", n, unix.EINVAL)
	}
	family = int(*(*uint16)(unsafe.Pointer(&sa[0])))
	if family == unix.AF_UNIX {
		path, _ = unixPath(sa)
	}
	return family, path, nil
}
