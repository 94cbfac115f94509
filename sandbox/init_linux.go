//go:build linux

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sbx-sh/sbx/ns"
	"golang.org/x/sys/unix"
)

// InitMain is the sandbox's PID 1. It never returns.
func InitMain(args []string) {
	fds := make([]int, 4)
	for i := range fds {
		if len(args) != len(fds) {
			os.Exit(125)
		}
		n, err := strconv.Atoi(args[i])
		if err != nil {
			os.Exit(125)
		}
		fds[i] = n
	}
	closeExtraFDs() // our own pipes too: the command must not inherit them
	statusW := os.NewFile(uintptr(fds[2]), "status")
	fail := func(code int, format string, a ...any) {
		sendStatus(statusW, status{Code: code, Error: fmt.Sprintf(format, a...)})
		os.Exit(code)
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// SIGCHLD must be caught before the command can exit; enabling it and
	// the forwarded signals runs while the view is built. SIGCHLD has a
	// channel of its own: signal.Notify drops what a full channel cannot
	// take, so a storm of forwarded signals must not crowd it out; one
	// pending SIGCHLD is enough, as reap collects every exited child.
	// One goroutine enables both (notifyAsync twice measured ~1 ms more
	// start-up).
	chld := make(chan os.Signal, 1)
	sigs := make(chan os.Signal, 32)
	notified := make(chan struct{})
	go func() {
		signal.Notify(chld, unix.SIGCHLD)
		signal.Notify(sigs, forwarded...)
		close(notified)
	}()

	var pl Plan
	planR := os.NewFile(uintptr(fds[0]), "plan")
	if err := json.NewDecoder(planR).Decode(&pl); err != nil {
		fail(125, "reading the plan: %v", err)
	}
	planR.Close()

	// The --save-changes directory, made by the supervisor, is reached
	// through a descriptor: after pivot_root its host path is gone.
	saveFD := -1
	if pl.SaveChanges != "" {
		fd, err := unix.Open(pl.SaveChanges, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			fail(125, "--save-changes %s: %v", pl.SaveChanges, err)
		}
		saveFD = fd
	}
	view, err := ns.BuildRoot(pl.Mounts)
	if err != nil {
		view.Close()
		fail(125, "%v", err)
	}
	if !pl.HostNet {
		if err := ns.LoopbackUp(); err != nil {
			view.Close()
			fail(125, "%v", err)
		}
	}
	var ctl *net.UnixConn
	if pl.Net.Control {
		if ctl, err = initControl(&pl, os.NewFile(uintptr(fds[3]), "control")); err != nil {
			view.Close()
			fail(125, "%v", err)
		}
	}
	if t := pl.Net.TLS; t != nil {
		if err := writeBundle(t); err != nil {
			view.Close()
			fail(125, "writing the TLS trust bundle: %v", err)
		}
	}
	if st, err := os.Stat(pl.Dir); err != nil || !st.IsDir() {
		view.Close()
		fail(125, "working directory %s is not visible in the sandbox; run sbx from a readable directory", pl.Dir)
	}
	path, code, err := lookPath(pl.Argv[0], pl.Env, pl.Dir)
	if err != nil {
		view.Close()
		fail(code, "%v", err)
	}

	<-notified
	pid, listener, err := startConfined(&pl, path, commandFiles(pl.KeepFDs))
	if err != nil {
		view.Close()
		fail(execStatus(err), "%v", err)
	}
	if listener != nil {
		// The command may already wait on a notification: the
		// supervisor answers once it has the listener.
		if ctl == nil || sendFDs(ctl, "notify", listener) != nil {
			_ = unix.Kill(-1, unix.SIGKILL)
			view.Close()
			fail(125, "handing the seccomp listener to the supervisor failed")
		}
		listener.Close()
	}
	sendStatus(statusW, status{Started: pid})

	lifeline := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.NewFile(uintptr(fds[1]), "lifeline"))
		close(lifeline)
	}()

	exit := -1
	for exit < 0 {
		select {
		case <-chld:
			exit = reap(pid)
		case s := <-sigs:
			signalCommand(pid, s.(unix.Signal))
		case <-lifeline:
			// The supervisor is gone (killed) or wants us to stop
			// (timeout): end everything now.
			_ = unix.Kill(-1, unix.SIGKILL)
			for exit < 0 {
				var ws unix.WaitStatus
				p, err := unix.Wait4(-1, &ws, 0, nil)
				if err != nil {
					exit = 128 + int(unix.SIGKILL)
				} else if p == pid {
					exit = waitStatusCode(ws)
				}
			}
		}
	}
	// The command is gone: so is everything it left behind.
	_ = unix.Kill(-1, unix.SIGKILL)
	for {
		if _, err := unix.Wait4(-1, nil, 0, nil); err == unix.ECHILD {
			break
		}
	}
	// What the discard overlays took: read from their upper layers now
	// that nothing writes any more, before the view goes.
	changes := view.Changes(maxDiscarded)
	if saveFD >= 0 {
		if err := view.SaveChanges(saveFD, changes); err != nil {
			fmt.Fprintf(os.Stderr, "sbx: %v\n", err)
		}
	}
	sendDiscarded(statusW, changes)
	view.Close()
	waitDials(time.Second)
	// Init's copies of the command's stdin, stdout and stderr go before
	// its last word: whoever reads sbx's output sees its end when sbx
	// exits, not when init is torn down after it.
	releaseStdio()
	sendStatus(statusW, status{Exit: true, Code: exit})
	os.Exit(0)
}

// maxDiscarded bounds the discarded writes reported for one run.
const maxDiscarded = 100000

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

// releaseStdio points descriptors 0, 1 and 2 at /dev/null.
func releaseStdio() {
	fd, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	for i := 0; i <= 2; i++ {
		_ = unix.Dup3(fd, i, 0)
	}
	if fd > 2 {
		unix.Close(fd)
	}
}

// writeBundle puts the command's trust bundle in the private /tmp (after
// pivot_root: the host never sees it), read-only.
func writeBundle(t *TLSPlan) error {
	dir := filepath.Dir(t.BundlePath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(t.BundlePath, t.Bundle, 0o444); err != nil {
		return err
	}
	return os.Chmod(dir, 0o555)
}
