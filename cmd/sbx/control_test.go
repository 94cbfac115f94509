//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestControlFD is srt's --control-fd: each line replaces the running
// sandbox's network lists; a bad line is reported and dropped; the
// descriptor never reaches the command.
func TestControlFD(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := fmt.Sprintf(`[ -e /proc/self/fd/7 ] && echo LEAKED
		echo "first:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/a)"
		read line < /dev/stdin
		echo "second:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/b)"
		read line < /dev/stdin
		echo "third:$(%[1]s --noproxy '' -s -o /dev/null -w '%%{http_code}' %[2]s/c)"`, curl, s.URL)
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
	next := func() string {
		if !out.Scan() {
			t.Fatalf("the command ended early; stderr: %s", stderr.String())
		}
		return out.Text()
	}
	// No network at first (the proxy runs, nothing is allowed).
	if l := next(); l != "first:403" {
		t.Fatalf("before any update: %q", l)
	}
	// A line that allows the server.
	fmt.Fprintf(pw, `{"network": {"allowedDomains": ["%s"]}}`+"\n", hp)
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(stdin)
	if l := next(); l != "second:200" {
		t.Fatalf("after allowing: %q (%s)", l, stderr.String())
	}
	// A bad line is dropped; then a line that closes it again.
	fmt.Fprintln(pw, `{"network": {"allowedDomains": ["*"]}}`)
	fmt.Fprintln(pw, `{"network": {"allowedDomains": [], "deniedDomains": ["*"]}}`)
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(stdin)
	if l := next(); l != "third:403" {
		t.Fatalf("after denying: %q", l)
	}
	stdin.Close()
	pw.Close()
	for out.Scan() {
		if strings.Contains(out.Text(), "LEAKED") {
			t.Fatal("the control descriptor reached the command")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sbx: %v; stderr %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--control-fd 7 line 2") || !strings.Contains(stderr.String(), "dropped") {
		t.Fatalf("the bad line was not reported: %s", stderr.String())
	}
	if c.n.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1", c.n.Load())
	}
	wantRefused(t, []string{"--control-fd", "2"}, []string{"--control-fd", "99"}, []string{"--control-fd", "9", "--net", "host"})
}
