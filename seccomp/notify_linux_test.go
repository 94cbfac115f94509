//go:build linux && cgo

package seccomp

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var deniedOps = []op{
	{Name: "ptrace"},
	{Name: "unshare", Args: []string{itoa(unix.CLONE_NEWUSER)}},
	{Name: "socket", Args: []string{itoa(unix.AF_PACKET), itoa(unix.SOCK_RAW), itoa(0x0300)}}, // htons(ETH_P_ALL)
	{Name: "tiocsti"},
	{Name: "tiocsti", Args: []string{"high"}},
}

var deniedKeys = []string{"ptrace", "unshare", "socket", "tiocsti", "tiocsti#2"}

func wantErrno(t *testing.T, res map[string]result, key string, want unix.Errno) {
	t.Helper()
	r, ok := res[key]
	if !ok {
		t.Errorf("%s: no result", key)
		return
	}
	if r.Errno != int(want) {
		t.Errorf("%s: errno %d (%s), want %s; %s", key, r.Errno, unix.ErrnoName(unix.Errno(r.Errno)), unix.ErrnoName(want), r.Data)
	}
}

// Without Notify the filter answers EPERM itself, as it always has.
func TestDenyEPERMWithoutNotify(t *testing.T) {
	ops := append(append([]op{}, deniedOps...), op{Name: "socket", Args: []string{itoa(unix.AF_INET), itoa(unix.SOCK_STREAM), "0"}})
	r := startRun(t, compile(t, Config{AllowDatagram: true}), runOpts{}, ops...)
	r.Go()
	res := r.Wait()
	for _, k := range deniedKeys {
		wantErrno(t, res, k, unix.EPERM)
	}
	wantErrno(t, res, "socket#2", 0)
}

// A notifying program loaded without a listener fails closed: ENOSYS.
func TestNotifyWithoutListenerENOSYS(t *testing.T) {
	r := startRun(t, compile(t, Config{Notify: true, AllowDatagram: true}), runOpts{}, deniedOps...)
	r.Go()
	res := r.Wait()
	for _, k := range deniedKeys {
		wantErrno(t, res, k, unix.ENOSYS)
	}
}

type record struct {
	syscall, detail string
	valid           bool
	tgid            int
}

func tgidOf(tid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

func serve(t *testing.T, l *Listener, h func(*Request) Response) (done <-chan error) {
	ch := make(chan error, 1)
	go func() { ch <- Serve(l, h) }()
	t.Cleanup(func() { l.Close() })
	return ch
}

func waitServe(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Serve did not return %s", what)
	}
}

