//go:build linux

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "noexec"), "#!/bin/sh\n")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"true", []string{"--", "true"}, 0},
		{"false", []string{"--", "false"}, 1},
		{"exit 7", []string{"-c", "exit 7"}, 7},
		{"signal", []string{"-c", "kill -TERM $$"}, 128 + 15},
		{"not found", []string{"--", "no-such-command-sbx"}, 127},
		{"not found path", []string{"--", "/no/such/file"}, 127},
		{"not executable", []string{"--", filepath.Join(dir, "noexec")}, 126},
		{"bad flag", []string{"--no-such-flag", "--", "true"}, 125},
		{"empty command", []string{"--"}, 125},
		{"empty -c", []string{"-c", " "}, 125},
		{"timeout", []string{"--timeout", "300ms", "--", "sleep", "30"}, 124},
		{"bad duration", []string{"--timeout", "soon", "--", "true"}, 125},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sbx(t, runOpts{dir: dir}, c.args...)
			wantCode(t, r, c.code)
			if c.code == 125 && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("sbx's own failure must be one line on stderr, got %q", r.stderr)
			}
		})
	}
}

func TestStdioPassThrough(t *testing.T) {
	r := sbx(t, runOpts{stdin: "hello\nworld\n"}, "--", "cat")
	wantCode(t, r, 0)
	if r.stdout != "hello\nworld\n" {
		t.Fatalf("cat through sbx: %q", r.stdout)
	}
	r = sh(t, runOpts{}, "echo out; echo err >&2")
	if r.stdout != "out\n" || r.stderr != "err\n" {
		t.Fatalf("stdout/stderr mixed up: %s", r)
	}
}

// TestStreamOneGiB sends 1 GiB through `sbx -- cat` and checks it arrives
// intact and is streamed (the first bytes come back before the input ends).
func TestStreamOneGiB(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const size = 1 << 30
	cmd := exec.Command(sbxBin, "--", "cat")
	cmd.Dir = t.TempDir()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	src := rand.New(rand.NewSource(1))
	hin := sha256.New()
	go func() {
		_, _ = io.CopyN(io.MultiWriter(in, hin), src, size)
		in.Close()
	}()
	hout := sha256.New()
	n, err := io.Copy(hout, out)
	if err != nil || cmd.Wait() != nil {
		t.Fatalf("copy: %v, wait: %v", err, cmd.Wait())
	}
	if n != size || string(hin.Sum(nil)) != string(hout.Sum(nil)) {
		t.Fatalf("got %d bytes, checksum match %v", n, string(hin.Sum(nil)) == string(hout.Sum(nil)))
	}
}

func TestReadOnlyRootPrivateTmp(t *testing.T) {
	marker := fmt.Sprintf("sbx-test-%d", rand.Int())
	hostFile := "/tmp/host-" + marker
	writeFile(t, hostFile, "host")
	defer os.Remove(hostFile)
	r := sh(t, runOpts{}, `
		cat `+hostFile+` 2>/dev/null && echo host-tmp-visible
		touch /etc/`+marker+` 2>/dev/null && echo etc-writable
		touch /usr/`+marker+` 2>/dev/null && echo usr-writable
		echo private > /tmp/`+marker+` && cat /tmp/`+marker)
	wantCode(t, r, 0)
	if r.stdout != "private\n" {
		t.Fatalf("unexpected: %s", r)
	}
	if _, err := os.Stat("/tmp/" + marker); err == nil {
		t.Fatal("the sandbox's /tmp reached the host's")
	}
}

func TestProcShowsOnlySandbox(t *testing.T) {
	r := sh(t, runOpts{}, `ls /proc | grep -c '^[0-9]'`)
	wantCode(t, r, 0)
	n, _ := strconv.Atoi(strings.TrimSpace(r.stdout))
	if n == 0 || n > 5 {
		t.Fatalf("want only the sandbox's few processes in /proc, got %d", n)
	}
}

