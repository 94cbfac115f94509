//go:build linux && cgo

package seccomp

// The test binary re-executes itself in two roles, like the sandbox's
// init and command:
//
//   - loader (SBX_SECCOMP_HELPER=loader): locks a thread, loads the
//     filter on it (with or without a listener), hands the listener to
//     the test process over fd 3 with SCM_RIGHTS and closes its own copy,
//     waits for a go-ahead byte, then starts the target from the filtered
//     thread and exits with the target's status;
//   - target (SBX_SECCOMP_HELPER=target): inherits the filter on every
//     thread, runs the operations in SBX_SECCOMP_OPS and prints one JSON
//     result a line.
//
// The test process, which is never filtered, serves the notifications.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const helperEnv = "SBX_SECCOMP_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "loader":
		os.Exit(loaderMain())
	case "target":
		os.Exit(targetMain())
	}
	os.Exit(m.Run())
}

func helperEnviron(role string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			env = append(env, kv)
		}
	}
	if _, ok := os.LookupEnv("GORACE"); !ok {
		// The race runtime otherwise sleeps a second at every exit.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(append(env, helperEnv+"="+role), extra...)
}

func loaderMain() int {
	prog, err := hex.DecodeString(os.Getenv("SBX_SECCOMP_PROG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loader:", err)
		return 2
	}
	unix.CloseOnExec(3)
	ch := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		var rights []byte
		var lf *os.File
		if os.Getenv("SBX_SECCOMP_LISTENER") == "1" {
			var err error
			lf, err = LoadThreadListener(prog)
			if err != nil {
				fmt.Fprintln(os.Stderr, "loader:", err)
				ch <- 2
				return
			}
			var fd, fdflags, flflags int
			rc, _ := lf.SyscallConn()
			rc.Control(func(f uintptr) {
				fd = int(f)
				fdflags, _ = unix.FcntlInt(f, unix.F_GETFD, 0)
				flflags, _ = unix.FcntlInt(f, unix.F_GETFL, 0)
			})
			if fdflags&unix.FD_CLOEXEC == 0 || flflags&unix.O_NONBLOCK == 0 {
				fmt.Fprintf(os.Stderr, "loader: listener fd flags %#x, file flags %#x\n", fdflags, flflags)
				ch <- 2
				return
			}
			if os.Getenv("SBX_SECCOMP_SECOND") == "1" {
				// One listener per filter stack.
				_, err := LoadThreadListener(prog)
				printResult(result{Op: "second-listener", Errno: errnoOf(err)})
			}
			rights = unix.UnixRights(fd)
		} else if err := LoadThread(prog); err != nil {
			fmt.Fprintln(os.Stderr, "loader:", err)
			ch <- 2
			return
		}
		if err := unix.Sendmsg(3, []byte{1}, rights, nil, 0); err != nil {
			fmt.Fprintln(os.Stderr, "loader: sendmsg:", err)
			ch <- 2
			return
		}
		if lf != nil {
			// The test process must hold the only copy: closing it
			// is what makes notified calls fail with ENOSYS.
			lf.Close()
		}
		var b [1]byte
		if n, _ := unix.Read(3, b[:]); n != 1 {
			ch <- 2
			return
		}
		proc, err := os.StartProcess(os.Args[0], []string{os.Args[0]}, &os.ProcAttr{
			Dir:   os.Getenv("SBX_SECCOMP_DIR"),
			Env:   helperEnviron("target"),
			Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "loader: start:", err)
			ch <- 2
			return
		}
		st, err := proc.Wait()
		if err != nil {
			ch <- 2
			return
		}
		ch <- st.ExitCode()
	}()
	return <-ch
}

// op is one operation of the target.
type op struct {
	Name string   `json:"name"`
	Args []string `json:"args,omitempty"`
	N    int      `json:"n,omitempty"`
}

type result struct {
	Op     string         `json:"op"`
	Errno  int            `json:"errno"`
	Data   string         `json:"data,omitempty"`
	Counts map[string]int `json:"counts,omitempty"`
}

var printMu sync.Mutex

func printResult(r result) {
	b, _ := json.Marshal(r)
	printMu.Lock()
	defer printMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return -1
}

func targetMain() int {
	var ops []op
	if err := json.Unmarshal([]byte(os.Getenv("SBX_SECCOMP_OPS")), &ops); err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		return 2
	}
	for _, o := range ops {
		r := runOp(o)
		r.Op = o.Name
		printResult(r)
	}
	return 0
}

