//go:build linux

package main

// Real-project tests: Claude Code settings and their permission rules,
// strict reads (denyRead "/", --reads declared), callers with odd HOMEs,
// toolchain presets and the write hint. Each runs real commands under the
// sbx binary, as whichever user runs the suite (CI: root and sbxtest).

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostTempDir is a temporary directory in /var/tmp, which, unlike /tmp,
// the sandbox sees as the host has it: a control run without the rule
// under test can read everything in it.
func hostTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "sbx-test-")
	if err != nil {
		t.Skipf("no host temp dir: %v", err)
	}
	t.Cleanup(func() {
		filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(d)
	})
	return d
}

// claudeProject makes a project directory with .claude/settings.json
// holding settings, and returns it.
func claudeProject(t *testing.T, settings string) string {
	t.Helper()
	d := t.TempDir()
	writeFile(t, filepath.Join(d, ".claude", "settings.json"), settings)
	return d
}

func TestClaudePermissionRules(t *testing.T) {
	d := claudeProject(t, `{
		"permissions": {
			"allow": ["Edit(out/**)", "Bash(npm test)", "WebFetch(domain:example.com)"],
			"deny": ["Read(./secret/**)", "Read(*.pem)", "Edit(./out/keep.txt)"]
		},
		"sandbox": {"enabled": true}
	}`)
	writeFile(t, filepath.Join(d, "secret", "key"), "S3CRET")
	writeFile(t, filepath.Join(d, "sub", "tls.pem"), "PEMKEY")
	writeFile(t, filepath.Join(d, "out", "keep.txt"), "keep")
	writeFile(t, filepath.Join(d, "plain"), "plain")
	script := `cat secret/key sub/tls.pem 2>/dev/null; cat plain; echo built > out/new && echo wrote-out
		echo x > out/keep.txt 2>/dev/null && echo wrote-keep; echo x > plain 2>/dev/null && echo wrote-plain; true`
	for _, flags := range [][]string{
		{"--settings", filepath.Join(d, ".claude", "settings.json")},
		{"--claude-settings", d},
		{"--claude-settings"}, // the working directory
	} {
		r := sh(t, runOpts{dir: d, env: append(os.Environ(), "HOME="+t.TempDir())}, script, flags...)
		wantCode(t, r, 0)
		for _, leak := range []string{"S3CRET", "PEMKEY", "wrote-keep", "wrote-plain"} {
			if strings.Contains(r.stdout, leak) {
				t.Errorf("%q: %s got through: %s", flags, leak, r)
			}
		}
		if !strings.Contains(r.stdout, "plain") || !strings.Contains(r.stdout, "wrote-out") {
			t.Errorf("%q: the allowed path failed: %s", flags, r)
		}
	}
	// Control: the same commands without the settings read the secrets.
	r := sh(t, runOpts{dir: d}, `cat secret/key sub/tls.pem`)
	if r.stdout != "S3CRETPEMKEY" {
		t.Fatalf("control: %s", r)
	}
	// --dry-run notes the rules that are not sbx's, and says that
	// WebFetch does not open the network.
	r = sbx(t, runOpts{dir: d}, "--claude-settings", "--dry-run", "--", "true")
	wantCode(t, r, 0)
	var out struct {
		Policy struct {
			Notes   []string `json:"notes"`
			Network struct {
				AllowedDomains []string `json:"allowedDomains"`
			} `json:"network"`
		} `json:"policy"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(out.Policy.Notes, "\n")
	for _, want := range []string{"Bash(npm test)", "WebFetch(domain:example.com)", "allowedDomains"} {
		if !strings.Contains(notes, want) {
			t.Errorf("--dry-run notes lack %q:\n%s", want, notes)
		}
	}
	if len(out.Policy.Network.AllowedDomains) != 0 {
		t.Errorf("a WebFetch allow rule opened the network: %v", out.Policy.Network.AllowedDomains)
	}
}

// TestClaudeRuleEscapes tries to reach a file a Read() deny rule hides the
// ways the peers were beaten: a symlink from an allowed place, a path
// through /proc, and renaming the parent directory away.
func TestClaudeRuleEscapes(t *testing.T) {
	d := claudeProject(t, `{"permissions": {"allow": ["Edit(work/**)"], "deny": ["Read(./work/secret/**)"]}}`)
	writeFile(t, filepath.Join(d, "work", "secret", "key"), "S3CRET")
	if err := os.Symlink(filepath.Join(d, "work", "secret", "key"), filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	r := sh(t, runOpts{dir: d}, `cat link; cat /proc/self/root`+d+`/work/secret/key; cat /proc/1/cwd/work/secret/key
		ln -s secret/key work/l2; cat work/l2; mv work/secret work/moved && cat work/moved/key; cp -r work/secret work/copy; cat work/copy/key; true`,
		"--claude-settings", d)
	if strings.Contains(r.stdout, "S3CRET") {
		t.Fatalf("the denied file was read: %s", r)
	}
	if got, _ := os.ReadFile(filepath.Join(d, "work", "secret", "key")); string(got) != "S3CRET" {
		t.Fatalf("the host file changed: %q", got)
	}
}

func TestClaudeScopesMerged(t *testing.T) {
	home := hostTempDir(t)
	proj := hostTempDir(t)
	managed := t.TempDir()
	// user: hides ~/usersecret; project: makes out/ writable; local:
	// hides localsecret; managed (file and drop-in): hides a file by
	// absolute path, and keeps the sandbox on whatever local says.
	writeFile(t, filepath.Join(home, ".claude", "settings.json"), `{"permissions": {"deny": ["Read(~/usersecret)"]}}`)
	writeFile(t, filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"allow": ["Edit(/out/**)"]}, "sandbox": {"enabled": true}}`)
	writeFile(t, filepath.Join(proj, ".claude", "settings.local.json"), `{"permissions": {"deny": ["Read(localsecret)"]}}`)
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{"sandbox": {"filesystem": {"denyRead": ["`+filepath.Join(proj, "managed1")+`"]}}}`)
	writeFile(t, filepath.Join(managed, "managed-settings.d", "10-more.json"), `{"permissions": {"deny": ["Read(//`+strings.TrimPrefix(filepath.Join(proj, "managed2"), "/")+`)"]}}`)
	for _, f := range []string{"usersecret"} {
		writeFile(t, filepath.Join(home, f), "USER")
	}
	writeFile(t, filepath.Join(proj, "localsecret"), "LOCAL")
	writeFile(t, filepath.Join(proj, "managed1"), "MANAGED1")
	writeFile(t, filepath.Join(proj, "managed2"), "MANAGED2")
	writeFile(t, filepath.Join(proj, "open"), "OPEN")
	if err := os.Mkdir(filepath.Join(proj, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home)
	script := `cat ~/usersecret localsecret managed1 managed2 open 2>/dev/null; echo x > out/f && echo wrote; true`
	r := sh(t, runOpts{dir: proj, env: env}, script, "--managed-settings", managed, "--claude-settings", proj)
	wantCode(t, r, 0)
	if r.stdout != "OPENwrote\n" {
		t.Fatalf("want only OPEN readable and out/ writable, got %s", r)
	}
	// Without the scopes everything is readable (the control).
	r = sh(t, runOpts{dir: proj, env: env}, script)
	if !strings.Contains(r.stdout, "USERLOCALMANAGED1MANAGED2OPEN") {
		t.Fatalf("control: %s", r)
	}

	// sandbox.enabled false in the merged result: exit 125, nothing run.
	writeFile(t, filepath.Join(proj, ".claude", "settings.local.json"), `{"sandbox": {"enabled": false}}`)
	r = sbx(t, runOpts{dir: proj, env: env}, "--claude-settings", proj, "--", "/bin/echo", "ran")
	if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "sandbox.enabled: false") {
		t.Fatalf("sandbox.enabled false: want 125 naming the setting, got %s", r)
	}
	// The managed scope's scalar wins over the local one.
	writeFile(t, filepath.Join(managed, "managed-settings.d", "20-on.json"), `{"sandbox": {"enabled": true}}`)
	r = sbx(t, runOpts{dir: proj, env: env}, "--managed-settings", managed, "--claude-settings", proj, "--", "/bin/echo", "ran")
	if r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("managed sandbox.enabled true should win: %s", r)
	}
	// A user scope the caller cannot read does not stop the run.
	r = sbx(t, runOpts{dir: proj, env: append(os.Environ(), "HOME=/nonexistent/home")}, "--claude-settings", "--", "/bin/echo", "ran")
	wantCode(t, r, 125) // local still says false
	os.Remove(filepath.Join(proj, ".claude", "settings.local.json"))
	r = sbx(t, runOpts{dir: proj, env: append(os.Environ(), "HOME=/nonexistent/home")}, "--claude-settings", "--", "/bin/echo", "ran")
	if r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("missing HOME with --claude-settings: %s", r)
	}
	// A broken scope file fails closed, naming the file.
	writeFile(t, filepath.Join(proj, ".claude", "settings.local.json"), `{"permissions": {"deny": ["Read("]}}`)
	wantRefusedIn(t, proj, "settings.local.json", "--claude-settings", proj)
}

// wantRefusedIn runs sbx in dir with flags and wants exit 125, one line on
// stderr that contains what, and nothing run.
func wantRefusedIn(t *testing.T, dir, what string, flags ...string) {
	t.Helper()
	r := sbx(t, runOpts{dir: dir}, append(append([]string{}, flags...), "--", "/bin/echo", "ran")...)
	if r.code != 125 || strings.Contains(r.stdout, "ran") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, what) {
		t.Fatalf("%q: want 125 and one line naming %q, got %s", flags, what, r)
	}
}

func TestStrictReads(t *testing.T) {
	d := hostTempDir(t)
	writeFile(t, filepath.Join(d, "in", "data.txt"), "DECLARED")
	writeFile(t, filepath.Join(d, "undeclared.txt"), "UNDECLARED")
	// The issue's own command: read only /usr, /etc and the working
	// directory.
	r := sbx(t, runOpts{dir: d}, "--deny-read", "/", "--allow-read", "/usr", "--allow-read", "/etc", "--allow-read", ".", "--", "ls")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "undeclared.txt") {
		t.Fatalf("ls of the declared working directory: %s", r)
	}
	// Only the declared input: the sibling is absent, not just unreadable.
	r = sh(t, runOpts{dir: d}, `cat in/data.txt; cat undeclared.txt 2>&1; cat `+d+`/../`+filepath.Base(d)+`/undeclared.txt 2>&1; cat /proc/1/cwd/undeclared.txt 2>&1; ls /home /root 2>&1; true`,
		"--deny-read", "/", "--allow-read", "/usr", "--allow-read", "/etc", "--allow-read", "in")
	if !strings.HasPrefix(r.stdout, "DECLARED") || strings.Contains(r.stdout, "UNDECLARED") {
		t.Fatalf("strict reads: %s", r)
	}
	if n := strings.Count(r.stdout, "No such file or directory"); n < 4 {
		t.Fatalf("undeclared paths should be absent (ENOENT), got %s", r)
	}
	// A declared path under /tmp is bound into the private /tmp, which
	// stays writable.
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "in", "data.txt"), "DECLARED")
	os.Chmod(tmp, 0o755)
	r = sh(t, runOpts{dir: tmp}, `cat in/data.txt && echo x > /tmp/new && cat /tmp/new`, "--reads", "declared", "--allow-read", "in")
	if r.code != 0 || r.stdout != "DECLAREDx\n" {
		t.Fatalf("strict reads under /tmp: %s", r)
	}
	// Credential masks inside an allowed /etc stay.
	r = sh(t, runOpts{dir: d}, `cat /etc/shadow 2>/dev/null && echo READ-SHADOW; true`, "--deny-read", "/", "--allow-read", "/usr", "--allow-read", "/etc")
	if strings.Contains(r.stdout, "READ-SHADOW") {
		t.Fatalf("/etc/shadow readable under strict reads: %s", r)
	}
}

func TestReadsDeclared(t *testing.T) {
	type interp struct{ prog, script, code string }
	var cases []interp
	if p, err := exec.LookPath("python3"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && !strings.Contains(real, "shims") {
			cases = append(cases, interp{p, "s.py", "import os\nprint(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data.txt')).read())\ntry:\n    open('../undeclared.txt').read(); print('LEAK')\nexcept FileNotFoundError:\n    print('ENOENT')\n"})
		}
	}
	if p, err := exec.LookPath("node"); err == nil {
		cases = append(cases, interp{p, "s.js", "const fs=require('fs');console.log(fs.readFileSync(__dirname+'/data.txt','utf8'));try{fs.readFileSync('../undeclared.txt');console.log('LEAK')}catch(e){console.log(e.code)}\n"})
	}
	if len(cases) == 0 {
		t.Skip("neither python3 nor node is installed")
	}
	for _, c := range cases {
		d := hostTempDir(t)
		writeFile(t, filepath.Join(d, "task", c.script), c.code)
		writeFile(t, filepath.Join(d, "task", "data.txt"), "DECLARED")
		writeFile(t, filepath.Join(d, "undeclared.txt"), "UNDECLARED")
		task := filepath.Join(d, "task")
		r := sbx(t, runOpts{dir: task}, "--reads", "declared", "--allow-read", ".", "--", c.prog, c.script)
		wantCode(t, r, 0)
		if r.stdout != "DECLARED\nENOENT\n" {
			t.Fatalf("%s: want the declared file read and the sibling absent, got %s", c.prog, r)
		}
		// Control: with default reads the sibling is there.
		r = sbx(t, runOpts{dir: task}, "--", c.prog, c.script)
		if !strings.Contains(r.stdout, "LEAK") {
			t.Fatalf("%s control: %s", c.prog, r)
		}
		// --dry-run lists what is visible, and only that.
		r = sbx(t, runOpts{dir: task}, "--reads", "declared", "--allow-read", ".", "--dry-run", "--", c.prog, c.script)
		var out struct {
			Visible []string `json:"visible"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		vis := strings.Join(out.Visible, "\n")
		if !strings.Contains(vis, task+" (read-only)") || !strings.Contains(vis, "/usr (read-only)") || strings.Contains(vis, "undeclared") {
			t.Fatalf("%s: visible list:\n%s", c.prog, vis)
		}
	}
	wantRefused(t, []string{"--reads", "some"})
}

