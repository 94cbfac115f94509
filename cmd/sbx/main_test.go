//go:build linux

package main

// Integration tests: they build sbx and run real commands under it, and
// assert on what the kernel allowed. They run as whichever user runs
// `go test` (CI runs the suite as root and as an unprivileged user).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	sbxBin    string // the sbx binary under test
	attackBin string // internal/attack, the test's own syscall prober
)

func TestMain(m *testing.M) {
	// The test binary links package main, and with it internal/oneproc's
	// GOMAXPROCS 1: the test process gets the runtime's default back.
	runtime.SetDefaultGOMAXPROCS()
	dir, err := os.MkdirTemp("", "sbx-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	_ = os.Chmod(dir, 0o755)
	sbxBin = filepath.Join(dir, "sbx")
	attackBin = filepath.Join(dir, "attack")
	recordLogPath = filepath.Join(dir, "records.jsonl")
	for _, b := range [][2]string{{sbxBin, "."}, {attackBin, "../../internal/attack"}} {
		if m, _ := filepath.Glob(filepath.Join(b[1], "*.go")); len(m) == 0 {
			continue
		}
		args := []string{"build", "-o", b[0]}
		if b[0] == sbxBin {
			// Every record any run writes also goes to recordLogPath,
			// checked against the schema at the end (schema_test.go).
			args = append(args, "-tags", "sbxrecordlog", "-ldflags", "-X main.recordLog="+recordLogPath)
		}
		out, err := exec.Command("go", append(args, b[1])...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b[1], err, out)
			os.RemoveAll(dir)
			os.Exit(2)
		}
	}
	code := m.Run()
	if !checkRecordLog(os.Stderr) && code == 0 {
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one finished sbx run.
type result struct {
	code           int
	stdout, stderr string
}

// runOpts adjust one sbx run.
type runOpts struct {
	dir   string     // working directory (default: a fresh temp dir)
	env   []string   // environment (default: os.Environ())
	stdin string     // standard input
	extra []*os.File // descriptors 3, 4, … of the sbx process
}

// sbx runs the sbx binary with args and waits (at most 60 s).
func sbx(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sbxBin, args...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	cmd.Env = o.env
	if cmd.Env == nil {
		cmd.Env = hermeticEnv()
	}
	cmd.Stdin = strings.NewReader(o.stdin)
	cmd.ExtraFiles = o.extra
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	return result{exitCode(t, cmd, cmd.Run()), so.String(), se.String()}
}

// exitCode is cmd's exit status in sbx's convention (128+N for signal N);
// any other failure to run is fatal.
func exitCode(t *testing.T, cmd *exec.Cmd, err error) int {
	t.Helper()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("running %q: %v", cmd.Args, err)
	}
	return 0
}

// hermeticEnv is the test's environment without proxy variables: sbx
// would send allowed traffic through a parent proxy they name.
func hermeticEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// sh runs a shell string under sbx with extra flags.
func sh(t *testing.T, o runOpts, script string, flags ...string) result {
	t.Helper()
	return sbx(t, o, append(append(append([]string{}, flags...), "--"), "/bin/sh", "-c", script)...)
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
}

// writeFile creates path (and parents) with content.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every path under dir (for "nothing left behind" checks).
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

// wantRefused runs sbx once per flag set, with a command that would print
// "ran", and checks that sbx refused each with exit 125 and one line on
// stderr, and ran nothing.
func wantRefused(t *testing.T, flagSets ...[]string) {
	t.Helper()
	for _, flags := range flagSets {
		r := sbx(t, runOpts{}, append(append([]string{}, flags...), "--", "/bin/echo", "ran")...)
		if r.code != 125 || strings.Contains(r.stdout, "ran") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%q: want 125 and one line, got %s", flags, r)
		}
	}
}

func isRoot() bool { return os.Geteuid() == 0 }
