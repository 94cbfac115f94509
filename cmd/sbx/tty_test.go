//go:build linux

package main

// The command's own terminal (--tty): sbx runs on a pseudo-terminal the
// test opens and drives (the test is the terminal emulator), so the test
// types, resizes and reads exactly what a user's terminal would.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ttyRun is sbx running with a test pty as its controlling terminal and
// its standard input, output and error.
type ttyRun struct {
	t     *testing.T
	m, s  *os.File
	cmd   *exec.Cmd
	modes *unix.Termios // the terminal's modes before sbx started
	mu    sync.Mutex
	out   bytes.Buffer // everything read from the master
	done  chan struct{}
	code  int
}

// startTTY starts sbx args on a fresh pty of rows x cols, as the leader
// of a session whose controlling terminal is that pty (sbx is then in
// its foreground process group, as under a shell). It is killed after
// 60 s at most, and at the test's end.
func startTTY(t *testing.T, rows, cols uint16, args ...string) *ttyRun {
	t.Helper()
	m, s := openPty(t)
	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	modes, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r := &ttyRun{t: t, m: m, s: s, modes: modes, done: make(chan struct{})}
	r.cmd = exec.Command(sbxBin, args...)
	r.cmd.Dir = t.TempDir()
	r.cmd.Env = append(hermeticEnv(), "PS1=$ ", "TERM=dumb")
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = s, s, s
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting sbx: %v", err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		r.code = exitCode(t, r.cmd, r.cmd.Wait())
		close(r.done)
	}()
	kill := time.AfterFunc(60*time.Second, func() { _ = r.cmd.Process.Kill() })
	t.Cleanup(func() {
		kill.Stop()
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// output is everything the terminal showed so far.
func (r *ttyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// typeText writes s to the terminal, as typed.
func (r *ttyRun) typeText(s string) {
	r.t.Helper()
	if _, err := r.m.WriteString(s); err != nil {
		r.t.Fatalf("typing %q: %v", s, err)
	}
}

// expect waits (10 s at most) until re matches the output after the
// offset from, returning the offset past the match. retry, when not
// nil, is called every second while waiting (to type again).
func (r *ttyRun) expect(from int, re string, retry func()) int {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(10 * time.Second)
	next := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		out := r.output()
		if from > len(out) {
			from = len(out)
		}
		if loc := rx.FindStringIndex(out[from:]); loc != nil {
			return from + loc[1]
		}
		select {
		case <-r.done:
			if loc := rx.FindStringIndex(r.output()[from:]); loc != nil {
				return from + loc[1]
			}
			r.t.Fatalf("sbx ended (exit %d) before %q showed; the terminal showed:\n%s", r.code, re, r.output())
		case <-time.After(20 * time.Millisecond):
		}
		if retry != nil && time.Now().After(next) {
			retry()
			next = time.Now().Add(time.Second)
		}
	}
	r.t.Fatalf("%q never showed; the terminal showed:\n%s", re, r.output())
	return 0
}

// wait waits (20 s at most) for sbx to end and returns its exit status.
func (r *ttyRun) wait() int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		r.t.Fatalf("sbx did not end; the terminal showed:\n%s", r.output())
	}
	// The reader gets the last output before EIO: drain it.
	time.Sleep(50 * time.Millisecond)
	return r.code
}

// restored checks that the terminal's modes are what they were before
// sbx put it in raw mode.
func (r *ttyRun) restored() {
	r.t.Helper()
	now, err := unix.IoctlGetTermios(int(r.s.Fd()), unix.TCGETS)
	if err != nil {
		r.t.Fatal(err)
	}
	if *now != *r.modes {
		r.t.Errorf("the terminal's modes were not restored: before %+v, after %+v", *r.modes, *now)
	}
}

