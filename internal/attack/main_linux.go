//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: attack PROBE [ARG...] (see the package documentation)")
	os.Exit(2)
}

func need(args []string, n int) {
	if len(args) < n {
		usage()
	}
}

func run(probe string, args []string) int {
	switch probe {
	case "noop":
	case "netnone":
		need(args, 2)
		return netNone(args[0], args[1])
	case "sleep":
		need(args, 1)
		d, err := strconv.ParseFloat(args[0], 64)
		if err != nil {
			usage()
		}
		time.Sleep(time.Duration(d * float64(time.Second)))
	case "tiocsti":
		tiocsti()
	case "int80":
		noCore()
		fmt.Println("int80: calling")
		switch r, fault := int80(); {
		case fault:
			fmt.Println("int80_getpid: SIGSEGV (no int $0x80 gate: the kernel runs without IA32 emulation)")
		case r < 0:
			report("int80_getpid", syscall.Errno(-r))
		default:
			report("int80_getpid", nil, strconv.Itoa(int(r)))
		}
	case "x32":
		noCore()
		fmt.Println("x32: calling")
		const x32Bit = 0x40000000
		r, _, e := unix.RawSyscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
		report("x32_getpid", errno(e), strconv.Itoa(int(r)))
	case "io_uring":
		var params [120]byte // struct io_uring_params
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		report("io_uring_setup", errno(e))
	case "userns":
		userns()
	case "mount":
		need(args, 2)
		mountProbe(args[0], args[1])
	case "ptrace":
		return ptraceProbe(args)
	case "sigio":
		need(args, 1)
		return sigio(args[0])
	case "openw":
		for _, p := range args {
			fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			report("open_wronly "+p, err)
		}
	case "tamper":
		need(args, 2)
		tamper(args[0], args[1])
	case "creds":
		creds()
	case "watchsuid":
		need(args, 1)
		return watchSuid(args[0], args[1:])
	case "sockets":
		sockets()
	case "fds":
		fds(args)
	case "procfds":
		need(args, 1)
		procFDs(args[0])
	case "cwd":
		cwd()
	case "symlink":
		need(args, 2)
		report("symlink "+args[0], unix.Symlink(args[1], args[0]))
	case "create":
		need(args, 1)
		fd, err := unix.Open(args[0], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err == nil {
			_, err = unix.Write(fd, []byte("written by internal/attack\n"))
			unix.Close(fd)
		}
		report("create "+args[0], err)
	case "setid":
		need(args, 1)
		setID(args[0])
	case "mkdir":
		need(args, 1)
		report("mkdir "+args[0], unix.Mkdir(args[0], 0o755))
	case "read":
		need(args, 1)
		b, err := os.ReadFile(args[0])
		report("read "+args[0], err, firstLine(b))
	case "rename":
		need(args, 2)
		err := unix.Rename(args[0], args[1])
		detail := ""
		if err == nil {
			detail = "undone"
			if e := unix.Rename(args[1], args[0]); e != nil {
				detail = "undo failed: " + errName(e)
			}
		}
		report("rename "+args[0], err, detail)
	case "abstract":
		need(args, 1)
		abstract(args[0])
	case "abstract-self":
		need(args, 1)
		abstractSelf(args[0])
	case "get":
		need(args, 1)
		get(args[0])
	case "deny":
		need(args, 1)
		denyOne(args[0])
	case "flood":
		need(args, 1)
		n, err := strconv.Atoi(args[0])
		if err != nil {
			usage()
		}
		flood(n)
	case "dial":
		need(args, 2)
		dial(args[0], args[1])
	case "serve":
		need(args, 2)
		serve(args[0], args[1])
	case "unix":
		need(args, 1)
		dialUnix(args)
	case "capdev":
		need(args, 1)
		return capdev(args[0])
	case "tun":
		need(args, 1)
		tun(args[0])
	case "tunfds":
		tunfds()
	case "netns":
		netns()
	case "netns-inside":
		netnsInside()
	case "bindover":
		need(args, 2)
		bindover(args[0], args[1])
	case "filtered":
		need(args, 1)
		return filtered(args)
	default:
		fmt.Fprintf(os.Stderr, "attack: unknown probe %q\n", probe)
		return 2
	}
	return 0
}

// report prints "name: OK [detail]" or "name: ERRNO".
func report(name string, err error, detail ...string) {
	res := errName(err)
	if err == nil {
		if d := strings.TrimSpace(strings.Join(detail, " ")); d != "" {
			res += " " + d
		}
	}
	fmt.Printf("%s: %s\n", name, res)
}

func errno(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func errName(err error) string {
	if err == nil {
		return "OK"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
		return fmt.Sprintf("errno%d", int(e))
	}
	return "ERR(" + strings.ReplaceAll(err.Error(), " ", "_") + ")"
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

// noCore keeps a killed probe from writing a core file anywhere.
func noCore() {
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
}

func self() string {
	p, err := os.Executable()
	if err != nil {
		return "/proc/self/exe"
	}
	return p
}

// int80 calls int80getpid; a kernel without IA32 emulation has no int
// $0x80 gate and answers with a general-protection fault (SIGSEGV), which
// is reported rather than crashing the probe. A seccomp kill is not a
// fault: it ends the process.
func int80() (r int32, fault bool) {
	debug.SetPanicOnFault(true)
	defer func() {
		if recover() != nil {
			fault = true
		}
	}()
	return int80getpid(), false
}

// tiocsti makes fd 0 its controlling terminal if it can (so only a filter
// can stand between it and TIOCSTI, as for a sandboxed shell that shares
// the caller's terminal), then pushes one byte into the terminal's input
// with the plain request and once more with bits above 32 set, which the
// kernel truncates away.
func tiocsti() {
	_, err := unix.IoctlGetTermios(0, unix.TCGETS)
	report("stdin_tty", err)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSCTTY, 0)
	report("tiocsctty", errno(e))
	c := byte('Z')
	_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	report("tiocsti", errno(e))
	c2 := byte('Y')
	_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI, uintptr(unsafe.Pointer(&c2)))
	report("tiocsti_high", errno(e))
}

// userns tries every way to a new user namespace. clone3 is called with
// an invalid exit signal: a kernel that sees the call answers EINVAL
// before forking anything, a filter answers first.
func userns() {
	_, _, e := unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	report("unshare_newuser", errno(e)) // EINVAL from the kernel: Go processes are multi-threaded
	c := exec.Command(self(), "noop")
	c.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWUSER}
	report("unshare_child", c.Run())
	c = exec.Command(self(), "noop")
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	report("clone_newuser", c.Run())
	var args [11]uint64 // struct clone_args (v2)
	args[0] = unix.CLONE_NEWUSER
	args[4] = 0x100 // exit_signal: not a signal
	_, _, e = unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	report("clone3_newuser", errno(e))
}