// TestReadsDeclaredRuntimeAttributes: the kernel attributes runtimes
// read as they start (the CPUs online, the cgroup limits, the huge page
// sizes) are there under --reads declared, read-only, and nothing else
// of /sys is; a Go, Node or Java program starts without a refused read.
func TestReadsDeclaredRuntimeAttributes(t *testing.T) {
	var present []string
	for _, p := range []string{"/sys/devices/system/cpu/online", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage", "/sys/kernel/mm/hugepages"} {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		t.Skip("none of the runtime's /sys attributes on this host")
	}
	script := ""
	for _, p := range present {
		script += "ls -d " + p + " >/dev/null && echo HAVE " + p + "\n"
	}
	script += "test -e /sys/class/net && echo LEAK /sys/class/net\n"
	script += "echo x > /sys/devices/system/cpu/online 2>/dev/null && echo WROTE\n"
	r := sh(t, runOpts{}, script, "--reads", "declared")
	for _, p := range present {
		if !strings.Contains(r.stdout, "HAVE "+p+"\n") {
			t.Errorf("%s is not there under --reads declared: %s", p, r)
		}
	}
	if strings.Contains(r.stdout, "LEAK") || strings.Contains(r.stdout, "WROTE") {
		t.Errorf("more of /sys than the runtime's attributes, or writable: %s", r)
	}
}

