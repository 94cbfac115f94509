//go:build linux

package sandbox

// The control socket: a SOCK_SEQPACKET pair between the supervisor and
// the sandbox. A socket belongs to the network namespace it was created
// in, so everything that must live inside the sandbox's namespace is
// created there and handed over as a descriptor (SCM_RIGHTS):
//
//	PID 1 → supervisor    "listen"   + the proxy's HTTP and SOCKS listeners
//	PID 1 → supervisor    "overlays" + discard overlays' layers (takeStart)
//	PID 1 → supervisor    "capture"  + the capture device (captureOps)
//	command → supervisor  "notify"   + the seccomp filter's listener
//
// The receiver assumes no order among them: each message is taken by its
// tag. The order they are sent in depends on the plan (PID 1 makes the
// capture device before the view, and not at all when the early process
// made it; "listen" follows the view), so a receiver that expected one
// message first failed a run at random. Only the "overlays" messages keep
// their order among themselves (their descriptors are in plan order), which
// a SOCK_SEQPACKET socket guarantees. All of them are sent before the
// command's execve, which is when rawexec.Start returns: the supervisor
// then takes every one queued (takeStart) and serves the rest as they come
// (readLoop), both through one dispatch (handle).
//
// PID 1 runs no Go (start_linux.go): it serves the published ports' dials on
// a SOCK_SEQPACKET pair of their own, in rawexec's binary protocol
// (rawexec.DialRequest, rawexec.DialReply + the socket, which may still be
// connecting).
//
// The supervisor serves the listeners with package netproxy from its own
// (the host's) network namespace: accepted connections are inside, dials
// are outside. PID 1 is never confined, so its dials are not subject to
// the command's Landlock port rules.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/netproxy"
	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// controlPair makes the control socket pair: sup stays in the supervisor,
// init goes to the sandbox's first process.
func controlPair() (sup, init *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sbx-control"), os.NewFile(uintptr(fds[1]), "sbx-control"), nil
}

func unixConn(f *os.File) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("control socket is not a Unix socket")
	}
	return uc, nil
}

// ---- supervisor side ----

// ctlSide is the supervisor's half of the control socket: the proxy, the
// published ports and the seccomp listener.
type ctlSide struct {
	pl    *Plan
	col   *violations.Collector
	unix  *seccomp.UnixAllow
	files *fileObserver // --observe-files, or nil
	// created notes where the command made directory entries, for the
	// after-run check (nil in the weaker mode: no listener).
	created *createdNotes
	// netNone: connects and sends are notified (--net none) and the
	// ones to unreachable addresses recorded.
	netNone bool
	notif   *seccomp.Listener
	proxy   *netproxy.Proxy
	pubs    []net.Listener
	ctl     *net.UnixConn
	// dial: the published ports' dial socket (PID 1 is rawexec's
	// reaper); nil without published ports.
	dial   *net.UnixConn
	mu     sync.Mutex
	nextID uint64
	wait   map[uint64]chan *os.File
	wg     sync.WaitGroup
	conns  map[net.Conn]struct{}
	closed bool
	once   sync.Once
	// stopCapture ends the capture stack (nil until the device arrives).
	stopCapture context.CancelFunc
	// device is the capture device the early process made (start serves
	// it); nil when the first process sends it ("capture").
	device *os.File
}