// With Notify the supervisor receives each denied call, decodes it, and
// its answer is what the command sees.
func TestNotifyAnsweredBySupervisor(t *testing.T) {
	ops := append([]op{{Name: "pid"}}, deniedOps...)
	ops = append(ops,
		op{Name: "unshare", Args: []string{itoa(unix.CLONE_NEWUSER | unix.CLONE_NEWIPC)}},
		op{Name: "socket", Args: []string{itoa(unix.AF_INET), itoa(unix.SOCK_STREAM), "0"}},
	)
	run := startRun(t, compile(t, Config{Notify: true, AllowDatagram: true}), runOpts{listener: true}, ops...)
	l := NewListener(run.Listener)
	var mu sync.Mutex
	var recs []record
	var ids []uint64
	done := serve(t, l, func(r *Request) Response {
		sc, detail := Describe(r)
		mu.Lock()
		recs = append(recs, record{sc, detail, r.Valid(), tgidOf(r.PID)})
		ids = append(ids, r.ID)
		mu.Unlock()
		switch {
		case sc == "ptrace":
			panic("a handler bug is answered EPERM")
		case sc == "unshare" && r.Args[0] == unix.CLONE_NEWUSER|unix.CLONE_NEWIPC:
			return Response{Continue: true}
		}
		return Response{Errno: unix.EPERM}
	})
	run.Go()
	res := run.Wait()
	// The target is gone and reaped: Serve ends by itself.
	waitServe(t, done, "after the last filtered task was reaped")

	for _, k := range deniedKeys {
		wantErrno(t, res, k, unix.EPERM)
	}
	// Continue: the kernel ran unshare(CLONE_NEWUSER) in a threaded
	// process, which it refuses with EINVAL.
	wantErrno(t, res, "unshare#2", unix.EINVAL)
	wantErrno(t, res, "socket#2", 0)

	pid, _ := strconv.Atoi(res["pid"].Data)
	want := map[string]string{
		"ptrace":  "PTRACE_ATTACH, pid ",
		"unshare": "CLONE_NEWUSER",
		"socket":  "AF_PACKET, SOCK_RAW, protocol 0x0003",
		"ioctl":   "TIOCSTI 'x'",
		"ioctl#2": "TIOCSTI 'x' (request 0xdeadbeef00005412)",
	}
	seen := map[string]int{}
	for _, rec := range recs {
		t.Logf("%s: %s", rec.syscall, rec.detail)
		key := rec.syscall
		if seen[key]++; seen[key] > 1 {
			key += "#" + strconv.Itoa(seen[key])
		}
		if w, ok := want[key]; ok && !strings.Contains(rec.detail, w) {
			t.Errorf("%s decoded as %q, want %q in it", key, rec.detail, w)
		}
		if !rec.valid {
			t.Errorf("%s: notification not valid in the handler", key)
		}
		if rec.tgid != pid {
			t.Errorf("%s: from process %d, want the target %d", key, rec.tgid, pid)
		}
	}
	if seen["ptrace"] != 1 || seen["unshare"] != 2 || seen["socket"] != 1 || seen["ioctl"] != 2 || len(recs) != 6 {
		t.Errorf("notifications: %v", seen)
	}
	for _, id := range ids {
		if l.Valid(id) {
			t.Errorf("notification %d still valid after the target exited", id)
		}
	}
	if _, err := l.Receive(); !errors.Is(err, ErrNoTasks) {
		t.Errorf("Receive after the target exited: %v, want ErrNoTasks", err)
	}
}

// Once the listener is closed, notified calls fail with ENOSYS: closed,
// not open.
func TestListenerClosedFailsENOSYS(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	accepts := echoUnix(t, sock)
	ops := append(append([]op{}, deniedOps...), op{Name: "dial", Args: []string{"unix", sock}})
	run := startRun(t, compile(t, Config{Notify: true, UnixConnect: true, AllowDatagram: true}), runOpts{listener: true}, ops...)
	l := NewListener(run.Listener)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	run.Go()
	res := run.Wait()
	for _, k := range append(deniedKeys, "dial") {
		wantErrno(t, res, k, unix.ENOSYS)
	}
	if n := accepts.Load(); n != 0 {
		t.Errorf("%d connections reached the socket", n)
	}
}

// anonFDs counts this process's descriptors on each anonymous inode kind
// ("[eventfd]", "seccomp notify", ...).
func anonFDs(t *testing.T) map[string]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			if k, ok := strings.CutPrefix(l, "anon_inode:"); ok {
				n[k]++
			}
		}
	}
	return n
}

func TestCloseUnblocksServe(t *testing.T) {
	run := startRun(t, compile(t, Config{Notify: true}), runOpts{listener: true})
	before := anonFDs(t)
	l := NewListener(run.Listener)
	done := make(chan error, 1)
	go func() { done <- Serve(l, func(*Request) Response { return Response{Errno: unix.EPERM} }) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Serve returned early: %v", err)
	default:
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	waitServe(t, done, "after Close")
	// Serve's duplicates, the Listener's descriptor and its eventfd are
	// all closed, and so is run.Listener (counted before; NewListener's
	// to close). At most: an earlier test's Serve may still be letting
	// go of its own.
	after := anonFDs(t)
	if after["seccomp notify"] > before["seccomp notify"]-1 || after["[eventfd]"] > before["[eventfd]"] {
		t.Errorf("descriptors left after Close and Serve: %v (before NewListener: %v)", after, before)
	}
	if _, err := l.Receive(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Receive after Close: %v, want os.ErrClosed", err)
	}
	if err := l.Respond(1, 0, unix.EPERM, false); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Respond after Close: %v, want os.ErrClosed", err)
	}
	run.Go()
	run.Wait()
}

