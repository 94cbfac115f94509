package seccomp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

type devIno struct{ dev, ino uint64 }

// UnixAllow decides notified connect(2) calls (Config.UnixConnect): a
// pathname Unix socket is reachable only when the file the command's path
// resolves to, in the command's own view of the filesystem, is one of the
// allowed sockets, identified by device and inode.
type UnixAllow struct {
	allowed map[devIno]string
	// Notes says which allowed paths were ignored at start-up and why.
	Notes []string
	// EmulateNonUnix makes the supervisor connect non-Unix sockets (inet,
	// netlink, ...) itself, with the address it read, instead of
	// answering Continue.
	//
	// Continue is not airtight: the kernel looks the descriptor up again
	// when it runs the call, so another thread of the command can dup2 an
	// AF_UNIX socket over it between the check and the call, and the
	// kernel then connects that socket to whatever path the memory holds
	// — any Unix socket in the command's mount view (the tests measure
	// it: a few percent of attempts win). Emulating closes that race, but
	// the connect then runs with the supervisor's credentials: the
	// command's Landlock TCP rules (and any other LSM policy) do not
	// apply to it, unless ConnectNonUnix runs it on a thread restricted
	// the same way.
	EmulateNonUnix bool
	// ConnectNonUnix, when set, performs EmulateNonUnix's connect of
	// sock (the supervisor's duplicate of the command's socket, valid
	// during the call) to the raw socket address, and returns its errno
	// (0, EINPROGRESS, ...). The intended use: run connect(2) on an OS
	// thread restricted by the same Landlock ruleset as the command, so
	// that its TCP rules still decide. Nil: connect(2) here.
	ConnectNonUnix func(sock int, sockaddr []byte) unix.Errno
	// Learn, when set, is asked about a pathname socket that is not in
	// the allow-list (an observed run of sbx learn): resolved is its path
	// in the command's view, st the socket's. True connects the command
	// to the host's socket at resolved (opened without following a
	// final link, and checked to be a socket): the view may show it
	// through a discard overlay, whose inode no connect reaches.
	Learn func(resolved string, st *unix.Stat_t) bool
}

// NewUnixAllow records the device and inode of each allowed socket path,
// as the supervisor sees it now. A path that is missing or not a socket
// is ignored with a note in Notes; a socket re-created later (a restarted
// server) has a new inode and is no longer allowed. Only empty paths are
// an error.
func NewUnixAllow(paths []string) (*UnixAllow, error) {
	a := &UnixAllow{allowed: map[devIno]string{}}
	for _, p := range paths {
		if p == "" {
			return nil, errors.New("seccomp: empty Unix socket path in the allow-list")
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			a.Notes = append(a.Notes, fmt.Sprintf("allowed Unix socket %s ignored: %v", p, err))
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			a.Notes = append(a.Notes, fmt.Sprintf("allowed Unix socket %s ignored: not a socket", p))
			continue
		}
		a.allowed[devIno{uint64(st.Dev), st.Ino}] = p
	}
	return a, nil
}