// prepareControl does what can fail before the sandbox starts: it binds the
// published host ports and makes the proxy, so a port in use or a bad
// setting is exit 125 with nothing run. With --control-fd it starts
// reading network-list updates (to stderr go the bad lines).
func prepareControl(pl *Plan, col *violations.Collector, stderr io.Writer) (*ctlSide, error) {
	ns := &ctlSide{pl: pl, col: col, wait: map[uint64]chan *os.File{}, conns: map[net.Conn]struct{}{}, netNone: pl.Seccomp.ObserveNet}
	if pl.Seccomp.Notify {
		ns.created = newCreatedNotes()
	}
	if pl.Seccomp.ObserveWrites || pl.Seccomp.ObserveReads {
		// Its ops once the plan is complete (start).
		ns.files = &fileObserver{reads: pl.Seccomp.ObserveReads, writes: pl.Seccomp.ObserveWrites, fi: seccomp.NewFileInspector()}
		ns.files.fi.Resolve = pl.observe != nil // sbx learn notes resolved paths
	}
	if pl.Seccomp.UnixConnect {
		ua, err := seccomp.NewUnixAllow(pl.Net.UnixSockets)
		if err != nil {
			return nil, fmt.Errorf("network.allowUnixSockets: %w", err)
		}
		// The supervisor connects every socket itself (a Continue could
		// be raced by a dup2 over the descriptor), on a thread under the
		// command's own Landlock TCP rules.
		conn, err := newConnector(pl.Landlock)
		if err != nil {
			return nil, err
		}
		ua.EmulateNonUnix = true
		ua.ConnectNonUnix = conn
		if o := pl.observe; o != nil {
			ua.Learn = func(resolved string, st *unix.Stat_t) bool {
				return learnSocket(o.Recorder, pl.Dir, resolved, st)
			}
		}
		ns.unix = ua
	}
	for _, pb := range pl.Net.Publish {
		l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(pb.HostPort))))
		if err != nil {
			ns.close()
			return nil, fmt.Errorf("--publish %d:%d: cannot listen on the host's 127.0.0.1:%d: %w", pb.HostPort, pb.Port, pb.HostPort, err)
		}
		ns.pubs = append(ns.pubs, l)
	}
	if pl.Net.Proxy {
		cfg := pl.Net.proxy
		cfg.OnDeny = netproxy.Reporter(col)
		if len(pl.secrets) > 0 && pl.observe == nil {
			// sbx learn never injects a credential: the command
			// sees the sentinels, and so do the hosts it reaches.
			cfg.Rewrite = injector(pl, col)
		}
		if o := pl.observe; o != nil && o.Net && !onlyManagedDomains(pl.Net.managed) {
			// sbx learn: a host no entry decides is let through, and
			// noted once the address guard has passed it too.
			cfg.Ask = func(context.Context, string, int) bool { return true }
			rec := o.Recorder
			cfg.Asked = func(host string, port int) { rec.Host(net.JoinHostPort(host, strconv.Itoa(port))) }
		} else if pl.AskFD > 0 && !onlyManagedDomains(pl.Net.managed) {
			timeout := pl.AskTimeout
			if timeout <= 0 {
				timeout = DefaultAskTimeout
			}
			cfg.Ask = newAsker(pl.AskFD, timeout, strings.Join(pl.Argv, " "), os.Stderr).ask
		}
		px, err := netproxy.New(cfg)
		if err != nil {
			ns.close()
			return nil, fmt.Errorf("network settings: %w", err)
		}
		ns.proxy = px
		if pl.ControlFD > 0 {
			go readControl(pl.ControlFD, px, pl.Net.managed, stderr)
		}
	}
	return ns, nil
}

// start takes over the supervisor's end of the control socket once the
// sandbox's first process runs; taken are the messages takeStart read
// from it already.
func (ns *ctlSide) start(f *os.File, taken []ctlMessage) error {
	c, err := unixConn(f)
	if err != nil {
		closeMessages(taken)
		return fmt.Errorf("control socket: %w", err)
	}
	ns.ctl = c
	if ns.files != nil {
		ns.files.setOps(ns.pl.Mounts)
	}
	if ns.device != nil {
		ns.takeDevice(ns.device)
		ns.device = nil
	}
	for _, m := range taken {
		ns.handle(m)
	}
	ns.wg.Add(1)
	go ns.readLoop()
	if ns.dial != nil {
		ns.wg.Add(1)
		go ns.dialLoop()
	}
	for i, l := range ns.pubs {
		ns.wg.Add(1)
		go ns.servePublish(l, ns.pl.Net.Publish[i].Port)
	}
	return nil
}

func (ns *ctlSide) readLoop() {
	defer ns.wg.Done()
	buf := make([]byte, 128)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := ns.ctl.ReadMsgUnix(buf, oob)
		if err != nil || (n == 0 && oobn == 0) {
			if ns.dial == nil {
				ns.failWaiters()
			}
			// Else the dial loop fails them at the dial socket's end,
			// after the replies queued before it: PID 1 may have made
			// a connection just before it exited, and its control
			// socket may end before that reply is read.
			return
		}
		ns.handle(ctlMessage{tag: string(buf[:n]), files: receivedFiles(oob[:oobn])})
	}
}