// mountProbe mounts only over the two paths it is given and undoes every
// mount that worked.
func mountProbe(dir, masked string) {
	err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=16k")
	if err == nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	}
	report("mount_tmpfs "+dir, err)
	err = unix.Mount(dir, masked, "", unix.MS_BIND, "")
	if err == nil {
		_ = unix.Unmount(masked, unix.MNT_DETACH)
	}
	report("mount_bind "+masked, err)
	report("umount "+masked, unix.Unmount(masked, unix.MNT_DETACH))
	fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	report("fsopen", err)
	fd, err = unix.OpenTree(unix.AT_FDCWD, masked, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	report("open_tree "+masked, err)
}

// marker is read back from a child (same binary, same address).
var marker = [8]byte{'s', 'b', 'x', '-', 'm', 'a', 'r', 'k'}

// ptraceProbe attacks a child of its own (a control: the same user, the
// same sandbox) and each PID given.
func ptraceProbe(pids []string) int {
	child := exec.Command(self(), "sleep", "30")
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "attack: starting a child:", err)
		return 1
	}
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	type target struct {
		name string
		pid  int
	}
	targets := []target{{"child", child.Process.Pid}}
	for _, p := range pids {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			usage()
		}
		targets = append(targets, target{p, n})
	}
	for _, t := range targets {
		seize(t.name, t.pid)
		var buf [8]byte
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
		remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&marker[0])), Len: len(marker)}}
		_, err := unix.ProcessVMReadv(t.pid, local, remote, 0)
		detail := ""
		if err == nil && buf == marker {
			detail = "marker"
		}
		report("process_vm_readv "+t.name, err, detail)
		one := []byte{0}
		local = []unix.Iovec{{Base: &one[0], Len: 1}}
		remote = []unix.RemoteIovec{{Base: 8, Len: 1}} // never mapped: EFAULT once permitted
		_, err = unix.ProcessVMWritev(t.pid, local, remote, 0)
		report("process_vm_writev "+t.name, err)
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/mem", t.pid), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		report("open_mem_rw "+t.name, err)
		pfd, err := unix.PidfdOpen(t.pid, 0)
		report("pidfd_open "+t.name, err)
		if err == nil {
			fd, err := unix.PidfdGetfd(pfd, 0, 0) // steal its stdin
			if err == nil {
				unix.Close(fd)
			}
			report("pidfd_getfd "+t.name, err)
			report("pidfd_signal_0 "+t.name, unix.PidfdSendSignal(pfd, 0, nil, 0))
			unix.Close(pfd)
		}
	}
	for _, t := range targets {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", t.pid))
		if t.name != "child" && strings.TrimSpace(string(comm)) != "sbx" {
			report("kill_0 "+t.name, unix.Kill(t.pid, 0))
			fmt.Printf("kill_term %s: skipped (comm %q is not sbx)\n", t.name, strings.TrimSpace(string(comm)))
			continue
		}
		report("kill_term "+t.name, unix.Kill(t.pid, unix.SIGTERM))
	}
	// A SIGTERM that reached an init which forwards it would end us here.
	time.Sleep(300 * time.Millisecond)
	report("alive", nil)
	return 0
}

