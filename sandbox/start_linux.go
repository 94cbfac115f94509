//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/sbx-sh/sbx/capture"
	"github.com/sbx-sh/sbx/internal/rawexec"
	"github.com/sbx-sh/sbx/internal/userns"
	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// The start of a full-mode run: the sandbox's first process is a clone
// of the supervisor that runs the whole setup as a pre-built program of
// system calls (package rawexec) and never starts a second Go runtime. It
// builds the mount view, brings up the loopback, forks the command (which
// confines itself — Landlock, capabilities, seccomp — and execs), and
// stays as PID 1: it reaps, forwards signals, kills everything when the
// command ends or the supervisor goes (lifeline), and removes the stubs.
//
// It covers every plan: the program is as long as the plan needs. A plan
// the kernel cannot take (a view over fs.mount-max, more stubs than
// descriptors) fails with exit 125 and a line that says what to narrow
// (tooLarge). The control socket carries the proxy's listeners (from the
// first process) and the command's seccomp listener. Published ports are
// served by the first process itself, on a socket pair of their own
// (rawexec.Reaper.Dial): for each connection to a published host port the
// supervisor asks it for 127.0.0.1:PORT inside the sandbox's network
// namespace; PID 1 starts the connect (non-blocking) and hands the socket
// over, and the supervisor waits for the connection. Discard overlays are
// mounted by the first process, which hands the supervisor descriptors on
// their upper layers and the host directories under them (on the control
// socket, or a socket of their own); once every process of the sandbox is
// gone, and before the supervisor lets the first process go on (the ack),
// the supervisor reads what the overlays took through them — the
// records, and --save-changes.

// maxDiscarded bounds the discarded writes reported for one run.
const maxDiscarded = 100000

// The published ports' dials in rawexec's protocol (ctlSide.dialInside).

func dialRequest(id uint64, port uint16) []byte {
	return rawexec.DialRequest{ID: id, Port: port}.Encode()
}

func dialReply(b []byte) (id uint64, errno uint32, err error) {
	r, err := rawexec.DecodeDialReply(b)
	return r.ID, r.Errno, err
}

func waitConnected(fd int, d time.Duration) error {
	return rawexec.WaitConnected(fd, d)
}

// early is the first process Prespawn cloned ahead of the plan, until
// run hands it to rawexec.Start or DropPrespawn ends it.
var early struct {
	sync.Mutex
	e *rawexec.Early
	// capture: the capture device the early process makes (Prespawn's
	// withCapture); nil without.
	capture *earlyCapture
}

// earlyCapture is the capture device an early process made: the
// addresses it was given, and where it puts the device's descriptor.
type earlyCapture struct {
	names *capture.Names
	fd    int
}

// Prespawn clones the first process of the run about to be launched
// before its policy and plan exist (see rawexec.Prespawn): it makes the
// namespaces, the network namespace above all (0.3-0.5 ms of kernel
// time), on the other CPU while this process plans. It guesses the
// namespaces and id maps of a default plan; a plan that wants others
// (shared network, another identity) clones as usual. Call it once the
// command line says a sandbox will run, and DropPrespawn when the run
// ends (or never starts). It reports nothing: whatever stops it stops the
// usual clone too, which reports it.
func Prespawn(withCapture bool) {
	attr := &rawexec.Attr{Cloneflags: cloneflags(false), IDMap: rawexec.SelfMap}
	if os.Getuid() == 0 && os.Geteuid() == 0 {
		attr.IDMap = rawexec.ParentMap
		attr.UIDMap, attr.GIDMap = userns.IDMap(os.Getuid()), userns.IDMap(os.Getgid())
	}
	// A plan with a network namespace brings its loopback up: the
	// early process does it off the supervisor's path (0.05-0.1 ms; the
	// first process's own ioctl then finds it up).
	var ops rawexec.Program
	loopbackOps(&ops)
	// A command line that allows domains will likely capture: the early
	// process makes the capture device too (earlyCaptureOps).
	var ec *earlyCapture
	if withCapture && tunUsable() == nil {
		if names, err := capture.NewNames(netip.Prefix{}); err == nil {
			if fd, ok := reserveFD(); ok {
				if earlyCaptureOps(&ops, names, fd) == nil {
					ec = &earlyCapture{names: names, fd: fd}
				} else {
					unix.Close(fd)
				}
			}
		}
	}
	e, err := rawexec.Prespawn(attr, &ops)
	if err != nil {
		if ec != nil {
			unix.Close(ec.fd)
		}
		return
	}
	early.Lock()
	defer early.Unlock()
	early.e.Abandon()
	early.e, early.capture = e, ec
}

// earlyNames are the addresses of the early process's capture device,
// nil without one: a plan that captures uses them.
func earlyNames() *capture.Names {
	early.Lock()
	defer early.Unlock()
	if early.capture == nil {
		return nil
	}
	return early.capture.names
}

