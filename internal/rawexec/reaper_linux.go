//go:build linux && (amd64 || arm64)

package rawexec

import (
	"encoding/binary"
	"fmt"
	"io"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reaper turns the first process into the sandbox's PID 1 once the
// Program reaches its Fork op: the first process forks the command, then
// reaps every process of the pid namespace, forwards signals to the
// command, reports to the supervisor and dies, killing everything, when
// the command ends or the supervisor goes away. See the package
// documentation ("PID 1").
type Reaper struct {
	// Lifeline is a descriptor of the first process: readable (EOF) or
	// POLLHUP/POLLERR means the supervisor is gone or wants the sandbox
	// stopped: SIGKILL every process (kill(-1, SIGKILL)), collect them,
	// report Exited with the forked child's wait status. -1: none (only
	// the command's end stops the sandbox).
	Lifeline int
	// Status receives fixed-size records (type Record below), each one write.
	Status int
	// Ack: after writing Exited, the first process reads (blocking) one
	// byte or EOF from Ack, then runs Exit. -1: no wait.
	Ack int
	// Signals are forwarded to the forked child's process group
	// (kill(-pid, sig), falling back to kill(pid, sig)) when the first
	// process receives them (from the supervisor, which signals PID 1).
	// SIGKILL, SIGSTOP and SIGCHLD are refused.
	Signals []unix.Signal
	// Keep are the descriptors the first process keeps once it has
	// forked: everything else (0, 1, 2 included, so the command's output
	// reaches EOF when the command's own copies close) is closed. Must
	// include Lifeline, Status, Ack and any descriptor Exit uses.
	Keep []int
	// Dial, when not -1, is a SOCK_SEQPACKET socket on which the first
	// process serves dials: for each DialRequest it reads, it connects a
	// new TCP socket to 127.0.0.1:Port in its own (the sandbox's) network
	// namespace and answers with a DialReply, the socket attached
	// (SCM_RIGHTS) unless the reply has an Errno. The connect is
	// non-blocking: a handed-over socket may still be connecting (the
	// parent waits for it to become writable and reads SO_ERROR; see
	// WaitConnected). The first process never blocks on Dial: requests
	// are read with MSG_DONTWAIT, a reply it cannot send at once is
	// dropped (the parent times out), and EOF or a hang-up on Dial only
	// stops the service. Dial must be in Keep.
	Dial int
	// Exit runs after Exited (and Ack): e.g. unmount and unlink ops. Its
	// ops' failures are handled like any Program's (Ignore / skips); an
	// unignored failure ends Exit early (no report, the first process still
	// writes Done). nil: none. Exit has its own slots (it cannot read the
	// main Program's) and may not hold a Fork.
	Exit *Program
}

// Record is what the first process writes to Reaper.Status.
type Record struct {
	Kind   uint32 // RecordStarted, RecordExited, RecordDone
	Pid    int32  // Started: the forked child's pid (in the new pid namespace)
	Status uint32 // Exited: the forked child's raw wait status (unix.WaitStatus)
	_      uint32
}

// Record kinds, in the order the first process writes them.
const (
	RecordStarted = 1 // the command was forked (Pid)
	RecordExited  = 2 // the command and every other process are gone (Status)
	RecordDone    = 3 // Exit has run; the first process exits with status 0
)

const recordSize = int(unsafe.Sizeof(Record{}))

// ReadRecord reads one Record from r (helper for the parent). It returns
// io.EOF if r is at EOF before the record, io.ErrUnexpectedEOF inside one.
func ReadRecord(r io.Reader) (Record, error) {
	var b [recordSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Record{}, err
	}
	return Record{
		Kind:   binary.NativeEndian.Uint32(b[0:]),
		Pid:    int32(binary.NativeEndian.Uint32(b[4:])),
		Status: binary.NativeEndian.Uint32(b[8:]),
	}, nil
}

// DialRequest asks the first process for a connection to 127.0.0.1:Port
// inside the sandbox (Reaper.Dial). ID is the parent's, returned in the
// reply.
type DialRequest struct {
	ID   uint64
	Port uint16
	_    [6]byte
}

// DialReply answers a DialRequest: Errno 0 comes with the socket
// (SCM_RIGHTS, possibly still connecting); otherwise the socket or
// connect call failed with Errno and no descriptor is attached.
type DialReply struct {
	ID    uint64
	Errno uint32
	_     uint32
}

// Sizes of a DialRequest and a DialReply on the Dial socket (each one
// message).
const (
	DialRequestSize = int(unsafe.Sizeof(DialRequest{}))
	DialReplySize   = int(unsafe.Sizeof(DialReply{}))
)

// Encode returns r as the first process reads it.
func (r DialRequest) Encode() []byte {
	b := make([]byte, DialRequestSize)
	binary.NativeEndian.PutUint64(b[0:], r.ID)
	binary.NativeEndian.PutUint16(b[8:], r.Port)
	return b
}

// DecodeDialReply reads a DialReply message (its payload, without the
// descriptor).
func DecodeDialReply(b []byte) (DialReply, error) {
	if len(b) != DialReplySize {
		return DialReply{}, fmt.Errorf("rawexec: dial reply of %d bytes, want %d", len(b), DialReplySize)
	}
	return DialReply{ID: binary.NativeEndian.Uint64(b[0:]), Errno: binary.NativeEndian.Uint32(b[8:])}, nil
}

// WaitConnected waits up to d for a socket the first process handed over
// (DialReply) to finish connecting, and returns the connect's result
// (e.g. ECONNREFUSED) or ETIMEDOUT.
func WaitConnected(fd int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms < 0 {
			ms = 0
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.ETIMEDOUT
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		if soerr != 0 {
			return unix.Errno(soerr)
		}
		return nil
	}
}

// reaper is the compiled Reaper. The child only reads it, except s.
type reaper struct {
	mask     uint64 // kernel sigset: SIGCHLD and Signals
	lifeline uintptr
	status   uintptr
	ack      uintptr  // ^0 for none
	dial     uintptr  // ^0 for none
	keep     []uint32 // sorted, distinct
	exit     []op
	s        *reaperState
	// The dial replies' message headers, set up by the parent: with the
	// socket attached (withFD) and without. They point into s.
	msgFD, msgNoFD unix.Msghdr
	iov            unix.Iovec
	// vfork, when vstack is not 0 (an early process's first process): the
	// command is a CLONE_VM|CLONE_VFORK child on the stack below vstack
	// that runs cmdMain through the func value vfn, with ops from s.vstart
	// of vops, reporting on verr.
	vstack, vfn, verr uintptr
	vops              []op
}

// reaperState is the pointer-free memory the first process writes (its
// copy of it): state that would not fit the nosplit frames.
type reaperState struct {
	oldmask uint64 // the mask before Fork, restored in the forked child
	sigfd   uintptr
	pid     uintptr // the forked child, in the new pid namespace
	wstatus uint32  // its wait status, once known
	ws      int32   // wait4's buffer
	pfd     [3]unix.PollFd
	info    unix.SignalfdSiginfo
	dial    uintptr // rp.dial while it is served, then noFD
	dreq    DialRequest
	dreply  DialReply
	dsa     unix.RawSockaddrInet4
	cmsg    dialCmsg
	rec     Record
	buf     [8]byte
	slots   [numSlots]uintptr // Exit's
	vstart  uintptr           // the vforked command's first op
	vslots  [numSlots]uintptr // and its slots
}

// dialCmsg is one SCM_RIGHTS control message with one descriptor
// (unix.CmsgSpace(4) bytes).
type dialCmsg struct {
	hdr unix.Cmsghdr
	fd  int32
	_   int32
}

const noFD = ^uintptr(0)

// setupDial points rp's reply headers into rp.s (in the parent).
func (rp *reaper) setupDial() {
	s := rp.s
	s.dsa.Family = unix.AF_INET
	s.dsa.Addr = [4]byte{127, 0, 0, 1}
	s.cmsg.hdr.Level = unix.SOL_SOCKET
	s.cmsg.hdr.Type = unix.SCM_RIGHTS
	s.cmsg.hdr.SetLen(unix.CmsgLen(4))
	rp.iov.Base = (*byte)(unsafe.Pointer(&s.dreply))
	rp.iov.SetLen(DialReplySize)
	rp.msgNoFD.Iov = &rp.iov
	rp.msgNoFD.Iovlen = 1
	rp.msgFD = rp.msgNoFD
	rp.msgFD.Control = (*byte)(unsafe.Pointer(&s.cmsg))
	rp.msgFD.SetControllen(int(unsafe.Sizeof(s.cmsg)))
}

// Everything below runs in the first process (or, until it restores its
// mask, in the forked child) after the clone and follows runChild's rules:
// nosplit, norace, no allocation, no failing bounds checks, raw system
// calls only, integer writes into rp.s only.

// reaperFork blocks SIGCHLD and the forwarded signals, opens a signalfd
// for them and clones the command. It returns the child's pid in the first
// process and 0 in the child, whose mask it has restored.
//
//go:nosplit
//go:norace
func reaperFork(rp *reaper) (uintptr, syscall.Errno) {
	s := rp.s
	if e := reaperSignals(rp); e != 0 {
		return 0, e
	}
	fd := s.sigfd
	pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	if pid == 0 {
		// The command starts with the mask the first process had:
		// a blocked mask would survive execve.
		syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK,
			uintptr(unsafe.Pointer(&s.oldmask)), 0, 8, 0, 0)
		syscall.RawSyscall6(syscall.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		return 0, 0
	}
	s.pid = pid
	return pid, 0
}

// reaperSignals blocks SIGCHLD and the forwarded signals (the mask
// before goes to rp.s.oldmask) and opens a signalfd for them
// (rp.s.sigfd): the first process's side of reaperFork and reaperVfork.
//
//go:nosplit
//go:norace
func reaperSignals(rp *reaper) syscall.Errno {
	s := rp.s
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK,
		uintptr(unsafe.Pointer(&rp.mask)), uintptr(unsafe.Pointer(&s.oldmask)), 8, 0, 0)
	if e != 0 {
		return e
	}
	fd, _, e := syscall.RawSyscall6(unix.SYS_SIGNALFD4, noFD, uintptr(unsafe.Pointer(&rp.mask)), 8,
		unix.SFD_CLOEXEC|unix.SFD_NONBLOCK, 0, 0)
	if e != 0 {
		return e
	}
	s.sigfd = fd
	return 0
}