// sigio has the kernel send SIGTERM on its behalf: a pipe owned (F_SETOWN)
// by the target, with F_SETSIG SIGTERM and O_ASYNC, signals its owner
// when written to. The target is "child" (a child of its own: the signal
// should arrive) or a PID, signalled only if it is named sbx (sbx's init
// forwards SIGTERM to the command, so delivery would end this probe).
func sigio(target string) int {
	var pid int
	var child *exec.Cmd
	if target == "child" {
		child = exec.Command(self(), "sleep", "30")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "attack: starting a child:", err)
			return 1
		}
		defer func() {
			_ = child.Process.Kill()
			_ = child.Wait()
		}()
		pid = child.Process.Pid
	} else {
		n, err := strconv.Atoi(target)
		if err != nil || n <= 0 {
			usage()
		}
		pid = n
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if c := strings.TrimSpace(string(comm)); c != "sbx" {
			fmt.Printf("sigio_term %s: skipped (comm %q is not sbx)\n", target, c)
			return 0
		}
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		report("pipe", err)
		return 0
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for _, step := range []struct {
		name     string
		cmd, arg int
	}{
		{"f_setown", unix.F_SETOWN, pid},
		{"f_setsig", unix.F_SETSIG, int(unix.SIGTERM)},
		{"o_async", unix.F_SETFL, unix.O_ASYNC | unix.O_NONBLOCK},
	} {
		if _, err := unix.FcntlInt(uintptr(p[0]), step.cmd, step.arg); err != nil {
			report(step.name+" "+target, err)
			return 0
		}
	}
	if _, err := unix.Write(p[1], []byte{'x'}); err != nil {
		report("write", err)
		return 0
	}
	if child == nil {
		time.Sleep(300 * time.Millisecond)
		fmt.Printf("sigio_term %s: sent\n", target)
		report("alive", nil)
		return 0
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var ws unix.WaitStatus
		if n, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); n == pid {
			if ws.Signaled() && ws.Signal() == unix.SIGTERM {
				fmt.Println("sigio_term child: delivered")
			} else {
				fmt.Printf("sigio_term child: exited (%v)\n", ws)
			}
			return 0
		}
	}
	fmt.Println("sigio_term child: not-delivered")
	return 0
}

