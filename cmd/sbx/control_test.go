//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestControlFD is srt's --control-fd: each line replaces the running
// sandbox's network lists; a bad line is reported and dropped; the
// descriptor never reaches the command. On a socket each line is
// acknowledged once it is decided, which is what the test waits for
// before the command's next step (no fixed wait that load could outrun).
func TestControlFD(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := fmt.Sprintf(`[ -e /proc/self/fd/7 ] && echo LEAKED
		echo "first:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/a)"
		read line < /dev/stdin
		echo "second:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/b)"
		read line < /dev/stdin
		echo "third:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/c)"`, curl, s.URL)
	r := startControlled(t, ctx, nil, "--", "/bin/sh", "-c", script)
	// No network at first (the proxy runs, nothing is allowed).
	if l := r.next(t); l != "first:403" {
		t.Fatalf("before any update: %q", l)
	}
	// A line that allows the server.
	r.step(t, fmt.Sprintf(`{"network": {"allowedDomains": ["%s"]}}`, hp))
	if l := r.next(t); l != "second:200" {
		t.Fatalf("after allowing: %q (%s)", l, r.stderr.String())
	}
	// A bad line is dropped (and acknowledged as such); then a line that
	// closes it again.
	if a := r.send(t, `{"network": {"allowedDomains": ["*"]}}`); a.Applied || a.Line != 2 || !strings.Contains(a.Error, "allowedDomains") {
		t.Fatalf("the bad line's acknowledgment: %+v", a)
	}
	r.step(t, `{"network": {"allowedDomains": [], "deniedDomains": ["*"]}}`)
	if l := r.next(t); l != "third:403" {
		t.Fatalf("after denying: %q", l)
	}
	r.close()
	for r.out.Scan() {
		if strings.Contains(r.out.Text(), "LEAKED") {
			t.Fatal("the control descriptor reached the command")
		}
	}
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("sbx: %v; stderr %s", err, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "--control-fd 7 line 2") || !strings.Contains(r.stderr.String(), "dropped") {
		t.Fatalf("the bad line was not reported: %s", r.stderr.String())
	}
	if c.n.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1", c.n.Load())
	}
	wantRefused(t, []string{"--control-fd", "2"}, []string{"--control-fd", "99"}, []string{"--control-fd", "9", "--net", "host"})
}

// TestControlFDLoopbackLiteral: a loopback IP literal allowed by a
// --control-fd line mid-run is reachable for a client that honours the
// proxy variables (plain curl, no --noproxy): NO_PROXY does not send the
// loopback names around the proxy when the command cannot use its own
// loopback anyway. Before the line the same request is refused by the
// proxy, and recorded.
func TestControlFDLoopbackLiteral(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	if !strings.HasPrefix(hp, "127.0.0.1:") {
		t.Fatalf("the test server is not on 127.0.0.1: %s", hp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	vf := t.TempDir() + "/v.jsonl"
	script := fmt.Sprintf(`echo "first:$(%[1]s -s -o /dev/null -w '%%{http_code}' %[2]s/a)"
		read line < /dev/stdin
		echo "second:$(%[1]s -s -o /dev/null -w '%%{http_code}' %[2]s/b)"`, curl, s.URL)
	r := startControlled(t, ctx, hermeticEnv(), "--violations", vf, "--", "/bin/sh", "-c", script)
	if l := r.next(t); l != "first:403" {
		t.Fatalf("before the update: want the proxy's 403, got %q (%s)", l, r.stderr.String())
	}
	r.step(t, fmt.Sprintf(`{"network": {"allowedDomains": ["%s"]}}`, hp))
	if l := r.next(t); l != "second:200" {
		t.Fatalf("after allowing %s: %q (%s)", hp, l, r.stderr.String())
	}
	r.close()
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("sbx: %v; stderr %s", err, r.stderr.String())
	}
	if c.n.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1", c.n.Load())
	}
	recs := readRecords(t, vf)
	if len(recs) != 1 || recs[0].Kind != "network" || recs[0].Host != "127.0.0.1" {
		t.Fatalf("want one network record for the first request, got %+v", recs)
	}
}