// Connect answers a notified connect(2) (fd Args[0], address Args[1],
// length Args[2]). It duplicates the command's socket (pidfd_getfd) and
// asks its domain:
//
//   - not AF_UNIX: Continue (or, with EmulateNonUnix, the supervisor's
//     own connect of the duplicate to the address it read);
//   - AF_UNIX with an abstract address: EPERM and a denial;
//   - AF_UNIX with a path: the path is opened O_PATH in the command's
//     view (openat2 under /proc/PID/root with RESOLVE_IN_ROOT and
//     RESOLVE_NO_MAGICLINKS; a relative path from its working
//     directory); if that file is an allowed socket, the supervisor
//     connects the duplicate to it through /proc/self/fd/N of the O_PATH
//     descriptor — the very file it checked, whatever the command's
//     memory or filesystem says by then — and answers with that connect's
//     result; otherwise DeniedErrno and a denial.
//
// The command's own socket thus ends up connected by the supervisor:
// the server sees the supervisor's credentials (SO_PEERCRED), and a
// blocking connect blocks the handler's goroutine. A path that does not
// exist in the command's view fails as the kernel would (ENOENT), and a
// file that is not a socket with ECONNREFUSED, without a denial.
func (a *UnixAllow) Connect(r *Request) (Response, *UnixDenial) {
	if r.Syscall != "connect" {
		return Response{Errno: unix.EPERM}, &UnixDenial{PID: r.PID, Reason: "not a connect call: " + r.Syscall, Errno: unix.EPERM}
	}
	// fail answers EPERM when the supervisor cannot examine the call:
	// closed, and on the record unless the caller is simply gone.
	fail := func(why string, err error) (Response, *UnixDenial) {
		if !r.Valid() {
			return Response{Errno: unix.ESRCH}, nil
		}
		return Response{Errno: unix.EPERM}, &UnixDenial{PID: r.PID, Reason: why + ": " + err.Error(), Errno: unix.EPERM}
	}
	sockFd := int(int32(r.Args[0]))
	addr := uintptr(r.Args[1])
	alen := int(int32(r.Args[2]))

	pidfd, err := threadPidfd(r.PID)
	if err != nil {
		return fail("supervisor cannot open the caller", err)
	}
	defer unix.Close(pidfd)
	if !r.Valid() {
		// The caller is gone; pidfd may name a new process with its PID.
		return Response{Errno: unix.ESRCH}, nil
	}
	sock, err := unix.PidfdGetfd(pidfd, sockFd, 0)
	if err != nil {
		if err == unix.EBADF {
			return Response{Errno: unix.EBADF}, nil
		}
		return fail("supervisor cannot duplicate the socket", err)
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		var e unix.Errno
		if errors.As(err, &e) {
			return Response{Errno: e}, nil // ENOTSOCK, as the kernel says
		}
		return Response{Errno: unix.ENOTSOCK}, nil
	}
	if domain != unix.AF_UNIX && !a.EmulateNonUnix {
		// The kernel refuses an AF_UNIX address on a non-Unix socket; see
		// EmulateNonUnix for the descriptor race this leaves.
		return Response{Continue: true}, nil
	}

	// Everything read through the PID from here is checked by Valid below.
	sa, err := readSockaddr(r.PID, addr, alen)
	if err != nil {
		var e unix.Errno
		if !errors.As(err, &e) {
			e = unix.EFAULT
		}
		return Response{Errno: e}, nil
	}
	if domain != unix.AF_UNIX {
		if !r.Valid() {
			return Response{Errno: unix.ESRCH}, nil
		}
		if a.ConnectNonUnix != nil {
			return Response{Errno: a.ConnectNonUnix(sock, sa)}, nil
		}
		return Response{Errno: ConnectRaw(sock, sa)}, nil
	}
	// unix_validate_addr: a family, then at least one byte of path.
	if len(sa) <= 2 || *(*uint16)(unsafe.Pointer(&sa[0])) != unix.AF_UNIX || len(sa) > unix.SizeofSockaddrUnix {
		return Response{Errno: unix.EINVAL}, nil
	}
	path, abstract := unixPath(sa)
	deny := func(e unix.Errno, resolved, why string) (Response, *UnixDenial) {
		return Response{Errno: e}, &UnixDenial{PID: r.PID, Path: path, Resolved: resolved, Reason: why, Errno: e}
	}
	if abstract {
		if !r.Valid() {
			return Response{Errno: unix.ESRCH}, nil
		}
		return deny(unix.EPERM, "", "abstract Unix socket")
	}
	if path == "" {
		return Response{Errno: unix.ENOENT}, nil
	}
	view, err := openView(r.PID, !strings.HasPrefix(path, "/"))
	if err != nil {
		return fail("supervisor cannot open the caller's filesystem view", err)
	}
	defer view.close()
	if !r.Valid() {
		return Response{Errno: unix.ESRCH}, nil
	}

	fd, err := view.open(path)
	if err != nil {
		var e unix.Errno
		if !errors.As(err, &e) {
			e = unix.EACCES
		}
		switch e {
		case unix.ENOENT, unix.ENOTDIR, unix.EACCES, unix.ENAMETOOLONG:
			return Response{Errno: e}, nil // what the kernel would answer
		}
		// ELOOP: a magic link (/proc/*/fd/*, which would name the
		// supervisor's descriptors here) or a symlink loop; EXDEV and
		// friends from the resolution flags.
		return deny(e, "", "path does not resolve safely: "+err.Error())
	}
	defer unix.Close(fd)
	resolved := view.name(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return deny(unix.EACCES, resolved, "stat: "+err.Error())
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return Response{Errno: unix.ECONNREFUSED}, nil
	}
	target := fd
	if _, ok := a.allowed[devIno{uint64(st.Dev), st.Ino}]; !ok {
		if a.Learn == nil || !a.Learn(resolved, &st) {
			return deny(DeniedErrno, resolved, "Unix socket not in the allow-list")
		}
		// The host's socket at that path: the view may show it through
		// a discard overlay, whose inode no connect reaches.
		hfd, err := unix.Open(resolved, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return deny(DeniedErrno, resolved, "the host's socket: "+err.Error())
		}
		defer unix.Close(hfd)
		var hst unix.Stat_t
		if err := unix.Fstat(hfd, &hst); err != nil || hst.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return deny(DeniedErrno, resolved, "the host's path is not a socket")
		}
		target = hfd
	}
	err = unix.Connect(sock, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(target)})
	if err != nil {
		var e unix.Errno
		if !errors.As(err, &e) {
			e = unix.ECONNREFUSED
		}
		return Response{Errno: e}, nil
	}
	return Response{}, nil
}

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd for one thread.
const pidfdThread = unix.O_EXCL