// seize attaches with PTRACE_SEIZE and, if that worked, stops and
// detaches again at once.
func seize(name string, pid int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := unix.PtraceSeize(pid)
	detail := ""
	if err == nil {
		detail = "detached"
		if e := unix.PtraceInterrupt(pid); e == nil {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WALL, nil)
		}
		if e := unix.PtraceDetach(pid); e != nil {
			detail = "detach failed: " + errName(e)
		}
	}
	report("ptrace_seize "+name, err, detail)
}

// tamper tries to change path without destroying it: open for writing
// (no truncation), chmod to its own mode, rename away and back, and swap
// spare into its place with RENAME_EXCHANGE (swapped back).
func tamper(path, spare string) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	report("open_wronly "+path, err)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		report("stat "+path, err)
		return
	}
	report("chmod "+path, unix.Chmod(path, st.Mode&0o7777))
	moved := path + ".sbx-moved"
	err = unix.Rename(path, moved)
	detail := ""
	if err == nil {
		detail = "undone"
		if e := unix.Rename(moved, path); e != nil {
			detail = "undo failed: " + errName(e)
		}
	}
	report("rename "+path, err, detail)
	err = unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	detail = ""
	if err == nil {
		detail = "undone"
		if e := unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); e != nil {
			detail = "undo failed: " + errName(e)
		}
	}
	report("exchange "+path, err, detail)
}

func statusFields(b []byte, keys ...string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, want := range keys {
			if k == want {
				out[k] = strings.Join(strings.Fields(v), " ")
			}
		}
	}
	return out
}

func creds() {
	r, e, s := unix.Getresuid()
	fmt.Printf("resuid: %d %d %d\n", r, e, s)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		report("status", err)
		return
	}
	f := statusFields(b, "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"} {
		fmt.Printf("%s: %s\n", strings.ToLower(k), f[k])
	}
}

// watchSuid runs bin with a stdin that never delivers anything (a password
// prompt waits on it) and reports the credentials the process ran with:
// read from /proc while it waits, or from its zombie (not yet reaped) if
// it exited on its own.
func watchSuid(bin string, args []string) int {
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		return 1
	}
	defer pw.Close()
	c := exec.Command(bin, args...)
	c.Stdin = pr
	if err := c.Start(); err != nil { // returns once execve has happened
		report("exec "+bin, err)
		return 0
	}
	pr.Close()
	pid := c.Process.Pid
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var si unix.Siginfo
		if unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil) != nil || si.Signo != 0 {
			break
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	_ = c.Process.Kill()
	_ = c.Wait()
	if err != nil {
		report("suid_status", err)
		return 0
	}
	f := statusFields(b, "Name", "Uid", "CapEff")
	fmt.Printf("suid_name: %s\nsuid_uid: %s\nsuid_capeff: %s\n", f["Name"], f["Uid"], f["CapEff"])
	return 0
}