// DropPrespawn ends the first process Prespawn made, unless a launch
// took it.
func DropPrespawn() { takeEarly().Abandon() }

func takeEarly() *rawexec.Early {
	e, _ := takeEarlyCapture()
	return e
}

// takeEarlyCapture takes the early process and its capture device.
func takeEarlyCapture() (*rawexec.Early, *earlyCapture) {
	early.Lock()
	defer early.Unlock()
	e, c := early.e, early.capture
	early.e, early.capture = nil, nil
	return e, c
}

// cloneflags are the sandbox's namespaces.
func cloneflags(hostNet bool) uintptr {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if !hostNet {
		flags |= unix.CLONE_NEWNET
	}
	return flags
}

// launch is one run's start, shared by its stages: compile (the plan
// into PID 1's program), prepare (the supervisor's side), start (the
// clone) and supervise (records, signals, the end).
type launch struct {
	pl     *Plan
	stderr io.Writer
	col    *violations.Collector

	early      *rawexec.Early // from Prespawn, or nil
	earlyCap   *earlyCapture  // the early process's capture device, or nil
	capFD      int            // the capture device the early process made, -1 for none
	lle        *landlock.Early
	prog, exit rawexec.Program
	view       *ns.View
	started    bool // the first process owns the stubs from here on

	ctlSup, ctlInit   *os.File // the control socket (nil: none)
	dialSup, dialInit *os.File // the published ports' dial socket (nil: none)
	sock, dial        int      // the first process's ends, -1 for none
	saveFD            int      // the --save-changes directory, -1 for none
	nw                *ctlSide
	path              string // the command, looked up

	tty                                    *ttyStart // the command's own terminal (Plan.Tty), or nil
	lifeR, lifeW, statR, statW, ackR, ackW *os.File
	lim                                    limitsStart // the limits' cgroup and tmpfs report
	gateR, gateW                           *os.File    // the command waits on gateR for the supervisor's signal handlers
	sigc                                   chan os.Signal
	notified                               chan struct{}
}

// failed is a stage's end of the run: sbx's exit status, its message
// already written.
type failed int

func (f failed) Error() string { return fmt.Sprintf("exit %d", int(f)) }

// run runs the complete plan pl and returns sbx's exit status.
func run(pl *Plan, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	l := &launch{pl: pl, stderr: stderr, col: col, sock: -1, dial: -1, saveFD: -1, capFD: -1}
	relayAllCPUs.Store(pl.Net.TLS != nil)
	l.early, l.earlyCap = takeEarlyCapture()
	if pl.Tty {
		l.tty = &ttyStart{}
		l.stderr = crlfWriter{w: stderr, raw: &l.tty.raw}
	}
	defer l.cleanup()
	places := afterRunBefore(pl) // before the view's stubs are made
	err := l.compile()
	if err == nil {
		err = l.prepare()
	}
	var f failed
	if errors.As(err, &f) {
		return int(f), nil
	}
	if err != nil {
		return failf(stderr, "%v", err), nil
	}
	code := l.startAndSupervise(ready)
	if l.started {
		created, overflow := l.nw.createdList()
		afterRunCheck(places, created, overflow, col, stderr)
	}
	return code, nil
}

// cleanup releases what the stages left: the stubs (when the first
// process never ran), descriptors, the early process.
func (l *launch) cleanup() {
	if l.view != nil {
		if !l.started {
			l.view.RemoveStubs()
		}
		l.view.Release()
	}
	for _, f := range []*os.File{l.ctlSup, l.ctlInit, l.dialSup, l.dialInit, l.lifeR, l.lifeW, l.statR, l.statW, l.ackR, l.ackW, l.gateR, l.gateW} {
		if f != nil {
			f.Close()
		}
	}
	if l.saveFD >= 0 {
		unix.Close(l.saveFD)
	}
	if l.capFD >= 0 {
		unix.Close(l.capFD)
	}
	l.nw.close()
	l.tty.close()
	l.lle.Close()
	l.early.Abandon() // a no-op once Start has it
	l.limitsCleanup()
	select {
	case <-l.notified: // nil (never made) blocks: nothing to stop
		go signal.Stop(l.sigc)
	default:
	}
}