const kcmpFiles = 2 // KCMP_FILES

// threadPidfd returns a pidfd through which pidfd_getfd sees the file
// table of thread tid (the notification names the calling thread, and a
// thread can have unshared its file table with unshare(CLONE_FILES)).
func threadPidfd(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != unix.EINVAL {
		return fd, err
	}
	// Before 6.9 only a thread-group leader has a pidfd: use it when the
	// thread shares its leader's file table.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return -1, err
	}
	tgid := -1
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			tgid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if tgid <= 0 {
		return -1, fmt.Errorf("no Tgid for thread %d", tid)
	}
	if fd, err = unix.PidfdOpen(tgid, 0); err != nil {
		return -1, err
	}
	if tgid != tid {
		r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(tgid), uintptr(tid), kcmpFiles, 0, 0, 0)
		if e != 0 || r != 0 {
			unix.Close(fd)
			return -1, fmt.Errorf("thread %d does not share its process's file table", tid)
		}
	}
	return fd, nil
}

// ConnectRaw is connect(2) of sock to a socket address given as bytes.
func ConnectRaw(sock int, sockaddr []byte) unix.Errno {
	var p unsafe.Pointer
	if len(sockaddr) > 0 {
		p = unsafe.Pointer(&sockaddr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(len(sockaddr)))
	return e
}

// view is a process's root and working directory, opened through /proc
// while its PID is known to be right.
type view struct {
	root, cwd         int
	rootLink, cwdLink string
	// resolve: FileInspector.Resolve.
	resolve bool
}

func openView(pid int, relative bool) (*view, error) {
	v := &view{root: -1, cwd: -1}
	proc := "/proc/" + strconv.Itoa(pid)
	var err error
	if v.root, err = unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, err
	}
	v.rootLink, _ = os.Readlink(proc + "/root")
	if relative {
		if v.cwd, err = unix.Open(proc+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			v.close()
			return nil, err
		}
		v.cwdLink, _ = os.Readlink(proc + "/cwd")
	}
	return v, nil
}

func (v *view) close() {
	if v.root >= 0 {
		unix.Close(v.root)
	}
	if v.cwd >= 0 {
		unix.Close(v.cwd)
	}
}

func (v *view) openat(dir int, p string, flags uint64) (int, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dir, p, how)
		// EAGAIN: a rename or mount raced a ".." under RESOLVE_IN_ROOT.
		if err != unix.EAGAIN || try == 4 {
			return fd, err
		}
	}
}

// open opens p O_PATH as the process would reach it: absolute paths from
// its root, relative ones from its working directory, ".." and absolute
// symbolic links never above its root.
func (v *view) open(p string) (int, error) {
	if strings.HasPrefix(p, "/") {
		return v.openat(v.root, p, 0)
	}
	if base, ok := v.cwdInRoot(); ok {
		// No lexical cleaning: the kernel resolves "a/.." through a.
		return v.openat(v.root, base+"/"+p, 0)
	}
	// The working directory is not reachable from the root (or was
	// removed): resolve under the working directory itself. ".." and
	// absolute links then stop there, which can refuse a path the
	// process would reach, never reach one it would not.
	return v.openat(v.cwd, p, 0)
}

// cwdInRoot is the working directory's path under the root, verified to
// name the same directory.
func (v *view) cwdInRoot() (string, bool) {
	if v.rootLink == "" || v.cwdLink == "" {
		return "", false
	}
	var rel string
	switch {
	case v.rootLink == "/":
		rel = v.cwdLink
	case v.cwdLink == v.rootLink:
		rel = "/"
	case strings.HasPrefix(v.cwdLink, v.rootLink+"/"):
		rel = v.cwdLink[len(v.rootLink):]
	default:
		return "", false
	}
	fd, err := v.openat(v.root, rel, unix.O_DIRECTORY)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstat(v.cwd, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		return "", false
	}
	return strings.TrimSuffix(rel, "/"), true
}

// name is fd's path in the process's view, for the record.
func (v *view) name(fd int) string {
	s, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return ""
	}
	if in, ok := v.underRoot(s); ok {
		return in
	}
	return s
}

// underRoot is host-side link target s as a path under the process's
// root; false when s is not under it.
func (v *view) underRoot(s string) (string, bool) {
	if v.rootLink == "" || v.rootLink == "/" {
		return s, true
	}
	rest, ok := strings.CutPrefix(s, v.rootLink)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	return "/" + strings.TrimPrefix(rest, "/"), true
}