func sockets() {
	try := func(name string, domain, typ, proto uintptr) {
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, domain, typ, proto)
		if e == 0 {
			unix.Close(int(fd))
		}
		report("socket "+name, errno(e))
	}
	htons := func(v uint16) uintptr { return uintptr(v>>8 | v<<8) }
	try("unix", unix.AF_UNIX, unix.SOCK_STREAM, 0)
	try("unix_dgram", unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	try("unix_high", 1<<32|unix.AF_UNIX, unix.SOCK_STREAM, 0) // the kernel reads an int
	try("packet", unix.AF_PACKET, unix.SOCK_RAW, htons(unix.ETH_P_ALL))
	try("netlink_audit", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT)
	try("netlink_uevent", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT)
	try("netlink_route", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	try("inet_raw", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	try("inet_raw_cloexec", unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	try("inet6_raw", unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6)
	try("inet_mptcp", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
	try("vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	try("alg", unix.AF_ALG, unix.SOCK_SEQPACKET, 0)
	try("inet_stream", unix.AF_INET, unix.SOCK_STREAM, 0)
	try("inet_dgram", unix.AF_INET, unix.SOCK_DGRAM, 0)
	var sv [2]int32
	_, _, e := unix.RawSyscall6(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM, 0, uintptr(unsafe.Pointer(&sv)), 0, 0)
	if e == 0 {
		unix.Close(int(sv[0]))
		unix.Close(int(sv[1]))
	}
	report("socketpair unix", errno(e))
	_, _, e = unix.RawSyscall6(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM, 0, uintptr(unsafe.Pointer(&sv)), 0, 0)
	if e == 0 {
		unix.Close(int(sv[0]))
		unix.Close(int(sv[1]))
	}
	report("socketpair unix_dgram", errno(e))
}

// fds lists the open descriptors with raw system calls (no Go file, so
// the runtime opens nothing of its own), leaving out the one it lists
// with, then reads each descriptor in read.
func fds(read []string) {
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		report("open /proc/self/fd", err)
		return
	}
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(dfd, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var open []int
	targets := map[int]string{}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd == dfd {
			continue
		}
		open = append(open, fd)
		l := make([]byte, 4096)
		if n, err := unix.Readlink("/proc/self/fd/"+name, l); err == nil {
			targets[fd] = string(l[:n])
		}
	}
	unix.Close(dfd)
	list := make([]string, len(open))
	for i, fd := range open {
		list[i] = strconv.Itoa(fd)
	}
	fmt.Printf("fds: %s\n", strings.Join(list, ","))
	for _, fd := range open {
		fmt.Printf("fd %d: %s\n", fd, targets[fd])
	}
	for _, s := range read {
		fd, err := strconv.Atoi(s)
		if err != nil {
			usage()
		}
		b := make([]byte, 256)
		n, err := unix.Pread(fd, b, 0)
		if err != nil {
			report("readfd "+s, err)
			continue
		}
		report("readfd "+s, nil, firstLine(b[:n]))
	}
}

// procFDs lists another process's descriptors, reads where each points
// and opens each one read-only through /proc (how a leaked descriptor of the sandbox's init would be
// reached).
func procFDs(pid string) {
	dir := "/proc/" + pid + "/fd"
	entries, err := os.ReadDir(dir)
	report("list "+dir, err, fmt.Sprint(len(entries)))
	for _, e := range entries {
		p := dir + "/" + e.Name()
		l := make([]byte, 4096)
		n, err := unix.Readlink(p, l)
		report("readlink "+p, err, string(l[:max(n, 0)]))
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		report("open "+p, err)
	}
}

// cwd reports the working directory and whether walking ".." from it
// reaches this process's root (a directory outside the root never does).
func cwd() {
	wd, err := unix.Getwd()
	report("getwd", err, wd)
	l := make([]byte, 4096)
	n, err := unix.Readlink("/proc/self/cwd", l)
	report("proc_cwd", err, string(l[:max(n, 0)]))
	var root unix.Stat_t
	if err := unix.Stat("/", &root); err != nil {
		report("stat /", err)
		return
	}
	p := "."
	for i := 0; i < 256; i++ {
		var st, up unix.Stat_t
		if unix.Stat(p, &st) != nil || unix.Stat(p+"/..", &up) != nil {
			fmt.Println("cwd_in_root: unknown")
			return
		}
		if st.Dev == root.Dev && st.Ino == root.Ino {
			fmt.Println("cwd_in_root: yes")
			return
		}
		if st.Dev == up.Dev && st.Ino == up.Ino {
			break // a top that is not our root
		}
		p += "/.."
	}
	fmt.Println("cwd_in_root: no")
}

func abstract(name string) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		report("socket unix", err)
		return
	}
	defer unix.Close(fd)
	report("connect_abstract", unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name}))
}