func TestAllowWrite(t *testing.T) {
	w := t.TempDir()
	other := t.TempDir()
	r := sh(t, runOpts{dir: w}, `echo yes > written && mkdir -p sub/deep && echo x > sub/deep/f && echo no > `+other+`/f`, "--allow-write", ".")
	if r.code == 0 {
		t.Fatalf("write outside allowWrite succeeded: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "written")); string(b) != "yes\n" {
		t.Fatalf("write inside allowWrite did not reach the host: %s", r)
	}
	if _, err := os.Stat(filepath.Join(other, "f")); err == nil {
		t.Fatal("write outside allowWrite reached the host")
	}
}

func TestDenyWriteBeatsAllowWrite(t *testing.T) {
	w := t.TempDir()
	writeFile(t, filepath.Join(w, "locked", "f"), "orig")
	r := sh(t, runOpts{dir: w}, `echo x > ok; echo bad > locked/f; echo bad > locked/new`, "--allow-write", ".", "--deny-write", "locked")
	if b, _ := os.ReadFile(filepath.Join(w, "locked", "f")); string(b) != "orig" {
		t.Fatalf("denyWrite file changed: %s", r)
	}
	if _, err := os.Stat(filepath.Join(w, "locked", "new")); err == nil {
		t.Fatal("created a file inside denyWrite")
	}
	if _, err := os.Stat(filepath.Join(w, "ok")); err != nil {
		t.Fatalf("allowWrite outside denyWrite failed: %s", r)
	}
}

func TestDenyReadAndAllowRead(t *testing.T) {
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "secret", "key"), "s3cret")
	writeFile(t, filepath.Join(d, "secret", "public", "ok"), "visible")
	writeFile(t, filepath.Join(d, "plain"), "plain")
	r := sh(t, runOpts{dir: d}, `cat secret/key; ls secret; cat secret/public/ok; cat plain`, "--deny-read", "secret", "--allow-read", "secret/public")
	if strings.Contains(r.stdout, "s3cret") || strings.Contains(r.stdout, "key") {
		t.Fatalf("denied file readable: %s", r)
	}
	if !strings.Contains(r.stdout, "visible") || !strings.Contains(r.stdout, "plain") {
		t.Fatalf("allowed files unreadable: %s", r)
	}
	// Control: without the deny rule the secret is readable.
	r = sh(t, runOpts{dir: d}, `cat secret/key`)
	if r.stdout != "s3cret" {
		t.Fatalf("control failed: %s", r)
	}
}

func TestDefaultCredentialPathsDenied(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE")
	writeFile(t, filepath.Join(home, ".aws", "credentials"), "AWSKEY")
	writeFile(t, filepath.Join(home, ".netrc"), "NETRC")
	env := append(os.Environ(), "HOME="+home)
	r := sh(t, runOpts{env: env}, `cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc 2>&1; true`)
	for _, s := range []string{"PRIVATE", "AWSKEY", "NETRC"} {
		if strings.Contains(r.stdout, s) {
			t.Fatalf("credential %s readable by default: %s", s, r)
		}
	}
	r = sh(t, runOpts{env: env}, `cat ~/.ssh/id_ed25519`, "--allow-read", "~/.ssh")
	if r.stdout != "PRIVATE" {
		t.Fatalf("--allow-read ~/.ssh did not re-open it: %s", r)
	}
}