func atoi(s string) uintptr {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		panic(err)
	}
	return uintptr(v)
}

// sockaddrUnix builds a struct sockaddr_un and its length for path
// ("@name" is abstract).
func sockaddrUnix(path string) ([]byte, int) {
	sa := make([]byte, unix.SizeofSockaddrUnix)
	*(*uint16)(unsafe.Pointer(&sa[0])) = unix.AF_UNIX
	if name, ok := strings.CutPrefix(path, "@"); ok {
		copy(sa[3:], name)
		return sa, 3 + len(name)
	}
	copy(sa[2:], path)
	return sa, 2 + len(path) + 1
}

func rawConnect(fd int, sa []byte, n int) syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), uintptr(n))
	runtime.KeepAlive(sa)
	return e
}

func pingPong(c net.Conn) (string, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func runOp(o op) result {
	a := o.Args
	switch o.Name {
	case "pid":
		return result{Data: strconv.Itoa(os.Getpid())}
	case "ptrace":
		ppid := os.Getppid()
		_, _, e := unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(ppid), 0)
		if e == 0 { // the filter failed: let the loader go
			var ws unix.WaitStatus
			unix.Wait4(ppid, &ws, unix.WALL, nil)
			unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(ppid), 0, 0, 0, 0)
		}
		return result{Errno: int(e)}
	case "unshare":
		_, _, e := unix.Syscall(unix.SYS_UNSHARE, atoi(a[0]), 0, 0)
		return result{Errno: int(e)}
	case "socket", "socketpair":
		if o.Name == "socket" {
			fd, _, e := unix.Syscall(unix.SYS_SOCKET, atoi(a[0]), atoi(a[1]), atoi(a[2]))
			if e == 0 {
				unix.Close(int(fd))
			}
			return result{Errno: int(e)}
		}
		var sv [2]int32
		_, _, e := unix.Syscall6(unix.SYS_SOCKETPAIR, atoi(a[0]), atoi(a[1]), 0, uintptr(unsafe.Pointer(&sv)), 0, 0)
		if e == 0 {
			unix.Close(int(sv[0]))
			unix.Close(int(sv[1]))
		}
		return result{Errno: int(e)}
	case "tiocsti":
		f, err := os.Open("/dev/null")
		if err != nil {
			return result{Errno: -1, Data: err.Error()}
		}
		defer f.Close()
		req := uintptr(unix.TIOCSTI)
		if len(a) > 0 && a[0] == "high" {
			req |= 0xdead_beef << 32
		}
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(&c)))
		return result{Errno: int(e)}
	case "dial":
		c, err := net.DialTimeout(a[0], a[1], 10*time.Second)
		if err != nil {
			return result{Errno: errnoOf(err), Data: err.Error()}
		}
		defer c.Close()
		reply, err := pingPong(c)
		return result{Errno: errnoOf(err), Data: reply}
	case "connect-unix":
		// A blocking socket and a raw connect(2), abstract names too.
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return result{Errno: errnoOf(err)}
		}
		sa, n := sockaddrUnix(a[0])
		if e := rawConnect(fd, sa, n); e != 0 {
			unix.Close(fd)
			return result{Errno: int(e)}
		}
		c, err := net.FileConn(os.NewFile(uintptr(fd), "conn"))
		unix.Close(fd)
		if err != nil {
			return result{Errno: -1, Data: err.Error()}
		}
		defer c.Close()
		reply, err := pingPong(c)
		return result{Errno: errnoOf(err), Data: reply}
	case "sendto-dgram":
		// A datagram socketpair addresses any datagram socket by path.
		sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return result{Errno: errnoOf(err)}
		}
		defer unix.Close(sv[0])
		defer unix.Close(sv[1])
		err = unix.Sendto(sv[0], []byte("dgram\n"), 0, &unix.SockaddrUnix{Name: a[0]})
		return result{Errno: errnoOf(err)}
	case "race":
		return raceConnect(a[0], a[1], o.N)
	case "fdswap":
		return fdSwap(a[0], o.N)
	}
	return result{Errno: -1, Data: "unknown op " + o.Name}
}