// The kernel allows one listener per filter stack: a nested sandbox
// cannot have its own.
func TestSecondListenerEBUSY(t *testing.T) {
	run := startRun(t, compile(t, Config{Notify: true}), runOpts{listener: true, second: true})
	run.Listener.Close()
	run.Go()
	res := run.Wait()
	wantErrno(t, res, "second-listener", unix.EBUSY)
}

// echoUnix serves a line echo on a Unix socket at path and counts the
// connections it accepts.
func echoUnix(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return echo(t, ln)
}

func echo(t *testing.T, ln net.Listener) *atomic.Int64 {
	var n atomic.Int64
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return &n
}

type unixFixture struct {
	dir, allowed, other string
	allowedN, otherN    *atomic.Int64
	abstract            string
	dgram               string
	dgramConn           *net.UnixConn
	tcp                 string
	allow               *UnixAllow
}

func newUnixFixture(t *testing.T) *unixFixture {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &unixFixture{dir: dir, allowed: filepath.Join(dir, "allowed.sock"), other: filepath.Join(dir, "other.sock")}
	f.allowedN = echoUnix(t, f.allowed)
	f.otherN = echoUnix(t, f.other)
	if err := os.Symlink("allowed.sock", filepath.Join(dir, "link-allowed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.other, filepath.Join(dir, "link-other")); err != nil {
		t.Fatal(err)
	}
	f.dgram = filepath.Join(dir, "dgram.sock")
	f.dgramConn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: f.dgram, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.dgramConn.Close() })
	f.abstract = "@sbx-seccomp-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	aln, err := net.Listen("unix", f.abstract)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, aln)
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, tln)
	f.tcp = tln.Addr().String()
	f.allow, err = NewUnixAllow([]string{f.allowed, filepath.Join(dir, "missing.sock")})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.allow.Notes) != 1 || !strings.Contains(f.allow.Notes[0], "missing.sock") {
		t.Errorf("notes: %q", f.allow.Notes)
	}
	return f
}

// handler answers connect with UnixAllow and everything else EPERM,
// collecting the denials.
// run runs ops in a target under the filter for c, with the fixture's
// allow-list answering its connects, and returns the results and the
// denials once the target has exited and every answer was given.
func (f *unixFixture) run(t *testing.T, c Config, ops ...op) (map[string]result, []*UnixDenial) {
	t.Helper()
	run := startRun(t, compile(t, c), runOpts{listener: true, dir: f.dir}, ops...)
	var mu sync.Mutex
	var denials []*UnixDenial
	done := serve(t, NewListener(run.Listener), f.handler(&mu, &denials))
	run.Go()
	res := run.Wait()
	waitServe(t, done, "after the target exited")
	return res, denials
}

func (f *unixFixture) handler(mu *sync.Mutex, denials *[]*UnixDenial) func(*Request) Response {
	return func(r *Request) Response {
		if r.Syscall != "connect" {
			return Response{Errno: unix.EPERM}
		}
		resp, d := f.allow.Connect(r)
		if d != nil {
			mu.Lock()
			*denials = append(*denials, d)
			mu.Unlock()
		}
		return resp
	}
}