func TestProtectedNames(t *testing.T) {
	w := t.TempDir()
	writeFile(t, filepath.Join(w, ".git", "hooks", "pre-commit.sample"), "sample")
	writeFile(t, filepath.Join(w, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(w, "a", "b", ".git", "hooks", "keep"), "")
	writeFile(t, filepath.Join(w, "a", ".bashrc"), "orig")
	before := snapshot(t, w)
	// w is HOME too: a missing .bashrc is pinned only there.
	r := sh(t, runOpts{dir: w, env: append(hermeticEnv(), "HOME="+w, "XDG_CACHE_HOME="+t.TempDir())}, `
		for p in .git/hooks/pre-commit .git/config a/b/.git/hooks/x a/.bashrc .mcp.json .vscode/settings.json .bashrc .claude/commands/x; do
			(echo evil > $p) 2>/dev/null && echo "WROTE $p"
		done
		mkdir .vscode 2>/dev/null && echo "MKDIR .vscode"
		mv .git .git-moved 2>/dev/null && echo "MOVED .git"
		mv a a-moved 2>/dev/null && echo "MOVED a"
		echo fine > normal.txt && echo ok`, "--allow-write", ".")
	wantProtectedKept(t, w, before, r)
	// --allow-git-config re-opens .git/config only.
	r = sh(t, runOpts{dir: w}, `echo "[x]" >> .git/config && echo cfg; echo evil > .git/hooks/pre-commit 2>/dev/null && echo hook`, "--allow-write", ".", "--allow-git-config")
	if r.stdout != "cfg\n" {
		t.Fatalf("allowGitConfig: %s", r)
	}
}

// TestProtectedSearchDepth pins how mandatoryDenySearchDepth counts, as
// srt's ripgrep --max-depth does: a name N path components below the
// writable root is found when N is at most the depth, and a nested name
// (.git/hooks) when its first component is.
func TestProtectedSearchDepth(t *testing.T) {
	w := t.TempDir()
	for _, p := range []string{"a/.bashrc", "a/b/.bashrc", "a/b/c/.bashrc", "a/b/.git/hooks/keep", "a/b/c/.git/hooks/keep"} {
		writeFile(t, filepath.Join(w, p), "orig")
	}
	script := `for p in a/.bashrc a/b/.bashrc a/b/c/.bashrc a/b/.git/hooks/x a/b/c/.git/hooks/x; do
		(echo evil > $p) 2>/dev/null && echo "WROTE $p"
	done; true`
	for _, c := range []struct {
		depth string // "" is the default, 3
		want  string
	}{
		{"", "WROTE a/b/c/.bashrc\nWROTE a/b/c/.git/hooks/x\n"},
		{"2", "WROTE a/b/.bashrc\nWROTE a/b/c/.bashrc\nWROTE a/b/.git/hooks/x\nWROTE a/b/c/.git/hooks/x\n"},
		{"4", ""},
	} {
		flags := []string{"--allow-write", "."}
		if c.depth != "" {
			settings := filepath.Join(t.TempDir(), "s.json")
			writeFile(t, settings, `{"network": {}, "filesystem": {}, "mandatoryDenySearchDepth": `+c.depth+`}`)
			flags = append(flags, "--settings", settings)
		}
		r := sh(t, runOpts{dir: w}, script, flags...)
		if r.code != 0 || r.stdout != c.want {
			t.Errorf("depth %q: want writes %q\n%s", c.depth, c.want, r)
		}
		// Put back what was written, for the next depth.
		for _, p := range []string{"a/b/.bashrc", "a/b/c/.bashrc"} {
			writeFile(t, filepath.Join(w, p), "orig")
		}
		for _, p := range []string{"a/b/.git/hooks/x", "a/b/c/.git/hooks/x"} {
			os.Remove(filepath.Join(w, p))
		}
	}
}

// TestNoLeftoversAfterTimeoutAndKill checks that stubs are removed and no
// sandboxed process survives, after a timeout and after SIGKILL of sbx.
func TestNoLeftoversAfterTimeoutAndKill(t *testing.T) {
	w := t.TempDir()
	before := snapshot(t, w)
	marker := fmt.Sprintf("%d.%d", 1000+rand.Intn(1000), rand.Intn(1000000))
	r := sh(t, runOpts{dir: w}, `sleep `+marker+` & sleep `+marker, "--allow-write", ".", "--timeout", "500ms")
	wantCode(t, r, 124)
	waitGone(t, marker)
	if after := snapshot(t, w); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatalf("left behind after timeout: %q", after)
	}

	cmd := exec.Command(sbxBin, "--allow-write", ".", "--", "/bin/sh", "-c", `sleep `+marker+` & echo started; sleep `+marker)
	cmd.Dir = w
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("sandbox did not start: %q", line)
	}
	if !processAlive(marker) {
		t.Fatal("control: the sandboxed sleep is not visible on the host")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitGone(t, marker)
	deadline := time.Now().Add(2 * time.Second)
	for strings.Join(snapshot(t, w), "|") != strings.Join(before, "|") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := snapshot(t, w); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatalf("left behind after SIGKILL of sbx: %q", after)
	}
}