// reaperRun is the first process after the fork. It never returns.
//
//go:nosplit
//go:norace
func reaperRun(rp *reaper, errFD, pid uintptr) {
	// Start sees EOF on the error pipe once the command has exec'd.
	syscall.RawSyscall6(syscall.SYS_CLOSE, errFD, 0, 0, 0, 0, 0)
	reaperCloseFDs(rp)
	reaperWrite(rp, RecordStarted, uint32(pid), 0)
	rp.s.dial = rp.dial
	reaperLoop(rp)
	reaperEnd(rp)
}

// reaperCloseFDs closes every descriptor but rp.keep and the signalfd.
//
//go:nosplit
//go:norace
func reaperCloseFDs(rp *reaper) {
	var lo, k uintptr
	var j uint
	for j = 0; j < uint(len(rp.keep)); j++ {
		k = uintptr(rp.keep[j])
		if k > lo {
			closeRangeBut(lo, k-1, rp.s.sigfd)
		}
		lo = k + 1
	}
	closeRangeBut(lo, uintptr(^uint32(0)), rp.s.sigfd)
}

// closeRangeBut closes the descriptors lo..hi except but.
//
//go:nosplit
//go:norace
func closeRangeBut(lo, hi, but uintptr) {
	if but >= lo && but <= hi {
		if but > lo {
			closeRange(lo, but-1)
		}
		if but < hi {
			closeRange(but+1, hi)
		}
		return
	}
	closeRange(lo, hi)
}

