//go:build unix

package darwin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The runner is OS-neutral: these tests run it on Linux with /bin/sh in
// place of sandbox-exec.

func sh(t *testing.T, ctx context.Context, script string, env []string, dir string) (int, string, error) {
	t.Helper()
	var out bytes.Buffer
	code, err := run(ctx, runSpec{
		name: "/bin/sh", args: []string{"-c", script}, env: env, dir: dir,
		stdin: strings.NewReader(""), stdout: &out, stderr: &out,
	})
	return code, out.String(), err
}

func TestRunExitStatus(t *testing.T) {
	ctx := context.Background()
	for script, want := range map[string]int{
		"exit 0":         0,
		"exit 3":         3,
		"kill -TERM $$":  128 + 15,
		"kill -KILL $$":  128 + 9,
		"exit 255":       255,
		"kill -USR1 $$":  128 + int(syscall.SIGUSR1),
		"true; exit 126": 126,
	} {
		code, out, err := sh(t, ctx, script, nil, "")
		if code != want || err != nil {
			t.Errorf("%q: %d, %v (%s); want %d", script, code, err, out, want)
		}
	}
}

func TestRunEnvDirAndSession(t *testing.T) {
	dir := t.TempDir()
	code, out, err := sh(t, context.Background(),
		`echo "$FOO"; pwd; ps -o sid= -p $$ 2>/dev/null || echo nops; echo $$`,
		[]string{"FOO=bar", "PATH=/usr/bin:/bin"}, dir)
	if code != 0 || err != nil {
		t.Fatalf("%d %v %s", code, err, out)
	}
	lines := strings.Fields(out)
	if len(lines) < 4 || lines[0] != "bar" {
		t.Fatalf("output %q", out)
	}
	if real, _ := filepath.EvalSymlinks(dir); lines[1] != dir && lines[1] != real {
		t.Errorf("pwd = %q, want %q", lines[1], dir)
	}
	if lines[2] != "nops" && lines[2] != lines[3] {
		t.Errorf("session id %s is not the shell's pid %s: no new session", lines[2], lines[3])
	}
}

func TestRunContextKillsGroup(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "survived")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The background child would outlive its shell unless the whole group dies.
	code, out, err := sh(t, ctx, `(sleep 2; touch `+marker+`) & sleep 30`, nil, "")
	if !errors.Is(err, context.DeadlineExceeded) || code != 128+9 {
		t.Fatalf("code %d err %v out %s", code, err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a background child survived the run")
	}
}

func TestRunKillsLeftovers(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "survived")
	code, _, err := sh(t, context.Background(), `(sleep 1; touch `+marker+`) >/dev/null 2>&1 & exit 4`, nil, "")
	if code != 4 || err != nil {
		t.Fatalf("%d %v", code, err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a background child outlived the command")
	}
}

func TestRunForwardsSignals(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, _, err = sh(t, context.Background(), `touch `+ready+`; sleep 30`, nil, "")
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, statErr := os.Stat(ready); statErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// run is notified of SIGTERM from before the command starts, so this
	// reaches the command, not the test binary.
	if killErr := syscall.Kill(os.Getpid(), syscall.SIGTERM); killErr != nil {
		t.Fatal(killErr)
	}
	<-done
	if code != 128+15 || err != nil {
		t.Errorf("code %d err %v, want 143", code, err)
	}
}

func TestRunStartFailure(t *testing.T) {
	code, err := run(context.Background(), runSpec{name: "/nonexistent/sandbox-exec"})
	if code != 125 || err == nil {
		t.Errorf("%d %v", code, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, err = run(ctx, runSpec{name: "/bin/true"})
	if code != 125 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before start: %d %v", code, err)
	}
}

func TestFindCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("tool", 0o755)
	write("data", 0o644)
	if err := os.Mkdir(filepath.Join(bin, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=/x", "PATH=/nonexistent:" + bin}
	for _, c := range []struct {
		file string
		env  []string
		dir  string
		want int
	}{
		{"tool", env, "", 0},
		{"missing", env, "", exitNotFound},
		{"data", env, "", exitNotExecutable},
		{"sub", env, "", exitNotExecutable},
		{bin + "/tool", nil, "", 0},
		{"bin/tool", nil, dir, 0},
		{"./bin/data", nil, dir, exitNotExecutable},
		{"./nope", nil, dir, exitNotFound},
		{"tool", []string{"PATH=bin"}, dir, 0},
		{"tool", []string{"PATH="}, bin, 0}, // an empty PATH entry is "."
		{"sh", []string{"HOME=/x"}, "", 0},  // no PATH: /usr/bin:/bin
		{"", env, "", exitNotFound},
	} {
		code, err := findCommand(c.file, c.env, c.dir)
		if code != c.want || (err == nil) != (c.want == 0) {
			t.Errorf("findCommand(%q, %q, %q) = %d, %v; want %d", c.file, c.env, c.dir, code, err, c.want)
		}
	}
	if _, err := findCommand("missing", env, ""); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("err = %v, want exec.ErrNotFound", err)
	}
}