// compile builds the first process's program: PID 1's own setup, the
// mount view, the loopback and the proxy's listeners, the TLS bundle,
// then (after the Fork) the command's confinement.
func (l *launch) compile() error {
	pl, prog := l.pl, &l.prog
	// With an early process (Prespawn), the Landlock rules for paths the
	// view shows as the host has them are added by it, on the other CPU,
	// while the rest is compiled; the command adds the others.
	if l.early != nil {
		var err error
		if l.lle, err = pl.Landlock.PrepareEarly(pl.Mounts.HostInode); err != nil {
			return err
		}
		l.early.Call(l.lle.Func()) // best effort: the command adds what it did not
	}
	prog.Grow(1024 + 8*len(pl.Mounts.Ops) + 6*len(pl.Landlock.Rules)) // the default plan is about 850 ops
	// First of all, before it forks anything: the run's cgroup.
	if err := l.limitsBegin(prog); err != nil {
		return err
	}
	// PID 1 is a copy of the supervisor, command line included, and
	// /proc/PID/cmdline is readable by anyone (no ptrace check): sbx's
	// arguments can carry a value the sandbox must not see (--set-env of
	// a masked credential). Its first act is to zero them in its copy.
	if err := zeroArgsOps(prog); err != nil {
		return err
	}
	// A session of its own: a terminal's ^C reaches the supervisor only,
	// which forwards it once.
	prog.Syscall("init: setsid", unix.SYS_SETSID)
	prog.Syscall("init: not dumpable", unix.SYS_PRCTL, rawexec.Imm(unix.PR_SET_DUMPABLE), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	if err := l.sockets(); err != nil {
		return err
	}
	if err := l.gate(prog); err != nil {
		return err
	}
	if err := l.captureDevice(prog); err != nil {
		return err
	}
	view, err := ns.Compile(pl.Mounts, l.sock, prog, &l.exit)
	if err != nil {
		return tooLarge(err)
	}
	l.view = view // from here on the stubs exist on the host: cleanup removes them
	if !pl.HostNet {
		loopbackOps(prog)
	}
	if pl.Net.Control && pl.Net.Proxy {
		listenerOps(prog, l.sock, pl.Net.HTTPPort, pl.Net.SOCKSPort)
	}
	if t := pl.Net.TLS; t != nil {
		dir := filepath.Dir(t.BundlePath)
		prog.Syscall("writing the TLS trust bundle", unix.SYS_MKDIRAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(dir), rawexec.Imm(0o755)).Ignore(unix.EEXIST)
		prog.CreateFile("writing the TLS trust bundle", t.BundlePath, t.Bundle, 0o444)
		prog.Syscall("writing the TLS trust bundle", unix.SYS_FCHMODAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(dir), rawexec.Imm(0o555), rawexec.Imm(0))
	}
	if l.tty != nil {
		if err := l.ttyOps(prog); err != nil {
			return err
		}
	}
	prog.Fork("starting the command")
	return l.compileCommand()
}

// gate makes the pipe on which the command waits, just before its
// execve, for the supervisor's signal handlers (see startAndSupervise),
// and has the first process close its copy of the write end (inherited
// from the supervisor's table) before it forks the command: the
// supervisor's is then the only one, and a supervisor that dies first
// leaves the command EOF instead of a wait that nothing ends.
func (l *launch) gate(prog *rawexec.Program) error {
	var err error
	if l.gateR, l.gateW, err = os.Pipe(); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	_ = l.gateW.Fd() // blocking: written from the start's path, not the poller
	prog.Syscall("init: closing the start gate's write end", unix.SYS_CLOSE, rawexec.Imm(int(l.gateW.Fd())))
	return nil
}

// sockets makes the control socket (when the plan has one, or discard
// overlays, whose descriptors it carries) and the published ports' dial
// socket.
func (l *launch) sockets() error {
	pl := l.pl
	overlays := false
	for _, op := range pl.Mounts.Ops {
		overlays = overlays || op.Kind == ns.OpOverlay
	}
	if pl.Net.Control || overlays {
		var err error
		if l.ctlSup, l.ctlInit, err = controlPair(); err != nil {
			return err
		}
		l.sock = int(l.ctlInit.Fd())
	}
	if len(pl.Net.Publish) > 0 {
		if !pl.Net.Control {
			return errors.New("internal error: published ports without the control socket that serves them")
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("dial socket: %w", err)
		}
		l.dialSup, l.dialInit = os.NewFile(uintptr(fds[0]), "sbx-dial"), os.NewFile(uintptr(fds[1]), "sbx-dial")
		l.dial = fds[1]
	}
	return nil
}

// compileCommand appends the command's steps after the Fork: its
// session, working directory, Landlock, capabilities dropped, seccomp.
func (l *launch) compileCommand() error {
	pl, prog := l.pl, &l.prog
	prog.Syscall("setsid", unix.SYS_SETSID)
	l.ttyCommandOps(prog)
	l.rlimitOps(prog)
	prog.Syscall(fmt.Sprintf("working directory %s is not visible in the sandbox; run sbx from a readable directory", pl.Dir),
		unix.SYS_CHDIR, rawexec.String(pl.Dir))
	if err := pl.Landlock.Compile(prog, l.lle); err != nil {
		return tooLarge(err)
	}
	dropCapsOps(prog)
	if len(pl.Filter) == 0 || len(pl.Filter)%8 != 0 {
		return fmt.Errorf("seccomp: program of %d bytes is not a BPF program", len(pl.Filter))
	}
	fprog := &unix.SockFprog{Len: uint16(len(pl.Filter) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&pl.Filter[0]))}
	if pl.Seccomp.Notify || pl.Seccomp.UnixConnect {
		// An outer sandbox listening on this filter stack leaves the
		// same rules without reporting: compiled here.
		plainCfg := pl.Seccomp
		plainCfg.Notify = false
		plainCfg.ObserveNet = false // only reports: the kernel refuses alike
		plain, plainErr := seccomp.Compile(plainCfg)
		notifyOps(prog, l.sock, fprog, plain, plainErr, pl.Seccomp.UnixConnect)
	} else {
		prog.Syscall("seccomp: loading filter", unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER), rawexec.Imm(0), rawexec.Ptr(fprog))
	}
	// Last before execve: the supervisor's signal handlers are in place
	// (one byte), or the supervisor is gone (EOF: the command never runs).
	prog.Syscall("waiting for the supervisor's signal handlers", unix.SYS_READ,
		rawexec.Imm(int(l.gateR.Fd())), rawexec.Bytes(make([]byte, 1)), rawexec.Imm(1)).Want(1)
	return tooLarge(errors.Join(prog.Err(), l.exit.Err()))
}

