//go:build unix

package darwin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exit statuses of the env(1)/timeout(1) convention.
const (
	exitFailed        = 125 // sbx itself failed; nothing was run
	exitNotExecutable = 126
	exitNotFound      = 127
)

// forwarded are the signals passed on to the command's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runSpec is one process to run; the runner is the same on every Unix so
// that it is built and tested on Linux, where sandbox-exec does not exist.
type runSpec struct {
	name           string
	args, env      []string
	dir            string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run starts s in a new session (so it has no controlling terminal:
// TIOCSTI cannot push input into the caller's terminal), forwards SIGINT,
// SIGTERM, SIGHUP and SIGQUIT to its process group, and kills the group
// with SIGKILL when ctx ends and once the command has exited (no orphans
// outlive the run). It returns the command's exit status, or 128+N when it
// died of signal N. err is non-nil when the command could not be started
// (status 125) or when ctx ended it (err wraps ctx.Err()).
func run(ctx context.Context, s runSpec) (int, error) {
	if err := ctx.Err(); err != nil {
		return exitFailed, fmt.Errorf("not started: %w", err)
	}
	cmd := exec.Command(s.name, s.args...)
	cmd.Env, cmd.Dir = s.env, s.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.stdin, s.stdout, s.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 2 * time.Second

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		return exitFailed, fmt.Errorf("start %s: %w", s.name, err)
	}
	pgid := cmd.Process.Pid
	killGroup := func(sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	ctxDone := ctx.Done()
	var stopped error
	for {
		select {
		case sig := <-sigs:
			if ss, ok := sig.(syscall.Signal); ok {
				killGroup(ss)
			}
		case <-ctxDone:
			stopped, ctxDone = ctx.Err(), nil
			killGroup(syscall.SIGKILL)
		case err := <-done:
			killGroup(syscall.SIGKILL) // whatever the command left behind
			code := exitStatus(cmd.ProcessState)
			var exitErr *exec.ExitError
			switch {
			case stopped != nil:
				return code, fmt.Errorf("command stopped: %w", stopped)
			case err != nil && !errors.As(err, &exitErr):
				return code, fmt.Errorf("wait %s: %w", s.name, err)
			}
			return code, nil
		}
	}
}

// exitStatus maps a finished process to the shell's convention.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitFailed
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// findCommand checks, before anything runs, that file names an executable
// the way execvp(3) inside sandbox-exec will look for it: through PATH from
// env (the default /usr/bin:/bin without one), relative to dir. It returns
// 127 if there is none, 126 if the only matches cannot be executed.
func findCommand(file string, env []string, dir string) (int, error) {
	if file == "" {
		return exitNotFound, errors.New("empty command name")
	}
	if strings.Contains(file, "/") {
		return checkExecutable(inDir(file, dir))
	}
	if env == nil {
		env = os.Environ()
	}
	pathList := "/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList = v
		}
	}
	var denied error
	for _, d := range strings.Split(pathList, ":") { // as execvp: an empty entry is "."
		if d == "" {
			d = "."
		}
		code, err := checkExecutable(inDir(filepath.Join(d, file), dir))
		if err == nil {
			return 0, nil
		}
		if code == exitNotExecutable && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return exitNotExecutable, denied
	}
	return exitNotFound, fmt.Errorf("%s: %w", file, exec.ErrNotFound)
}

func inDir(p, dir string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func checkExecutable(p string) (int, error) {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exitNotFound, fmt.Errorf("%s: %w", p, err)
	case err != nil:
		return exitNotExecutable, fmt.Errorf("%s: %w", p, err)
	case fi.IsDir():
		return exitNotExecutable, fmt.Errorf("%s: is a directory", p)
	case fi.Mode().Perm()&0o111 == 0:
		return exitNotExecutable, fmt.Errorf("%s: %w", p, fs.ErrPermission)
	}
	return 0, nil
}
