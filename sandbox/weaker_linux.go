//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// runWeaker runs the command with Landlock and seccomp only: no
// namespaces, so no mount view, no private /tmp, no pid or network
// isolation beyond what Landlock (TCP) and seccomp (other sockets) refuse.
// sbx becomes a child subreaper so that every descendant, also one that
// left the command's session, is killed and reaped at the end.
func runWeaker(pl *Plan, stderr io.Writer, col *violations.Collector) int {
	fmt.Fprintln(stderr, "sbx: weaker sandbox (enableWeakerNestedSandbox): Landlock + seccomp only; no namespaces, so /tmp is the host's (writable only where allowWrite says), the host's processes are visible, and protected names inside writable places are not enforced")
	closeExtraFDs()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return failf(stderr, "becoming a subreaper: %v", err)
	}
	path, code, err := lookPath(pl.Argv[0], pl.Env, pl.Dir)
	if err != nil {
		fmt.Fprintf(stderr, "sbx: %v\n", err)
		return code
	}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, append([]os.Signal{unix.SIGCHLD}, forwarded...)...)
	defer signal.Stop(sigs)
	places := afterRunBefore(pl)
	pid, _, err := startConfined(pl, path, commandFiles(pl.KeepFDs))
	if err != nil {
		fmt.Fprintf(stderr, "sbx: %v\n", err)
		return execStatus(err)
	}
	var timeout <-chan time.Time
	if pl.Timeout > 0 {
		t := time.NewTimer(pl.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	exit, timedOut := -1, false
	for exit < 0 {
		select {
		case s := <-sigs:
			if s == unix.SIGCHLD {
				exit = reap(pid)
				continue
			}
			signalCommand(pid, s.(unix.Signal))
		case <-timeout:
			timedOut = true
			_ = unix.Kill(-pid, unix.SIGKILL)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	killDescendants()
	afterRunCheck(places, nil, false, col, stderr)
	if timedOut {
		fmt.Fprintf(stderr, "sbx: timed out after %v; the command was killed\n", pl.Timeout)
		return 124
	}
	return exit
}

// killDescendants kills and reaps every remaining child (orphans of the
// command are re-parented to sbx, a subreaper) until none is left.
func killDescendants() {
	self := os.Getpid()
	for round := 0; round < 100; round++ {
		kids := children(self)
		if len(kids) == 0 {
			for {
				if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); err != nil {
					return
				}
			}
		}
		for _, k := range kids {
			_ = unix.Kill(k, unix.SIGKILL)
		}
		for range kids {
			_, _ = unix.Wait4(-1, nil, 0, nil)
		}
	}
}

func children(ppid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// reap collects every exited child; it returns the main command's status
// once it has ended, -1 before.
func reap(pid int) int {
	exit := -1
	for {
		var ws unix.WaitStatus
		p, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err != nil || p <= 0 {
			return exit
		}
		if p == pid {
			exit = waitStatusCode(ws)
		}
	}
}

// commandFiles is stdin, stdout, stderr and each kept descriptor at its
// own number.
func commandFiles(keep []int) []*os.File {
	n := 3
	for _, k := range keep {
		if k+1 > n {
			n = k + 1
		}
	}
	files := make([]*os.File, n)
	files[0], files[1], files[2] = os.Stdin, os.Stdout, os.Stderr
	for _, k := range keep {
		files[k] = os.NewFile(uintptr(k), "kept")
	}
	return files
}
