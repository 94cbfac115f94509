//go:build linux && amd64

package rawexec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestEarlySuite runs this package's tests again with every sandbox of
// run and startSandbox started through an early process.
func TestEarlySuite(t *testing.T) {
	if testEarly {
		t.Skip("this is the early run")
	}
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.skip=^(TestEarlySuite|Benchmark)")
	cmd.Env = append(os.Environ(), earlyEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests through early processes failed: %v\n%s", err, out)
	}
}

func TestEarlyStart(t *testing.T) {
	a := nsAttr()
	e := mustPrespawn(t, a)
	a.Early = e
	r := runSh(t, nil, a, "echo $$; cat /proc/self/uid_map; readlink /proc/self/ns/net /proc/self/ns/mnt")
	wantExit(t, r, 0)
	if !r.viaEarly {
		t.Fatal("Start did not use the early process")
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || lines[0] != "1" {
		t.Fatalf("want PID 1, its uid map and two namespaces, got %q (stderr %q)", r.stdout, r.stderr)
	}
	wantMap := fmt.Sprintf("%d %d 1", os.Getuid(), os.Getuid())
	if os.Getuid() == 0 {
		wantMap = "0 0 4294967295"
	}
	if got := strings.Join(strings.Fields(lines[1]), " "); got != wantMap {
		t.Errorf("uid_map %q, want %q", got, wantMap)
	}
	for i, n := range []string{"net", "mnt"} {
		host, _ := os.Readlink("/proc/self/ns/" + n)
		if lines[2+i] == host {
			t.Errorf("the command is in the host's %s namespace %s", n, host)
		}
	}
	noChildren(t)
}

// TestEarlyNotShared: the early process runs in the supervisor's memory
// until it forks the first process; the first process and the command
// must each have memory of their own (or the sandbox could write the
// supervisor's), and the early process must be gone.
func TestEarlyNotShared(t *testing.T) {
	a := nsAttr()
	e := mustPrespawn(t, a)
	if r, err := kcmpVM(os.Getpid(), e.pid); err == unix.ENOSYS || err == unix.EPERM {
		e.Abandon()
		t.Skipf("kcmp: %v", err)
	} else if err != nil || r != 0 {
		e.Abandon()
		t.Fatalf("kcmp(supervisor, early process, KCMP_VM) = %d, %v: the early process should share the supervisor's memory", r, err)
	}
	earlyPid := e.pid
	sb := startSandboxEarly(t, e)
	if !sb.proc.viaEarly {
		t.Fatal("Start did not use the early process")
	}
	sb.started(t)
	pids := []int{sb.proc.Pid}
	for _, c := range children(t, sb.proc.Pid) {
		pids = append(pids, c.pid)
	}
	if len(pids) < 2 {
		t.Fatalf("no command under the first process %d", sb.proc.Pid)
	}
	for _, pid := range pids {
		if r, err := kcmpVM(os.Getpid(), pid); err != nil || r == 0 {
			t.Errorf("kcmp(supervisor, %d, KCMP_VM) = %d, %v: it shares the supervisor's memory", pid, r, err)
		}
	}
	// The command was vforked: it shared the first process's memory
	// until its execve, and no longer does.
	if r, err := kcmpVM(pids[0], pids[1]); err != nil || r == 0 {
		t.Errorf("kcmp(first process, command, KCMP_VM) = %d, %v: the command runs in the first process's memory", r, err)
	}
	sb.stdin.Close()
	wantStatusExit(t, sb.exited(t), 0)
	sb.done(t)
	// Wait reaped the early process before the first process.
	if err := unix.Kill(earlyPid, 0); err != unix.ESRCH {
		t.Errorf("the early process %d is still there after Wait: kill(0) = %v", earlyPid, err)
	}
}

// startSandboxEarly is startSandbox with `cat` (it waits for stdin) and
// the early process e.
func startSandboxEarly(t *testing.T, e *Early) *sandbox {
	t.Helper()
	return startSandbox(t, sbOpts{path: "/bin/cat", args: []string{"cat"}, early: e})
}

func TestEarlyAbandon(t *testing.T) {
	a := nsAttr()
	e := mustPrespawn(t, a)
	pid := e.pid
	e.Abandon()
	e.Abandon() // twice is fine
	if err := unix.Kill(pid, 0); err != unix.ESRCH {
		t.Errorf("early process %d after Abandon: kill(0) = %v", pid, err)
	}
	noChildren(t)
	subreaper.Lock()
	n := subreaper.n
	subreaper.Unlock()
	if n != 0 {
		t.Errorf("subreaper count %d after Abandon", n)
	}
	var on int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0); err != nil || on != 0 {
		t.Errorf("PR_GET_CHILD_SUBREAPER: %d, %v; want off after Abandon", on, err)
	}
}