func TestCallerHome(t *testing.T) {
	unreadable := filepath.Join(t.TempDir(), "home")
	writeFile(t, filepath.Join(unreadable, ".ssh", "id"), "KEY")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(unreadable, 0o755)
	var noHome []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") {
			noHome = append(noHome, kv)
		}
	}
	for name, env := range map[string][]string{
		"unreadable": append(os.Environ(), "HOME="+unreadable),
		"missing":    append(os.Environ(), "HOME=/nonexistent/sbx-home"),
		"unset":      noHome,
		"root's":     append(os.Environ(), "HOME=/root"),
	} {
		r := sh(t, runOpts{env: env}, `echo ran`)
		if r.code != 0 || r.stdout != "ran\n" {
			t.Errorf("HOME %s: %s", name, r)
		}
	}
	if !isRoot() {
		// The caller cannot resolve it: skipped, with a note.
		r := sbx(t, runOpts{env: append(os.Environ(), "HOME="+unreadable)}, "--dry-run", "--", "true")
		if !strings.Contains(r.stdout, `built-in denyRead \"~/.ssh\" under `+unreadable+` skipped`) {
			t.Errorf("no note for the skipped ~/.ssh: %s", r)
		}
	}
	// A path the user names still fails loudly.
	if !isRoot() {
		wantRefused(t, []string{"--deny-read", filepath.Join(unreadable, "x", "y")})
	}
}