// closeRange closes lo..hi, one by one (up to 65535) on kernels without
// close_range (before 5.9).
//
//go:nosplit
//go:norace
func closeRange(lo, hi uintptr) {
	_, _, e := syscall.RawSyscall6(unix.SYS_CLOSE_RANGE, lo, hi, 0, 0, 0, 0)
	if e == 0 {
		return
	}
	for ; lo <= hi && lo < 1<<16; lo++ {
		syscall.RawSyscall6(syscall.SYS_CLOSE, lo, 0, 0, 0, 0, 0)
	}
}

// reaperWrite writes one Record to Status; errors are ignored (a
// supervisor that stopped reading still gets its sandbox cleaned up).
//
//go:nosplit
//go:norace
func reaperWrite(rp *reaper, kind, pid, status uint32) {
	s := rp.s
	s.rec.Kind = kind
	s.rec.Pid = int32(pid)
	s.rec.Status = status
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_WRITE, rp.status,
			uintptr(unsafe.Pointer(&s.rec)), unsafe.Sizeof(s.rec), 0, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// reaperLoop waits on the signalfd and the lifeline. It returns when the
// forked child has exited (its status is in rp.s.wstatus) or the lifeline
// fired.
//
//go:nosplit
//go:norace
func reaperLoop(rp *reaper) {
	s := rp.s
	for {
		s.pfd[0] = unix.PollFd{Fd: int32(s.sigfd), Events: unix.POLLIN}
		s.pfd[1] = unix.PollFd{Fd: int32(rp.lifeline), Events: unix.POLLIN}
		s.pfd[2] = unix.PollFd{Fd: int32(s.dial), Events: unix.POLLIN} // -1: ignored
		_, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&s.pfd[0])), 3, 0, 0, 0, 0)
		if e == syscall.EINTR || e == syscall.EAGAIN {
			continue
		}
		if e != 0 || s.pfd[1].Revents != 0 {
			// The supervisor is gone (or ppoll cannot work): stop.
			return
		}
		if s.pfd[2].Revents != 0 {
			// Before the signals: a connection the command accepted
			// (and maybe answered) is handed over before the end.
			reaperDial(rp)
		}
		if s.pfd[0].Revents == 0 {
			continue
		}
		if s.pfd[0].Revents&unix.POLLIN == 0 {
			return // the signalfd broke; do not spin
		}
		n, _, e := syscall.RawSyscall6(syscall.SYS_READ, s.sigfd,
			uintptr(unsafe.Pointer(&s.info)), unsafe.Sizeof(s.info), 0, 0, 0)
		if e != 0 || n != unsafe.Sizeof(s.info) {
			continue // EAGAIN: someone else's wakeup
		}
		if s.info.Signo == uint32(syscall.SIGCHLD) {
			if reaperReap(rp) {
				return
			}
			continue
		}
		reaperForward(rp, uintptr(s.info.Signo))
	}
}

