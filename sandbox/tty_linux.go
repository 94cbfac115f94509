//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-sh/sbx/internal/rawexec"
	"golang.org/x/sys/unix"
)

// The command's own terminal (Plan.Tty). The sandbox's private devpts
// exists only inside its mount namespace, so the first process opens the
// pseudo-terminal there, once the view is built: the multiplexer
// (/dev/ptmx of the view), unlocked, with the caller's terminal modes and
// window size; the terminal side through TIOCGPTPEER (no path lookup);
// and it hands the multiplexer to the supervisor on a socket pair of its
// own. The command, after its setsid, makes the terminal side its
// controlling terminal (TIOCSCTTY) and its standard descriptors that
// were the caller's terminal (dup3), before it confines itself: it is the
// session leader, with job control, and the caller's terminal never
// enters the sandbox. The supervisor puts the caller's terminal in raw
// mode and relays both ways (ttyRelay): a ^C or ^Z is a byte that the
// inner terminal's line discipline turns into a signal for the inner
// foreground job, and a SIGWINCH the supervisor receives sets the inner
// terminal's size (the kernel then signals the inner foreground job).
// The caller's modes are restored at the end of the run, on every path
// that returns (a failure, a forwarded signal, the timeout), and reapplied
// when sbx is continued after a stop; a SIGKILLed sbx leaves them raw
// (`stty sane` repairs them).

// ttyStart is what the start needs for a run with its own terminal: the
// socket pair, the caller's modes and size, and which of the command's
// standard descriptors become the terminal.
type ttyStart struct {
	raw       atomic.Bool // the caller's terminal is in raw mode (crlfWriter)
	sup, init *os.File    // the multiplexer comes on sup
	modes     unix.Termios
	size      unix.Winsize
	slave     rawexec.Slot // the terminal side, in the first process and the command
	fds       []int        // the command's standard descriptors that become it
	relay     *ttyRelay
}

// ttyOps append the first process's part (before the Fork): open the
// pseudo-terminal in the view's devpts and send its multiplexer.
func (l *launch) ttyOps(prog *rawexec.Program) error {
	t := l.tty
	modes, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("--tty: standard input is not a terminal (%w); run sbx from a terminal, or drop --tty", err)
	}
	t.modes = *modes
	if ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ); err == nil {
		t.size = *ws
	}
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			t.fds = append(t.fds, fd)
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tty socket: %w", err)
	}
	t.sup, t.init = os.NewFile(uintptr(fds[0]), "sbx-tty"), os.NewFile(uintptr(fds[1]), "sbx-tty")
	const open = "tty: opening the command's pseudo-terminal in the sandbox's devpts"
	m := prog.Syscall(open, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/dev/ptmx"),
		rawexec.Imm(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)).Save()
	prog.Syscall("tty: unlocking the pseudo-terminal", unix.SYS_IOCTL, m, rawexec.Imm(unix.TIOCSPTLCK), rawexec.Bytes(make([]byte, 4)))
	prog.Syscall("tty: setting the pseudo-terminal's window size", unix.SYS_IOCTL, m, rawexec.Imm(unix.TIOCSWINSZ), rawexec.Ptr(&t.size))
	t.slave = prog.Syscall("tty: opening the pseudo-terminal's terminal side", unix.SYS_IOCTL, m, rawexec.Imm(unix.TIOCGPTPEER),
		rawexec.Imm(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)).Save()
	prog.Syscall("tty: setting the pseudo-terminal's modes", unix.SYS_IOCTL, t.slave, rawexec.Imm(unix.TCSETS), rawexec.Ptr(&t.modes))
	sendOps(prog, "tty: handing the pseudo-terminal to the supervisor", int(t.init.Fd()), "pty", m)
	return nil
}

// ttyCommandOps append the command's part, right after its setsid: the
// terminal side becomes its controlling terminal and its standard
// descriptors that were the caller's terminal. (The terminal side's own
// descriptor is close-on-exec.)
func (l *launch) ttyCommandOps(prog *rawexec.Program) {
	t := l.tty
	if t == nil {
		return
	}
	prog.Syscall("tty: making the pseudo-terminal the command's controlling terminal", unix.SYS_IOCTL, t.slave,
		rawexec.Imm(unix.TIOCSCTTY), rawexec.Imm(0))
	for _, fd := range t.fds {
		prog.Syscall(fmt.Sprintf("tty: the pseudo-terminal as descriptor %d", fd), unix.SYS_DUP3, t.slave, rawexec.Imm(fd), rawexec.Imm(0))
	}
}

// close releases the sockets (cleanup).
func (t *ttyStart) close() {
	if t == nil {
		return
	}
	for _, f := range []**os.File{&t.sup, &t.init} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	t.relay.end()
}

// started takes the multiplexer the first process sent (queued before
// rawexec.Start returned) and, when the command runs (ran), starts the
// relay.
func (t *ttyStart) started(ran bool) error {
	if t == nil {
		return nil
	}
	t.init.Close()
	t.init = nil
	buf := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(4))
	k, oobn, _, _, err := unix.Recvmsg(int(t.sup.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return fmt.Errorf("receiving the command's pseudo-terminal from the sandbox: %w", err)
	}
	var rights []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if r, e := unix.ParseUnixRights(&m); e == nil {
				rights = append(rights, r...)
			}
		}
	}
	if string(buf[:k]) != "pty" || len(rights) != 1 {
		for _, fd := range rights {
			unix.Close(fd)
		}
		return errors.New("receiving the command's pseudo-terminal from the sandbox: unexpected message")
	}
	if !ran {
		unix.Close(rights[0])
		return nil
	}
	r, err := startTTYRelay(rights[0], t.modes, t.fds, &t.raw)
	if err != nil {
		return err
	}
	t.relay = r
	return nil
}