// handle serves one message from the control socket, whatever came
// before it; an unknown one (or one with the wrong descriptors) is
// dropped, its descriptors closed.
func (ns *ctlSide) handle(m ctlMessage) {
	files := m.files
	switch {
	case m.tag == "listen" && len(files) == 2 && ns.proxy != nil:
		ls := make([]net.Listener, 2)
		for i, lf := range files {
			l, err := net.FileListener(lf)
			lf.Close()
			if err != nil {
				continue
			}
			ls[i] = relayListener{l}
		}
		if ls[0] != nil {
			go func() { _ = ns.proxy.ServeHTTP(ls[0]) }()
		}
		if ls[1] != nil {
			go func() { _ = ns.proxy.ServeSOCKS(ls[1]) }()
		}
	case m.tag == "capture" && len(files) == 1:
		ns.takeDevice(files[0])
	case m.tag == "notify" && len(files) == 1:
		l := seccomp.NewListener(files[0])
		ns.mu.Lock()
		if ns.closed {
			ns.mu.Unlock()
			l.Close()
			return
		}
		ns.notif = l
		ns.mu.Unlock()
		ns.wg.Add(1)
		go func() {
			defer ns.wg.Done()
			_ = seccomp.Serve(l, ns.answer)
		}()
	default:
		closeMessages([]ctlMessage{m})
	}
}

// ctlMessage is one message of the control socket: its tag and the
// descriptors it carried.
type ctlMessage struct {
	tag   string
	files []*os.File
}

func closeMessages(ms []ctlMessage) {
	for _, m := range ms {
		for _, f := range m.files {
			f.Close()
		}
	}
}

// takeStart reads the messages queued on the control socket sock until
// it has taken overlays "overlays" messages, in whatever order the others
// came: it returns the overlays' descriptors (in the order sent) and the
// other messages it read on the way, for ctlSide.start. Everything it
// waits for was sent before rawexec.Start returned, so it does not
// block: a message missing is an error, as is one truncated.
func takeStart(sock *os.File, overlays int) (fds []int, other []ctlMessage, err error) {
	if overlays == 0 {
		return nil, nil, nil
	}
	fail := func(err error) ([]int, []ctlMessage, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		closeMessages(other)
		return nil, nil, fmt.Errorf("receiving the discard overlays from the sandbox: %w", err)
	}
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*253))
	for got := 0; got < overlays; {
		k, oobn, flags, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EAGAIN) {
			return fail(fmt.Errorf("%d of %d messages arrived", got, overlays))
		}
		if err != nil {
			return fail(err)
		}
		var rights []int
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if r, e := unix.ParseUnixRights(&m); e == nil {
					rights = append(rights, r...)
				}
			}
		}
		tag := string(buf[:k])
		if tag == "overlays" {
			fds = append(fds, rights...)
			got++
		} else {
			m := ctlMessage{tag: tag}
			for _, fd := range rights {
				m.files = append(m.files, os.NewFile(uintptr(fd), "received"))
			}
			other = append(other, m)
		}
		switch {
		case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			return fail(fmt.Errorf("a message (%q) was truncated", tag))
		case k == 0 && oobn == 0:
			return fail(fmt.Errorf("the socket ended after %d of %d messages", got, overlays))
		}
	}
	return fds, other, nil
}

// takeDevice serves the capture device f (one per run), or closes it.
func (ns *ctlSide) takeDevice(f *os.File) {
	ctx, cancel := context.WithCancel(context.Background())
	ns.mu.Lock()
	if ns.closed || ns.stopCapture != nil || ns.proxy == nil || ns.pl.Net.names == nil {
		ns.mu.Unlock()
		cancel()
		f.Close()
		return
	}
	ns.stopCapture = cancel
	ns.wg.Add(1)
	ns.mu.Unlock()
	go ns.serveCapture(ctx, f)
}

// useDial makes the published ports' dials go to PID 1 on f (before
// start).
func (ns *ctlSide) useDial(f *os.File) error {
	c, err := unixConn(f)
	if err != nil {
		return fmt.Errorf("dial socket: %w", err)
	}
	ns.dial = c
	return nil
}

// dialLoop routes PID 1's dial replies to their waiters. A refused dial
// is a nil file; a socket still connecting is the waiter's to finish.
func (ns *ctlSide) dialLoop() {
	defer ns.wg.Done()
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := ns.dial.ReadMsgUnix(buf, oob)
		if err != nil || (n == 0 && oobn == 0) {
			ns.failWaiters()
			return
		}
		files := receivedFiles(oob[:oobn])
		id, errno, err := dialReply(buf[:n])
		var got *os.File
		if err == nil && errno == 0 && len(files) == 1 {
			got, files = files[0], nil
		}
		for _, x := range files {
			x.Close()
		}
		if err != nil {
			if got != nil {
				got.Close()
			}
			continue
		}
		ns.mu.Lock()
		ch := ns.wait[id]
		delete(ns.wait, id)
		ns.mu.Unlock()
		if ch != nil {
			ch <- got
		} else if got != nil {
			got.Close()
		}
	}
}

