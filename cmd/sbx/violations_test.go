//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/bench"
	"github.com/sbx-sh/sbx/violations"
)

// readRecords reads a --violations file, each line checked against the
// record schema.
func readRecords(t *testing.T, path string) []violations.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []violations.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		checkRecordLine(t, line)
		var r violations.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad record %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestViolationsNetwork: each proxy refusal is exactly one record with
// host, port and rule; an allowed request makes none.
func TestViolationsNetwork(t *testing.T) {
	curl := needTool(t, "curl")
	s, _ := httpServer(t, false)
	hp := hostPort(t, s.URL)
	vf := filepath.Join(t.TempDir(), "v.jsonl")

	r := sbx(t, runOpts{}, "--violations", vf, "--allow-domain", hp, "--deny-domain", "bad.example",
		"--", curl, "-s", "-o", "/dev/null", s.URL+"/fine", "http://bad.example/", "http://other.example:8080/")
	wantCode(t, r, 0)
	recs := readRecords(t, vf)
	if len(recs) != 2 {
		t.Fatalf("want 2 records, got %d: %+v\n%s", len(recs), recs, r)
	}
	want := []struct {
		host string
		port int
		rule string
	}{{"bad.example", 80, "bad.example"}, {"other.example", 8080, "default-deny"}}
	for i, w := range want {
		got := recs[i]
		if got.Kind != "network" || got.Action != "deny" || got.Source != "proxy" || got.Host != w.host || got.Port != w.port || got.Rule != w.rule || got.Time.IsZero() || !strings.Contains(got.Command, "sbx ") {
			t.Errorf("record %d: %+v, want host %s port %d rule %s", i, got, w.host, w.port, w.rule)
		}
	}
	st, err := os.Stat(vf)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("violations file mode: %v %v", st.Mode(), err)
	}
	if !strings.Contains(r.stderr, "2 violations") {
		t.Errorf("no summary on stderr: %s", r)
	}

	// Appended, not truncated; --quiet-violations silences the summary;
	// --fail-on-violation turns a clean exit into 123.
	r = sbx(t, runOpts{}, "--violations", vf, "--quiet-violations", "--fail-on-violation", "--allow-domain", hp,
		"--", curl, "-s", "-o", "/dev/null", "http://bad.example/")
	wantCode(t, r, ExitViolation)
	if r.stderr != "" {
		t.Errorf("--quiet-violations printed: %q", r.stderr)
	}
	if n := len(readRecords(t, vf)); n != 3 {
		t.Fatalf("want 3 records after appending, got %d", n)
	}

	// A clean run: no records, no summary, exit 0 even with
	// --fail-on-violation.
	clean := filepath.Join(t.TempDir(), "clean.jsonl")
	r = sbx(t, runOpts{}, "--violations", clean, "--fail-on-violation", "--allow-domain", hp, "--", curl, "-sS", "-o", "/dev/null", s.URL+"/ok")
	wantCode(t, r, 0)
	if n := len(readRecords(t, clean)); n != 0 || r.stderr != "" {
		t.Fatalf("clean run reported %d records: %s", n, r)
	}

	// ignoreViolations from a settings file.
	set := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, set, `{"network":{"allowedDomains":["`+hp+`"],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},"ignoreViolations":{"*":["ignored.example"]}}`)
	ign := filepath.Join(t.TempDir(), "ign.jsonl")
	r = sbx(t, runOpts{}, "--settings", set, "--violations", ign, "--", curl, "-s", "-o", "/dev/null", "http://ignored.example/", "http://seen.example/")
	wantCode(t, r, 0)
	recs = readRecords(t, ign)
	if len(recs) != 1 || recs[0].Host != "seen.example" {
		t.Fatalf("ignoreViolations: %+v", recs)
	}
}

func TestViolationsBadOptions(t *testing.T) {
	wantRefused(t,
		[]string{"--violations-format", "xml"},
		[]string{"--violations-fd", "97"},
		[]string{"--violations", "/nonexistent-dir/v.jsonl"},
	)
}

// TestViolationsSyscalls: each refused call fails with EPERM in the
// command and makes exactly one record naming the call.
func TestViolationsSyscalls(t *testing.T) {
	for _, c := range []struct{ probe, syscall, detail string }{
		{"ptrace", "ptrace", "PTRACE_SEIZE"},
		{"process_vm_readv", "process_vm_readv", ""},
		{"unshare", "unshare", "CLONE_NEWUSER"},
		{"mount", "mount", "/nonexistent-sbx-probe"},
		{"socket_packet", "socket", "AF_PACKET"},
		{"tiocsti", "ioctl", "TIOCSTI"},
	} {
		t.Run(c.probe, func(t *testing.T) {
			vf := filepath.Join(t.TempDir(), "v.jsonl")
			r := sbx(t, runOpts{}, "--violations", vf, "--", attackBin, "deny", c.probe)
			wantCode(t, r, 0)
			want(t, r, "deny "+c.probe, "EPERM")
			recs := readRecords(t, vf)
			if len(recs) != 1 {
				t.Fatalf("want 1 record, got %+v", recs)
			}
			g := recs[0]
			if g.Kind != "syscall" || g.Source != "seccomp" || g.Syscall != c.syscall || !strings.Contains(g.Detail, c.detail) || g.PID == 0 || g.Exe != attackBin {
				t.Fatalf("record: %+v", g)
			}
		})
	}
}