// state is the process state letter of pid ("T": stopped).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// TestTTYOwnTerminal: with --tty the command's standard descriptors are
// a terminal of the sandbox's own devpts (the caller's terminal never
// enters the sandbox), which is the controlling terminal of the command,
// the leader of its session and of the terminal's foreground group; the
// exit status is the command's, and the caller's terminal is left as it
// was.
func TestTTYOwnTerminal(t *testing.T) {
	r := startTTY(t, 24, 80, "--tty", "--", "/bin/sh", "-c", `tty; ls /dev/pts | tr '\n' ' '; echo
for fd in 0 1 2; do test -t $fd && echo "fd$fd-is-tty"; done
read -r pid comm state ppid pgrp sid ttynr tpgid rest < /proc/$$/stat
[ "$sid" = $$ ] && echo session-leader
[ "$ttynr" != 0 ] && [ "$tpgid" = $$ ] && echo ctty-foreground
( : </dev/tty ) 2>/dev/null && echo dev-tty-opens
exit 7`)
	if code := r.wait(); code != 7 {
		t.Errorf("exit %d, want the command's 7; the terminal showed:\n%s", code, r.output())
	}
	out := r.output()
	if !regexp.MustCompile(`(?m)^/dev/pts/\d+\r?$`).MatchString(out) {
		t.Errorf("tty did not name a terminal of the sandbox's devpts:\n%s", out)
	}
	// The private devpts holds the command's terminal and nothing of
	// the host's.
	if !regexp.MustCompile(`(?m)^0 ptmx \r?$`).MatchString(out) {
		t.Errorf("/dev/pts is not the sandbox's own devpts with one terminal:\n%s", out)
	}
	for _, w := range []string{"fd0-is-tty", "fd1-is-tty", "fd2-is-tty", "session-leader", "ctty-foreground", "dev-tty-opens"} {
		if !strings.Contains(out, w) {
			t.Errorf("no %s:\n%s", w, out)
		}
	}
	r.restored()
}

// TestTTYJobControl: an interactive bash under --tty is its terminal's
// session leader with job control, and ^Z stops its foreground job
// inside the sandbox, not sbx: the host terminal is raw, so ^Z is a byte
// that the inner terminal's line discipline turns into SIGTSTP.
func TestTTYJobControl(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	r := startTTY(t, 24, 80, "--tty", "--", "bash", "--norc", "--noprofile", "-i")
	// The words are split so that the echo of the typed line cannot match.
	r.typeText(`printf 'JOB%s\n' "$(case $- in *m*) echo CTL-ON;; *) echo CTL-OFF;; esac)"` + "\r")
	at := r.expect(0, `JOBCTL-O(N|FF)`, nil)
	if out := r.output(); !strings.Contains(out, "JOBCTL-ON") {
		t.Fatalf("bash -i has no job control (set -o monitor is off):\n%s", out)
	}
	r.typeText("printf 'SLEEP%s\\n' ING; sleep 30\r")
	at = r.expect(at, `SLEEPING`, nil)
	time.Sleep(300 * time.Millisecond) // bash forks sleep right after the printf
	r.typeText("\x1a")
	at = r.expect(at, `Stopped\s+sleep 30`, func() { r.typeText("\x1a") })
	if st := procState(r.cmd.Process.Pid); st != "S" && st != "R" {
		t.Errorf("sbx is in state %q, want running (S or R): the ^Z reached sbx", st)
	}
	r.typeText("kill %1\r")
	at = r.expect(at, `Terminated`, func() { r.typeText("jobs\r") })
	r.typeText("exit\r")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d, want 0; the terminal showed:\n%s", code, r.output())
	}
	out := r.output()
	for _, bad := range []string{"no job control", "cannot set terminal process group"} {
		if strings.Contains(out, bad) {
			t.Errorf("bash said %q:\n%s", bad, out)
		}
	}
	r.restored()
}

// TestTTYWindowSize: the command's terminal starts with the caller's
// size and follows it: a resize of the caller's terminal (which signals
// sbx, its foreground job, with SIGWINCH) reaches the command's.
func TestTTYWindowSize(t *testing.T) {
	r := startTTY(t, 33, 101, "--tty", "--", "/bin/sh", "-i")
	stty := func() { r.typeText("stty size\r") }
	stty()
	at := r.expect(0, `(?m)^33 101\r?$`, stty)
	if err := unix.IoctlSetWinsize(int(r.m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 44, Col: 120}); err != nil {
		t.Fatal(err)
	}
	stty()
	r.expect(at, `(?m)^44 120\r?$`, stty)
	r.typeText("exit\r")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d, want 0; the terminal showed:\n%s", code, r.output())
	}
	r.restored()
}

// TestTTYAllowPtyTerminal: --allow-pty with a terminal on standard input
// and output asks for the command's own terminal too; with standard
// output a pipe it does not (the output stays a pipe).
func TestTTYAllowPtyTerminal(t *testing.T) {
	r := startTTY(t, 24, 80, "--allow-pty", "--", "/bin/sh", "-c", "tty")
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; the terminal showed:\n%s", code, r.output())
	}
	if out := r.output(); !regexp.MustCompile(`(?m)^/dev/pts/\d+\r?$`).MatchString(out) {
		t.Errorf("--allow-pty on a terminal: the command has no terminal of its own:\n%s", out)
	}
	r.restored()

	_, s := openPty(t)
	cmd := exec.Command(sbxBin, "--allow-pty", "--", "/bin/sh", "-c", "test -t 1 || echo out-is-not-a-tty")
	cmd.Stdin = s
	res := runCmd(t, cmd)
	wantCode(t, res, 0)
	if !strings.Contains(res.stdout, "out-is-not-a-tty") {
		t.Errorf("--allow-pty with standard output a pipe: the output became a terminal\n%s", res)
	}
}