// goModule writes a module proxy directory holding example.com/dep
// v1.0.0 and a main module that imports it; it returns both.
func goModule(t *testing.T) (proxy, mod string) {
	t.Helper()
	proxy, mod = hostTempDir(t), hostTempDir(t)
	v := filepath.Join(proxy, "example.com", "dep", "@v")
	writeFile(t, filepath.Join(v, "list"), "v1.0.0\n")
	writeFile(t, filepath.Join(v, "v1.0.0.info"), `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`)
	writeFile(t, filepath.Join(v, "v1.0.0.mod"), "module example.com/dep\n\ngo 1.21\n")
	f, err := os.Create(filepath.Join(v, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range map[string]string{
		"go.mod":  "module example.com/dep\n\ngo 1.21\n",
		"dep.go":  "package dep\n\nfunc Hello() string { return \"hello from dep\" }\n",
		"LICENSE": "MIT\n",
	} {
		w, err := z.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	writeFile(t, filepath.Join(mod, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Hello()) }\n")
	return proxy, mod
}

func TestPresetGo(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	proxy, mod := goModule(t)
	caches := hostTempDir(t)
	modcache := filepath.Join(caches, "mod")
	env := append(os.Environ(), "GOMODCACHE="+modcache, "GOFLAGS=-modcacherw", "GONOSUMDB=example.com", "GOSUMDB=off", "GOTOOLCHAIN=local")
	// Fill the module cache outside the sandbox, from the file proxy.
	tidy := exec.Command(gobin, "mod", "tidy")
	tidy.Dir = mod
	tidy.Env = append(append([]string{}, env...), "GOPROXY=file://"+proxy, "GOCACHE="+filepath.Join(caches, "prep-build"))
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	// In the sandbox: no network, a build cache that does not exist yet.
	gocache := filepath.Join(caches, "build")
	env = append(env, "GOPROXY=off", "GOCACHE="+gocache)
	build := gobin + " build -o /tmp/app . && /tmp/app"
	r := sh(t, runOpts{dir: mod, env: env}, build, "--preset", "go")
	if r.code != 0 || r.stdout != "hello from dep\n" {
		t.Fatalf("--preset go: go build failed: %s", r)
	}
	if st, err := os.Stat(gocache); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the missing GOCACHE should have been created 0700: %v %v", st, err)
	}
	// Without the preset the build fails on the read-only cache; with
	// --observe-files writes the hint names the cache and the preset.
	os.RemoveAll(gocache)
	os.MkdirAll(gocache, 0o700)
	r = sh(t, runOpts{dir: mod, env: env}, build, "--observe-files", "writes")
	if r.code == 0 || !strings.Contains(r.stderr, "(--preset go)") {
		t.Fatalf("want the hint to name --preset go, got %s", r)
	}
	// --quiet-violations: no hint.
	r = sh(t, runOpts{dir: mod, env: env}, build, "--observe-files", "writes", "--quiet-violations")
	if r.code == 0 || strings.Contains(r.stderr, "sbx:") {
		t.Fatalf("--quiet-violations should silence the hint: %s", r)
	}
	wantRefused(t, []string{"--preset", "cobol"}, []string{"--allow-registry", "cobol"})
}

func TestWriteHint(t *testing.T) {
	d := t.TempDir()
	r := sh(t, runOpts{dir: d}, `echo x > here.txt`, "--observe-files", "writes")
	if !strings.Contains(r.stderr, "1 refused write: "+filepath.Join(d, "here.txt")+" (--allow-write "+d+")") {
		t.Fatalf("want the refused path and the flag, got %s", r)
	}
	// A command that fails for its own reasons with nothing refused gets
	// no hint; one that succeeds never does.
	r = sh(t, runOpts{dir: d}, `exit 3`, "--observe-files", "writes")
	if r.code != 3 || r.stderr != "" {
		t.Fatalf("nothing refused: want no hint, got %s", r)
	}
	r = sh(t, runOpts{dir: d}, `true`)
	if r.stderr != "" {
		t.Fatalf("success: want no hint, got %s", r)
	}
}

// TestReviewedEscapes holds the ways around this work's protections that
// review found, each shown to fail now, with the allowed path beside it.
func TestReviewedEscapes(t *testing.T) {
	t.Run("Read and Edit deny on one directory keep it hidden", func(t *testing.T) {
		d := claudeProject(t, `{"permissions": {"allow": ["Edit(./**)"], "deny": ["Read(./secrets/**)", "Edit(./secrets/**)"]}}`)
		writeFile(t, filepath.Join(d, "secrets", "api.key"), "S3CRET")
		writeFile(t, filepath.Join(d, "sec", "prod"), "PROD")
		r := sh(t, runOpts{dir: d}, `cat secrets/api.key; echo x > secrets/new; echo ok > other && cat other`, "--claude-settings", d)
		if strings.Contains(r.stdout, "S3CRET") || !strings.Contains(r.stdout, "ok") {
			t.Fatalf("%s", r)
		}
		if _, err := os.Stat(filepath.Join(d, "secrets", "new")); err == nil {
			t.Fatal("wrote into a denied directory")
		}
		r = sh(t, runOpts{dir: d}, `cat sec/prod 2>/dev/null; true`, "--allow-write", ".", "--deny-read", "sec", "--deny-write", "sec/prod")
		if strings.Contains(r.stdout, "PROD") {
			t.Fatalf("flag form: %s", r)
		}
	})
	t.Run("a #! line does not re-open a credential under --reads declared", func(t *testing.T) {
		home := hostTempDir(t)
		writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE")
		writeFile(t, filepath.Join(home, ".ssh", "run"), "#!/bin/sh\ncat "+filepath.Join(home, ".ssh", "id_ed25519")+"\n")
		os.Chmod(filepath.Join(home, ".ssh", "run"), 0o755)
		proj := hostTempDir(t)
		for name, line := range map[string]string{
			"configure": "#!/usr/bin/env -S -u " + filepath.Join(home, ".ssh") + " sh -c \"cat " + filepath.Join(home, ".ssh", "id_ed25519") + "\"",
			"second":    "#!" + filepath.Join(home, ".ssh", "run"),
			"third":     "#!/usr/bin/env " + filepath.Join(home, ".ssh", "run"),
		} {
			writeFile(t, filepath.Join(proj, name), line+"\n")
			os.Chmod(filepath.Join(proj, name), 0o755)
			r := sbx(t, runOpts{dir: proj, env: append(os.Environ(), "HOME="+home)}, "--reads", "declared", "--allow-read", ".", "--", "./"+name)
			if strings.Contains(r.stdout, "PRIVATE") {
				t.Fatalf("%s: the key was read: %s", name, r)
			}
		}
	})
	t.Run("a writable root is never a protected name", func(t *testing.T) {
		d := t.TempDir()
		os.MkdirAll(filepath.Join(d, ".git", "hooks"), 0o755)
		writeFile(t, filepath.Join(d, ".bashrc"), "rc")
		for _, flags := range [][]string{{"--allow-write", ".git"}, {"--allow-write", ".git/hooks"}, {"--allow-write", ".bashrc"}, {"--allow-write", ".git*"}} {
			r := sh(t, runOpts{dir: d}, `touch .git/hooks/pre-commit 2>/dev/null; echo x >> .bashrc 2>/dev/null; true`, flags...)
			if r.code == 0 && flags[1] != ".git*" {
				t.Errorf("%q: want exit 125, got %s", flags, r)
			}
		}
		// From a project's Claude settings: skipped with a note, the run goes on.
		writeFile(t, filepath.Join(d, ".claude", "settings.json"), `{"permissions": {"allow": ["Edit(./.bashrc)", "Edit(./.git/**)"]}}`)
		r := sh(t, runOpts{dir: d}, `touch .git/hooks/pre-commit; echo x >> .bashrc; true`, "--claude-settings", d)
		wantCode(t, r, 0)
		if _, err := os.Stat(filepath.Join(d, ".git", "hooks", "pre-commit")); err == nil {
			t.Fatal("a hook was planted")
		}
		if b, _ := os.ReadFile(filepath.Join(d, ".bashrc")); string(b) != "rc" {
			t.Fatalf(".bashrc changed: %q", b)
		}
	})
	t.Run("a file mixing srt and Claude Code keys is refused", func(t *testing.T) {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "s.json"), `{"network": {}, "filesystem": {"denyRead": ["x"]}, "permissions": {"deny": ["Read(y)"]}}`)
		wantRefusedIn(t, d, "mixes", "--settings", filepath.Join(d, "s.json"))
	})
	t.Run("a directory named like the command is the command", func(t *testing.T) {
		d := t.TempDir()
		os.Mkdir(filepath.Join(d, "echo"), 0o755)
		r := sbx(t, runOpts{dir: d}, "--claude-settings", "echo", "hi")
		if r.code != 0 || r.stdout != "hi\n" {
			t.Fatalf("%s", r)
		}
		writeFile(t, filepath.Join(d, ".claude", "settings.json"), `{}`)
		r = sbx(t, runOpts{dir: t.TempDir()}, "--claude-settings="+d, "--", "/bin/echo", "ran")
		if r.code != 0 || r.stdout != "ran\n" {
			t.Fatalf("--claude-settings=DIR: %s", r)
		}
	})
	t.Run("a symlinked working directory", func(t *testing.T) {
		d := hostTempDir(t)
		os.Mkdir(filepath.Join(d, "real"), 0o755)
		os.Symlink("real", filepath.Join(d, "link"))
		link := filepath.Join(d, "link")
		r := sh(t, runOpts{dir: link, env: append(os.Environ(), "PWD="+link)}, `echo x > out && cat out`, "--reads", "declared", "--allow-write", ".")
		if r.code != 0 || r.stdout != "x\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("./script runs from the working directory", func(t *testing.T) {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "run.sh"), "#!/bin/sh\necho script-ran\n")
		os.Chmod(filepath.Join(d, "run.sh"), 0o755)
		for _, flags := range [][]string{nil, {"--weaker-nested"}} {
			r := sbx(t, runOpts{dir: d}, append(flags, "--", "./run.sh")...)
			if r.code != 0 || r.stdout != "script-ran\n" {
				t.Fatalf("%q: %s", flags, r)
			}
		}
	})
	t.Run("a denied subdirectory of a writable root that holds protected names", func(t *testing.T) {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "sec", ".bashrc"), "rc")
		writeFile(t, filepath.Join(d, "sec", "key"), "S3CRET")
		os.MkdirAll(filepath.Join(d, "sec", ".git", "hooks"), 0o755)
		r := sh(t, runOpts{dir: d}, `cat sec/key; echo x > sec/.bashrc; echo ok > f && cat f`, "--allow-write", ".", "--deny-read", "sec")
		if r.code != 0 || strings.Contains(r.stdout, "S3CRET") || !strings.Contains(r.stdout, "ok") {
			t.Fatalf("%s", r)
		}
		if b, _ := os.ReadFile(filepath.Join(d, "sec", ".bashrc")); string(b) != "rc" {
			t.Fatalf(".bashrc changed: %q", b)
		}
	})
	t.Run("strict reads: an allowRead of /tmp and a path below it", func(t *testing.T) {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "f"), "TMPFILE")
		os.Chmod(d, 0o755)
		r := sbx(t, runOpts{}, "--reads", "declared", "--allow-read", "/tmp", "--allow-read", d, "--", "cat", filepath.Join(d, "f"))
		if r.code != 0 || r.stdout != "TMPFILE" {
			t.Fatalf("%s", r)
		}
	})
}