// tooLarge adds to err, when it says the plan is too large for one
// start (rawexec's sanity bound, or the descriptors the stubs hold), what
// to narrow.
func tooLarge(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rawexec.ErrTooLong):
		return fmt.Errorf("%w: the plan is too large to set up; narrow it: fewer writable paths that hold many repositories (each protected name is a mount), fewer allowRead/denyRead entries", err)
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return fmt.Errorf("%w: the plan holds more protected names to pin than sbx may open descriptors; narrow the writable paths that hold many repositories, or raise the open-files limit (ulimit -n)", err)
	}
	return err
}

// prepare does the supervisor's side before the clone: the
// --save-changes directory's descriptor, the command's path, the
// proxy and published ports, the pipes to PID 1.
func (l *launch) prepare() error {
	pl := l.pl
	// The --save-changes directory (made by Launch) is written through a
	// descriptor.
	if pl.SaveChanges != "" {
		fd, err := unix.Open(pl.SaveChanges, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("--save-changes %s: %w", pl.SaveChanges, err)
		}
		l.saveFD = fd
	}
	path, code, err := lookPath(pl.Argv[0], pl.Env, pl.Dir)
	if err != nil {
		fmt.Fprintf(l.stderr, "sbx: %v\n", err)
		return failed(code)
	}
	l.path = path
	if pl.Net.Control {
		if l.nw, err = prepareControl(pl, l.col, l.stderr); err != nil {
			return err
		}
		if l.capFD >= 0 {
			l.nw.device = os.NewFile(uintptr(l.capFD), "sbx-capture")
			l.capFD = -1
		}
	}
	closeExtraFDs()
	if l.lifeR, l.lifeW, err = os.Pipe(); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	if l.statR, l.statW, err = os.Pipe(); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	// Records are read with blocking reads: the supervisor thread sleeps
	// in the pipe and the record's write wakes it, instead of a trip
	// through the runtime's poller (0.1-0.2 ms from PID 1's last record
	// to the supervisor reading it). Fd switches the file to blocking.
	_ = l.statR.Fd()
	if l.ackR, l.ackW, err = os.Pipe(); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	return nil
}

// attr is the first process's rawexec.Attr: the command, its
// descriptors, the namespaces and id maps, and PID 1's part (Reaper).
func (l *launch) attr() *rawexec.Attr {
	pl := l.pl
	files := []int{0, 1, 2}
	for _, k := range pl.KeepFDs {
		for len(files) <= k {
			files = append(files, -1)
		}
		files[k] = k
	}
	sigs := make([]unix.Signal, len(forwarded))
	for i, s := range forwarded {
		sigs[i] = s.(unix.Signal)
	}
	keep := append([]int{int(l.lifeR.Fd()), int(l.statW.Fd()), int(l.ackR.Fd())}, l.view.Keep...)
	ack := int(l.ackR.Fd())
	if l.view.OverlayMessages() == 0 {
		// Nothing of the view for the supervisor to read after the
		// exit (no discard overlays): PID 1 goes on to its exit ops at
		// once instead of waiting a round trip for the ack.
		ack = -1
	}
	if l.dial >= 0 {
		keep = append(keep, l.dial)
	}
	if l.lim.statW != nil {
		keep = append(keep, int(l.lim.statW.Fd()))
	}
	attr := &rawexec.Attr{
		Path:  l.path,
		Args:  pl.Argv,
		Env:   pl.Env,
		Files: files,
		PidFD: true,
		Reaper: &rawexec.Reaper{
			Lifeline: int(l.lifeR.Fd()),
			Status:   int(l.statW.Fd()),
			Ack:      ack,
			Dial:     l.dial,
			Signals:  sigs,
			Keep:     keep,
			Exit:     &l.exit,
		},
		Early: l.early,
	}
	l.namespaces(attr)
	return attr
}

