//go:build linux

package doctor

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/sbx-sh/sbx/internal/userns"
	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/seccomp"
	"golang.org/x/sys/unix"
)

// probeArg is the one argument with which Probe starts its own binary as
// the first process of new namespaces: this package's init then mounts a
// fresh /proc, as every full-mode run does, and exits (probeExitBase +
// errno when that fails). Any binary that can call Probe links this
// package, so it has the init.
const (
	probeArg        = "__sbx_probe_proc__"
	probeOverlayArg = "__sbx_probe_overlay__"
	probeExitBase   = 64
)

func init() {
	if len(os.Args) == 2 && os.Getpid() == 1 {
		switch os.Args[1] {
		case probeArg:
			os.Exit(probeProc())
		case probeOverlayArg:
			os.Exit(probeOverlay())
		}
	}
}

// probeOverlay mounts an overlay as a discard region does (userxattr, a
// tmpfs upper layer) over a tmpfs of its own, in its own namespaces.
func probeOverlay() int {
	err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	if err == nil {
		err = unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64k")
	}
	for _, d := range []string{"/tmp/u", "/tmp/w", "/tmp/m"} {
		if err == nil {
			err = os.Mkdir(d, 0o755)
		}
	}
	// The lower layer is a host directory, as a discard region's is.
	if err == nil {
		err = unix.Mount("overlay", "/tmp/m", "overlay", unix.MS_NOSUID|unix.MS_NODEV, "lowerdir=/usr,upperdir=/tmp/u,workdir=/tmp/w,userxattr")
	}
	if err == nil {
		err = os.WriteFile("/tmp/m/probe", nil, 0o644)
	}
	return probeExit(err)
}

// probeExit is a probe's exit status: 0, probeExitBase+errno, or 255.
func probeExit(err error) int {
	var e syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e) && e > 0 && int(e) < 255-probeExitBase:
		return probeExitBase + int(e)
	}
	return 255
}

// probeDiscard reports whether discard overlays work here.
func probeDiscard() (bool, string) {
	cmd := exec.Command("/proc/self/exe", probeOverlayArg)
	cmd.Env = []string{}
	// Every capability, as sbx's init has (overlayfs checks the
	// mounter's DAC rights on its layers, not only CAP_SYS_ADMIN).
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID,
		UidMappings: userns.IDMap(os.Getuid()),
		GidMappings: userns.IDMap(os.Getgid()),
		AmbientCaps: userns.AllCaps(),
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, ""
	case errors.As(err, &ee) && ee.ExitCode() > probeExitBase && ee.ExitCode() < 255:
		return false, "overlay in a user namespace: " + syscall.Errno(ee.ExitCode()-probeExitBase).Error() + " (needs Linux 5.11+)"
	}
	return false, err.Error()
}

func probeProc() int {
	err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	if err == nil {
		err = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	return probeExit(err)
}

// Probe inspects the kernel. It starts one short-lived child in new user,
// mount, pid and network namespaces to learn whether sbx's full mode can
// run (and whether a fresh /proc can be mounted there), reads the files
// Diagnose needs, and diagnoses them.
func Probe() Report {
	var r Report
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	s := Snapshot()
	if s.UsernsError != "" {
		r.UserNS.Reason = s.UsernsError
	} else {
		r.UserNS.Available = true
		r.Proc.Mountable = s.ProcErrno == 0
		if s.ProcErrno != 0 {
			r.Proc.Reason = "mount proc: " + s.ProcErrno.Error()
		}
	}
	if r.UserNS.Available {
		r.Discard.Available, r.Discard.Reason = probeDiscard()
	} else {
		r.Discard.Reason = "needs user namespaces"
	}
	r.Landlock.ABI = s.LandlockABI
	r.Seccomp.Available = s.Seccomp
	r.Capture.Available, r.Capture.Reason = s.TunError == "", s.TunError
	if _, err := seccomp.Compile(seccomp.Config{}); err != nil {
		r.Seccomp.Library = err.Error()
	} else {
		r.Seccomp.Library = "built in, compiled with libseccomp " + seccomp.LibraryVersion()
	}
	switch {
	case r.Landlock.ABI == 0 || !r.Seccomp.Available:
		r.Mode = "unavailable"
	case r.UserNS.Available && r.Proc.Mountable:
		r.Mode = "full"
	default:
		r.Mode = "weaker-only"
	}
	r.Diagnosis = Diagnose(s)
	return r
}

// Snapshot takes this host's HostSnapshot: it reads SnapshotPaths and
// runs the namespace, Landlock and seccomp probes.
func Snapshot() HostSnapshot {
	s := readSnapshot()
	s.UsernsError, s.UsernsErrno, s.ProcErrno = probeNamespaces(s.Exe)
	s.LandlockABI = landlock.ABI()
	// As the capture opens it (sandbox.tunUsable): this user, read-write.
	if f, err := os.OpenFile(tunDevice, os.O_RDWR, 0); err != nil {
		s.TunError = err.Error()
		errors.As(err, &s.TunErrno)
	} else {
		f.Close()
	}
	_, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_SECCOMP, 0, 0)
	s.Seccomp = e == 0
	if _, err := seccomp.Compile(seccomp.Config{}); err != nil {
		s.Seccomp = false
	}
	return s
}

// Explain is the diagnosis of a start that could not create its user
// namespace with err (as the clone returned it): Diagnose over the files
// Snapshot reads and err in place of the namespace probe's result, so
// that the run's own message names the reason `sbx doctor` names.
func Explain(err error) Diagnosis {
	s := readSnapshot()
	s.UsernsError = err.Error()
	errors.As(err, &s.UsernsErrno)
	s.LandlockABI = landlock.ABI()
	_, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_SECCOMP, 0, 0)
	s.Seccomp = e == 0
	return Diagnose(s)
}

// readSnapshot is a HostSnapshot of the files and the executable only.
func readSnapshot() HostSnapshot {
	s := HostSnapshot{Files: map[string]string{}}
	for _, p := range SnapshotPaths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if err == nil {
			s.Files[p] = string(b)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		s.Exe = exe
	}
	return s
}

// probeNamespaces starts exe (this binary; /bin/true without it) with
// probeArg in new user, mount, pid and network namespaces, with the id
// maps sbx's init gets (idMap: root's maps every id).
func probeNamespaces(exe string) (usernsErr string, usernsErrno, procErrno syscall.Errno) {
	cmd := exec.Command("/bin/true")
	if exe != "" {
		// /proc/self/exe, not the path: a binary replaced or deleted since
		// start must not read as "user namespaces unavailable".
		cmd = exec.Command("/proc/self/exe", probeArg)
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET,
		UidMappings: userns.IDMap(os.Getuid()),
		GidMappings: userns.IDMap(os.Getgid()),
		// As sbx's init has: a mapped uid other than 0 would lose it at exec.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "", 0, 0
	case errors.As(err, &ee):
		// It started, so the namespaces exist; the exit says how the
		// mount went.
		if c := ee.ExitCode(); c > probeExitBase && c < 255 {
			return "", 0, syscall.Errno(c - probeExitBase)
		}
		return "", 0, 0
	}
	errors.As(err, &usernsErrno)
	return err.Error(), usernsErrno, 0
}