// TestEarlyMismatch: an early process made for other namespaces is
// abandoned and Start clones as usual.
func TestEarlyMismatch(t *testing.T) {
	a := nsAttr()
	e := mustPrespawn(t, a)
	pid := e.pid
	b := nsAttr()
	b.Cloneflags &^= unix.CLONE_NEWNET
	b.Early = e
	r := runSh(t, nil, b, "readlink /proc/self/ns/net")
	wantExit(t, r, 0)
	if r.viaEarly {
		t.Fatal("Start used an early process made for other namespaces")
	}
	host, _ := os.Readlink("/proc/self/ns/net")
	if strings.TrimSpace(r.stdout) != host {
		t.Errorf("net namespace %q, want the host's %q (no CLONE_NEWNET)", r.stdout, host)
	}
	if err := unix.Kill(pid, 0); err != unix.ESRCH {
		t.Errorf("the unused early process %d: kill(0) = %v", pid, err)
	}
	noChildren(t)
}

// TestEarlyParentDies: a supervisor that dies before Start (SIGKILL)
// leaves no early process behind.
func TestEarlyParentDies(t *testing.T) {
	cmd := helperCmd("wait", "")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(string(bytes.TrimSpace(buf[:n])))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", buf[:n])
	}
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("the early process %d is not running: %v", pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Gone, or a zombie that init has yet to reap.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("early process %d outlived its supervisor: %s", pid, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mustPrespawn is Prespawn(a, nil) or the test's end.
func mustPrespawn(t *testing.T, a *Attr) *Early {
	t.Helper()
	e, err := Prespawn(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// kcmpVM is kcmp(pid1, pid2, KCMP_VM): 0 when the two share memory.
func kcmpVM(pid1, pid2 int) (int, error) {
	const kcmpVMType = 1 // KCMP_VM
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(pid1), uintptr(pid2), kcmpVMType, 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

const earlyHelperEnv = "RAWEXEC_TEST_EARLY_HELPER"

func init() {
	if os.Getenv(earlyHelperEnv) != "" {
		earlyHelper()
	}
}

// earlyHelper is the test binary run as a supervisor of its own, by mode:
//
//   - "wait": prespawn, wait until the early process is ready, print its
//     pid and wait to be killed;
//   - "abandon": prespawn and abandon from another thread, printing "ok"
//     (the caller runs it with async preemption off and a deadline);
//   - "signals": (started with SIGINT and SIGHUP ignored) prespawn, then
//     signal.Notify both, as sbx does, start `grep SigIgn` through the
//     early process and through a plain clone, and print both lines.
func earlyHelper() {
	mode := os.Getenv(earlyHelperEnv)
	e, err := Prespawn(nsAttr(), nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	switch mode {
	case "wait":
		if e.await(earlyReady) != earlyReady {
			fmt.Println("not ready")
			os.Exit(1)
		}
		fmt.Println(e.pid)
		select {}
	case "abandon":
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // another thread than Prespawn's
			e.Abandon()
			close(done)
		}()
		<-done
		fmt.Println("ok")
	case "signals":
		signal.Notify(make(chan os.Signal, 1), unix.SIGINT, unix.SIGHUP)
		for _, early := range []*Early{e, nil} {
			a := nsAttr()
			a.Early = early
			a.Path, a.Args = "/usr/bin/grep", []string{"grep", "^SigIgn:", "/proc/self/status"}
			a.Files = []int{0, 1, 2}
			p, err := Start(nil, a)
			if err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
			p.Wait()
		}
	}
	os.Exit(0)
}

// helper runs this test binary as earlyHelper in mode, through sh -c
// script (which ends in exec "$@") when script is not empty.
func helperCmd(mode, script string, env ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if script != "" {
		cmd = exec.Command("/bin/sh", "-c", script, "sh", os.Args[0], "-test.run=^$")
	} else {
		cmd = exec.Command(os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(append(os.Environ(), earlyHelperEnv+"="+mode), env...)
	return cmd
}

// TestEarlyAbandonOtherThread: abandoning from a thread other than the
// one that made the early process returns at once (the kernel's wake at
// its exit is a shared futex wake; a private wait would miss it and hang
// until a signal came by, never with async preemption off).
func TestEarlyAbandonOtherThread(t *testing.T) {
	for i := 0; i < 5; i++ {
		cmd := helperCmd("abandon", "", "GODEBUG=asyncpreemptoff=1")
		timer := time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		out, err := cmd.CombinedOutput()
		timer.Stop()
		if err != nil || string(out) != "ok\n" {
			t.Fatalf("abandon from another thread: %v, %q (killed after 5 s?)", err, out)
		}
	}
}

// TestEarlySignalDispositions: the command starts with the signal
// dispositions the supervisor has at Start, not those of Prespawn: a
// signal ignored when sbx started and caught (signal.Notify) since is the
// default for the command through the early process as through a plain
// clone.
func TestEarlySignalDispositions(t *testing.T) {
	out, err := helperCmd("signals", `trap "" INT HUP; exec "$@"`).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 2 {
		t.Fatalf("helper: %v, %q", err, out)
	}
	if lines[0] != lines[1] {
		t.Errorf("through the early process %q, through a plain clone %q", lines[0], lines[1])
	}
	if lines[1] != "SigIgn:\t0000000000000000" {
		t.Logf("plain clone: %q (the helper's Notify had not taken effect?)", lines[1])
	}
}

// TestEarlySetupFails: an early process whose setup fails (here an
// invalid unshare flag) is reaped and Start clones as usual.
func TestEarlySetupFails(t *testing.T) {
	earlyTestUnshare = unix.CLONE_VM // unshare: EINVAL, the memory is shared
	defer func() { earlyTestUnshare = 0 }()
	a := nsAttr()
	e, err := Prespawn(a, nil)
	earlyTestUnshare = 0
	if err != nil {
		t.Fatal(err)
	}
	a.Early = e
	a.Path, a.Args = "/bin/sh", []string{"sh", "-c", "echo $$"}
	r := run(t, nil, a)
	wantExit(t, r, 0)
	if r.viaEarly {
		t.Fatal("the early process's setup did not fail: the test proves nothing")
	}
	if r.stdout != "1\n" {
		t.Errorf("the fallback's command: %q, want PID 1", r.stdout)
	}
	if !e.done {
		t.Error("the failed early process was not released")
	}
	noChildren(t)
}

// connectLoopback appends a UDP connect to 127.0.0.1:9 inside the
// sandbox's network namespace: ENETUNREACH while lo is down.
func connectLoopback(p *Program) {
	sock := p.Syscall("udp socket", unix.SYS_SOCKET, Imm(unix.AF_INET), Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), Imm(0)).Save()
	sa := make([]byte, unix.SizeofSockaddrInet4)
	*(*uint16)(unsafe.Pointer(&sa[0])) = unix.AF_INET
	sa[2], sa[3] = 0, 9 // port 9, big-endian
	sa[4], sa[5], sa[6], sa[7] = 127, 0, 0, 1
	p.Syscall("connect 127.0.0.1:9", unix.SYS_CONNECT, sock, Bytes(sa), Imm(len(sa)))
	p.Syscall("close", unix.SYS_CLOSE, sock)
}

// TestEarlyOps: Prespawn's ops run in the early process, in the new
// namespaces; a failing one leaves Start to clone as usual.
func TestEarlyOps(t *testing.T) {
	// Control: without the early ops the sandbox's lo is down.
	var p Program
	connectLoopback(&p)
	a := nsAttr()
	a.Path, a.Args = "/bin/true", []string{"true"}
	a.Files = []int{0, 1, 2}
	if _, err := Start(&p, a); !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("control: connect with lo down: %v, want ENETUNREACH", err)
	}
	noChildren(t)

	var up Program
	loopbackUp(&up)
	a = nsAttr()
	e, err := Prespawn(a, &up)
	if err != nil {
		t.Fatal(err)
	}
	a.Early = e
	a.Path, a.Args = "/bin/true", []string{"true"}
	if r := run(t, &p, a); !r.viaEarly {
		t.Fatal("Start did not use the early process")
	} else {
		wantExit(t, r, 0)
	}
	noChildren(t)

	// A failing early op: Start falls back to its own clone, which runs
	// the Program (and so fails the same connect).
	var bad Program
	bad.Syscall("close -1", unix.SYS_CLOSE, Int(-1))
	a = nsAttr()
	if e, err = Prespawn(a, &bad); err != nil {
		t.Fatal(err)
	}
	a.Early = e
	a.Path, a.Args = "/bin/true", []string{"true"}
	a.Files = []int{0, 1, 2}
	if _, err := Start(&p, a); !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("after a failed early op: %v, want the plain clone's ENETUNREACH", err)
	}
	if !e.done {
		t.Error("the failed early process was not released")
	}
	noChildren(t)

	// Ops that write the caller's memory are refused.
	var store Program
	st := store.Syscall("getpid", unix.SYS_GETPID).Save()
	var x int32
	store.Store("store", &x, st)
	if _, err := Prespawn(nsAttr(), &store); err == nil {
		t.Error("Prespawn took an op that stores")
	}
}

// callProbe is a function for Call: it stores the early process's pid
// (getpid, in the caller's pid namespace) into *arg.
//
//go:nosplit
//go:norace
func callProbe(arg unsafe.Pointer) {
	pid, _, _ := unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
	*(*int64)(arg) = int64(pid)
}

// TestEarlyCall: Call's function runs in the early process, in the
// caller's memory, before the fork; Call on a used early process fails.
func TestEarlyCall(t *testing.T) {
	a := nsAttr()
	e := mustPrespawn(t, a)
	var got int64
	if err := e.Call(callProbe, unsafe.Pointer(&got)); err != nil {
		t.Fatal(err)
	}
	if err := e.Call(callProbe, unsafe.Pointer(&got)); err == nil {
		t.Error("a second Call was accepted")
	}
	e.waitCalled()
	if got != int64(e.pid) {
		t.Errorf("the function stored %d, want the early process's pid %d", got, e.pid)
	}
	a.Early = e
	a.Path, a.Args = "/bin/true", []string{"true"}
	if r := run(t, nil, a); !r.viaEarly {
		t.Fatal("Start did not use the early process")
	}
	if err := e.Call(callProbe, unsafe.Pointer(&got)); err == nil {
		t.Error("Call on a started early process was accepted")
	}
	noChildren(t)
}