// namespaces sets attr's namespaces and id maps.
func (l *launch) namespaces(attr *rawexec.Attr) {
	pl := l.pl
	attr.Cloneflags, attr.IDMap = cloneflags(pl.HostNet), rawexec.SelfMap
	if pl.UID == 0 && os.Geteuid() == 0 {
		// Root's full map (see idMap), written by the supervisor.
		attr.IDMap = rawexec.ParentMap
		attr.UIDMap, attr.GIDMap = userns.IDMap(pl.UID), userns.IDMap(pl.GID)
	}
}

// captureDevice has the first process make the capture device (before
// the view: the host's /dev/net/tun is still there), unless the early
// process made it for this run: then the supervisor holds it already
// (capFD). A device the early process made for a run that does not
// capture is taken down.
func (l *launch) captureDevice(prog *rawexec.Program) error {
	fd := -1
	if ec := l.earlyCap; ec != nil {
		var probe rawexec.Attr
		l.namespaces(&probe)
		if l.early.Use(&probe) && earlyDevice(ec.fd) {
			fd = ec.fd
		} else {
			unix.Close(ec.fd) // the placeholder, or a device in a namespace Start will not use
		}
	}
	switch {
	case l.pl.Net.Capture && fd >= 0 && l.pl.Net.names == l.earlyCap.names:
		l.capFD = fd
		return nil
	case fd >= 0:
		unix.Close(fd)
		unusedDeviceOps(prog)
	}
	if !l.pl.Net.Capture {
		return nil
	}
	return captureOps(prog, l.sock, l.pl.Net.names)
}

// startAndSupervise clones the first process and supervises the run to
// its end; it returns sbx's exit status.
func (l *launch) startAndSupervise(ready func(*Plan)) int {
	attr := l.attr()
	if ready != nil {
		ready(l.pl)
	}
	l.sigc = make(chan os.Signal, 32)
	l.notified = make(chan struct{})
	// Signals must reach the command from its first instruction on: a
	// SIGTERM that came before Notify took effect would kill the
	// supervisor (Go's default for an unhandled SIGTERM) instead of
	// being forwarded, and the lifeline would then SIGKILL the sandbox.
	// Enabling a signal is two round trips to the runtime's signal
	// thread (0.3-1 ms for the seven on one P): Start runs it while the
	// first process is cloned and sets up, and the command waits on the
	// gate, before its execve, for the byte written once it is done.
	attr.Overlap = func() {
		signal.Notify(l.sigc, forwarded...)
		close(l.notified)
		// A failure leaves the command EOF: it fails. The end stays
		// open until Start returns: the first process may be cloned,
		// copying the table, while this runs, and it closes its copy.
		l.gateW.Write([]byte{1})
	}
	l.early = nil // Start owns it
	proc, startErr := rawexec.Start(&l.prog, attr)
	l.limitsStarted(proc)
	for _, f := range []**os.File{&l.lifeR, &l.statW, &l.ackR, &l.ctlInit, &l.dialInit, &l.gateR, &l.gateW} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if proc == nil {
		var oe *rawexec.OpError
		if errors.As(startErr, &oe) {
			return failf(l.stderr, "%s", opMessage(oe))
		}
		return failf(l.stderr, "%s; 'sbx doctor' shows the exact fix for this host", usernsProblem(startErr))
	}
	l.started = true // the first process removes the stubs from here on
	// The first process holds the stubs' descriptors (and with them the
	// shared locks) from its fork on. Closing ours now means the last
	// reference to a stub it unlinks is its own, so ext4's freeing of
	// the inode runs in its exit, which nothing waits for, instead of
	// in this process's end (0.5 ms for thirteen stubs).
	l.view.Release()
	return l.supervise(proc, startErr)
}