// signal handles s for the relay: SIGWINCH sets the inner terminal's
// size (not forwarded: the kernel signals the inner foreground job). It
// reports whether it took s.
func (t *ttyStart) signal(s os.Signal) bool {
	if t == nil || t.relay == nil || s != unix.SIGWINCH {
		return false
	}
	t.relay.resize()
	return true
}

// ttyRelay relays the caller's terminal (standard input, in raw mode)
// and the multiplexer of the command's pseudo-terminal.
type ttyRelay struct {
	master  *os.File
	out     *os.File // where the command's terminal output goes
	saved   unix.Termios
	mu      sync.Mutex   // orders makeRaw and the restore
	raw     *atomic.Bool // set while the caller's terminal is raw
	wakeR   int          // wakes the input relay at the end
	wakeW   int
	outDone chan struct{}
	inDone  chan struct{}
	conts   chan os.Signal
	once    sync.Once
}

// startTTYRelay puts the caller's terminal (standard input, whose modes
// were saved) in raw mode and relays it to and from the multiplexer
// master. fds are sbx's standard descriptors that are terminals: the
// output goes to the first of standard output and error that is one.
func startTTYRelay(master int, saved unix.Termios, fds []int, raw *atomic.Bool) (*ttyRelay, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(master)
		return nil, fmt.Errorf("tty relay: %w", err)
	}
	if err := unix.SetNonblock(master, true); err != nil {
		unix.Close(master)
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, fmt.Errorf("tty relay: %w", err)
	}
	r := &ttyRelay{master: os.NewFile(uintptr(master), "sbx-pty"), out: os.Stdout, saved: saved, raw: raw,
		wakeR: p[0], wakeW: p[1], outDone: make(chan struct{}), inDone: make(chan struct{}), conts: make(chan os.Signal, 1)}
	for _, fd := range fds {
		if fd == 1 {
			break
		}
		if fd == 2 {
			r.out = os.Stderr
		}
	}
	r.raw.Store(true)
	r.makeRaw()
	// A stop of sbx (by its caller's shell) gives the terminal back to
	// the shell, which may reset its modes: raw again on continuing.
	signal.Notify(r.conts, unix.SIGCONT)
	go func() {
		for range r.conts {
			r.makeRaw()
			r.resize()
		}
	}()
	go r.output()
	go r.input()
	return r, nil
}

// makeRaw sets the caller's terminal to raw mode (cfmakeraw), unless
// the relay has ended.
func (r *ttyRelay) makeRaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.raw.Load() {
		return
	}
	t := r.saved
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	_ = unix.IoctlSetTermios(0, unix.TCSETS, &t)
}

// resize copies the caller's window size to the command's terminal.
func (r *ttyRelay) resize() {
	ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	rc, err := r.master.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
}

// output copies the command's terminal to the caller's until every
// descriptor of the terminal side is closed (EIO).
func (r *ttyRelay) output() {
	defer close(r.outDone)
	_, _ = io.Copy(r.out, r.master)
}

// input copies the caller's terminal to the command's until the end
// (the wake pipe). It polls before each read, so that nothing typed after
// the end is taken from the caller. At the end of the caller's input it
// sends the terminal's end-of-file character once: the command reads its
// end of input as if it had been typed.
func (r *ttyRelay) input() {
	defer close(r.inDone)
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}, {Fd: int32(r.wakeR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		n, err := unix.Read(0, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if n <= 0 {
			_, _ = r.master.Write([]byte{r.saved.Cc[unix.VEOF]})
			return
		}
		if _, err := r.master.Write(buf[:n]); err != nil {
			return
		}
	}
}

// end waits (briefly) for the command's last output, stops the relay and
// restores the caller's terminal modes. It is safe to call more than
// once, and on a nil relay.
func (r *ttyRelay) end() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		// Every process of the sandbox is gone when the run ends, so the
		// terminal side is closed and what is left of the output drains
		// at once; a descriptor of it passed out of the sandbox would
		// keep it open: bounded.
		select {
		case <-r.outDone:
		case <-time.After(2 * time.Second):
		}
		// Closing the multiplexer ends a write of the input relay
		// that waits for room (the command read no more input).
		unix.Write(r.wakeW, []byte{1})
		r.master.Close()
		inDone := false
		select {
		case <-r.inDone:
			inDone = true
		case <-time.After(time.Second):
			// A read of the caller's terminal that another of its
			// processes emptied first: left to sbx's exit.
		}
		signal.Stop(r.conts)
		close(r.conts)
		r.mu.Lock()
		r.raw.Store(false)
		_ = unix.IoctlSetTermios(0, unix.TCSETS, &r.saved)
		r.mu.Unlock()
		if inDone { // else the input relay may still poll them
			unix.Close(r.wakeR)
			unix.Close(r.wakeW)
		}
	})
}

// crlfWriter writes sbx's own messages while the caller's terminal is in
// raw mode, where a newline does not return the carriage.
type crlfWriter struct {
	w   io.Writer
	raw *atomic.Bool
}

func (c crlfWriter) Write(b []byte) (int, error) {
	if !c.raw.Load() {
		return c.w.Write(b)
	}
	if _, err := c.w.Write(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(b), nil
}