// TestStubsSharedByOverlappingRuns: two runs in one writable directory.
// The second finds the first's stubs and shares them; its end removes
// none of them (the first still holds them, and its protections hold);
// the first's end removes them all.
func TestStubsSharedByOverlappingRuns(t *testing.T) {
	w := t.TempDir()
	before := snapshot(t, w)
	probe := `for p in .mcp.json .git/hooks/x .vscode/x; do (echo evil > $p) 2>/dev/null && echo "WROTE $p"; done`
	first := exec.Command(sbxBin, "--allow-write", ".", "--", "/bin/sh", "-c", `echo started; read x; `+probe+`; echo done`)
	first.Dir = w
	in, _ := first.StdinPipe()
	out, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	rd := bufio.NewReader(out)
	if line, _ := rd.ReadString('\n'); line != "started\n" {
		t.Fatalf("first run did not start: %q", line)
	}
	stubs := snapshot(t, w)
	if len(stubs) <= len(before) {
		t.Fatalf("control: no stubs while the first run runs: %q", stubs)
	}
	r := sh(t, runOpts{dir: w}, probe+`; echo ok`, "--allow-write", ".")
	if r.stdout != "ok\n" {
		t.Fatalf("second run: %s", r)
	}
	if now := snapshot(t, w); strings.Join(now, "|") != strings.Join(stubs, "|") {
		t.Fatalf("the second run's end changed the first's stubs:\nwhile %q\nafter %q", stubs, now)
	}
	in.Write([]byte("\n"))
	in.Close()
	rest, _ := io.ReadAll(rd)
	if err := first.Wait(); err != nil || string(rest) != "done\n" {
		t.Fatalf("first run after the second: %v %q", err, rest)
	}
	if after := snapshot(t, w); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatalf("stubs left behind: %q", after)
	}
}

func processAlive(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			return true
		}
	}
	return false
}

// waitGone fails unless no process mentions marker within 1 s.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for processAlive(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("a sandboxed process (%s) survived more than 1 s", marker)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOrphansKilledWithCommand(t *testing.T) {
	marker := fmt.Sprintf("%d.%d", 2000+rand.Intn(1000), rand.Intn(1000000))
	r := sh(t, runOpts{}, `(setsid sleep `+marker+` &) ; sleep 0.1; exit 3`)
	wantCode(t, r, 3)
	waitGone(t, marker)
}