// TestProbesNotViolations: io_uring_setup, libuv's feature probe
// (seccomp.Probes), is refused with EPERM whoever calls it — the attack
// binary here — but it is no violation: no record, no summary, and
// --fail-on-violation exits 0. --violations-probes writes it, marked,
// and it still does not count.
func TestProbesNotViolations(t *testing.T) {
	vf := filepath.Join(t.TempDir(), "v.jsonl")
	r := sbx(t, runOpts{}, "--violations", vf, "--fail-on-violation", "--", attackBin, "deny", "io_uring_setup")
	wantCode(t, r, 0)
	want(t, r, "deny io_uring_setup", "EPERM")
	if n := len(readRecords(t, vf)); n != 0 || r.stderr != "" {
		t.Fatalf("the probe was reported: %d records, %s", n, r)
	}
	// io_uring_enter is no probe: without a ring it has nothing to act
	// on, and a program making it anyway is reported.
	vf = filepath.Join(t.TempDir(), "v.jsonl")
	r = sbx(t, runOpts{}, "--violations", vf, "--fail-on-violation", "--", attackBin, "deny", "io_uring_enter")
	wantCode(t, r, ExitViolation)
	want(t, r, "deny io_uring_enter", "EPERM")
	if recs := readRecords(t, vf); len(recs) != 1 || recs[0].Syscall != "io_uring_enter" || recs[0].Probe {
		t.Fatalf("want one io_uring_enter record, got %+v\n%s", recs, r)
	}
	vf = filepath.Join(t.TempDir(), "v.jsonl")
	r = sbx(t, runOpts{}, "--violations", vf, "--violations-probes", "--fail-on-violation", "--", attackBin, "deny", "io_uring_setup")
	wantCode(t, r, 0)
	want(t, r, "deny io_uring_setup", "EPERM")
	recs := readRecords(t, vf)
	if len(recs) != 1 || !recs[0].Probe || recs[0].Syscall != "io_uring_setup" || recs[0].Kind != "syscall" || r.stderr != "" {
		t.Fatalf("--violations-probes: want one marked record and no summary, got %+v\n%s", recs, r)
	}
}

// TestUnixSocketAllowList: host Unix sockets are unreachable by default;
// a listed one is reachable, and no other — not through a symlink either
// — and each refusal is one record.
func TestUnixSocketAllowList(t *testing.T) {
	dir := t.TempDir()
	serve := func(name string) (string, *counter) {
		p := filepath.Join(dir, name)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		os.Chmod(p, 0o777)
		c := &counter{}
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				c.add("conn")
				fmt.Fprintln(conn, "hello from the host socket")
				conn.Close()
			}
		}()
		return p, c
	}
	allowed, ac := serve("allowed.sock")
	other, oc := serve("other.sock")
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	base := append([]string{"--allow-read", dir}, probeDir()...)

	// Default: no Unix sockets at all.
	r := sbx(t, runOpts{}, append(base, "--", attackBin, "unix", allowed)...)
	wantCode(t, r, 0)
	want(t, r, "unix "+allowed, "EPERM")

	vf := filepath.Join(t.TempDir(), "v.jsonl")
	r = sbx(t, runOpts{}, append(append(base, "--violations", vf, "--allow-unix-socket", allowed), "--", attackBin, "unix", allowed, other, link)...)
	wantCode(t, r, 0)
	want(t, r, "unix "+allowed, "OK")
	want(t, r, "unix "+other, "EACCES")
	want(t, r, "unix "+link, "EACCES")
	if !strings.Contains(r.stdout, "hello from the host socket") || ac.n.Load() != 1 || oc.n.Load() != 0 {
		t.Fatalf("allowed %d, other %d: %s", ac.n.Load(), oc.n.Load(), r)
	}
	recs := readRecords(t, vf)
	if len(recs) != 2 || recs[0].Kind != "unix-socket" || recs[0].Path != other || recs[1].Path != link || recs[1].Resolved != other {
		t.Fatalf("records: %+v", recs)
	}

	// TCP through the proxy still works with the allow-list (every
	// connect goes through the supervisor then).
	curl := needTool(t, "curl")
	s, _ := httpServer(t, false)
	r = sbx(t, runOpts{}, "--allow-unix-socket", allowed, "--allow-domain", hostPort(t, s.URL), "--", curl, "-sS", "--max-time", "10", s.URL+"/tcp")
	wantCode(t, r, 0)

	// Everything allowed: both reachable.
	r = sbx(t, runOpts{}, append(append(base, "--allow-all-unix-sockets"), "--", attackBin, "unix", allowed, other)...)
	want(t, r, "unix "+other, "OK")
	if oc.n.Load() != 1 {
		t.Fatalf("control: other.sock not reached with --allow-all-unix-sockets: %s", r)
	}
}

