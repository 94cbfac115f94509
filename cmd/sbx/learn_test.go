//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// learnFixture is a small project: it reads a data file of its own and
// a config under HOME, writes an output into its build directory and a
// cache under HOME, fetches from a loopback server through a name, and
// tries a (fake) credential.
//
// The server listens on 127.0.0.1, and the name (data.localhost) resolves
// there: the resolved-address guard refuses a name that leads to
// loopback unless the address itself is allowed. The fixture's start
// flags name the address (--allow-domain 127.0.0.1:PORT), as anyone
// reaching a local service must; what learn adds is the name, and a run
// without the start flag reports the guard's refusal with both flags.
type learnFixture struct {
	root, proj, home, sibling string
	port                      int
	c                         *counter
	script                    string
	start                     []string // the start flags
	cred                      string
}

const learnFakeSecret = "AKIAFAKEFAKEFAKE/learn-fixture-not-a-real-key"

func newLearnFixture(t *testing.T) *learnFixture {
	t.Helper()
	needTool(t, "curl")
	s, c := httpServer(t, false)
	fx := &learnFixture{root: hostTempDir(t), c: c, port: s.Listener.Addr().(*net.TCPAddr).Port}
	fx.proj = filepath.Join(fx.root, "proj")
	fx.home = filepath.Join(fx.root, "home")
	fx.sibling = filepath.Join(fx.root, "sibling")
	fx.cred = filepath.Join(fx.home, ".aws", "credentials")
	for p, content := range map[string]string{
		filepath.Join(fx.proj, "data", "input.txt"):        "data from the project\n",
		filepath.Join(fx.home, ".config", "fx", "fx.conf"): "config from home\n",
		fx.cred:                                  "[default]\naws_secret_access_key = " + learnFakeSecret + "\n",
		filepath.Join(fx.sibling, "private.txt"): "a sibling the command never reads\n",
		filepath.Join(fx.home, ".cache", "fx", "old"):    "an old cache entry\n",
		filepath.Join(fx.proj, "build", ".keep"):         "",
		filepath.Join(fx.home, "notes", "unrelated.txt"): "not the command's\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fx.script = fmt.Sprintf(`set -e
cat data/input.txt > build/result.txt
cat "$HOME/.config/fx/fx.conf" >> build/result.txt
curl -sf http://data.localhost:%d/fixture >> build/result.txt
echo "cached" > "$HOME/.cache/fx/entry"
cat "$HOME/.aws/credentials" >/dev/null 2>&1 || true
cat build/result.txt`, fx.port)
	fx.start = []string{"--allow-domain", fmt.Sprintf("127.0.0.1:%d", fx.port)}
	return fx
}

// want is the fixture's output.
func (fx *learnFixture) want() string {
	return "data from the project\nconfig from home\nhello from the host /fixture\n"
}

func (fx *learnFixture) env() []string {
	var env []string
	for _, kv := range hermeticEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+fx.home)
}

// sbx runs sbx with args in the project, returning stdout, stderr and
// the exit status.
func (fx *learnFixture) sbx(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(sbxBin, args...)
	cmd.Dir = fx.proj
	cmd.Env = fx.env()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// treeState is every entry under root: type, mode, size and content
// hash. sbx's own scan cache (HOME/.cache/sbx, which the supervisor
// keeps for every run and the command may not write) is left out.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if filepath.Base(p) == "sbx" && filepath.Base(filepath.Dir(p)) == ".cache" {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d", info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:8])
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func diffSnapshots(a, b map[string]string) []string {
	var d []string
	for p, v := range a {
		if w, ok := b[p]; !ok {
			d = append(d, "gone: "+p)
		} else if v != w {
			d = append(d, "changed: "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, "new: "+p)
		}
	}
	sort.Strings(d)
	return d
}

// TestLearnFixture: sbx learn runs the fixture once with the host left
// unchanged, writes a policy in each format, and the replay under
// --reads declared --fail-on-violation (plus the start flags) passes
// with the fixture's output; the fake credential is refused, reported
// and never granted; an untouched sibling directory stays unreadable and
// another host unreachable under the learned policy.
//
// The last case starts from a policy that already lets the cache be
// written (--allow-write): learn must not write there either, and the
// learned policy does not repeat it.
func TestLearnFixture(t *testing.T) {
	for _, format := range []string{"sbx", "srt", "claude", "flags", "sbx+allow-write"} {
		t.Run(format, func(t *testing.T) {
			fx := newLearnFixture(t)
			format, startWrite := strings.CutSuffix(format, "+allow-write")
			if startWrite {
				fx.start = append(fx.start, "--allow-write", filepath.Join(fx.home, ".cache", "fx"))
			}
			out := filepath.Join(t.TempDir(), "learned")
			before := treeState(t, fx.root)
			args := append([]string{"learn", "--format", format, "--output", out}, fx.start...)
			stdout, stderr, code := fx.sbx(t, append(args, "--", "/bin/sh", "-c", fx.script)...)
			if code != 0 || stdout != fx.want() {
				t.Fatalf("learn: exit %d, stdout %q\n%s", code, stdout, stderr)
			}
			if d := diffSnapshots(before, treeState(t, fx.root)); len(d) > 0 {
				t.Fatalf("learn changed the host:\n%s", strings.Join(d, "\n"))
			}
			policyText, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{".aws", learnFakeSecret, fx.sibling, "notes"} {
				if strings.Contains(string(policyText), bad) {
					t.Fatalf("the learned policy holds %q:\n%s", bad, policyText)
				}
			}
			if !strings.Contains(stderr, "refused") || !strings.Contains(stderr, fx.cred) {
				t.Fatalf("the report does not name the refused credential %s:\n%s", fx.cred, stderr)
			}
			if !strings.Contains(stderr, "replay") {
				t.Fatalf("the report has no replay command:\n%s", stderr)
			}
			t.Logf("%s policy:\n%s\nreport:\n%s", format, policyText, stderr)

			// The replay: the learned policy, the empty-root view,
			// every refusal fatal, and the start flags.
			var pol []string
			if format == "flags" {
				pol = strings.Fields(string(policyText))
			} else {
				pol = []string{"--settings", out, "--reads", "declared"}
			}
			replay := func(cmd ...string) (string, string, int) {
				a := append(append(append([]string(nil), pol...), "--fail-on-violation"), fx.start...)
				return fx.sbx(t, append(append(a, "--"), cmd...)...)
			}
			served := fx.c.n.Load()
			got, rerr, rcode := replay("/bin/sh", "-c", fx.script)
			if rcode != 0 || got != fx.want() {
				t.Fatalf("replay: exit %d, stdout %q, want %q\n%s", rcode, got, fx.want(), rerr)
			}
			if fx.c.n.Load() != served+1 {
				t.Fatalf("the replay's fetch did not reach the server")
			}
			// Unchanged by the learned policy: the sibling, another
			// host, the credential.
			if o, e, c := replay("/bin/cat", filepath.Join(fx.sibling, "private.txt")); c == 0 || strings.Contains(o, "sibling") {
				t.Fatalf("the sibling was readable under the learned policy: exit %d %q %s", c, o, e)
			}
			if o, e, c := replay("/bin/cat", fx.cred); c == 0 || strings.Contains(o, learnFakeSecret) {
				t.Fatalf("the credential was readable under the learned policy: exit %d %q %s", c, o, e)
			}
			served = fx.c.n.Load()
			other := fmt.Sprintf("http://other.localhost:%d/other", fx.port)
			if o, e, c := replay("curl", "-sf", other); c == 0 || strings.Contains(o, "hello") {
				t.Fatalf("another host was reachable under the learned policy: exit %d %q %s", c, o, e)
			}
			if fx.c.n.Load() != served {
				t.Fatalf("the server saw a request for another host")
			}
		})
	}
}

// TestLearnGuardReported: without the start flag that names the loopback
// address, the resolved-address guard refuses the name in the observed
// run too, and the report gives both flags that would reach it; the
// policy grants neither.
func TestLearnGuardReported(t *testing.T) {
	fx := newLearnFixture(t)
	out := filepath.Join(t.TempDir(), "learned.json")
	_, stderr, code := fx.sbx(t, "learn", "--output", out, "--", "/bin/sh", "-c", fx.script)
	// The exit status is the command's: curl -f's 22 for the proxy's
	// 403, through set -e.
	if code != 22 {
		t.Fatalf("exit %d, want curl's 22 (the guard refuses the name):\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "learned from a failed run (exit 22)") {
		t.Fatalf("the report does not say the run failed:\n%s", stderr)
	}
	grant := fmt.Sprintf("--allow-domain data.localhost:%d --allow-domain 127.0.0.1:%d", fx.port, fx.port)
	if !strings.Contains(stderr, grant) {
		t.Fatalf("the report lacks %q:\n%s", grant, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("a failed run writes the policy too: %v", err)
	}
	if strings.Contains(string(b), "localhost") || strings.Contains(string(b), "127.0.0.1") {
		t.Fatalf("the guard's refusal was granted:\n%s", b)
	}
}

// TestLearnRefusesBadOutput: a bad --format, --learn-net or --output is
// exit 125 with a one-line error, before the command runs.
func TestLearnRefusesBadOutput(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join(dir, "target.json"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "yaml"}, "--format"},
		{[]string{"--learn-net", "maybe"}, "--learn-net"},
		{[]string{"--output", link}, "symbolic link"},
		{[]string{"--output", dir}, "not a regular file"},
		{[]string{"--output", filepath.Join(dir, "missing", "p.json")}, "directory must exist"},
		{[]string{"--dry-run"}, "--dry-run"},
	} {
		cmd := exec.Command(sbxBin, append(append([]string{"learn"}, c.args...), "--", "/bin/sh", "-c", "touch "+marker)...)
		cmd.Env = hermeticEnv()
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 125 {
			t.Fatalf("%v: %v, want exit 125: %s", c.args, err, out)
		}
		if lines := strings.Count(strings.TrimSpace(string(out)), "\n"); lines != 0 || !strings.Contains(string(out), c.want) {
			t.Fatalf("%v: want one line naming %q, got %q", c.args, c.want, out)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Fatalf("%v: the command ran", c.args)
		}
		if _, err := os.Lstat(filepath.Join(dir, "target.json")); err == nil {
			t.Fatalf("%v: wrote through the link", c.args)
		}
	}
	cmd := exec.Command(sbxBin, "learn", "--output", filepath.Join(dir, "p.json"))
	cmd.Env = hermeticEnv()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "usage: sbx learn") {
		t.Fatalf("learn without a command: %v %q, want exit 125 and learn's usage", err, out)
	}
}

// TestLearnAddsToSettings: --settings FILE --output FILE (the same file)
// adds what the second command needs to what the first one learned, so
// that two steps build one policy, and the replay of both passes.
func TestLearnAddsToSettings(t *testing.T) {
	fx := newLearnFixture(t)
	out := filepath.Join(t.TempDir(), "sbx.json")
	step1 := "cat data/input.txt > build/result.txt"
	step2 := `cat "$HOME/.config/fx/fx.conf"`
	if _, e, c := fx.sbx(t, "learn", "--output", out, "--", "/bin/sh", "-c", step1); c != 0 {
		t.Fatalf("step 1: exit %d\n%s", c, e)
	}
	if _, e, c := fx.sbx(t, "learn", "--settings", out, "--output", out, "--", "/bin/sh", "-c", step2); c != 0 {
		t.Fatalf("step 2: exit %d\n%s", c, e)
	} else if strings.Contains(e, "--settings "+out+" --settings") {
		t.Fatalf("the replay names the settings file twice:\n%s", e)
	}
	both := step1 + " && " + step2
	if o, e, c := fx.sbx(t, "--settings", out, "--reads", "declared", "--fail-on-violation", "--", "/bin/sh", "-c", both); c != 0 || o != "config from home\n" {
		b, _ := os.ReadFile(out)
		t.Fatalf("replay of both steps: exit %d %q\n%s\npolicy:\n%s", c, o, e, b)
	}
	// What neither step touched stays unreadable.
	if o, _, c := fx.sbx(t, "--settings", out, "--reads", "declared", "--", "/bin/sh", "-c", "cat "+fx.sibling+"/private.txt"); c == 0 {
		t.Fatalf("the sibling is readable: %q", o)
	}
}

// TestLearnNetOff: with --learn-net off the start policy's network
// applies as it is: the unlisted name is refused, reported with the flag
// that would reach it, and not granted.
func TestLearnNetOff(t *testing.T) {
	fx := newLearnFixture(t)
	out := filepath.Join(t.TempDir(), "sbx.json")
	served := fx.c.n.Load()
	_, stderr, code := fx.sbx(t, append(append([]string{"learn", "--learn-net", "off", "--output", out}, fx.start...), "--", "/bin/sh", "-c", fx.script)...)
	if code != 22 {
		t.Fatalf("exit %d, want curl's 22 (the name is not allowed):\n%s", code, stderr)
	}
	if fx.c.n.Load() != served {
		t.Fatalf("the server was reached with network learning off")
	}
	if grant := fmt.Sprintf("grant with --allow-domain data.localhost:%d", fx.port); !strings.Contains(stderr, grant) {
		t.Fatalf("the report lacks %q:\n%s", grant, stderr)
	}
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "data.localhost") {
		t.Fatalf("the refused host was granted:\n%s", b)
	}
}

// TestLearnSeesExecutedPrograms: a program the command runs by its path
// from outside the declared runtime (a copy of cat in a tools directory
// beside the project) is executed, never opened, so only the program
// its first observed call comes from names it. The learned policy must
// let the --reads declared replay execute it; an untouched file beside
// it stays out.
func TestLearnSeesExecutedPrograms(t *testing.T) {
	fx := newLearnFixture(t)
	tools := filepath.Join(fx.root, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/bin/cat")
	if err != nil {
		t.Skip(err)
	}
	mycat := filepath.Join(tools, "mycat")
	if err := os.WriteFile(mycat, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "other"), []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "sbx.json")
	script := mycat + " data/input.txt"
	stdout, stderr, code := fx.sbx(t, "learn", "--learn-net", "off", "--output", out, "--", "/bin/sh", "-c", script)
	if code != 0 || stdout != "data from the project\n" {
		t.Fatalf("learn: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}
	pol, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pol), "other") {
		t.Errorf("the untouched file beside the program is granted:\n%s", pol)
	}
	stdout, stderr, code = fx.sbx(t, "--settings", out, "--reads", "declared", "--fail-on-violation", "--", "/bin/sh", "-c", script)
	if code != 0 || stdout != "data from the project\n" {
		t.Fatalf("replay: exit %d, stdout %q (the program %s must be granted):\n%s\npolicy:\n%s", code, stdout, mycat, stderr, pol)
	}
}

// TestLearnUnixSockets: a socket of the project's own (a server the test
// runs at proj/run/app.sock) is let through the observed run and learned
// as allowUnixSockets, and the --reads declared replay reaches it; a
// socket outside the project (a host daemon's, here the test's own
// beside it) is refused, reported with the flag, and not granted.
func TestLearnUnixSockets(t *testing.T) {
	fx := newLearnFixture(t)
	serve := func(path string) *counter {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Skipf("unix socket: %v", err)
		}
		os.Chmod(path, 0o777)
		c := &counter{}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.n.Add(1)
			fmt.Fprintf(w, "hello over %s\n", filepath.Base(path))
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return c
	}
	own := serve(filepath.Join(fx.proj, "run", "app.sock"))
	other := serve(filepath.Join(fx.root, "daemon", "other.sock"))
	otherPath := filepath.Join(fx.root, "daemon", "other.sock")
	script := "curl -sf --unix-socket run/app.sock http://app/ && { curl -sf --unix-socket " + otherPath + " http://other/ || echo refused; }"
	out := filepath.Join(t.TempDir(), "sbx.json")
	stdout, stderr, code := fx.sbx(t, "learn", "--learn-net", "off", "--output", out, "--", "/bin/sh", "-c", script)
	if code != 0 || stdout != "hello over app.sock\nrefused\n" {
		t.Fatalf("learn: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}
	if other.n.Load() != 0 {
		t.Fatal("the socket outside the project was reached by the observed run")
	}
	if !strings.Contains(stderr, "--allow-unix-socket "+otherPath) {
		t.Errorf("the report does not name the refused socket's flag:\n%s", stderr)
	}
	pol, _ := os.ReadFile(out)
	if !strings.Contains(string(pol), "app.sock") || strings.Contains(string(pol), "other.sock") {
		t.Fatalf("want the project's socket granted, the other not:\n%s", pol)
	}
	served := own.n.Load()
	stdout, stderr, code = fx.sbx(t, "--settings", out, "--reads", "declared", "--fail-on-violation", "--", "/bin/sh", "-c", "curl -sf --unix-socket run/app.sock http://app/")
	if code != 0 || stdout != "hello over app.sock\n" || own.n.Load() != served+1 {
		t.Fatalf("replay: exit %d, stdout %q:\n%s\npolicy:\n%s", code, stdout, stderr, pol)
	}
}

// TestLearnProjectListing: a command that lists the project and reads
// only part of it (a test runner's collection, a cached build) learns a
// policy whose replay lists the project as it did and reads what it
// read, while what it never touched stays hidden in the replay.
func TestLearnProjectListing(t *testing.T) {
	fx := newLearnFixture(t)
	for p, c := range map[string]string{"src/m.txt": "module\n", "src/secret.txt": "UNTOUCHED-SECRET\n", "docs/x.md": "docs\n", "README": "readme\n"} {
		writeFile(t, filepath.Join(fx.proj, p), c)
	}
	script := `ls >/dev/null && ls src >/dev/null && cat data/input.txt src/m.txt`
	out := filepath.Join(t.TempDir(), "sbx.json")
	stdout, stderr, code := fx.sbx(t, "learn", "--learn-net", "off", "--output", out, "--", "/bin/sh", "-c", script)
	if code != 0 || stdout != "data from the project\nmodule\n" {
		t.Fatalf("learn: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}
	pol, _ := os.ReadFile(out)
	stdout, stderr, code = fx.sbx(t, "--settings", out, "--reads", "declared", "--fail-on-violation", "--", "/bin/sh", "-c", script)
	if code != 0 || stdout != "data from the project\nmodule\n" {
		t.Fatalf("replay: exit %d, stdout %q:\n%s\npolicy:\n%s", code, stdout, stderr, pol)
	}
	stdout, _, _ = fx.sbx(t, "--settings", out, "--reads", "declared", "--", "/bin/sh", "-c", "cat src/secret.txt README docs/x.md 2>/dev/null; true")
	if stdout != "" {
		t.Fatalf("the replay shows what the command never touched: %q\npolicy:\n%s", stdout, pol)
	}
}