func TestSignalForwarding(t *testing.T) {
	cmd := exec.Command(sbxBin, "--", "/bin/sh", "-c", `trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done`)
	cmd.Dir = t.TempDir()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(out)
	if l, _ := rd.ReadString('\n'); l != "ready\n" {
		t.Fatalf("not ready: %q", l)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(rd)
	err := cmd.Wait()
	if string(rest) != "got-term\n" {
		t.Fatalf("trap output %q", rest)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("want exit 3, got %v", err)
	}
}

func TestEnvironment(t *testing.T) {
	env := append(os.Environ(), "GITHUB_TOKEN=ghp_secret", "MY_API_KEY=k", "LD_PRELOAD=/nonexistent.so", "KEEP_ME=1", "DROP_ME=1")
	r := sh(t, runOpts{env: env}, `env`, "--unset-env", "DROP_*", "--set-env", "ADDED=2")
	for _, bad := range []string{"GITHUB_TOKEN", "MY_API_KEY", "LD_PRELOAD", "DROP_ME"} {
		if strings.Contains(r.stdout, bad+"=") {
			t.Errorf("%s reached the command", bad)
		}
	}
	for _, good := range []string{"KEEP_ME=1", "ADDED=2", "PATH="} {
		if !strings.Contains(r.stdout, good) {
			t.Errorf("%s missing", good)
		}
	}
	r = sh(t, runOpts{env: env}, `echo "$GITHUB_TOKEN"`, "--pass-env", "GITHUB_TOKEN")
	if r.stdout != "ghp_secret\n" {
		t.Errorf("--pass-env: %s", r)
	}
	r = sbx(t, runOpts{env: env}, "--clear-env", "--pass-env", "KEEP_*", "--", "/usr/bin/env")
	if strings.TrimSpace(r.stdout) != "KEEP_ME=1" {
		t.Errorf("--clear-env: %s", r)
	}
	// Nothing passed: the command's environment is empty, in both modes
	// (os.StartProcess with a nil environment passes sbx's own on).
	for _, mode := range [][]string{nil, {"--weaker-nested"}} {
		r = sbx(t, runOpts{env: env}, append(mode, "--clear-env", "--", "/usr/bin/env")...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("--clear-env %v: %s", mode, r)
		}
	}
}

func TestDescriptorsClosed(t *testing.T) {
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := sh(t, runOpts{extra: []*os.File{f, f, f}}, `ls /proc/self/fd`)
	if strings.Fields(r.stdout)[3] != "3" || len(strings.Fields(r.stdout)) != 4 { // 0 1 2 + ls's own dir fd
		t.Fatalf("unexpected descriptors: %s", r)
	}
	r = sh(t, runOpts{extra: []*os.File{f, f, f}}, `ls /proc/self/fd | tr '\n' ' '`, "--keep-fd", "5")
	if !strings.Contains(r.stdout, " 5 ") || strings.Contains(r.stdout, " 4 ") {
		t.Fatalf("--keep-fd 5: %s", r)
	}
}

func TestBadInput(t *testing.T) {
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "bad.json"), "{not json")
	writeFile(t, filepath.Join(d, "unknown.json"), `{"network":{},"filesystem":{},"bogus":1}`)
	writeFile(t, filepath.Join(d, "type.json"), `{"network":{},"filesystem":{"allowWrite":"."}}`)
	writeFile(t, filepath.Join(d, "missingfs.json"), `{"network":{}}`)
	writeFile(t, filepath.Join(d, "refused.json"), `{"network":{"httpProxyPort":8080},"filesystem":{}}`)
	before := snapshot(t, d)
	cases := map[string][]string{
		"missing file":   {"--settings", "nope.json"},
		"invalid json":   {"--settings", "bad.json"},
		"unknown key":    {"--settings", "unknown.json"},
		"wrong type":     {"--settings", "type.json"},
		"missing object": {"--settings", "missingfs.json"},
		"refused key":    {"--settings", "refused.json"},
		"no such write":  {"--allow-write", "does/not/exist"},
		"bad env glob":   {"--pass-env", "[x"},
		"bad set-env":    {"--set-env", "NOEQUALS"},
		"bad net":        {"--net", "sometimes"},
		"bad keep-fd":    {"--keep-fd", "1"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := sbx(t, runOpts{dir: d}, append(args, "--", "/bin/sh", "-c", "touch ran")...)
			wantCode(t, r, 125)
			if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "sbx: ") {
				t.Errorf("want one 'sbx: ' line, got %q", r.stderr)
			}
			if strings.Contains(name, "key") || strings.Contains(name, "type") {
				if !strings.Contains(r.stderr, ".json") {
					t.Errorf("message does not name the file: %q", r.stderr)
				}
			}
		})
	}
	if after := snapshot(t, d); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatalf("bad input changed the disk: %q", after)
	}
}