func abstractSelf(name string) {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		report("socket unix", err)
		return
	}
	defer unix.Close(l)
	sa := &unix.SockaddrUnix{Name: "@" + name}
	if err := unix.Bind(l, sa); err != nil {
		report("abstract_self", err)
		return
	}
	if err := unix.Listen(l, 1); err != nil {
		report("abstract_self", err)
		return
	}
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		report("abstract_self", err)
		return
	}
	defer unix.Close(c)
	report("abstract_self", unix.Connect(c, sa))
}

// filtered execs argv under a seccomp filter that allows every call: the
// process then shows "Seccomp: 2" in /proc/self/status, as one inside
// another sandbox or a container does, and nothing is refused.
func filtered(argv []string) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		report("filtered", err)
		return 2
	}
	runtime.LockOSThread()
	allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	prog := unix.SockFprog{Len: 1, Filter: &allow[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		report("filtered: no_new_privs", err)
		return 2
	}
	// TSYNC: every thread of this process, so the one that execs has it.
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		report("filtered: seccomp", e)
		return 2
	}
	err = syscall.Exec(path, argv, os.Environ())
	report("filtered: exec", err)
	return 2
}

// setID tries every way of giving a file in dir a set-id bit from a mode
// argument, and reports each call and the mode the file has afterwards
// (st_mode & 07777, octal). Everything it makes is inside dir.
func setID(dir string) {
	j := func(n string) string { return dir + "/" + n }
	mode := func(p string) string {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return "mode ?"
		}
		return fmt.Sprintf("mode %04o", st.Mode&0o7777)
	}
	plain := func(p string) error {
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o755)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	p := j("chmod")
	_ = plain(p)
	report("chmod 04755", unix.Chmod(p, 0o4755), mode(p))
	report("chmod 02755", unix.Chmod(p, 0o2755), mode(p))
	report("fchmodat 06755", unix.Fchmodat(unix.AT_FDCWD, p, 0o6755, 0), mode(p))
	cwd := unix.AT_FDCWD
	pb, _ := unix.BytePtrFromString(p)
	_, _, e := unix.Syscall6(452, uintptr(cwd), uintptr(unsafe.Pointer(pb)), 0o4755, 0, 0, 0) // fchmodat2
	report("fchmodat2 04755", errno(e), mode(p))
	report("chmod 0750", unix.Chmod(p, 0o750), mode(p))
	report("chmod 01777", unix.Chmod(p, 0o1777), mode(p))
	if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		report("fchmod 04755", unix.Fchmod(fd, 0o4755), mode(p))
		unix.Close(fd)
	}
	p = j("open")
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o4755)
	if err == nil {
		unix.Close(fd)
	}
	report("open O_CREAT 04755", err, mode(p))
	p = j("creat")
	fd, err = unix.Creat(p, 0o2755)
	if err == nil {
		unix.Close(fd)
	}
	report("creat 02755", err, mode(p))
	fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o4755)
	if err == nil {
		p = j("tmpfile")
		err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
		unix.Close(fd)
		report("open O_TMPFILE 04755", err, mode(p))
	} else {
		report("open O_TMPFILE 04755", err)
	}
	p = j("mkdir")
	report("mkdir 02755", unix.Mkdir(p, 0o2755), mode(p))
	p = j("mknod")
	report("mknod S_IFREG|04755", unix.Mknod(p, unix.S_IFREG|0o4755, 0), mode(p))
	// openat2 carries its mode in memory no filter reads: the kernel
	// clears the bits at the first write by a caller without CAP_FSETID.
	p = j("openat2")
	fd, err = unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC, Mode: 0o4755})
	if err == nil {
		_, err = unix.Write(fd, []byte("#!/bin/sh\n"))
		unix.Close(fd)
	}
	report("openat2 04755+write", err, mode(p))
	p = j("ok")
	report("mkdir 0755", unix.Mkdir(p, 0o755), mode(p))
}