// supervise takes the overlays' descriptors and starts the control side,
// relays signals and the timeout, reads PID 1's records to the end, and
// returns sbx's exit status. startErr is the command's own setup failing
// after the Fork (it never ran; PID 1 reports its exit).
func (l *launch) supervise(proc *rawexec.Process, startErr error) int {
	// A failure from here on stops the sandbox through the lifeline, so
	// PID 1 still removes the stubs, and waits for its last record.
	abort := func(err error) int {
		l.tty.close()
		l.lifeW.Close()
		l.ackW.Close()
		for {
			if rec, err := rawexec.ReadRecord(l.statR); err != nil || rec.Kind == rawexec.RecordDone {
				break
			}
		}
		_, _ = proc.Wait()
		return failf(l.stderr, "%v", err)
	}
	// The overlays' descriptors were sent before the fork: they are
	// queued, among the other messages PID 1 sent (in an order
	// takeStart does not rely on).
	discards, taken, err := l.takeOverlays()
	if err != nil {
		return abort(err)
	}
	defer discards.Close()
	if l.nw != nil {
		err := error(nil)
		if l.dialSup != nil {
			err = l.nw.useDial(l.dialSup)
			l.dialSup = nil
		}
		if err == nil {
			err = l.nw.start(l.ctlSup, taken)
			taken, l.ctlSup = nil, nil
		}
		if err != nil {
			closeMessages(taken)
			return abort(err)
		}
	}
	closeMessages(taken) // none without the control side
	if err := l.tty.started(startErr == nil); err != nil {
		return abort(err)
	}
	rl := startRelay(l.sigc, l.notified, l.pl.Timeout, l.lifeW,
		func(s os.Signal) {
			if !l.tty.signal(s) {
				_ = proc.Signal(s.(unix.Signal))
			}
		}, func() { _ = proc.Signal(unix.SIGKILL) })
	defer rl.end()
	ws, begun, exited, final := l.records(discards, startErr == nil)
	rl.end()
	l.tty.close() // the caller's terminal as it was, before any message
	if !final {
		_, _ = proc.Wait()
	}
	l.limitsEnd(proc, ws, exited, final)
	// After its last record the first process has nothing left but its
	// exit: every process of the sandbox is gone, the stubs are removed,
	// and its next call is exit_group. The kernel's teardown of the
	// namespaces in that exit is not waited for (0.1-0.3 ms, more with
	// stubs); the zombie passes to this process's reaper, like any
	// orphan.
	l.lifeW.Close()
	l.nw.close()
	switch {
	case rl.timedOut.Load():
		fmt.Fprintf(l.stderr, "sbx: timed out after %v; the sandbox was killed\n", l.pl.Timeout)
		return 124
	case startErr != nil:
		return l.commandFailed(startErr)
	case exited:
		return waitStatusCode(ws)
	case begun:
		fmt.Fprintln(l.stderr, "sbx: the sandbox's init died unexpectedly; the command was killed")
		return 125
	}
	return failf(l.stderr, "the sandbox failed to start")
}

// records reads PID 1's records until its last (Done) or its end. At the
// command's exit it reads what the discard overlays took (when the
// command ran: ran), then acks.
func (l *launch) records(discards *ns.Discards, ran bool) (ws unix.WaitStatus, begun, exited, final bool) {
	for !final {
		rec, err := rawexec.ReadRecord(l.statR)
		if err != nil {
			break
		}
		switch rec.Kind {
		case rawexec.RecordStarted:
			begun = true
		case rawexec.RecordExited:
			exited, ws = true, unix.WaitStatus(rec.Status)
			if discards != nil && ran {
				l.readDiscards(discards)
			}
			l.ackW.Close() // done with the view: remove the stubs and go
		case rawexec.RecordDone:
			final = true
		}
	}
	return ws, begun, exited, final
}

// readDiscards reads what the discard overlays took from their upper
// layers, now that nothing writes any more and before the view goes:
// the records, and --save-changes.
func (l *launch) readDiscards(discards *ns.Discards) {
	if os.Geteuid() != 0 {
		// The supervisor owns the upper layers, but not every
		// directory the command made in them is open to it.
		discards.Reach(maxDiscarded)
	}
	changes := discards.Changes(maxDiscarded)
	if l.saveFD >= 0 {
		if err := discards.SaveChanges(l.saveFD, changes); err != nil {
			fmt.Fprintf(l.stderr, "sbx: %v\n", err)
		}
	}
	for _, c := range changes {
		l.col.Add(discardRecord(c))
		if o := l.pl.observe; o != nil {
			o.Recorder.Path(c.Path, changeAccess(c.Detail))
		}
	}
}

// commandFailed reports the command's own setup failing after the Fork:
// its execve as the shell would (126, 127 for a missing file), any
// other step as sbx's 125.
func (l *launch) commandFailed(startErr error) int {
	var oe *rawexec.OpError
	if errors.As(startErr, &oe) && oe.Nr == unix.SYS_EXECVE {
		fmt.Fprintf(l.stderr, "sbx: %s: %v\n", l.path, oe.Errno)
		if oe.Errno == unix.ENOENT {
			return 127
		}
		return 126
	}
	if errors.As(startErr, &oe) {
		return failf(l.stderr, "%s", opMessage(oe))
	}
	return failf(l.stderr, "%v", startErr)
}

// takeOverlays takes the discard overlays' descriptors the first process
// sent on the control socket (nil for a view without overlays), and the
// other messages read on the way (takeStart).
func (l *launch) takeOverlays() (*ns.Discards, []ctlMessage, error) {
	n := l.view.OverlayMessages()
	if n == 0 {
		return nil, nil, nil
	}
	fds, taken, err := takeStart(l.ctlSup, n)
	if err != nil {
		return nil, nil, err
	}
	d, err := l.view.Discards(fds)
	if err != nil {
		closeMessages(taken)
		return nil, nil, fmt.Errorf("receiving the discard overlays from the sandbox: %w", err)
	}
	return d, taken, nil
}