func TestSettingsFileHonoured(t *testing.T) {
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "secret"), "s3cret")
	writeFile(t, filepath.Join(d, "s.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},
		"filesystem":{"denyRead":["./secret"],"allowWrite":["."],"denyWrite":[],"allowGitConfig":false},
		"ripgrep":{"command":"rg"}}`)
	writeFile(t, filepath.Join(d, "claude.json"), `{"permissions":{"allow":[]},"sandbox":{"enabled":true,"filesystem":{"allowWrite":["./out"]}}}`)
	os.Mkdir(filepath.Join(d, "out"), 0o755)
	r := sh(t, runOpts{dir: d}, `cat secret; echo w > written`, "--settings", "s.json")
	if strings.Contains(r.stdout, "s3cret") {
		t.Fatalf("denyRead from settings ignored: %s", r)
	}
	if _, err := os.Stat(filepath.Join(d, "written")); err != nil {
		t.Fatalf("allowWrite from settings ignored: %s", r)
	}
	r = sh(t, runOpts{dir: d}, `echo w > out/x && echo ok`, "--settings", "claude.json")
	if r.stdout != "ok\n" {
		t.Fatalf("Claude Code settings: %s", r)
	}
}

func TestDryRun(t *testing.T) {
	d := t.TempDir()
	r := sbx(t, runOpts{dir: d}, "--dry-run", "--allow-write", ".", "--", "touch", "x")
	wantCode(t, r, 0)
	var out struct {
		Policy map[string]any `json:"policy"`
		Plan   map[string]any `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Plan == nil {
		t.Fatalf("dry-run output is not the JSON plan: %v\n%s", err, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(d, "x")); err == nil {
		t.Fatal("--dry-run ran the command")
	}
}

func TestWeakerNested(t *testing.T) {
	w := t.TempDir()
	other := t.TempDir()
	r := sh(t, runOpts{dir: w}, `echo ok > f; echo bad > `+other+`/f; cat f`, "--weaker-nested", "--allow-write", ".")
	if !strings.Contains(r.stderr, "weaker sandbox") {
		t.Errorf("the weaker mode must say so on stderr: %s", r)
	}
	if r.stdout != "ok\n" {
		t.Fatalf("allowed write failed: %s", r)
	}
	if _, err := os.Stat(filepath.Join(other, "f")); err == nil {
		t.Fatal("weaker mode let a write through outside allowWrite")
	}
}

func TestConcurrentSandboxes(t *testing.T) {
	w := t.TempDir()
	before := snapshot(t, w)
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(sbxBin, "--allow-write", ".", "--", "/bin/sh", "-c", fmt.Sprintf(`echo %d > /tmp/me; sleep 0.2; cat /tmp/me; (echo x > .vscode/x) 2>/dev/null && echo BAD; true`, i))
			cmd.Dir = w
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != strconv.Itoa(i) {
				errs <- fmt.Sprintf("sandbox %d: %v %q", i, err, out)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if after := snapshot(t, w); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatalf("left behind after concurrent runs: %q", after)
	}
}

// TestUserNamespacesUnavailable: where no user namespace can be created
// (here: user.max_user_namespaces=0 inside a user namespace of the test's
// own, which the kernel enforces for everything nested in it), sbx fails
// closed with 125, names the cause and the fixes, and runs nothing;
// --weaker-nested then runs the command with Landlock + seccomp and says
// so.
func TestUserNamespacesUnavailable(t *testing.T) {
	unshare := needTool(t, "unshare")
	w := t.TempDir()
	marker := filepath.Join(w, "ran")
	script := `echo 0 > /proc/sys/user/max_user_namespaces || exit 99; exec "$@"`
	run := func(flags ...string) result {
		args := append([]string{"-U", "-r", "/bin/sh", "-c", script, "sh", sbxBin}, flags...)
		args = append(args, "--", "/bin/sh", "-c", "touch "+marker)
		cmd := exec.Command(unshare, args...)
		cmd.Dir = w
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		return result{exitCode(t, cmd, cmd.Run()), so.String(), se.String()}
	}
	r := run()
	if r.code == 99 {
		t.Skipf("cannot lower user.max_user_namespaces in a child user namespace: %s", r)
	}
	wantCode(t, r, 125)
	if !strings.Contains(r.stderr, "max_user_namespaces is 0") || !strings.Contains(r.stderr, "--weaker-nested") {
		t.Fatalf("the message must name the cause and the fixes: %s", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the sandbox could not be built")
	}
	// The opt-in weaker mode runs it, saying so.
	r = run("--weaker-nested", "--allow-write", w)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "weaker sandbox") {
		t.Fatalf("weaker mode must say so: %s", r)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("weaker mode did not run the command: %s", r)
	}
}

// TestRootAllowWriteOtherOwner: root may name a writable directory that
// another user owns. The mount view (stubs for missing protected names)
// is built there, the command writes what the directory's mode lets a
// capability-less uid 0 write, and nothing is left behind.
func TestRootAllowWriteOtherOwner(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to own a directory as another user")
	}
	w := t.TempDir()
	d := filepath.Join(w, "theirs")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, d)
	r := sh(t, runOpts{dir: d}, `echo ok > out && cat out && { echo x > .mcp.json; } 2>/dev/null || echo protected`, "--allow-write", d)
	wantCode(t, r, 0)
	if r.stdout != "ok\nprotected\n" {
		t.Fatalf("write in another user's directory: %s", r)
	}
	if err := os.Remove(filepath.Join(d, "out")); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, d); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("left behind: %v", after)
	}
}