func TestUnixConnect(t *testing.T) {
	for _, notify := range []bool{false, true} {
		t.Run("notify="+strconv.FormatBool(notify), func(t *testing.T) {
			f := newUnixFixture(t)
			base := filepath.Base(f.dir)
			ops := []op{
				{Name: "dial", Args: []string{"unix", f.allowed}},
				{Name: "dial", Args: []string{"unix", f.other}},
				{Name: "dial", Args: []string{"unix", filepath.Join(f.dir, "link-other")}},
				{Name: "dial", Args: []string{"unix", filepath.Join(f.dir, "link-allowed")}},
				{Name: "dial", Args: []string{"unix", "allowed.sock"}},                 // relative to the target's cwd
				{Name: "dial", Args: []string{"unix", "../" + base + "/allowed.sock"}}, // .. through the cwd
				{Name: "dial", Args: []string{"unix", "other.sock"}},                   // relative, refused
				{Name: "dial", Args: []string{"unix", filepath.Join(f.dir, "missing.sock")}},
				{Name: "dial", Args: []string{"unix", filepath.Join(f.dir, "link-allowed", "x")}},
				{Name: "connect-unix", Args: []string{f.allowed}}, // blocking socket
				{Name: "connect-unix", Args: []string{f.abstract}},
				{Name: "dial", Args: []string{"tcp", f.tcp}},
				{Name: "socket", Args: []string{itoa(unix.AF_UNIX), itoa(unix.SOCK_DGRAM), "0"}},
				{Name: "socket", Args: []string{itoa(unix.AF_UNIX), itoa(unix.SOCK_DGRAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK), "0"}},
				{Name: "socket", Args: []string{itoa(unix.AF_UNIX), itoa(unix.SOCK_RAW), "0"}},
				{Name: "socketpair", Args: []string{itoa(unix.AF_UNIX), itoa(unix.SOCK_DGRAM)}},
				{Name: "socket", Args: []string{itoa(unix.AF_UNIX), itoa(unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC), "0"}},
				{Name: "socketpair", Args: []string{itoa(unix.AF_UNIX), itoa(unix.SOCK_STREAM)}},
				{Name: "sendto-dgram", Args: []string{f.dgram}},
			}
			res, denials := f.run(t, Config{UnixConnect: true, Notify: notify, AllowDatagram: true}, ops...)

			for k, want := range map[string]unix.Errno{
				"dial": 0, "dial#2": DeniedErrno, "dial#3": DeniedErrno, "dial#4": 0,
				"dial#5": 0, "dial#6": 0, "dial#7": DeniedErrno, "dial#8": unix.ENOENT, "dial#9": unix.ENOTDIR,
				"connect-unix": 0, "connect-unix#2": unix.EPERM, "dial#10": 0,
				"socket": unix.EPERM, "socket#2": unix.EPERM, "socket#3": unix.EPERM, "socketpair": unix.EPERM,
				"socket#4": 0, "socketpair#2": 0, "sendto-dgram": unix.EPERM,
			} {
				wantErrno(t, res, k, want)
			}
			for _, k := range []string{"dial", "dial#4", "dial#5", "dial#6", "connect-unix", "dial#10"} {
				if res[k].Data != "ping\n" {
					t.Errorf("%s: no echo (%q)", k, res[k].Data)
				}
			}
			if n := f.otherN.Load(); n != 0 {
				t.Errorf("other.sock accepted %d connections", n)
			}
			f.dgramConn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, _, err := f.dgramConn.ReadFrom(make([]byte, 64)); err == nil {
				t.Errorf("dgram.sock received %d bytes", n)
			}
			if n := f.allowedN.Load(); n != 5 {
				t.Errorf("allowed.sock accepted %d connections, want 5", n)
			}
			byPath := map[string]*UnixDenial{}
			for _, d := range denials {
				t.Logf("denied: %v (errno %d, pid %d)", d, d.Errno, d.PID)
				byPath[d.Path] = d
			}
			if len(denials) != 4 {
				t.Errorf("%d denials, want 4", len(denials))
			}
			for path, resolved := range map[string]string{
				f.other:                            f.other,
				filepath.Join(f.dir, "link-other"): f.other,
				"other.sock":                       f.other,
				f.abstract:                         "",
			} {
				d := byPath[path]
				if d == nil {
					t.Errorf("no denial for %s", path)
				} else if d.Resolved != resolved {
					t.Errorf("denial for %s resolved to %q, want %q", path, d.Resolved, resolved)
				}
			}
		})
	}
}

// A second thread rewrites the address from allowed.sock to other.sock
// while the first connects in a loop: the supervisor connects to the path
// it read and checked, so other.sock never sees a connection.
func TestUnixConnectAddressRace(t *testing.T) {
	f := newUnixFixture(t)
	n := 3000
	if testing.Short() {
		n = 500
	}
	res, _ := f.run(t, Config{UnixConnect: true, AllowDatagram: true}, op{Name: "race", Args: []string{f.allowed, f.other}, N: n})
	c := res["race"].Counts
	t.Logf("outcomes: %v; allowed.sock accepted %d, other.sock %d", c, f.allowedN.Load(), f.otherN.Load())
	if f.otherN.Load() != 0 {
		t.Fatalf("other.sock accepted %d connections", f.otherN.Load())
	}
	if c[""] == 0 || c["EACCES"] == 0 {
		t.Errorf("the race was not exercised: %v", c)
	}
}