// TestNoProxyOwnLoopback: NO_PROXY is empty when the command cannot use
// the sandbox's own loopback, and names it with --allow-local-binding,
// where a server the command starts inside is reachable directly (the
// allowed path).
func TestNoProxyOwnLoopback(t *testing.T) {
	curl := needTool(t, "curl")
	py := needTool(t, "python3")
	r := sh(t, runOpts{}, `echo "[$NO_PROXY][$no_proxy]"`, "--allow-domain", "allowed.example")
	if r.code != 0 || r.stdout != "[][]\n" {
		t.Fatalf("without --allow-local-binding: want an empty NO_PROXY: %s", r)
	}
	script := fmt.Sprintf(`echo "[$NO_PROXY]"
		%[1]s -c 'import http.server as h; h.HTTPServer(("127.0.0.1", 8765), h.SimpleHTTPRequestHandler).handle_request()' &
		%[2]s -s -o /dev/null -w '%%{http_code}\n' --retry 20 --retry-delay 0 --retry-connrefused http://127.0.0.1:8765/
		wait`, py, curl)
	r = sh(t, runOpts{}, script, "--allow-domain", "allowed.example", "--allow-local-binding")
	if r.code != 0 || r.stdout != "[localhost,127.0.0.1,::1]\n200\n" {
		t.Fatalf("--allow-local-binding: want NO_PROXY naming the own loopback and the inside server reached: %s", r)
	}
}

// TestControlFDPipe: srt's callers pass a pipe, which carries no
// acknowledgment; an update still takes effect, as the command sees by
// retrying until the server answers (with its own bound, no fixed wait).
func TestControlFDPipe(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	script := fmt.Sprintf(`echo "first:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/a)"
		read line < /dev/stdin
		for i in $(seq 400); do
			code=$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/b)
			[ "$code" = 200 ] && break
			sleep 0.1
		done
		echo "second:$code"`, curl, s.URL)
	cmd := exec.CommandContext(ctx, sbxBin, "--control-fd", "7", "--", "/bin/sh", "-c", script)
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, pr}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "first:403" {
		t.Fatalf("before the update: %q (%s)", out.Text(), stderr.String())
	}
	fmt.Fprintf(pw, `{"network": {"allowedDomains": ["%s"]}}`+"\n", hp)
	fmt.Fprintln(stdin)
	if !out.Scan() || out.Text() != "second:200" {
		t.Fatalf("after the update: %q (%s)", out.Text(), stderr.String())
	}
	stdin.Close()
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sbx: %v; stderr %s", err, stderr.String())
	}
	if c.n.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1", c.n.Load())
	}
}

// controlled is a run of sbx with --control-fd 7 (a socket, which
// carries the acknowledgments) whose command prints one line per step
// and reads a line from its stdin between steps.
type controlled struct {
	cmd    *exec.Cmd
	ctl    *os.File // the control socket's other end
	acks   *bufio.Reader
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
}

// startControlled starts sbx --control-fd 7 ARGS (env nil: the test's
// own environment); the run ends with ctx or close.
func startControlled(t *testing.T, ctx context.Context, env []string, args ...string) *controlled {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control-sbx")
	t.Cleanup(func() { mine.Close() })
	defer theirs.Close()
	c := &controlled{ctl: mine, acks: bufio.NewReader(mine), stderr: &strings.Builder{}}
	c.cmd = exec.CommandContext(ctx, sbxBin, append([]string{"--control-fd", "7"}, args...)...)
	c.cmd.Env = env
	c.cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, theirs}
	c.stdin, _ = c.cmd.StdinPipe()
	stdout, _ := c.cmd.StdoutPipe()
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewScanner(stdout)
	return c
}

// next is the command's next line; it fails the test if there is none.
func (c *controlled) next(t *testing.T) string {
	t.Helper()
	if !c.out.Scan() {
		t.Fatalf("the command ended early; stderr: %s", c.stderr.String())
	}
	return c.out.Text()
}

// controlAck is sbx's acknowledgment of one control line.
type controlAck struct {
	Line    int    `json:"line"`
	Applied bool   `json:"applied"`
	Error   string `json:"error"`
}

// send writes line on the control socket and returns sbx's
// acknowledgment of it (within 30 s).
func (c *controlled) send(t *testing.T, line string) controlAck {
	t.Helper()
	fmt.Fprintln(c.ctl, line)
	c.ctl.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := c.acks.ReadString('\n')
	if err != nil {
		t.Fatalf("no acknowledgment of %s: %v; stderr: %s", line, err, c.stderr.String())
	}
	var a controlAck
	if err := json.Unmarshal([]byte(l), &a); err != nil {
		t.Fatalf("acknowledgment %q: %v", l, err)
	}
	return a
}

// step sends line, waits until sbx says it is applied, then lets the
// command take its next step.
func (c *controlled) step(t *testing.T, line string) {
	t.Helper()
	if a := c.send(t, line); !a.Applied {
		t.Fatalf("%s not applied: %+v", line, a)
	}
	fmt.Fprintln(c.stdin)
}

// close ends the command's input and the control descriptor.
func (c *controlled) close() {
	c.stdin.Close()
	c.ctl.Close()
}