// TestAllowWriteUnderDev: a writable path under /dev, which the sandbox
// replaces with its own minimal /dev, is refused with a message that says
// so (it used to read as a race: "vanished since the plan was made").
func TestAllowWriteUnderDev(t *testing.T) {
	d, err := os.MkdirTemp("/dev/shm", "sbx-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(d)
	wantRefused(t, []string{"--allow-write", d})
	r := sbx(t, runOpts{}, "--allow-write", d, "--", "/bin/true")
	if !strings.Contains(r.stderr, "minimal /dev") {
		t.Fatalf("message: %s", r)
	}
}

// TestWeakerLocalBindingHoldsConnect: the weaker mode has no network
// namespace, so --allow-local-binding there lets the command bind any
// port but keeps its TCP connects to the proxy: a connect to a host
// server on loopback (the test's own) stays refused, as without the
// flag. (The Landlock TCP rules were dropped whole, which opened every
// address; a repository's file could ask for it, see the trust tests.)
func TestWeakerLocalBindingHoldsConnect(t *testing.T) {
	addr, c := tcpEcho(t, "tcp4", "127.0.0.1:0")
	script := probes([]string{"dial", "tcp4", addr}) + q(attackBin) + " serve tcp4 127.0.0.1:0 & sleep 1; kill $!"
	for _, flags := range [][]string{{"--allow-local-binding"}, nil} {
		r := sh(t, runOpts{}, script, append(append([]string{"--weaker-nested", "--net", "none", "--timeout", "20s"}, flags...), probeDir()...)...)
		c.mu.Lock()
		reached := len(c.lines)
		c.mu.Unlock()
		if strings.Contains(r.stdout, "dial tcp4 "+addr+": OK") || reached != 0 {
			t.Fatalf("%v: the host's loopback server was reached: %s", flags, r)
		}
		if flags != nil && !strings.Contains(r.stdout, "listening") {
			t.Fatalf("binding failed with --allow-local-binding: %s", r)
		}
	}
}

// TestProtectedNamesBeyondSrt: what the host runs on its own and srt's
// list leaves writable: Claude Code's settings (hooks) in an
// existing .claude, the other shell start-up files, a submodule's git
// directory (config, hooks) and a worktree's. Each stays
// read-only in a writable place, existing or missing, and the tree is as
// it was after the run.
func TestProtectedNamesBeyondSrt(t *testing.T) {
	w := t.TempDir()
	writeFile(t, filepath.Join(w, ".claude", "settings.json"), "{}")
	writeFile(t, filepath.Join(w, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(w, ".git", "modules", "sub", "config"), "[core]\n")
	if err := os.MkdirAll(filepath.Join(w, ".git", "modules", "sub", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, w)
	// w is HOME too: the shell's files are pinned there.
	r := sh(t, runOpts{dir: w, env: append(hermeticEnv(), "HOME="+w, "XDG_CACHE_HOME="+t.TempDir())}, `
		for p in .claude/settings.json .claude/settings.local.json .claude/hooks/h.sh .zshenv .zlogin .bash_login .bash_logout \
			.git/modules/sub/config .git/modules/sub/hooks/post-checkout .git/worktrees/x; do
			(echo evil > $p) 2>/dev/null && echo "WROTE $p"
		done
		mkdir .git/worktrees/w 2>/dev/null && echo "MKDIR worktree"
		mv .claude .claude-moved 2>/dev/null && echo "MOVED .claude"
		echo fine > normal.txt && echo ok`, "--allow-write", ".")
	wantProtectedKept(t, w, before, r)
}

// wantProtectedKept: a protected-names probe script changed nothing
// protected (no WROTE, MOVED or MKDIR line), its ordinary write worked
// (ends "ok", normal.txt), and the tree is as before once normal.txt
// goes (no stub left behind).
func wantProtectedKept(t *testing.T, w string, before []string, r result) {
	t.Helper()
	if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MOVED") || strings.Contains(r.stdout, "MKDIR") {
		t.Fatalf("a protected path was changed: %s", r)
	}
	if !strings.HasSuffix(r.stdout, "ok\n") {
		t.Fatalf("ordinary write failed: %s", r)
	}
	os.Remove(filepath.Join(w, "normal.txt"))
	if after := snapshot(t, w); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the tree changed (stubs left behind?):\nbefore %q\nafter  %q", before, after)
	}
}