// TestCleanGoBuildNoRecords: a real workload that stays inside its
// policy — build and test a small Go module in a writable directory (not
// a git repository: sbx pins the missing .git with a stub) — succeeds and
// produces no record at all.
func TestCleanGoBuildNoRecords(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	w := t.TempDir()
	writeFile(t, filepath.Join(w, "go.mod"), "module example.com/clean\n\ngo 1.21\n")
	writeFile(t, filepath.Join(w, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc add(a, b int) int { return a + b }\n\nfunc main() { fmt.Println(add(2, 3)) }\n")
	writeFile(t, filepath.Join(w, "main_test.go"), "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif add(2, 3) != 5 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n")
	vf := filepath.Join(t.TempDir(), "v.jsonl")
	goroot, _ := exec.Command(goBin, "env", "GOROOT").Output()
	// The test's own build cache (already holding the standard library),
	// allowed for writing like any build cache a user would allow.
	out, _ := exec.Command(goBin, "env", "GOCACHE").Output()
	cache := strings.TrimSpace(string(out))
	if st, err := os.Stat(cache); err != nil || !st.IsDir() {
		cache = filepath.Join(w, ".cache")
		os.MkdirAll(cache, 0o755)
	}
	env := []string{
		"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin",
		"HOME=" + w, "XDG_CONFIG_HOME=" + filepath.Join(w, ".config"),
		"GOCACHE=" + cache, "GOPATH=" + filepath.Join(w, "gopath"),
		"GOROOT=" + strings.TrimSpace(string(goroot)), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod",
		"CGO_ENABLED=0", "GOTELEMETRY=off",
	}
	// Also with every file call observed: the observer must not take
	// the build's ordinary calls (and its ordinary failures: probing
	// for missing files, EEXIST) for refusals.
	for _, extra := range [][]string{nil, {"--observe-files", "all"}} {
		os.Remove(vf)
		args := append(append([]string{"--violations", vf, "--fail-on-violation", "--allow-write", w, "--allow-write", cache}, extra...),
			"--", "/bin/sh", "-c", "go build -o app . && ./app && go test -count=1 .")
		r := sbx(t, runOpts{dir: w, env: env}, args...)
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, "5\n") || !strings.Contains(r.stdout, "ok") {
			t.Fatalf("%q go build/test: %s", extra, r)
		}
		if recs := readRecords(t, vf); len(recs) != 0 {
			t.Fatalf("%q: a clean run made records: %+v", extra, recs)
		}
	}
}

// TestViolationsFileNotLeftOnFailure: when sbx refuses to start (here: a
// protected name that is a symlink in a writable place), the violations
// file it would have created is not left behind.
func TestViolationsFileNotLeftOnFailure(t *testing.T) {
	w := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(w, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	vf := filepath.Join(t.TempDir(), "v.jsonl")
	r := sbx(t, runOpts{dir: w}, "--violations", vf, "--allow-write", w, "--", "/bin/echo", "ran")
	wantCode(t, r, 125)
	if _, err := os.Lstat(vf); err == nil {
		t.Fatalf("violations file left behind after a refused start: %s", r)
	}
}

// TestViolationsFlood: 100k refused calls against a sink that stops
// reading. The command finishes, the supervisor's memory stays bounded
// (no record per denial kept), and every denial is either recorded or
// counted as dropped in the summary.
func TestViolationsFlood(t *testing.T) {
	const n = 100000
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command(sbxBin, "--violations-fd", "3", "--", attackBin, "flood", strconv.Itoa(n))
	cmd.Dir = t.TempDir()
	cmd.ExtraFiles = []*os.File{pw}
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("sbx: %v\n%s", err, se.String())
			}
			running = false
		case <-time.After(20 * time.Millisecond):
			if kb := bench.VmHWM(cmd.Process.Pid); kb > peak {
				peak = kb
			}
		}
	}
	if !strings.Contains(so.String(), fmt.Sprintf("flood: OK %d", n)) {
		t.Fatalf("the command did not see every call refused: %q", so.String())
	}
	// Nothing read the pipe while sbx ran: read what it holds now.
	pr.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, _ := io.ReadAll(pr)
	written := strings.Count(string(got), "\n")
	var total, dropped int
	for _, line := range strings.Split(se.String(), "\n") {
		var k int
		if _, err := fmt.Sscanf(line, "sbx: %d violations", &k); err == nil {
			total = k
		}
		if _, err := fmt.Sscanf(line, "sbx: %d more not recorded", &k); err == nil {
			dropped = k
		}
	}
	if dropped == 0 || total+dropped != n || written > total {
		t.Fatalf("total %d + dropped %d != %d (pipe got %d lines); stderr:\n%s", total, dropped, n, written, se.String())
	}
	// A record kept per denial would be tens of MB here.
	if peak > 40<<10 {
		t.Fatalf("supervisor peak RSS %d kB: memory is not bounded", peak)
	}
	t.Logf("recorded %d (pipe held %d), dropped %d, supervisor peak RSS %d kB", total, written, dropped, peak)
}