func receivedFiles(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			out = append(out, os.NewFile(uintptr(fd), "received"))
		}
	}
	return out
}

func (ns *ctlSide) failWaiters() {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for id, ch := range ns.wait {
		close(ch)
		delete(ns.wait, id)
	}
}

// dialInside asks PID 1 for a connection to
// 127.0.0.1:port inside the sandbox.
func (ns *ctlSide) dialInside(port uint16) (net.Conn, error) {
	const timeout = 10 * time.Second
	deadline := time.Now().Add(timeout)
	ch := make(chan *os.File, 1)
	ns.mu.Lock()
	if ns.closed {
		ns.mu.Unlock()
		return nil, net.ErrClosed
	}
	ns.nextID++
	id := ns.nextID
	ns.wait[id] = ch
	ns.mu.Unlock()
	var err error
	if ns.dial == nil {
		err = errors.New("no dial socket")
	} else {
		_, err = ns.dial.Write(dialRequest(id, port))
	}
	if err != nil {
		ns.mu.Lock()
		delete(ns.wait, id)
		ns.mu.Unlock()
		return nil, err
	}
	select {
	case f, ok := <-ch:
		if !ok || f == nil {
			return nil, fmt.Errorf("nothing listens on port %d in the sandbox", port)
		}
		// PID 1's connect does not wait: finish it here.
		if err := waitConnected(int(f.Fd()), time.Until(deadline)); err != nil {
			f.Close()
			if errors.Is(err, unix.ECONNREFUSED) {
				return nil, fmt.Errorf("nothing listens on port %d in the sandbox", port)
			}
			return nil, err
		}
		c, err := net.FileConn(f)
		f.Close()
		return c, err
	case <-time.After(timeout):
		ns.mu.Lock()
		delete(ns.wait, id)
		ns.mu.Unlock()
		return nil, errors.New("timed out")
	}
}

func (ns *ctlSide) servePublish(l net.Listener, port uint16) {
	defer ns.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !ns.track(c) {
			c.Close()
			return
		}
		relaying()
		ns.wg.Add(1)
		go func() {
			defer ns.wg.Done()
			defer ns.untrack(c)
			in, err := ns.dialInside(port)
			if err != nil {
				return
			}
			if !ns.track(in) {
				in.Close()
				return
			}
			defer ns.untrack(in)
			netproxy.Pipe(c, in)
		}()
	}
}

// track registers a forwarded connection. After close began it is still
// served, for the drain time only: the command may have answered and
// exited before the supervisor got the connection from PID 1.
func (ns *ctlSide) track(c net.Conn) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.closed {
		_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	}
	ns.conns[c] = struct{}{}
	return true
}

func (ns *ctlSide) untrack(c net.Conn) {
	ns.mu.Lock()
	delete(ns.conns, c)
	ns.mu.Unlock()
	c.Close()
}

// close stops everything: listeners, the proxy, forwarded connections.
func (ns *ctlSide) close() {
	if ns == nil {
		return
	}
	ns.once.Do(ns.doClose)
}

func (ns *ctlSide) doClose() {
	ns.mu.Lock()
	ns.closed = true
	// Forwarded (published) connections may still hold what the
	// command wrote just before it ended: let them drain for a moment
	// (the sockets outlive the namespace), then cut them.
	drain := time.Now().Add(500 * time.Millisecond)
	for c := range ns.conns {
		_ = c.SetDeadline(drain)
	}
	ns.mu.Unlock()
	for _, l := range ns.pubs {
		l.Close()
	}
	if ns.proxy != nil {
		_ = ns.proxy.Close()
	}
	ns.mu.Lock()
	if ns.notif != nil {
		ns.notif.Close()
	}
	if ns.stopCapture != nil {
		ns.stopCapture()
	}
	ns.mu.Unlock()
	if ns.ctl != nil {
		ns.ctl.Close()
	}
	if ns.dial != nil {
		// PID 1 is gone (EOF after its last replies) or about to be: read
		// what it answered, then stop.
		_ = ns.dial.SetReadDeadline(drain)
	}
	ns.wg.Wait()
	if ns.dial != nil {
		ns.dial.Close()
	}
	if ns.files != nil {
		ns.files.fi.Close()
	}
	ns.created.close()
}

