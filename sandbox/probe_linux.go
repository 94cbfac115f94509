//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/seccomp"
	"golang.org/x/sys/unix"
)

// Probe inspects the kernel. It starts one short-lived child in a new user
// namespace to learn whether sbx's full mode can run.
func Probe() Report {
	var r Report
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		r.UserNS.Reason = usernsProblem(err)
	} else {
		r.UserNS.Available = true
	}
	r.Landlock.ABI = landlock.ABI()
	_, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_SECCOMP, 0, 0)
	r.Seccomp.Available = e == 0
	if _, err := seccomp.Compile(seccomp.Config{}); err != nil {
		r.Seccomp.Available = false
		r.Seccomp.Library = err.Error()
	} else {
		r.Seccomp.Library = "built in, compiled with libseccomp " + seccomp.LibraryVersion()
	}
	switch {
	case r.Landlock.ABI == 0 || !r.Seccomp.Available:
		r.Mode = "unavailable"
	case r.UserNS.Available:
		r.Mode = "full"
	default:
		r.Mode = "weaker-only"
	}
	return r
}