// raceConnect connects to allowed over and over while another thread
// rewrites the address between allowed and other (same length: other is
// NUL-padded).
func raceConnect(allowed, other string, n int) result {
	var imgA, imgB [28]uint32 // 112 bytes: a sockaddr_un, word-aligned
	a, alen := sockaddrUnix(allowed)
	b, _ := sockaddrUnix(other)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&imgA[0])), 112), a)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&imgB[0])), 112), b)
	var live [28]uint32
	live = imgA
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for i := 0; !stop.Load(); i++ {
			img := &imgA
			if i%2 == 1 {
				img = &imgB
			}
			for w := range live {
				atomic.StoreUint32(&live[w], img[w])
			}
		}
	}()
	counts := map[string]int{}
	for range n {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			counts["socket "+err.Error()]++
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&live[0])), uintptr(alen))
		counts[unix.ErrnoName(e)]++
		unix.Close(fd)
	}
	stop.Store(true)
	wg.Wait()
	return result{Counts: counts}
}

// fdSwap connects descriptor 100, an inet socket, to the Unix address
// target, while another thread dup3s fresh Unix sockets over 100: Continue
// would let the kernel connect such a Unix socket to target.
func fdSwap(target string, n int) result {
	const slot = 100
	sa, salen := sockaddrUnix(target)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			u, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				continue
			}
			unix.Dup3(u, slot, unix.O_CLOEXEC)
			unix.Close(u)
		}
	}()
	counts := map[string]int{}
	for range n {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			counts["socket "+err.Error()]++
			continue
		}
		unix.Dup3(s, slot, unix.O_CLOEXEC)
		unix.Close(s)
		e := rawConnect(slot, sa, salen)
		counts[unix.ErrnoName(e)]++
	}
	stop.Store(true)
	wg.Wait()
	unix.Close(slot)
	return result{Counts: counts}
}

// run is one loader+target pair seen from the test process.
type run struct {
	t        *testing.T
	cmd      *exec.Cmd
	ctl      int
	out, err bytes.Buffer
	// Listener is the notification descriptor the loader sent, if any.
	Listener *os.File
}

type runOpts struct {
	listener bool
	second   bool
	dir      string
}

// startRun starts the loader with prog and waits for its filter to be
// loaded; the target starts with go.
func startRun(t *testing.T, prog Program, o runOpts, ops ...op) *run {
	t.Helper()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	child := os.NewFile(uintptr(sp[1]), "ctl")
	opsJSON, _ := json.Marshal(ops)
	extra := []string{
		"SBX_SECCOMP_PROG=" + hex.EncodeToString(prog),
		"SBX_SECCOMP_OPS=" + string(opsJSON),
		"SBX_SECCOMP_DIR=" + o.dir,
	}
	if o.listener {
		extra = append(extra, "SBX_SECCOMP_LISTENER=1")
	}
	if o.second {
		extra = append(extra, "SBX_SECCOMP_SECOND=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	r := &run{t: t, ctl: sp[0]}
	r.cmd = exec.CommandContext(ctx, os.Args[0])
	r.cmd.Env = helperEnviron("loader", extra...)
	r.cmd.ExtraFiles = []*os.File{child}
	r.cmd.Stdout = &r.out
	r.cmd.Stderr = &r.err
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	t.Cleanup(func() {
		cancel()
		unix.Close(sp[0])
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(sp[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 1 {
		r.cmd.Wait()
		t.Fatalf("loader did not report (%v): %s", err, r.err.String())
	}
	if o.listener {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			t.Fatalf("no listener from the loader: %v", err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			t.Fatalf("no listener from the loader: %v", err)
		}
		r.Listener = os.NewFile(uintptr(fds[0]), "seccomp-notify")
	}
	return r
}

// Go lets the target start.
func (r *run) Go() {
	if _, err := unix.Write(r.ctl, []byte{1}); err != nil {
		r.t.Fatal(err)
	}
}

// Wait waits for the loader and returns the target's results by op.
func (r *run) Wait() map[string]result {
	r.t.Helper()
	if err := r.cmd.Wait(); err != nil {
		r.t.Fatalf("helper: %v\nstdout: %s\nstderr: %s", err, r.out.String(), r.err.String())
	}
	res := map[string]result{}
	for _, line := range strings.Split(strings.TrimSpace(r.out.String()), "\n") {
		if line == "" {
			continue
		}
		var x result
		if err := json.Unmarshal([]byte(line), &x); err != nil {
			r.t.Fatalf("bad helper output %q: %v", line, err)
		}
		key := x.Op
		for i := 2; ; i++ {
			if _, dup := res[key]; !dup {
				break
			}
			key = x.Op + "#" + strconv.Itoa(i)
		}
		res[key] = x
	}
	return res
}

func compile(t *testing.T, c Config) Program {
	t.Helper()
	p, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa[T ~int | ~uint64 | ~uint32](v T) string { return strconv.FormatInt(int64(v), 10) }