// opMessage is an op's failure as sbx reports it: the op's label names
// what was being done (and, for the view, the policy entry). A mount the
// kernel refuses for the number of mounts (ENOSPC: over fs.mount-max)
// says what to narrow.
func opMessage(oe *rawexec.OpError) string {
	if oe.Errno == 0 {
		return oe.Label + ": unexpected result"
	}
	if oe.Errno == unix.ENOSPC && (oe.Nr == unix.SYS_MOUNT || oe.Nr == unix.SYS_MOUNT_SETATTR) {
		return fmt.Sprintf("%s: %v: the mount view has more mounts than the kernel allows (fs.mount-max); narrow the writable paths that hold many repositories (each protected name is a mount), or raise fs.mount-max", oe.Label, oe.Errno)
	}
	return fmt.Sprintf("%s: %v", oe.Label, oe.Errno)
}

// loopbackOps bring up "lo" (LoopbackUp). In a new network namespace
// its only flag is IFF_LOOPBACK; SIOCSIFFLAGS takes the changeable flags
// from the request and keeps the rest, so the request is set whole.
func loopbackOps(p *rawexec.Program) {
	sock := p.Syscall("loopback", unix.SYS_SOCKET, rawexec.Imm(unix.AF_INET), rawexec.Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), rawexec.Imm(0)).Save()
	ifr := make([]byte, unix.IFNAMSIZ+24) // struct ifreq: the name, then ifr_flags
	copy(ifr, "lo")
	binary.NativeEndian.PutUint16(ifr[unix.IFNAMSIZ:], unix.IFF_UP|unix.IFF_LOOPBACK)
	p.Syscall("loopback up", unix.SYS_IOCTL, sock, rawexec.Imm(unix.SIOCSIFFLAGS), rawexec.Bytes(ifr))
	p.Syscall("loopback", unix.SYS_CLOSE, sock)
}

// sendOps send msg with the descriptors in slots over the control socket
// ctl (sendFDs), then close them. It returns the last op.
func sendOps(p *rawexec.Program, label string, ctl int, msg string, fds ...rawexec.Slot) rawexec.Call {
	oob := unix.UnixRights(make([]int, len(fds))...)
	for i, s := range fds {
		p.StoreAt(label, oob, unix.CmsgLen(0)+4*i, s)
	}
	body := []byte(msg)
	iov := &unix.Iovec{Base: &body[0]}
	iov.SetLen(len(body))
	hdr := &unix.Msghdr{Iov: iov, Iovlen: 1, Control: &oob[0]}
	hdr.SetControllen(len(oob))
	last := p.Syscall(label, unix.SYS_SENDMSG, rawexec.Int(ctl), rawexec.Ptr(hdr), rawexec.Imm(0)).Want(uintptr(len(body)))
	for _, s := range fds {
		last = p.Syscall(label, unix.SYS_CLOSE, s)
	}
	return last
}

// listenerOps make the proxy's two listeners on 127.0.0.1 inside the
// sandbox's network namespace and hand them to the supervisor
// (initControl's "listen").
func listenerOps(p *rawexec.Program, ctl int, ports ...uint16) {
	var slots []rawexec.Slot
	one := []byte{1, 0, 0, 0}
	for _, port := range ports {
		label := fmt.Sprintf("proxy listener on 127.0.0.1:%d", port)
		s := p.Syscall(label, unix.SYS_SOCKET, rawexec.Imm(unix.AF_INET), rawexec.Imm(unix.SOCK_STREAM|unix.SOCK_CLOEXEC), rawexec.Imm(0)).Save()
		p.Syscall(label, unix.SYS_SETSOCKOPT, s, rawexec.Imm(unix.SOL_SOCKET), rawexec.Imm(unix.SO_REUSEADDR), rawexec.Bytes(one), rawexec.Imm(4))
		sa := make([]byte, unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(sa[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:], port)
		copy(sa[4:], []byte{127, 0, 0, 1})
		p.Syscall(label, unix.SYS_BIND, s, rawexec.Bytes(sa), rawexec.Imm(len(sa)))
		p.Syscall(label, unix.SYS_LISTEN, s, rawexec.Imm(4096))
		slots = append(slots, s)
	}
	sendOps(p, "handing the proxy listeners to the supervisor", ctl, "listen", slots...)
}

// notifyOps load the filter with a listener and hand the listener to the
// supervisor (startConfined's notifying case): without
// WAIT_KILLABLE_RECV before Linux 5.19, and, when an outer sandbox
// already listens on this filter stack (EBUSY), the same rules without
// reporting — unless unixConnect needs the listener.
func notifyOps(p *rawexec.Program, ctl int, fprog *unix.SockFprog, plain seccomp.Program, plainErr error, unixConnect bool) {
	l := p.NewSlot()
	const label = "seccomp: loading filter"
	p.Syscall(label, unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER),
		rawexec.Imm(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), rawexec.Ptr(fprog)).
		SaveTo(l).Ignore(unix.EINVAL, unix.EBUSY).SkipIfOK(1)
	p.Syscall(label, unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER),
		rawexec.Imm(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER), rawexec.Ptr(fprog)).
		SaveTo(l).Ignore(unix.EBUSY).SkipIfIgnored(3) // store, sendmsg, close
	// Sent: skip the fallback below.
	sendOps(p, "handing the seccomp listener to the supervisor", ctl, "notify", l).SkipIfOK(1)
	switch {
	case unixConnect:
		p.Syscall("seccomp: an outer sandbox already uses seccomp user notification, which network.allowUnixSockets needs",
			unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER), rawexec.Imm(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER), rawexec.Ptr(fprog))
	case plainErr != nil || len(plain) == 0 || len(plain)%8 != 0:
		// No plain form (observing file calls needs a listener): the
		// same refusal, failing as the notifying load did.
		msg := "seccomp: an outer sandbox already uses seccomp user notification"
		if plainErr != nil {
			msg += " (" + plainErr.Error() + ")"
		}
		p.Syscall(msg, unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER), rawexec.Imm(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER), rawexec.Ptr(fprog))
	default:
		pf := &unix.SockFprog{Len: uint16(len(plain) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&plain[0]))}
		p.Syscall(label+" (an outer sandbox listens: without reporting)", unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER), rawexec.Imm(0), rawexec.Ptr(pf))
	}
}