// TestTTYRefused: --tty without a terminal on standard input, or with
// the weaker mode (which has no private devpts), exits 125 with one
// line and runs nothing.
func TestTTYRefused(t *testing.T) {
	dir := t.TempDir()
	marker := dir + "/ran"
	r := sbx(t, runOpts{dir: dir}, "--tty", "--allow-write", dir, "--", "/bin/sh", "-c", "touch "+marker)
	wantCode(t, r, 125)
	if !strings.Contains(r.stderr, "--tty: standard input is not a terminal") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("want one line naming --tty and the missing terminal\n%s", r)
	}

	_, s := openPty(t)
	cmd := exec.Command(sbxBin, "--tty", "--weaker-nested", "--allow-write", dir, "--", "/bin/sh", "-c", "touch "+marker)
	cmd.Stdin, cmd.Dir = s, dir
	r = runCmd(t, cmd)
	wantCode(t, r, 125)
	if !strings.Contains(r.stderr, "--tty") || !strings.Contains(r.stderr, "--weaker-nested") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("want one line naming --tty and --weaker-nested\n%s", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a refused run ran the command")
	}
}

// TestTTYTIOCSTI: the command's own terminal does not lift the refusal
// of TIOCSTI (pushing input into a terminal, CVE-2017-5226).
func TestTTYTIOCSTI(t *testing.T) {
	r := startTTY(t, 24, 80, "--tty", "--", attackBin, "tiocsti")
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; the terminal showed:\n%s", code, r.output())
	}
	res := result{stdout: strings.ReplaceAll(r.output(), "\r\n", "\n")}
	want(t, res, "stdin_tty", "OK")
	want(t, res, "tiocsti", "EPERM")
	want(t, res, "tiocsti_high", "EPERM")
	r.restored()
}

// TestTTYRestoredOnEveryEnd: the caller's terminal gets its modes back
// however the run ends: the timeout, a signal sbx forwards, a command
// that cannot be started.
func TestTTYRestoredOnEveryEnd(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		r := startTTY(t, 24, 80, "--tty", "--timeout", "1s", "--", "/bin/sh", "-c", "sleep 30")
		if code := r.wait(); code != 124 {
			t.Errorf("exit %d, want 124; the terminal showed:\n%s", code, r.output())
		}
		r.restored()
	})
	t.Run("signal", func(t *testing.T) {
		r := startTTY(t, 24, 80, "--tty", "--", "/bin/sh", "-c", "printf 'REA%s\\n' DY; sleep 30")
		r.expect(0, "READY", nil)
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(); code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d, want %d; the terminal showed:\n%s", code, 128+int(syscall.SIGTERM), r.output())
		}
		r.restored()
	})
	t.Run("not-found", func(t *testing.T) {
		r := startTTY(t, 24, 80, "--tty", "--", "/nonexistent/command")
		if code := r.wait(); code != 127 {
			t.Errorf("exit %d, want 127; the terminal showed:\n%s", code, r.output())
		}
		r.restored()
	})
}

// TestTTYContinued: a shell that stops sbx takes its terminal back and
// resets its modes; when sbx is continued it makes the terminal raw
// again, so that ^C and ^Z keep reaching the command's terminal.
func TestTTYContinued(t *testing.T) {
	r := startTTY(t, 24, 80, "--tty", "--", "/bin/sh", "-c", "printf 'REA%s\\n' DY; sleep 30")
	r.expect(0, "READY", nil)
	isRaw := func() bool {
		m, err := unix.IoctlGetTermios(int(r.s.Fd()), unix.TCGETS)
		return err == nil && m.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) == 0
	}
	if !isRaw() {
		t.Fatal("the terminal is not in raw mode while the command runs")
	}
	pid := r.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500 && procState(pid) != "T"; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	// What the caller's shell does when its job stops: its own modes.
	if err := unix.IoctlSetTermios(int(r.s.Fd()), unix.TCSETS, r.modes); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !isRaw() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !isRaw() {
		t.Error("continued sbx did not make the terminal raw again")
	}
	r.typeText("\x03") // ^C: a byte the command's terminal turns into SIGINT
	if code := r.wait(); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d after ^C, want %d; the terminal showed:\n%s", code, 128+int(syscall.SIGINT), r.output())
	}
	r.restored()
}