// answer decides one seccomp notification: a connect(2) under the Unix
// socket allow-list, or a refused call, answered EPERM and recorded.
func (ns *ctlSide) answer(r *seccomp.Request) seccomp.Response {
	if ns.netNone {
		// A connect or send naming a destination: the kernel decides
		// (no route but loopback); the record says what was refused.
		if nc, ok, err := seccomp.InspectNet(r); ok {
			if err == nil {
				if rec, refused := netRecord(r, nc, servesDNS); refused && r.Valid() {
					rec.Exe = exeOf(r.PID)
					ns.col.Add(rec)
				}
			}
			if r.Syscall != "connect" || ns.unix == nil {
				return seccomp.Response{Continue: true}
			}
		}
	}
	if r.Syscall == "connect" && ns.unix != nil {
		resp, d := ns.unix.Connect(r)
		if d != nil {
			ns.col.Add(violations.Record{
				Kind: violations.KindUnixSocket, Source: violations.SourceSeccomp,
				PID: d.PID, Exe: exeOf(d.PID), Syscall: "connect",
				Path: d.Path, Resolved: d.Resolved, Detail: d.Reason,
				Rule: "network.allowUnixSockets",
			})
		}
		return resp
	}
	_, setID := seccomp.SetIDMode(r)
	if ns.created != nil && !setID && createdCalls[r.Syscall] {
		// A new directory entry: the kernel decides; where it was made
		// is noted for the after-run check.
		var fi *seccomp.FileInspector
		if ns.files != nil {
			fi = ns.files.fi
		}
		ns.created.note(r, fi)
		if ns.files == nil {
			return seccomp.Response{Continue: true}
		}
	}
	if ns.files != nil && !setID {
		// An observed file call: the kernel decides (Continue); the
		// observer records it when the sandbox refuses it. A set-id
		// mode is refused below, whoever else observes the call.
		if fc, ok, err := ns.files.fi.Inspect(r); ok {
			if err == nil {
				if rec, refused := ns.files.record(r, fc); refused && r.Valid() {
					rec.Exe = exeOf(r.PID)
					ns.col.Add(rec)
				} else if o := ns.pl.observe; o != nil && r.Valid() {
					ns.files.note(o.Recorder, fc)
					ns.files.noteExe(o.Recorder, r.PID)
				}
			}
			return seccomp.Response{Continue: true}
		}
	}
	name, detail := seccomp.Describe(r)
	errno := unix.EPERM
	rec := violations.Record{
		Kind: violations.KindSyscall, Source: violations.SourceSeccomp,
		PID: r.PID, Syscall: name, Detail: detail,
		Rule: "seccomp: " + name,
	}
	if pr, ok := seccomp.ProbeFor(r.Syscall); ok {
		// A runtime's feature probe: refused as ever, marked so that
		// the report leaves it out (--violations-probes shows it).
		errno, rec.Probe = pr.Errno, true
	}
	rec.Exe = exeOf(r.PID)
	ns.col.Add(rec)
	return seccomp.Response{Errno: errno}
}

// exeOf is the executable of a (host) pid, "" when it is gone.
func exeOf(pid int) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return ""
	}
	return p
}

// newConnector returns a connect(2) that runs on one OS thread of the
// supervisor restricted by the command's Landlock TCP rules (nothing
// else: that thread only ever connects sockets).
func newConnector(rs landlock.Ruleset) (func(int, []byte) unix.Errno, error) {
	type req struct {
		sock int
		sa   []byte
		done chan unix.Errno
	}
	reqs := make(chan req)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is restricted
		if rs.RestrictTCP {
			net := landlock.Ruleset{RestrictTCP: true, ConnectAny: rs.ConnectAny, ConnectPorts: rs.ConnectPorts, BindPorts: rs.BindPorts, BindAny: rs.BindAny}
			if _, err := net.RestrictThread(); err != nil {
				ready <- fmt.Errorf("restricting the connect thread: %w", err)
				return
			}
		}
		ready <- nil
		for r := range reqs {
			r.done <- seccomp.ConnectRaw(r.sock, r.sa)
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return func(sock int, sa []byte) unix.Errno {
		done := make(chan unix.Errno, 1)
		reqs <- req{sock, sa, done}
		return <-done
	}, nil
}