// zeroArgsOps zero sbx's command line in PID 1's copy of memory (read
// from /dev/zero over it). The runtime's os.Args point into the argument
// area without copying it; where they do not form one contiguous area as
// the kernel laid it out (a caller replaced them), the area's bounds come
// from /proc/self/stat instead.
func zeroArgsOps(p *rawexec.Program) error {
	start, end, err := argArea()
	if err != nil {
		return fmt.Errorf("hiding sbx's command line from the sandbox: %w", err)
	}
	if end <= start {
		return nil
	}
	n := end - start
	const label = "init: hiding the command line"
	zero := p.Syscall(label, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/dev/zero"),
		rawexec.Imm(unix.O_RDONLY|unix.O_CLOEXEC)).Save()
	p.Syscall(label, unix.SYS_READ, zero, rawexec.Imm(start), rawexec.Imm(n)).Want(n)
	p.Syscall(label, unix.SYS_CLOSE, zero)
	return nil
}

// argArea is the process's argument area, [start, end): from os.Args
// when they are the kernel's strings, else from /proc/self/stat.
func argArea() (start, end uintptr, err error) {
	if len(os.Args) == 0 {
		return 0, 0, nil
	}
	start = uintptr(unsafe.Pointer(unsafe.StringData(os.Args[0])))
	next := start
	for _, a := range os.Args {
		if len(a) > 0 && uintptr(unsafe.Pointer(unsafe.StringData(a))) != next {
			return statArgArea()
		}
		next += uintptr(len(a)) + 1 // and its NUL
	}
	return start, next, nil
}

// statArgArea reads arg_start and arg_end (fields 48 and 49) from
// /proc/self/stat.
func statArgArea() (start, end uintptr, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:])) // from field 3 on
	if i < 0 || len(f) < 47 {
		return 0, 0, errors.New("/proc/self/stat has no arg_start and arg_end")
	}
	s, err1 := strconv.ParseUint(f[45], 10, 64)
	e, err2 := strconv.ParseUint(f[46], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/self/stat: %w", err)
	}
	return uintptr(s), uintptr(e), nil
}

// dropCapsOps are dropCaps's steps: the bounding set, the ambient set,
// the securebits locked, every set emptied.
func dropCapsOps(p *rawexec.Program) {
	for c, last := 0, userns.LastCap(); c <= last; c++ {
		p.Syscall(fmt.Sprintf("dropping capability %d from the bounding set", c), unix.SYS_PRCTL,
			rawexec.Imm(unix.PR_CAPBSET_DROP), rawexec.Int(c), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	}
	p.Syscall("clearing ambient capabilities", unix.SYS_PRCTL, rawexec.Imm(unix.PR_CAP_AMBIENT),
		rawexec.Imm(unix.PR_CAP_AMBIENT_CLEAR_ALL), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
	p.Syscall("locking securebits", unix.SYS_PRCTL, rawexec.Imm(unix.PR_SET_SECUREBITS), rawexec.Imm(bits),
		rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := &[2]unix.CapUserData{}
	p.Syscall("clearing capabilities", unix.SYS_CAPSET, rawexec.Ptr(hdr), rawexec.Ptr(data))
}
