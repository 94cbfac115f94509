//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/sbx-sh/sbx/internal/rawexec"
	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// The raw start: the sandbox's first process is a clone of the
// supervisor that runs the whole setup as a pre-built program of system
// calls (package rawexec) and never starts a second Go runtime. It builds
// the mount view, brings up the loopback, forks the command (which
// confines itself — Landlock, capabilities, seccomp — and execs), and
// stays as PID 1: it reaps, forwards signals, kills everything when the
// command ends or the supervisor goes (lifeline), and removes the stubs.
//
// It covers every plan but those too large for one rawexec program
// (rawexec.MaxOps); they still start the Go init (InitMain). The control
// socket works as with init: the first process sends the proxy's
// listeners, the command its seccomp listener. Published ports are served
// by the first process itself, on a socket pair of their own
// (rawexec.Reaper.Dial): for each connection to a published host port the
// supervisor asks it for 127.0.0.1:PORT inside the sandbox's network
// namespace; PID 1 starts the connect (non-blocking) and hands the socket
// over, and the supervisor waits for the connection. Discard overlays are
// mounted by the first process, which hands the supervisor descriptors on
// their upper layers and the host directories under them (on the control
// socket, or a socket of their own); once every process of the sandbox is
// gone, and before the supervisor lets the first process go on (the ack),
// the supervisor reads what the overlays took through them — the
// records, and --save-changes — as init does inside the sandbox.

// rawCandidate says whether the raw start may handle pl, judged from
// what basePlan knows (the mount view, the seccomp configuration and the
// program's size are checked by runRaw, which falls back with errNotRaw).
func rawCandidate(*Plan) bool {
	return true
}

// The published ports' dials in rawexec's protocol (ctlSide.dialInside).

func rawDialRequest(id uint64, port uint16) []byte {
	return rawexec.DialRequest{ID: id, Port: port}.Encode()
}

func rawDialReply(b []byte) (id uint64, errno uint32, err error) {
	r, err := rawexec.DecodeDialReply(b)
	return r.ID, r.Errno, err
}

func rawWaitConnected(fd int, d time.Duration) error {
	return rawexec.WaitConnected(fd, d)
}