// The descriptor race: connect(2) on an inet socket with an AF_UNIX
// address while another thread dup3s Unix sockets over that descriptor.
// With Continue the kernel looks the descriptor up again and may connect
// a Unix socket the supervisor never saw; EmulateNonUnix closes that.
func TestUnixConnectDescriptorRace(t *testing.T) {
	for _, emulate := range []bool{false, true} {
		t.Run("emulate="+strconv.FormatBool(emulate), func(t *testing.T) {
			f := newUnixFixture(t)
			f.allow.EmulateNonUnix = emulate
			n := 3000
			if testing.Short() {
				n = 500
			}
			ops := []op{{Name: "fdswap", Args: []string{f.other}, N: n}, {Name: "dial", Args: []string{"tcp", f.tcp}}}
			res, _ := f.run(t, Config{UnixConnect: true, AllowDatagram: true}, ops...)
			wantErrno(t, res, "dial", 0)
			t.Logf("outcomes: %v; other.sock accepted %d", res["fdswap"].Counts, f.otherN.Load())
			if emulate {
				if f.otherN.Load() != 0 {
					t.Errorf("other.sock accepted %d connections", f.otherN.Load())
				}
			} else if f.otherN.Load() != 0 {
				t.Logf("KNOWN: with Continue the descriptor race reached other.sock %d times of %d", f.otherN.Load(), n)
			}
		})
	}
}

// restrictThreadTCP restricts the calling thread with a Landlock ruleset
// that allows TCP connect to ports only.
func restrictThreadTCP(ports []uint16) error {
	attr := struct{ fs, net uint64 }{net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return e
	}
	defer unix.Close(int(fd))
	for _, p := range ports {
		np := struct{ allowed, port uint64 }{unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, uint64(p)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, 2 /* LANDLOCK_RULE_NET_PORT */, uintptr(unsafe.Pointer(&np)), 0, 0, 0); e != 0 {
			return e
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return e
	}
	return nil
}

// landlockConnector runs emulated connects on one OS thread of the test
// process restricted like a command whose Landlock rules allow TCP
// connect to ports only: what a supervisor does to keep the command's
// TCP rules with EmulateNonUnix.
func landlockConnector(t *testing.T, ports ...uint16) func(int, []byte) unix.Errno {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if e != 0 || abi < 4 {
		t.Skipf("Landlock TCP rules unavailable (ABI %d, %v)", abi, e)
	}
	type job struct {
		sock int
		sa   []byte
		res  chan unix.Errno
	}
	jobs := make(chan job)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies restricted
		err := restrictThreadTCP(ports)
		ready <- err
		if err != nil {
			return
		}
		for j := range jobs {
			j.res <- ConnectRaw(j.sock, j.sa)
		}
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(jobs) })
	return func(sock int, sa []byte) unix.Errno {
		res := make(chan unix.Errno, 1)
		jobs <- job{sock, sa, res}
		return <-res
	}
}

// EmulateNonUnix with connects run on a Landlock-restricted thread: the
// descriptor race is closed and the command's TCP rules still hold.
func TestUnixConnectEmulatedUnderLandlock(t *testing.T) {
	f := newUnixFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	f.allow.EmulateNonUnix = true
	f.allow.ConnectNonUnix = landlockConnector(t, uint16(ln.Addr().(*net.TCPAddr).Port))
	ops := []op{
		{Name: "dial", Args: []string{"tcp", ln.Addr().String()}},
		{Name: "dial", Args: []string{"tcp", f.tcp}}, // port not in the ruleset
		{Name: "dial", Args: []string{"unix", f.allowed}},
		{Name: "fdswap", Args: []string{f.other}, N: 500},
	}
	res, _ := f.run(t, Config{UnixConnect: true, AllowDatagram: true}, ops...)
	wantErrno(t, res, "dial", 0)
	wantErrno(t, res, "dial#2", unix.EACCES)
	wantErrno(t, res, "dial#3", 0)
	if res["dial"].Data != "ping\n" || res["dial#3"].Data != "ping\n" {
		t.Errorf("no echo: %+v", res)
	}
	if n := f.otherN.Load(); n != 0 {
		t.Errorf("other.sock accepted %d connections", n)
	}
	t.Logf("fdswap outcomes: %v", res["fdswap"].Counts)
}