// reaperDial serves one request on the Dial socket, or stops serving it
// on EOF, hang-up or error.
//
//go:nosplit
//go:norace
func reaperDial(rp *reaper) {
	s := rp.s
	if s.pfd[2].Revents&unix.POLLIN == 0 {
		s.dial = noFD // hung up or broken, nothing to read
		return
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, s.dial, uintptr(unsafe.Pointer(&s.dreq)),
		unsafe.Sizeof(s.dreq), unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
	if e == syscall.EAGAIN || e == syscall.EINTR {
		return
	}
	if e != 0 || n == 0 {
		s.dial = noFD // EOF: the parent is done with dials
		return
	}
	if n != unsafe.Sizeof(s.dreq) {
		return // not a request (MSG_TRUNC: its real length)
	}
	s.dreply.ID = s.dreq.ID
	fd, e := dialConnect(rp)
	s.dreply.Errno = uint32(e)
	if e != 0 {
		dialSend(rp, &rp.msgNoFD)
		return
	}
	s.cmsg.fd = int32(fd)
	dialSend(rp, &rp.msgFD)
	syscall.RawSyscall6(syscall.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
}

// dialConnect makes a non-blocking TCP socket and starts connecting it
// to 127.0.0.1:s.dreq.Port (EINPROGRESS is success).
//
//go:nosplit
//go:norace
func dialConnect(rp *reaper) (uintptr, syscall.Errno) {
	s := rp.s
	fd, _, e := syscall.RawSyscall6(syscall.SYS_SOCKET, unix.AF_INET,
		unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	p := s.dreq.Port
	s.dsa.Port = p>>8 | p<<8 // network byte order
	for {
		_, _, e = syscall.RawSyscall6(syscall.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&s.dsa)),
			unsafe.Sizeof(s.dsa), 0, 0, 0)
		if e != syscall.EINTR {
			break
		}
	}
	if e != 0 && e != syscall.EINPROGRESS {
		syscall.RawSyscall6(syscall.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		return 0, e
	}
	return fd, 0
}

// dialSend sends a reply without waiting; a reply that cannot go at
// once is dropped.
//
//go:nosplit
//go:norace
func dialSend(rp *reaper, msg *unix.Msghdr) {
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_SENDMSG, rp.s.dial, uintptr(unsafe.Pointer(msg)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// reaperReap collects every exited child without blocking; it reports
// whether the forked child was among them.
//
//go:nosplit
//go:norace
func reaperReap(rp *reaper) bool {
	s := rp.s
	found := false
	for {
		r, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, noFD, uintptr(unsafe.Pointer(&s.ws)),
			syscall.WNOHANG, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 || r == 0 {
			return found
		}
		if r == s.pid {
			s.wstatus = uint32(s.ws)
			found = true
		}
	}
}

// reaperForward sends sig to the command's process group, or to the
// command if it leads none.
//
//go:nosplit
//go:norace
func reaperForward(rp *reaper, sig uintptr) {
	_, _, e := syscall.RawSyscall6(syscall.SYS_KILL, -rp.s.pid, sig, 0, 0, 0, 0)
	if e != 0 {
		syscall.RawSyscall6(syscall.SYS_KILL, rp.s.pid, sig, 0, 0, 0, 0)
	}
}

// reaperKillAll sends SIGKILL to every other process of the pid
// namespace. kill(-1) is that only in its PID 1 (Start requires
// CLONE_NEWPID); anywhere else it would reach every process the caller
// may signal, so a first process that is not PID 1 kills only the
// command's group and the command.
//
//go:nosplit
//go:norace
func reaperKillAll(rp *reaper) {
	self, _, _ := syscall.RawSyscall6(syscall.SYS_GETPID, 0, 0, 0, 0, 0, 0)
	if self == 1 {
		syscall.RawSyscall6(syscall.SYS_KILL, noFD, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		return
	}
	syscall.RawSyscall6(syscall.SYS_KILL, -rp.s.pid, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	syscall.RawSyscall6(syscall.SYS_KILL, rp.s.pid, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
}

// reaperEnd kills and collects every process, reports Exited, waits for
// the ack, runs Exit, reports Done and exits. It never returns.
//
//go:nosplit
//go:norace
func reaperEnd(rp *reaper) {
	s := rp.s
	for {
		reaperKillAll(rp)
		r, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, noFD, uintptr(unsafe.Pointer(&s.ws)), 0, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			break // ECHILD: everyone is gone
		}
		if r == s.pid {
			s.wstatus = uint32(s.ws)
		}
	}
	reaperWrite(rp, RecordExited, 0, s.wstatus)
	if rp.ack != noFD {
		for {
			_, _, e := syscall.RawSyscall6(syscall.SYS_READ, rp.ack, uintptr(unsafe.Pointer(&s.buf[0])), 1, 0, 0, 0)
			if e != syscall.EINTR {
				break
			}
		}
	}
	interp(rp.exit, 0, &s.slots)
	reaperWrite(rp, RecordDone, 0, 0)
	for {
		syscall.RawSyscall6(syscall.SYS_EXIT_GROUP, 0, 0, 0, 0, 0, 0)
	}
}