// early is the first process Prespawn cloned ahead of the plan, until
// runRaw hands it to rawexec.Start or DropPrespawn ends it.
var early struct {
	sync.Mutex
	e *rawexec.Early
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
func Prespawn() {
	attr := &rawexec.Attr{Cloneflags: rawCloneflags(false), IDMap: rawexec.SelfMap}
	if os.Getuid() == 0 && os.Geteuid() == 0 {
		attr.IDMap = rawexec.ParentMap
		attr.UIDMap, attr.GIDMap = idMap(os.Getuid()), idMap(os.Getgid())
	}
	// A plan with a network namespace brings its loopback up: the
	// early process does it off the supervisor's path (0.05-0.1 ms; the
	// first process's own ioctl then finds it up).
	var ops rawexec.Program
	loopbackOps(&ops)
	e, err := rawexec.Prespawn(attr, &ops)
	if err != nil {
		return
	}
	early.Lock()
	defer early.Unlock()
	early.e.Abandon()
	early.e = e
}

// DropPrespawn ends the first process Prespawn made, unless a launch
// took it.
func DropPrespawn() { takeEarly().Abandon() }

func takeEarly() *rawexec.Early {
	early.Lock()
	defer early.Unlock()
	e := early.e
	early.e = nil
	return e
}

// rawCloneflags are the namespaces of the raw start.
func rawCloneflags(hostNet bool) uintptr {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if !hostNet {
		flags |= unix.CLONE_NEWNET
	}
	return flags
}

// errNotRaw: the complete plan needs the Go init after all.
var errNotRaw = errors.New("sandbox: not a raw start")

// runRaw runs the complete plan pl with the raw start. It returns
// errNotRaw, having changed nothing, when pl needs the Go init.
func runRaw(pl *Plan, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	// With an early process (Prespawn), the Landlock rules for paths the
	// view shows as the host has them are added by it, on the other CPU,
	// while the rest is compiled; the command adds the others.
	early := takeEarly()
	defer early.Abandon() // a no-op once Start has it
	var lle *landlock.Early
	if early != nil {
		var err error
		if lle, err = pl.Landlock.PrepareEarly(pl.Mounts.HostInode); err != nil {
			return failf(stderr, "%v", err), nil
		}
		defer lle.Close()
		early.Call(lle.Func()) // best effort: the command adds what it did not
	}
	var prog, exit rawexec.Program
	prog.Grow(1024) // the default plan is about 850 ops
	// PID 1 is a copy of the supervisor, command line included, and
	// /proc/PID/cmdline is readable by anyone (no ptrace check): sbx's
	// arguments can carry a value the sandbox must not see (--set-env of
	// a masked credential). Its first act is to zero them in its copy.
	if !zeroArgsOps(&prog) {
		return 0, errNotRaw
	}
	// A session of its own, as init had: a terminal's ^C reaches the
	// supervisor only, which forwards it once.
	prog.Syscall("init: setsid", unix.SYS_SETSID)
	prog.Syscall("init: not dumpable", unix.SYS_PRCTL, rawexec.Imm(unix.PR_SET_DUMPABLE), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	overlays := false
	for _, op := range pl.Mounts.Ops {
		overlays = overlays || op.Kind == ns.OpOverlay
	}
	// The control socket, when the plan has one, also carries the
	// discard overlays' descriptors; without it they get a socket pair
	// of their own.
	var ctlSup, ctlInit *os.File
	var err error
	if pl.Net.Control || overlays {
		if ctlSup, ctlInit, err = controlPair(); err != nil {
			return failf(stderr, "%v", err), nil
		}
		defer ctlSup.Close()
		defer ctlInit.Close()
	}
	// Published ports: PID 1 dials for the supervisor on a pair of their own.
	var dialSup, dialInit *os.File
	dial := -1
	if len(pl.Net.Publish) > 0 {
		if !pl.Net.Control {
			return 0, errNotRaw // no ctlSide to serve them (not a plan basePlan makes)
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return failf(stderr, "dial socket: %v", err), nil
		}
		dialSup, dialInit = os.NewFile(uintptr(fds[0]), "sbx-dial"), os.NewFile(uintptr(fds[1]), "sbx-dial")
		defer dialSup.Close()
		defer dialInit.Close()
		dial = fds[1]
	}
	sock := -1
	if ctlInit != nil {
		sock = int(ctlInit.Fd())
	}
	view, err := ns.CompileRaw(pl.Mounts, sock, &prog, &exit)
	if errors.Is(err, rawexec.ErrTooLong) {
		// The Go init has no limit on the view's steps (many protected
		// names, e.g. a discard region holding hundreds of repositories).
		return 0, errNotRaw
	}
	if err != nil {
		return failf(stderr, "%v", err), nil
	}
	// From here on the stubs exist on the host: every way out removes
	// them (the first process does, or RemoveStubs when it never ran).
	started := false
	defer func() {
		if !started {
			view.RemoveStubs()
		}
		view.Release()
	}()
	if !pl.HostNet {
		loopbackOps(&prog)
	}
	var nw *ctlSide
	if pl.Net.Control && pl.Net.Proxy {
		listenerOps(&prog, sock, pl.Net.HTTPPort, pl.Net.SOCKSPort)
	}
	// The --save-changes directory (made by Launch) is written through a
	// descriptor, as init does.
	saveFD := -1
	if pl.SaveChanges != "" {
		fd, err := unix.Open(pl.SaveChanges, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return failf(stderr, "--save-changes %s: %v", pl.SaveChanges, err), nil
		}
		saveFD = fd
		defer unix.Close(saveFD)
	}
	if t := pl.Net.TLS; t != nil {
		dir := filepath.Dir(t.BundlePath)
		prog.Syscall("writing the TLS trust bundle", unix.SYS_MKDIRAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(dir), rawexec.Imm(0o755)).Ignore(unix.EEXIST)
		prog.CreateFile("writing the TLS trust bundle", t.BundlePath, t.Bundle, 0o444)
		prog.Syscall("writing the TLS trust bundle", unix.SYS_FCHMODAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(dir), rawexec.Imm(0o555), rawexec.Imm(0))
	}
	prog.Fork("starting the command")
	prog.Syscall("setsid", unix.SYS_SETSID)
	prog.Syscall(fmt.Sprintf("working directory %s is not visible in the sandbox; run sbx from a readable directory", pl.Dir),
		unix.SYS_CHDIR, rawexec.String(pl.Dir))
	if lle != nil {
		err = pl.Landlock.CompileRawEarly(&prog, lle)
	} else {
		err = pl.Landlock.CompileRaw(&prog)
	}
	if errors.Is(err, rawexec.ErrTooLong) {
		return 0, errNotRaw
	} else if err != nil {
		return failf(stderr, "%v", err), nil
	}
	dropCapsOps(&prog)
	if len(pl.Filter) == 0 || len(pl.Filter)%8 != 0 {
		return failf(stderr, "seccomp: program of %d bytes is not a BPF program", len(pl.Filter)), nil
	}
	fprog := &unix.SockFprog{Len: uint16(len(pl.Filter) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&pl.Filter[0]))}
	if pl.Seccomp.Notify || pl.Seccomp.UnixConnect {
		// An outer sandbox listening on this filter stack leaves the
		// same rules without reporting (loadPlain): compiled here.
		plainCfg := pl.Seccomp
		plainCfg.Notify = false
		plain, plainErr := seccomp.Compile(plainCfg)
		notifyOps(&prog, sock, fprog, plain, plainErr, pl.Seccomp.UnixConnect)
	} else {
		prog.Syscall("seccomp: loading filter", unix.SYS_SECCOMP, rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER), rawexec.Imm(0), rawexec.Ptr(fprog))
	}
	if err := prog.Err(); err != nil {
		if errors.Is(err, rawexec.ErrTooLong) {
			return 0, errNotRaw // the stubs go (deferred); init makes its own
		}
		return failf(stderr, "%v", err), nil
	}
	path, code, err := lookPath(pl.Argv[0], pl.Env, pl.Dir)
	if err != nil {
		fmt.Fprintf(stderr, "sbx: %v\n", err)
		return code, nil
	}

	if pl.Net.Control {
		if nw, err = prepareControl(pl, col, stderr); err != nil {
			return failf(stderr, "%v", err), nil
		}
		defer nw.close()
	}
	closeExtraFDs()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return failf(stderr, "pipe: %v", err), nil
	}
	defer lifeW.Close()
	statR, statW, err := os.Pipe()
	if err != nil {
		return failf(stderr, "pipe: %v", err), nil
	}
	defer statR.Close()
	// Records are read with blocking reads: the supervisor thread sleeps
	// in the pipe and the record's write wakes it, instead of a trip
	// through the runtime's poller (0.1-0.2 ms from PID 1's last record
	// to the supervisor reading it). Fd switches the file to blocking.
	_ = statR.Fd()
	ackR, ackW, err := os.Pipe()
	if err != nil {
		return failf(stderr, "pipe: %v", err), nil
	}
	defer ackW.Close()
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
	flags := rawCloneflags(pl.HostNet)
	keep := append([]int{int(lifeR.Fd()), int(statW.Fd()), int(ackR.Fd())}, view.Keep...)
	ack := int(ackR.Fd())
	if view.OverlayMessages() == 0 {
		// Nothing of the view for the supervisor to read after the
		// exit (no discard overlays): PID 1 goes on to its exit ops at
		// once instead of waiting a round trip for the ack.
		ack = -1
	}
	if dial >= 0 {
		keep = append(keep, dial)
	}
	attr := &rawexec.Attr{
		Path:       path,
		Args:       pl.Argv,
		Env:        pl.Env,
		Files:      files,
		Cloneflags: flags,
		IDMap:      rawexec.SelfMap,
		PidFD:      true,
		Reaper: &rawexec.Reaper{
			Lifeline: int(lifeR.Fd()),
			Status:   int(statW.Fd()),
			Ack:      ack,
			Dial:     dial,
			Signals:  sigs,
			Keep:     keep,
			Exit:     &exit,
		},
	}
	if pl.UID == 0 && os.Geteuid() == 0 {
		// Root's full map (see idMap), written by the supervisor.
		attr.IDMap = rawexec.ParentMap
		attr.UIDMap, attr.GIDMap = idMap(pl.UID), idMap(pl.GID)
	}
	if ready != nil {
		ready(pl)
	}
	sigc := make(chan os.Signal, 32)
	notified := notifyAsync(sigc, forwarded...)
	defer func() { go func() { <-notified; signal.Stop(sigc) }() }()

	attr.Early = early
	// Signals must reach the command from its first instruction on: a
	// SIGTERM that came before Notify took effect would kill the
	// supervisor (Go's default for an unhandled SIGTERM) instead of
	// being forwarded, and the lifeline would then SIGKILL the sandbox.
	<-notified
	proc, startErr := rawexec.Start(&prog, attr)
	afterStart(pl)
	lifeR.Close()
	statW.Close()
	ackR.Close()
	if ctlInit != nil {
		ctlInit.Close()
	}
	if dialInit != nil {
		dialInit.Close()
	}
	if proc == nil {
		var oe *rawexec.OpError
		if errors.As(startErr, &oe) {
			return failf(stderr, "%s", rawMessage(oe)), nil
		}
		return failf(stderr, "%s; 'sbx doctor' shows the exact fix for this host", usernsProblem(startErr)), nil
	}
	started = true // the first process removes the stubs from here on
	// The first process holds the stubs' descriptors (and with them the
	// shared locks) from its fork on. Closing ours now means the last
	// reference to a stub it unlinks is its own, so ext4's freeing of
	// the inode runs in its exit, which nothing waits for, instead of
	// in this process's end (0.5 ms for thirteen stubs).
	view.Release()
	// The overlays' descriptors were sent before the fork: they are
	// there, ahead of anything else on the socket.
	// A failure from here on stops the sandbox through the lifeline, so
	// PID 1 still removes the stubs, and waits for its last record.
	abort := func(err error) (int, error) {
		lifeW.Close()
		ackW.Close()
		for {
			if rec, err := rawexec.ReadRecord(statR); err != nil || rec.Kind == rawexec.RecordDone {
				break
			}
		}
		_, _ = proc.Wait()
		return failf(stderr, "%v", err), nil
	}
	discards, err := recvOverlays(ctlSup, view)
	if err != nil {
		return abort(err)
	}
	defer discards.Close()
	if nw != nil {
		err := error(nil)
		if dialSup != nil {
			err = nw.useRawDial(dialSup)
		}
		if err == nil {
			err = nw.start(ctlSup)
		}
		if err != nil {
			return abort(err)
		}
	}

	rl := startRelay(sigc, notified, pl.Timeout, lifeW,
		func(s os.Signal) { _ = proc.Signal(s.(unix.Signal)) }, func() { _ = proc.Signal(unix.SIGKILL) })
	defer rl.end()

	var ws unix.WaitStatus
	begun, exited, final := false, false, false
	for !final {
		rec, err := rawexec.ReadRecord(statR)
		if err != nil {
			break
		}
		switch rec.Kind {
		case rawexec.RecordStarted:
			begun = true
		case rawexec.RecordExited:
			exited, ws = true, unix.WaitStatus(rec.Status)
			if discards != nil && startErr == nil {
				// What the discard overlays took: read from their upper
				// layers now that nothing writes any more, before the
				// view goes (init's end of run).
				if os.Geteuid() != 0 {
					// Init reads them with its capabilities in the
					// sandbox's user namespace; the supervisor owns them.
					discards.Reach(maxDiscarded)
				}
				changes := discards.Changes(maxDiscarded)
				if saveFD >= 0 {
					if err := discards.SaveChanges(saveFD, changes); err != nil {
						fmt.Fprintf(stderr, "sbx: %v\n", err)
					}
				}
				for _, c := range changes {
					col.Add(discardRecord(c))
				}
			}
			ackW.Close() // done with the view: remove the stubs and go
		case rawexec.RecordDone:
			final = true
		}
	}
	rl.end()
	if !final {
		_, _ = proc.Wait()
	}
	// After its last record the first process has nothing left but its
	// exit: every process of the sandbox is gone, the stubs are removed,
	// and its next call is exit_group. The kernel's teardown of the
	// namespaces in that exit is not waited for (0.1-0.3 ms, more with
	// stubs); the zombie passes to this process's reaper, like any
	// orphan.
	lifeW.Close()
	nw.close()
	switch {
	case rl.timedOut.Load():
		fmt.Fprintf(stderr, "sbx: timed out after %v; the sandbox was killed\n", pl.Timeout)
		return 124, nil
	case startErr != nil:
		// The command's own setup failed after the fork: it never ran.
		var oe *rawexec.OpError
		if errors.As(startErr, &oe) && oe.Nr == unix.SYS_EXECVE {
			fmt.Fprintf(stderr, "sbx: %s: %v\n", path, oe.Errno)
			if oe.Errno == unix.ENOENT {
				return 127, nil
			}
			return 126, nil
		}
		if errors.As(startErr, &oe) {
			return failf(stderr, "%s", rawMessage(oe)), nil
		}
		return failf(stderr, "%v", startErr), nil
	case exited:
		return waitStatusCode(ws), nil
	case begun:
		fmt.Fprintln(stderr, "sbx: the sandbox's init died unexpectedly; the command was killed")
		return 125, nil
	}
	return failf(stderr, "the sandbox failed to start"), nil
}

// recvOverlays takes the discard overlays' descriptors the first process
// sent on sock (nil, nil for a view without overlays).
func recvOverlays(sock *os.File, view *ns.RawView) (*ns.View, error) {
	n := view.OverlayMessages()
	if n == 0 {
		return nil, nil
	}
	var fds []int
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*253))
	for range n {
		k, oobn, flags, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err == nil {
			var msgs []unix.SocketControlMessage
			if msgs, err = unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if r, e := unix.ParseUnixRights(&m); e == nil {
						fds = append(fds, r...)
					}
				}
			}
			if err == nil && (string(buf[:k]) != "overlays" || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0) {
				err = errors.New("unexpected message")
			}
		}
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("receiving the discard overlays from the sandbox: %v", err)
		}
	}
	return view.Discards(fds)
}

// rawMessage is an op's failure as sbx reports it: the op's label names
// what was being done (and, for the view, the policy entry).
func rawMessage(oe *rawexec.OpError) string {
	if oe.Errno == 0 {
		return oe.Label + ": unexpected result"
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
// area without copying it; false if they do not form one contiguous
// area as the kernel laid it out (then the Go init is used).
func zeroArgsOps(p *rawexec.Program) bool {
	if len(os.Args) == 0 {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(os.Args[0])))
	next := start
	for _, a := range os.Args {
		if len(a) > 0 && uintptr(unsafe.Pointer(unsafe.StringData(a))) != next {
			return false
		}
		next += uintptr(len(a)) + 1 // and its NUL
	}
	n := next - start
	zero := p.Syscall("init: hiding the command line", unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/dev/zero"),
		rawexec.Imm(unix.O_RDONLY|unix.O_CLOEXEC)).Save()
	p.Syscall("init: hiding the command line", unix.SYS_READ, zero, rawexec.Imm(start), rawexec.Imm(n)).Want(n)
	p.Syscall("init: hiding the command line", unix.SYS_CLOSE, zero)
	return true
}

// dropCapsOps are dropCaps's steps: the bounding set, the ambient set,
// the securebits locked, every set emptied.
func dropCapsOps(p *rawexec.Program) {
	for c, last := 0, lastCap(); c <= last; c++ {
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
