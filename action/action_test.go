// Package action holds the sbx GitHub Action (action.yml, install.sh,
// run.sh). These tests run the action's shell steps with plain bash in a
// fake GitHub environment (GITHUB_PATH, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT,
// RUNNER_TEMP), against an sbx built from this tree. Nothing here leaves
// 127.0.0.1: releases come from an httptest server, Go modules from a
// file:// proxy.
package action

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sbx-sh/sbx/violations/schema"
)

// sbxBin is sbx built from this tree (by TestMain).
var sbxBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sbx-action-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sbxBin = filepath.Join(dir, "sbx")
	cmd := exec.Command("go", "build", "-o", sbxBin, "../cmd/sbx")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ../cmd/sbx: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gh is a fake GitHub Actions runner environment.
type gh struct {
	t                         *testing.T
	runnerTemp                string
	pathFile, summary, output string
}

func newGH(t *testing.T) *gh {
	t.Helper()
	d := t.TempDir()
	g := &gh{
		t:          t,
		runnerTemp: filepath.Join(d, "runner-temp"),
		pathFile:   filepath.Join(d, "github_path"),
		summary:    filepath.Join(d, "step_summary"),
		output:     filepath.Join(d, "github_output"),
	}
	if err := os.Mkdir(g.runnerTemp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{g.pathFile, g.summary, g.output} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// env is the environment a step sees: this process's, minus anything that
// looks like the runner's or an input, plus the fake runner's files, the
// step's inputs, and PATH with GITHUB_PATH's entries in front (newest
// first, as the runner does).
func (g *gh) env(inputs map[string]string, extraPath ...string) []string {
	var env []string
	path := os.Getenv("PATH")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "INPUT_") || strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	b, err := os.ReadFile(g.pathFile)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, p := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if p != "" {
			path = p + ":" + path
		}
	}
	for _, p := range extraPath {
		path = p + ":" + path
	}
	env = append(env,
		"PATH="+path,
		"RUNNER_TEMP="+g.runnerTemp,
		"GITHUB_PATH="+g.pathFile,
		"GITHUB_STEP_SUMMARY="+g.summary,
		"GITHUB_OUTPUT="+g.output,
		"GITHUB_ACTIONS=true",
	)
	for k, v := range inputs {
		env = append(env, k+"="+v)
	}
	return env
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the action's script (install.sh or run.sh) with bash in dir.
func (g *gh) run(script, dir string, inputs map[string]string, extraPath ...string) result {
	g.t.Helper()
	return g.runEnv(script, dir, g.env(inputs, extraPath...), false)
}

// runEnv runs script with bash in dir and exactly the environment env.
// With merged, stdout and stderr are one pipe (as one stream, in the order
// written) and the result's stdout holds both.
func (g *gh) runEnv(script, dir string, env []string, merged bool) result {
	g.t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		g.t.Fatal(err)
	}
	cmd := exec.Command("bash", abs)
	cmd.Dir = dir
	cmd.Env = env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if merged {
		cmd.Stderr = cmd.Stdout
	}
	err = cmd.Run()
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		g.t.Fatalf("bash %s: %v", script, err)
	}
	var inputs []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "INPUT_") {
			inputs = append(inputs, kv)
		}
	}
	g.t.Logf("%s %q: exit %d\nstdout:\n%s\nstderr:\n%s", script, inputs, r.code, r.stdout, r.stderr)
	return r
}

func (g *gh) read(f string) string {
	g.t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		g.t.Fatal(err)
	}
	return string(b)
}

func (g *gh) bindir() string { return filepath.Join(g.runnerTemp, "sbx", "bin") }

// installed checks that install.sh put a working sbx into the bin
// directory and named that directory in GITHUB_PATH.
func (g *gh) installed(want []byte) {
	g.t.Helper()
	if got := strings.TrimSpace(g.read(g.pathFile)); got != g.bindir() {
		g.t.Errorf("GITHUB_PATH holds %q, want %q", got, g.bindir())
	}
	bin := filepath.Join(g.bindir(), "sbx")
	st, err := os.Stat(bin)
	if err != nil {
		g.t.Fatal(err)
	}
	if st.Mode().Perm()&0o111 == 0 {
		g.t.Errorf("%s is not executable (%v)", bin, st.Mode())
	}
	if want != nil {
		if got, _ := os.ReadFile(bin); !bytes.Equal(got, want) {
			g.t.Errorf("%s is not the binary served (%d bytes, want %d)", bin, len(got), len(want))
		}
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "sbx ") {
		g.t.Errorf("%s version: %v %q", bin, err, out)
	}
}

func TestInstallPath(t *testing.T) {
	g := newGH(t)
	r := g.run("install.sh", t.TempDir(), map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbxBin})
	if r.code != 0 {
		t.Fatalf("install=path: exit %d", r.code)
	}
	if !strings.Contains(r.stdout, "mode:") {
		t.Errorf("no doctor output on stdout")
	}
	want, _ := os.ReadFile(sbxBin)
	g.installed(want)

	g = newGH(t)
	r = g.run("install.sh", t.TempDir(), map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": filepath.Join(t.TempDir(), "missing")})
	if r.code == 0 || !strings.Contains(r.stderr, "::error") || !strings.Contains(r.stderr, "is not an executable file") {
		t.Errorf("install=path of a missing file: exit %d, want 1 and an ::error", r.code)
	}
	if strings.TrimSpace(g.read(g.pathFile)) != "" {
		t.Errorf("a failed install added to GITHUB_PATH")
	}
}

// TestInstallNoRunnerTemp: without RUNNER_TEMP (outside Actions), sbx goes
// into a fresh temporary directory.
func TestInstallNoRunnerTemp(t *testing.T) {
	g := newGH(t)
	tmp := t.TempDir()
	var env []string
	for _, kv := range g.env(map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbxBin}) {
		if !strings.HasPrefix(kv, "RUNNER_TEMP=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command("bash", "install.sh")
	cmd.Env = append(env, "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install.sh without RUNNER_TEMP: %v\n%s", err, out)
	}
	dir := strings.TrimSpace(g.read(g.pathFile))
	if !strings.HasPrefix(dir, tmp+"/sbx-action.") || filepath.Base(dir) != "bin" {
		t.Errorf("GITHUB_PATH holds %q, want a bin directory in a new directory under %s", dir, tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, "sbx")); err != nil {
		t.Error(err)
	}
}

// fakeSbx writes a script that answers version and doctor like sbx on a
// machine whose sandbox mode is mode, and runs -c true only as far as that
// mode allows (weaker-only: with --weaker-nested).
func fakeSbx(t *testing.T, mode string) string {
	p := filepath.Join(t.TempDir(), "sbx")
	script := `#!/bin/sh
mode=` + mode + `
case $1 in
version) echo "sbx fake"; exit 0 ;;
doctor) printf 'kernel:           Linux fake\nuser namespaces:  NO — cannot create a user namespace: AppArmor restricts unprivileged user namespaces\nmode:             %s\n' "$mode"; exit 0 ;;
esac
for a; do
	if [ "$a" = --weaker-nested ] && [ "$mode" = weaker-only ]; then exit 0; fi
done
echo "sbx: cannot create a user namespace (fake)" >&2
exit 125
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInstallDoctor: the install step fails closed when the sandbox cannot
// start, shows doctor's diagnosis and points to the README; weaker-only is
// accepted when --weaker-nested was asked for.
func TestInstallDoctor(t *testing.T) {
	for _, tc := range []struct {
		name, mode, args, settings string
		ok                         bool
	}{
		{"unavailable", "unavailable", "", "", false},
		{"unavailable even with --weaker-nested", "unavailable", "--weaker-nested", "", false},
		{"weaker-only", "weaker-only", "--observe-files writes", "", false},
		{"weaker-only with --weaker-nested", "weaker-only", "--allow-write . --weaker-nested", "", true},
		{"weaker-only with enableWeakerNestedSandbox", "weaker-only", "", `{"enableWeakerNestedSandbox": true, "network": {}, "filesystem": {}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGH(t)
			dir := t.TempDir()
			in := map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": fakeSbx(t, tc.mode), "INPUT_ARGS": tc.args}
			if tc.settings != "" {
				if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(tc.settings), 0o644); err != nil {
					t.Fatal(err)
				}
				in["INPUT_SETTINGS"] = "s.json"
			}
			r := g.run("install.sh", dir, in)
			if !strings.Contains(r.stdout, "AppArmor restricts") {
				t.Errorf("doctor's output is not shown")
			}
			if tc.ok {
				if r.code != 0 || !strings.Contains(r.stderr, "::warning") {
					t.Errorf("exit %d, want 0 and a ::warning about --weaker-nested", r.code)
				}
				return
			}
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			if !strings.Contains(r.stderr, "::error") || !strings.Contains(r.stderr, "#when-sbx-cannot-start") || !strings.Contains(r.stderr, "(fake)") {
				t.Errorf("stderr has no ::error with sbx's reason, pointing to the README's \"When sbx cannot start\"")
			}
		})
	}
}

// releaseServer serves a fake GitHub release of sbx on 127.0.0.1:
// /releases/download/TAG/ASSET and /releases/latest/download/ASSET.
type releaseServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newReleaseServer(t *testing.T, tag, asset string, bin []byte, sums string) *releaseServer {
	s := &releaseServer{}
	files := map[string][]byte{
		"/releases/download/" + tag + "/" + asset:   bin,
		"/releases/download/" + tag + "/SHA256SUMS": []byte(sums),
		"/releases/latest/download/" + asset:        bin,
		"/releases/latest/download/SHA256SUMS":      []byte(sums),
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.URL.Path)
		s.mu.Unlock()
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *releaseServer) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestInstallRelease(t *testing.T) {
	bin, err := os.ReadFile(sbxBin)
	if err != nil {
		t.Fatal(err)
	}
	arch := runtime.GOARCH // the built binary's, which is this machine's
	if arch != "amd64" && arch != "arm64" {
		t.Skipf("no sbx release for %s", arch)
	}
	other := "amd64"
	if arch == "amd64" {
		other = "arm64"
	}
	good := sha256hex(bin)
	bad := sha256hex(append([]byte("tampered"), bin...))
	for _, tc := range []struct {
		name, version, served, asset, sums string
		wantErr                            string // "" means success
		wantHits                           []string
	}{
		{
			name: "pinned", version: "v9.9.9", served: "v9.9.9", asset: "sbx-v9.9.9-linux-" + arch,
			sums:     good + "  sbx-v9.9.9-linux-" + arch + "\n" + bad + "  sbx-v9.9.9-linux-" + other + "\n",
			wantHits: []string{"/releases/download/v9.9.9/SHA256SUMS", "/releases/download/v9.9.9/sbx-v9.9.9-linux-" + arch},
		},
		{
			name: "pinned, asset without the v", version: "v9.9.9", served: "v9.9.9", asset: "sbx-9.9.9-linux-" + arch,
			sums:     good + " *sbx-9.9.9-linux-" + arch + "\n",
			wantHits: []string{"/releases/download/v9.9.9/SHA256SUMS", "/releases/download/v9.9.9/sbx-9.9.9-linux-" + arch},
		},
		{
			name: "latest", version: "latest", served: "v9.9.9", asset: "sbx-v9.9.9-linux-" + arch,
			sums:     bad + "  sbx-v9.9.9-linux-" + other + "\n" + good + "  sbx-v9.9.9-linux-" + arch + "\n",
			wantHits: []string{"/releases/latest/download/SHA256SUMS", "/releases/latest/download/sbx-v9.9.9-linux-" + arch},
		},
		{
			name: "wrong checksum", version: "v9.9.9", served: "v9.9.9", asset: "sbx-v9.9.9-linux-" + arch,
			sums:    bad + "  sbx-v9.9.9-linux-" + arch + "\n",
			wantErr: "checksum mismatch",
		},
		{
			name: "wrong checksum, latest", version: "latest", served: "v9.9.9", asset: "sbx-v9.9.9-linux-" + arch,
			sums:    bad + "  sbx-v9.9.9-linux-" + arch + "\n",
			wantErr: "checksum mismatch",
		},
		{
			name: "asset not in SHA256SUMS", version: "v9.9.9", served: "v9.9.9", asset: "sbx-v9.9.9-linux-" + arch,
			sums:    good + "  sbx-v9.9.9-linux-" + other + "\n",
			wantErr: "lists no sbx-v9.9.9-linux-" + arch,
		},
		{
			name: "no such release", version: "v1.0.0", served: "v9.9.9", asset: "sbx-v1.0.0-linux-" + arch,
			sums:    good + "  sbx-v1.0.0-linux-" + arch + "\n",
			wantErr: "cannot download",
		},
		{
			name: "version with a slash", version: "v1/../../x", served: "v9.9.9", asset: "sbx-v9.9.9-linux-" + arch,
			sums:    good + "  sbx-v9.9.9-linux-" + arch + "\n",
			wantErr: "use latest, a release tag",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReleaseServer(t, tc.served, tc.asset, bin, tc.sums)
			g := newGH(t)
			r := g.run("install.sh", t.TempDir(), map[string]string{
				"INPUT_INSTALL":     "release",
				"INPUT_VERSION":     tc.version,
				"INPUT_RELEASE_URL": srv.URL + "/releases/download",
			})
			if tc.wantErr != "" {
				if r.code != 1 || !strings.Contains(r.stderr, "::error") || !strings.Contains(r.stderr, tc.wantErr) {
					t.Errorf("exit %d, want 1 and an ::error saying %q", r.code, tc.wantErr)
				}
				if _, err := os.Stat(filepath.Join(g.bindir(), "sbx")); err == nil {
					t.Errorf("sbx was installed")
				}
				if strings.TrimSpace(g.read(g.pathFile)) != "" {
					t.Errorf("a failed install added to GITHUB_PATH")
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d", r.code)
			}
			g.installed(bin)
			if got := srv.requested(); strings.Join(got, " ") != strings.Join(tc.wantHits, " ") {
				t.Errorf("requested %q, want %q", got, tc.wantHits)
			}
			if entries, _ := os.ReadDir(filepath.Join(g.runnerTemp, "sbx")); len(entries) != 1 {
				t.Errorf("the download directory was left behind: %v", entries)
			}
		})
	}
}

// TestInstallReleaseRefusals: what is refused before anything is fetched.
func TestInstallReleaseRefusals(t *testing.T) {
	fakeBin := t.TempDir()
	if err := os.WriteFile(filepath.Join(fakeBin, "uname"), []byte("#!/bin/sh\necho riscv64\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := newReleaseServer(t, "v9.9.9", "x", nil, "")
	for _, tc := range []struct {
		name, url, version, wantErr string
		path                        []string
	}{
		{"unsupported machine", srv.URL + "/releases/download", "v9.9.9", "no sbx release for machine 'riscv64'", []string{fakeBin}},
		{"plain http to another host", "http://example.invalid/releases/download", "v9.9.9", "use https://", nil},
		{"latest without /download", srv.URL + "/mirror", "latest", "does not end in /download", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGH(t)
			r := g.run("install.sh", t.TempDir(), map[string]string{
				"INPUT_INSTALL": "release", "INPUT_VERSION": tc.version, "INPUT_RELEASE_URL": tc.url,
			}, tc.path...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("exit %d, want 1 and %q", r.code, tc.wantErr)
			}
		})
	}
	if hits := srv.requested(); len(hits) != 0 {
		t.Errorf("requested %q before refusing", hits)
	}
	g := newGH(t)
	if r := g.run("install.sh", t.TempDir(), map[string]string{"INPUT_INSTALL": "brew"}); r.code != 1 || !strings.Contains(r.stderr, "use release, go or path") {
		t.Errorf("install=brew: exit %d", r.code)
	}
}

// TestInstallGo runs install=go against a file:// module proxy holding
// this tree as github.com/sbx-sh/sbx v0.0.1 in front of the local module
// cache's downloads: go install runs for real, offline.
func TestInstallGo(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	downloads := filepath.Join(strings.TrimSpace(string(out)), "cache", "download")
	if _, err := os.Stat(filepath.Join(downloads, "golang.org", "x", "sys")); err != nil {
		t.Skipf("the module cache has no downloads to serve offline: %v", err)
	}
	proxy := t.TempDir()
	vdir := filepath.Join(proxy, "github.com", "sbx-sh", "sbx", "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":        []byte("v0.0.1\n"),
		"v0.0.1.info": []byte(`{"Version":"v0.0.1","Time":"2026-01-01T00:00:00Z"}`),
		"v0.0.1.mod":  gomod,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := moduleZip(filepath.Join(vdir, "v0.0.1.zip"), "..", "github.com/sbx-sh/sbx@v0.0.1"); err != nil {
		t.Fatal(err)
	}

	g := newGH(t)
	r := g.run("install.sh", t.TempDir(), map[string]string{
		"INPUT_INSTALL":  "go",
		"INPUT_VERSION":  "latest",
		"GOPROXY":        "file://" + proxy + ",file://" + downloads,
		"GOSUMDB":        "off",
		"GOMODCACHE":     filepath.Join(t.TempDir(), "modcache"),
		"GOFLAGS":        "-modcacherw",
		"GOTOOLCHAIN":    "local",
		"GONOSUMDB":      "",
		"GOPRIVATE":      "",
		"GOINSECURE":     "",
		"GONOPROXY":      "",
		"GOEXPERIMENT":   "",
		"GOWORK":         "off",
		"CGO_ENABLED":    "1", // the script must set 0 itself
		"INPUT_SBX_PATH": "",
	})
	if r.code != 0 {
		t.Fatalf("install=go: exit %d", r.code)
	}
	if !strings.Contains(r.stdout, "cmd/sbx@latest") {
		t.Errorf("version latest did not become @latest")
	}
	g.installed(nil)
}

// moduleZip writes the module at dir as a module zip with prefix: every
// regular file except .git, bin/, nested modules and what .gitignore names
// for builds (bench/out, *.test).
func moduleZip(dst, dir, prefix string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case rel == ".git" || rel == "bin" || rel == "bench/out" || rel == "vendor":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || rel == "sbx" || strings.HasSuffix(rel, ".test") {
			return nil
		}
		w, err := zw.Create(prefix + "/" + rel)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// installSbx installs the built sbx (install=path) into g and returns it.
func installSbx(t *testing.T) *gh {
	t.Helper()
	g := newGH(t)
	if r := g.run("install.sh", t.TempDir(), map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbxBin}); r.code != 0 {
		t.Fatalf("install: exit %d", r.code)
	}
	return g
}

func outputs(t *testing.T, g *gh) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(g.read(g.output)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

func TestRun(t *testing.T) {
	g := installSbx(t)
	ws := t.TempDir() // the workspace: where the step starts
	work := filepath.Join(ws, "sub")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sbx.json", `{"network": {}, "filesystem": {"allowWrite": ["."]}}`)
	write("bad.json", `{"bogus": 1}`)
	jsonl := filepath.Join(g.runnerTemp, "sbx-violations.jsonl")
	lines := func() int {
		b, err := os.ReadFile(jsonl)
		if err != nil {
			return 0
		}
		return bytes.Count(b, []byte("\n"))
	}
	step := func(in map[string]string) result {
		t.Helper()
		for _, f := range []string{g.summary, g.output} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return g.run("run.sh", ws, in)
	}

	t.Run("success", func(t *testing.T) {
		r := step(map[string]string{
			"INPUT_COMMAND":           `touch made-here && echo "hello from $(pwd)"`,
			"INPUT_SETTINGS":          "sbx.json", // relative to the workspace, not to sub
			"INPUT_WORKING_DIRECTORY": "sub",
			"INPUT_ARGS":              "--observe-files writes",
		})
		if r.code != 0 {
			t.Fatalf("exit %d, want 0", r.code)
		}
		if !strings.Contains(r.stdout, "hello from "+work) {
			t.Errorf("stdout %q: the command did not run in the working directory", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(work, "made-here")); err != nil {
			t.Errorf("the allowed write did not happen: %v", err)
		}
		if strings.Contains(r.stdout+r.stderr, "::warning") {
			t.Errorf("annotations on a clean run")
		}
		if s := g.read(g.summary); !strings.Contains(s, "### sbx: no violations") {
			t.Errorf("summary %q", s)
		}
		if o := outputs(t, g); o["exit-code"] != "0" || o["violations"] != "0" || o["violations-file"] != jsonl {
			t.Errorf("outputs %v", o)
		}
	})

	for _, tc := range []struct {
		name, fail string
		want       int
	}{
		{"violation", "true", 123},
		{"violation again, not failing", "false", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := lines()
			r := step(map[string]string{
				"INPUT_COMMAND":           `touch refused-here 2>/dev/null; echo carried on`,
				"INPUT_WORKING_DIRECTORY": work,
				"INPUT_ARGS":              "--observe-files writes",
				"INPUT_FAIL_ON_VIOLATION": tc.fail,
			})
			if r.code != tc.want {
				t.Errorf("exit %d, want %d", r.code, tc.want)
			}
			if !strings.Contains(r.stdout, "carried on") {
				t.Errorf("the command did not run")
			}
			if _, err := os.Stat(filepath.Join(work, "refused-here")); err == nil {
				t.Errorf("the write outside the allowed paths happened")
			}
			ann := regexp.MustCompile(`(?m)^::warning title=sbx violation \(file-write\)::file-write deny \S+ refused-here -> ` + regexp.QuoteMeta(filepath.Join(work, "refused-here")) + ` \(.*\) \(rule: .*\) pid \d+ \S*touch$`)
			if !ann.MatchString(r.stdout) {
				t.Errorf("no ::warning annotation for the refused write on stdout")
			}
			if !strings.Contains(r.stdout, "::warning title=sbx violations::1 violation (1 file-write); records: "+jsonl) {
				t.Errorf("no ::warning headline on stdout")
			}
			if s := g.read(g.summary); !strings.Contains(s, "### sbx: 1 violation") || !strings.Contains(s, "| file-write | 1 |") {
				t.Errorf("summary %q lacks the violation count", s)
			}
			if n := lines(); n != before+1 {
				t.Errorf("%s has %d records, want %d", jsonl, n, before+1)
			}
			b, _ := os.ReadFile(jsonl)
			if !bytes.Contains(b, []byte(`"kind":"file-write"`)) || !bytes.HasPrefix(b, []byte(`{"time":`)) {
				t.Errorf("%s is not JSON Lines: %q", jsonl, b)
			}
			for _, l := range bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
				if err := schema.Record().CheckLine(l); err != nil {
					t.Errorf("%s: a record does not match the schema: %v\n%s", jsonl, err, l)
				}
			}
			if o := outputs(t, g); o["violations"] != "1" || o["exit-code"] != fmt.Sprint(tc.want) {
				t.Errorf("outputs %v", o)
			}
		})
	}

	t.Run("invalid settings", func(t *testing.T) {
		r := step(map[string]string{"INPUT_COMMAND": "echo ran", "INPUT_SETTINGS": "bad.json"})
		if r.code != 125 {
			t.Errorf("exit %d, want 125", r.code)
		}
		if regexp.MustCompile(`(?m)^ran$`).MatchString(r.stdout) {
			t.Errorf("the command ran")
		}
		// sbx's stderr is merged into stdout (see run.sh).
		if !strings.Contains(r.stdout, "bogus") && !strings.Contains(r.stdout, "bad.json") {
			t.Errorf("the output does not name the problem")
		}
	})

	t.Run("args are words, not shell", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "pwned")
		r := step(map[string]string{
			"INPUT_COMMAND": `printf '%s|%s\n' "$GREETING" "$X"`,
			"INPUT_ARGS":    `--set-env 'GREETING=hello world' --set-env "X=$(touch ` + marker + `)"`,
		})
		if r.code != 0 || !strings.Contains(r.stdout, "hello world|$(touch "+marker+")") {
			t.Errorf("exit %d, stdout %q", r.code, r.stdout)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("args were run by a shell")
		}
	})

	for _, tc := range []struct {
		name string
		in   map[string]string
		want string
	}{
		{"no command", map[string]string{"INPUT_COMMAND": ""}, "nothing to run"},
		{"bad fail-on-violation", map[string]string{"INPUT_COMMAND": "true", "INPUT_FAIL_ON_VIOLATION": "maybe"}, "use true or false"},
		{"unmatched quote in args", map[string]string{"INPUT_COMMAND": "true", "INPUT_ARGS": "--set-env 'A=b"}, "cannot split"},
		{"missing working directory", map[string]string{"INPUT_COMMAND": "true", "INPUT_WORKING_DIRECTORY": "nope"}, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := step(tc.in)
			if r.code != 125 || !strings.Contains(r.stderr, "::error") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want 125 and an ::error saying %q", r.code, tc.want)
			}
		})
	}
}

// TestActionYML checks action.yml with a line-based reading: a composite
// action; inputs reach the scripts only through env (INPUT_*), every
// INPUT_* a script reads is declared as an input and passed to the step
// that runs that script, and no ${{ }} appears in a run: body.
func TestActionYML(t *testing.T) {
	b, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		section  string // top-level key
		inputs   = map[string]bool{}
		required = map[string]bool{}
		using    string
		lastIn   string
		steps    []map[string]string // env name → input expression, plus "run"
		inEnv    bool
	)
	top := regexp.MustCompile(`^([A-Za-z_-]+):`)
	input := regexp.MustCompile(`^  ([A-Za-z0-9_-]+):\s*$`)
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if m := top.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		switch section {
		case "inputs":
			if m := input.FindStringSubmatch(line); m != nil {
				lastIn = m[1]
				inputs[lastIn] = true
			} else if strings.TrimSpace(line) == "required: true" {
				required[lastIn] = true
			}
		case "runs":
			tl := strings.TrimSpace(line)
			if strings.HasPrefix(line, "  using:") {
				using = strings.TrimSpace(strings.TrimPrefix(tl, "using:"))
			}
			if strings.HasPrefix(line, "    - ") {
				steps = append(steps, map[string]string{})
				inEnv = false
				tl = strings.TrimPrefix(tl, "- ")
			}
			if len(steps) == 0 {
				continue
			}
			st := steps[len(steps)-1]
			indent := len(line) - len(strings.TrimLeft(line, " "))
			switch {
			case tl == "env:":
				inEnv = true
			case inEnv && indent == 8:
				k, v, _ := strings.Cut(tl, ":")
				st[k] = strings.TrimSpace(v)
			case strings.HasPrefix(tl, "run:"):
				inEnv = false
				st["run"] = strings.TrimSpace(strings.TrimPrefix(tl, "run:"))
				if strings.Contains(line, "${{") {
					t.Errorf("action.yml:%d: ${{ }} in a run: body: %s", i+1, line)
				}
				if st["run"] == "|" || st["run"] == ">" {
					t.Errorf("action.yml:%d: a multi-line run: body; keep the logic in the scripts", i+1)
				}
			case indent <= 6:
				inEnv = false
			}
		}
	}
	if using != "composite" {
		t.Errorf("runs.using is %q, want composite", using)
	}
	for _, in := range []string{"command", "settings", "version", "install", "release-url", "sbx-path", "args", "fail-on-violation", "working-directory", "fix-host"} {
		if !inputs[in] {
			t.Errorf("input %q is not declared", in)
		}
	}
	if !required["command"] {
		t.Errorf("input command is not required")
	}
	envName := func(in string) string { return "INPUT_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_")) }
	read := regexp.MustCompile(`INPUT_[A-Z0-9_]+`)
	ran := map[string]bool{}
	for _, st := range steps {
		m := regexp.MustCompile(`^bash "\$GITHUB_ACTION_PATH/([a-z]+\.sh)"$`).FindStringSubmatch(st["run"])
		if m == nil {
			t.Errorf("step run %q does not run a script beside action.yml", st["run"])
			continue
		}
		script := m[1]
		ran[script] = true
		src, err := os.ReadFile(script)
		if err != nil {
			t.Error(err)
			continue
		}
		names := read.FindAllString(string(src), -1)
		sort.Strings(names)
		for _, name := range names {
			in := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "INPUT_"), "_", "-"))
			if !inputs[in] {
				t.Errorf("%s reads %s, but action.yml declares no input %q", script, name, in)
			}
			if st[name] == "" {
				t.Errorf("%s reads %s, but its step does not set it", script, name)
			}
		}
		for k, v := range st {
			if !strings.HasPrefix(k, "INPUT_") {
				continue
			}
			in := strings.TrimSuffix(strings.TrimPrefix(v, "${{ inputs."), " }}")
			if envName(in) != k || !inputs[in] {
				t.Errorf("step %s: %s: %s is not the input of that name", script, k, v)
			}
		}
	}
	if !ran["install.sh"] || !ran["run.sh"] {
		t.Errorf("the steps run %v, want install.sh and run.sh", ran)
	}
}

// TestInstallReleaseURLHost: plain http only to this machine, matched on
// the whole authority; no URL with userinfo (an @ before the host), whose
// host is not what a prefix match sees. The refusals run with a curl that
// only records that it ran, so nothing is fetched from anywhere even if a
// URL were wrongly accepted.
func TestInstallReleaseURLHost(t *testing.T) {
	bin, err := os.ReadFile(sbxBin)
	if err != nil {
		t.Fatal(err)
	}
	arch := runtime.GOARCH
	if arch != "amd64" && arch != "arm64" {
		t.Skipf("no sbx release for %s", arch)
	}
	asset := "sbx-v9.9.9-linux-" + arch
	srv := newReleaseServer(t, "v9.9.9", asset, bin, sha256hex(bin)+"  "+asset+"\n")
	hostport := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(hostport, ":")
	fakeBin := t.TempDir()
	curlLog := filepath.Join(fakeBin, "curl.log")
	if err := os.WriteFile(filepath.Join(fakeBin, "curl"), []byte("#!/bin/sh\nprintf '%s\\n' \"$*\" >>'"+curlLog+"'\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const userinfo = "a user name or password"
	const plain = "use https://"
	for _, tc := range []struct{ url, wantErr string }{
		{"http://127.0.0.1:x@" + hostport + "/releases/download", userinfo},
		{"http://127.0.0.1@" + hostport + "/releases/download", userinfo},
		{"http://localhost:1@" + hostport + "/releases/download", userinfo},
		{"http://[::1]:1@" + hostport + "/releases/download", userinfo},
		{"http://localhost@" + hostport, userinfo},
		{"https://token@" + hostport + "/releases/download", userinfo},
		{"https://user:pw@" + hostport + "/releases/download", userinfo},
		{"https://127.0.0.1:" + port + "@github.com/sbx-sh/sbx/releases/download", userinfo},
		{"http://127.0.0.1:" + port + "x/releases/download", plain},
		{"http://127.0.0.1.example/releases/download", plain},
		{"http://localhost.example/releases/download", plain},
		{"http://127.0.0.1:/releases/download", plain},
		{"http://127.0.0.1:" + port + "?/releases/download", plain},
		{"HTTP://127.0.0.1:" + port + "/releases/download", plain},
		{"ftp://127.0.0.1:" + port + "/releases/download", plain},
	} {
		t.Run(tc.url, func(t *testing.T) {
			g := newGH(t)
			r := g.run("install.sh", t.TempDir(), map[string]string{
				"INPUT_INSTALL": "release", "INPUT_VERSION": "v9.9.9", "INPUT_RELEASE_URL": tc.url,
			}, fakeBin)
			if r.code != 1 || !strings.Contains(r.stderr, "::error") || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("exit %d, want 1 and an ::error saying %q", r.code, tc.wantErr)
			}
			if tc.wantErr == userinfo && (strings.Contains(r.stdout+r.stderr, "token") || strings.Contains(r.stdout+r.stderr, "pw@")) {
				t.Errorf("the userinfo was logged")
			}
			if _, err := os.Stat(filepath.Join(g.bindir(), "sbx")); err == nil {
				t.Errorf("sbx was installed")
			}
		})
	}
	if b, err := os.ReadFile(curlLog); err == nil {
		t.Fatalf("curl ran for a refused URL:\n%s", b)
	}
	// What stays accepted: plain http to this machine by name, and a
	// trailing slash.
	for _, url := range []string{"http://localhost:" + port + "/releases/download", srv.URL + "/releases/download/"} {
		t.Run(url, func(t *testing.T) {
			g := newGH(t)
			r := g.run("install.sh", t.TempDir(), map[string]string{
				"INPUT_INSTALL": "release", "INPUT_VERSION": "v9.9.9", "INPUT_RELEASE_URL": url,
			})
			if r.code != 0 {
				t.Fatalf("exit %d, want 0", r.code)
			}
			g.installed(bin)
		})
	}
}

// TestInstallControlCharacters: an input that would reach the log with a
// control character (a newline could start a workflow command line of its
// own) is refused with one ::error line that does not echo it.
func TestInstallControlCharacters(t *testing.T) {
	srv := newReleaseServer(t, "v9.9.9", "x", nil, "")
	base := srv.URL + "/releases/download"
	for _, tc := range []struct {
		name, input string
		in          map[string]string
	}{
		{"newline in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\n::add-mask::hidden"}},
		{"CR in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\r::warning::hidden"}},
		{"trailing newline in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\n"}},
		{"ESC in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\x1b[2Khidden"}},
		{"tab in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\thidden"}},
		{"DEL in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\x7fhidden"}},
		{"C1 NEL in release-url", "release-url", map[string]string{"INPUT_RELEASE_URL": base + "\u0085hidden"}},
		{"newline in version", "version", map[string]string{"INPUT_RELEASE_URL": base, "INPUT_VERSION": "v9.9.9\n::add-mask::hidden"}},
		{"CR in version", "version", map[string]string{"INPUT_RELEASE_URL": base, "INPUT_VERSION": "v9.9.9\r::set-output name=x::hidden"}},
		{"newline in install", "install", map[string]string{"INPUT_INSTALL": "path\n::add-mask::hidden", "INPUT_SBX_PATH": sbxBin}},
		{"newline in sbx-path", "sbx-path", map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbxBin + "\n::add-mask::hidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]string{"INPUT_INSTALL": "release", "INPUT_VERSION": "v9.9.9"}
			for k, v := range tc.in {
				in[k] = v
			}
			g := newGH(t)
			r := g.run("install.sh", t.TempDir(), in)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			want := "::error title=sbx install::input " + tc.input + " contains a control character"
			if !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") || strings.ContainsAny(r.stderr, "\r\x1b\t") {
				t.Errorf("stderr %q, want one line starting %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if strings.Contains(r.stdout+r.stderr, "hidden") {
				t.Errorf("the input's value was logged")
			}
			if strings.TrimSpace(g.read(g.pathFile)) != "" {
				t.Errorf("a refused install added to GITHUB_PATH")
			}
		})
	}
	if hits := srv.requested(); len(hits) != 0 {
		t.Errorf("requested %q before refusing", hits)
	}
}

// TestRunStopCommands: whatever the sandboxed command prints is inside a
// ::stop-commands:: window (so the runner runs none of it as a workflow
// command), on the same stream as the markers; the window closes only
// after the command, and the script's own annotations come after it.
func TestRunStopCommands(t *testing.T) {
	g := installSbx(t)
	ws := t.TempDir()
	command := `echo '::warning::forged'
echo '::add-mask::forged-stderr' >&2
echo '::set-output name=exit-code::0'
env
touch refused-here 2>/dev/null
(sleep 1; echo '::warning::late') &
echo '::error::last'`
	stopRe := regexp.MustCompile(`^::stop-commands::([0-9a-f]{32})$`)
	var tokens []string
	for i := 0; i < 2; i++ {
		r := g.runEnv("run.sh", ws, g.env(map[string]string{
			"INPUT_COMMAND":           command,
			"INPUT_ARGS":              "--observe-files writes",
			"INPUT_FAIL_ON_VIOLATION": "false",
		}), true)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0", r.code)
		}
		lines := strings.Split(r.stdout, "\n")
		stop, resume := -1, -1
		token := ""
		for j, l := range lines {
			if m := stopRe.FindStringSubmatch(l); m != nil {
				if stop >= 0 {
					t.Fatalf("line %d: a second ::stop-commands::", j+1)
				}
				stop, token = j, m[1]
			}
		}
		if stop < 0 {
			t.Fatalf("no ::stop-commands::TOKEN line in the output")
		}
		for j, l := range lines {
			if l == "::"+token+"::" {
				if resume >= 0 {
					t.Fatalf("line %d: the token resumes twice", j+1)
				}
				resume = j
			}
		}
		if resume < 0 {
			t.Fatalf("no ::%s:: line to resume workflow commands", token)
		}
		if resume < stop {
			t.Fatalf("::%s:: (line %d) comes before ::stop-commands:: (line %d)", token, resume+1, stop+1)
		}
		if n := strings.Count(r.stdout, token); n != 2 {
			t.Errorf("the token appears %d times in the output, want 2 (the markers only; not in the command's environment)", n)
		}
		inside := func(text string, must bool) {
			t.Helper()
			found := false
			for j, l := range lines {
				if l != text {
					continue
				}
				found = true
				if j <= stop || j >= resume {
					t.Errorf("%q is line %d, outside the stop-commands window (lines %d to %d)", text, j+1, stop+1, resume+1)
				}
			}
			if must && !found {
				t.Errorf("the command's %q is not in the output", text)
			}
		}
		inside("::warning::forged", true)
		inside("::add-mask::forged-stderr", true)
		inside("::set-output name=exit-code::0", true)
		inside("::error::last", true)
		inside("::warning::late", false) // only if the background job outlived sbx
		// Outside the window, every workflow command is the script's own
		// annotation, and they come after it.
		ann := 0
		for j, l := range lines {
			if (j > stop && j < resume) || j == stop || j == resume || !strings.HasPrefix(l, "::") {
				continue
			}
			if j < stop || !strings.HasPrefix(l, "::warning title=sbx") {
				t.Errorf("line %d %q: a workflow command outside the window that is not the script's annotation", j+1, l)
			}
			ann++
		}
		if ann != 2 {
			t.Errorf("%d annotations after the window, want 2 (the violation and the headline)", ann)
		}
		if o := outputs(t, g); o["exit-code"] != "0" || o["violations"] != "1" {
			t.Errorf("outputs %v", o)
		}
		tokens = append(tokens, token)
	}
	if tokens[0] == tokens[1] {
		t.Errorf("two runs used the same token %s", tokens[0])
	}
}

// mktempLog puts a mktemp on PATH that logs its arguments to a file and
// runs the real one; it returns the directory to put first on PATH and
// the log.
func mktempLog(t *testing.T) (string, string) {
	real, err := exec.LookPath("mktemp")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "mktemp"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, log
}

// TestRunTempFiles: run.sh's scratch files are in a directory of its own
// made by mktemp -d (inside RUNNER_TEMP when set) and removed afterwards;
// without RUNNER_TEMP the records go into a new directory, never to a
// fixed name in TMPDIR or /tmp (where another user could plant a symlink).
func TestRunTempFiles(t *testing.T) {
	g := installSbx(t)
	ws := t.TempDir()
	in := map[string]string{
		"INPUT_COMMAND":           "touch refused-here 2>/dev/null; echo done",
		"INPUT_ARGS":              "--observe-files writes",
		"INPUT_FAIL_ON_VIOLATION": "false",
	}
	tmpdir := t.TempDir()
	fake, log := mktempLog(t)
	// The bin directory install.sh made stays on PATH through GITHUB_PATH.
	env := append(g.env(in, fake), "TMPDIR="+tmpdir)
	checkLog := func(t *testing.T, where string) {
		t.Helper()
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatalf("mktemp was not run: %v", err)
		}
		for _, c := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.HasPrefix(c, "-d "+where+"/") {
				t.Errorf("mktemp %s: want mktemp -d in %s", c, where)
			}
		}
		if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("RUNNER_TEMP", func(t *testing.T) {
		r := g.runEnv("run.sh", ws, env, false)
		if r.code != 0 || !strings.Contains(r.stdout, "done") {
			t.Fatalf("exit %d", r.code)
		}
		checkLog(t, g.runnerTemp)
		entries, _ := os.ReadDir(g.runnerTemp)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != "sbx sbx-violations.jsonl" {
			t.Errorf("RUNNER_TEMP holds %q, want sbx and sbx-violations.jsonl only (the scratch directory was left behind?)", names)
		}
		if o := outputs(t, g); o["violations-file"] != filepath.Join(g.runnerTemp, "sbx-violations.jsonl") || o["violations"] != "1" {
			t.Errorf("outputs %v", o)
		}
		if entries, _ := os.ReadDir(tmpdir); len(entries) != 0 {
			t.Errorf("TMPDIR holds %v, want nothing (RUNNER_TEMP is set)", entries)
		}
	})

	t.Run("no RUNNER_TEMP", func(t *testing.T) {
		// A symlink planted at the old fixed name must not be followed.
		victim := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(tmpdir, "sbx-violations.jsonl")); err != nil {
			t.Fatal(err)
		}
		var env2 []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, "RUNNER_TEMP=") {
				env2 = append(env2, kv)
			}
		}
		for run := 1; run <= 2; run++ {
			if err := os.WriteFile(g.output, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r := g.runEnv("run.sh", ws, env2, false)
			if r.code != 0 || !strings.Contains(r.stdout, "done") {
				t.Fatalf("exit %d", r.code)
			}
			checkLog(t, tmpdir)
			if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
				t.Errorf("the planted symlink was followed: the victim holds %q", b)
			}
			o := outputs(t, g)
			f := o["violations-file"]
			if !regexp.MustCompile(`^` + regexp.QuoteMeta(tmpdir) + `/sbx-action\.[^/]+/sbx-violations\.jsonl$`).MatchString(f) {
				t.Errorf("violations-file %q, want sbx-violations.jsonl in a new directory in %s", f, tmpdir)
			}
			if b, err := os.ReadFile(f); err != nil || bytes.Count(b, []byte("\n")) != 1 || o["violations"] != "1" {
				t.Errorf("%s: %v, %q; outputs %v", f, err, b, o)
			}
			entries, _ := os.ReadDir(tmpdir)
			var dirs int
			for _, e := range entries {
				switch {
				case e.Name() == "sbx-violations.jsonl":
				case strings.HasPrefix(e.Name(), "sbx-action.") && e.IsDir():
					dirs++
				default:
					t.Errorf("TMPDIR holds %s (a scratch file left behind?)", e.Name())
				}
			}
			if dirs != run {
				t.Errorf("TMPDIR holds %d sbx-action.* directories after %d runs, want one a run", dirs, run)
			}
		}
	})
}

// TestRunNode24Fixture: the action runs the Node 24 fixture of the
// runtime matrix (npm test with node:test) clean — exit 0, no
// annotations, zero violations — although Node 24 probes io_uring_setup
// on every start (refused, and not a violation: seccomp.Probes).
func TestRunNode24Fixture(t *testing.T) {
	node := ""
	for _, p := range []string{os.Getenv("SBX_TEST_NODE"), "/opt/sbx-test/node24/bin/node"} {
		if _, err := os.Stat(p); p != "" && err == nil {
			node = p
			break
		}
	}
	if node == "" {
		t.Skip("no Node 24 (scripts/setup.sh installs one at /opt/sbx-test/node24)")
	}
	if out, _ := exec.Command(node, "--version").Output(); !strings.HasPrefix(string(out), "v24.") {
		t.Skipf("%s is %s, not Node 24", node, strings.TrimSpace(string(out)))
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
	g := installSbx(t)
	ws := t.TempDir()
	src := filepath.Join("..", "cmd", "sbx", "testdata", "runtimes", "node")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(ws, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ws, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A HOME of the step's own, as on a fresh runner (the caller's
	// ~/.npmrc is a masked credentials file).
	env := append(g.env(map[string]string{
		"INPUT_COMMAND": "npm test",
		"INPUT_ARGS":    "--preset node --observe-files writes",
	}, filepath.Dir(node)), "HOME="+t.TempDir())
	r := g.runEnv("run.sh", ws, env, true)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "pass 2") {
		t.Errorf("the fixture's tests did not run:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "::warning") || strings.Contains(r.stdout, "::error") {
		t.Errorf("annotations on a clean Node 24 run:\n%s", r.stdout)
	}
	if o := outputs(t, g); o["exit-code"] != "0" || o["violations"] != "0" {
		t.Errorf("outputs %v", o)
	}
}

// fakeAppArmorHost writes a fake sbx that diagnoses cause (apparmor-userns
// or another) and cannot start its sandbox until `sbx doctor --fix --yes`
// has run (fix "ok"; "fail" makes that fail), and a fake sudo that only
// says whether it would run without a password (sudo "ok" or
// "password"). Both log their argv, one line per call, to the returned
// log. It returns the fake sbx and the directory to put first on PATH.
func fakeAppArmorHost(t *testing.T, cause, fix, sudo string) (sbx, bin, log string) {
	t.Helper()
	d := t.TempDir()
	log, marker, bin := filepath.Join(d, "log"), filepath.Join(d, "fixed"), filepath.Join(d, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	logLine := `printf '%s\n' "$(basename "$0") $*" >>'` + log + `'` + "\n"
	sbx = filepath.Join(d, "sbx")
	script := "#!/bin/sh\n" + logLine + `case "$*" in
version) echo "sbx fake"; exit 0 ;;
doctor) printf 'kernel:           Linux fake\nuser namespaces:  NO — fork/exec: operation not permitted\nmode:             weaker-only\ndiagnosis:        ` + cause + `: the fake cause\n'; exit 0 ;;
"doctor --fix --yes") ` + map[string]string{
		"ok":   "touch '" + marker + "'; echo 'fixed:            the fake starts its sandbox'; exit 0 ;;",
		"fail": "echo 'sbx: doctor --fix --yes: apparmor_parser failed: exit status 1' >&2; exit 1 ;;",
	}[fix] + `
esac
[ -e '` + marker + `' ] && exit 0
echo "sbx: cannot create a user namespace (fake)" >&2
exit 125
`
	sudoScript := "#!/bin/sh\n" + logLine + map[string]string{
		"ok":       "exit 0\n",
		"password": "echo 'sudo: a password is required' >&2\nexit 1\n",
	}[sudo]
	for p, body := range map[string]string{sbx: script, filepath.Join(bin, "sudo"): sudoScript} {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return sbx, bin, log
}

// TestInstallFixAppArmor: where the smoke test fails because AppArmor
// restricts user namespaces (GitHub's Ubuntu 24.04 runners) and sudo
// needs no password, the install step runs `sbx doctor --fix --yes` and
// tries again, so the workflow needs no step of its own; it does not
// where sudo wants a password, where the cause is another, where the fix
// fails, or with fix-host: false.
func TestInstallFixAppArmor(t *testing.T) {
	smoke := "sbx --quiet-violations -c true"
	for _, tc := range []struct {
		name, cause, fix, sudo, fixHost string
		ok                              bool
		log                             []string
	}{
		{"fixed", "apparmor-userns", "ok", "ok", "", true,
			[]string{"sbx version", "sbx doctor", smoke, "sudo -n true", "sbx doctor --fix --yes", smoke}},
		{"sudo asks a password", "apparmor-userns", "ok", "password", "", false,
			[]string{"sbx version", "sbx doctor", smoke, "sudo -n true"}},
		{"another cause", "userns-clone", "ok", "ok", "", false,
			[]string{"sbx version", "sbx doctor", smoke}},
		{"the fix fails", "apparmor-userns", "fail", "ok", "", false,
			[]string{"sbx version", "sbx doctor", smoke, "sudo -n true", "sbx doctor --fix --yes"}},
		{"fix-host false", "apparmor-userns", "ok", "ok", "false", false,
			[]string{"sbx version", "sbx doctor", smoke}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbx, bin, log := fakeAppArmorHost(t, tc.cause, tc.fix, tc.sudo)
			g := newGH(t)
			in := map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbx}
			if tc.fixHost != "" {
				in["INPUT_FIX_HOST"] = tc.fixHost
			}
			r := g.run("install.sh", t.TempDir(), in, bin)
			b, _ := os.ReadFile(log)
			if got := strings.Split(strings.TrimSpace(string(b)), "\n"); strings.Join(got, "\n") != strings.Join(tc.log, "\n") {
				t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.log, "\n"))
			}
			if tc.ok {
				if r.code != 0 || !strings.Contains(r.stdout, "the full sandbox starts here (with the AppArmor profile") {
					t.Errorf("exit %d, want 0 and the full sandbox", r.code)
				}
				return
			}
			if r.code != 1 || !strings.Contains(r.stderr, "::error") || !strings.Contains(r.stderr, "(fake)") {
				t.Errorf("exit %d, want 1 and an ::error with sbx's reason", r.code)
			}
		})
	}
	g := newGH(t)
	sbx, bin, _ := fakeAppArmorHost(t, "apparmor-userns", "ok", "ok")
	r := g.run("install.sh", t.TempDir(), map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbx, "INPUT_FIX_HOST": "maybe"}, bin)
	if r.code != 1 || !strings.Contains(r.stderr, "fix-host 'maybe': use true or false") {
		t.Errorf("fix-host maybe: exit %d", r.code)
	}
}

// TestInstallFixCapture: where the sandbox starts but /dev/net/tun is
// not usable (doctor's capture-tun), the install step runs `sbx doctor
// --fix --yes` when sudo needs no password and fix-host allows it, and
// otherwise warns that the capture is off; the step succeeds either way.
func TestInstallFixCapture(t *testing.T) {
	smoke := "sbx --quiet-violations -c true"
	for _, tc := range []struct {
		name, sudo, fixHost string
		log                 []string
		fixed               bool
	}{
		{"fixed", "ok", "", []string{"sbx version", "sbx doctor", smoke, "sudo -n true", "sbx doctor --fix --yes"}, true},
		{"sudo asks a password", "password", "", []string{"sbx version", "sbx doctor", smoke, "sudo -n true"}, false},
		{"fix-host false", "ok", "false", []string{"sbx version", "sbx doctor", smoke}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			log, bin := filepath.Join(d, "log"), filepath.Join(d, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			logLine := `printf '%s\n' "$(basename "$0") $*" >>'` + log + `'` + "\n"
			sbx := filepath.Join(d, "sbx")
			script := "#!/bin/sh\n" + logLine + `case "$*" in
version) echo "sbx fake"; exit 0 ;;
doctor) printf 'capture:          NO — open /dev/net/tun: permission denied\nmode:             full\ndiagnosis:        capture-tun: the fake cause\n'; exit 0 ;;
"doctor --fix --yes") echo 'fixed:            capture on'; exit 0 ;;
esac
exit 0
`
			sudo := map[string]string{"ok": "exit 0\n", "password": "echo 'sudo: a password is required' >&2\nexit 1\n"}[tc.sudo]
			for p, body := range map[string]string{sbx: script, filepath.Join(bin, "sudo"): "#!/bin/sh\n" + logLine + sudo} {
				if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			g := newGH(t)
			in := map[string]string{"INPUT_INSTALL": "path", "INPUT_SBX_PATH": sbx}
			if tc.fixHost != "" {
				in["INPUT_FIX_HOST"] = tc.fixHost
			}
			r := g.run("install.sh", t.TempDir(), in, bin)
			b, _ := os.ReadFile(log)
			if got := strings.Split(strings.TrimSpace(string(b)), "\n"); strings.Join(got, "\n") != strings.Join(tc.log, "\n") {
				t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.log, "\n"))
			}
			if r.code != 0 || !strings.Contains(r.stdout, "the full sandbox starts here") {
				t.Fatalf("exit %d, want 0: %s %s", r.code, r.stdout, r.stderr)
			}
			if warned := strings.Contains(r.stderr, "::warning") && strings.Contains(r.stderr, "capture is off"); warned == tc.fixed {
				t.Errorf("fixed=%v but warned=%v: %s", tc.fixed, warned, r.stderr)
			}
		})
	}
}

// ciExample returns the inputs of docs/ci.md's GitHub Actions example
// (its one-line `with: {key: value, …}`), keyed by input name.
func ciExample(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s+with: \{(.*)\}\s*$`)
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/ci.md: no `with: {…}` line in the GitHub Actions example")
	}
	key := regexp.MustCompile(`^([a-z-]+): (.*)$`)
	in := map[string]string{}
	last := ""
	for _, part := range strings.Split(string(m[1]), ", ") {
		if k := key.FindStringSubmatch(part); k != nil {
			last = k[1]
			in[last] = k[2]
			continue
		}
		if last == "" {
			t.Fatalf("docs/ci.md: cannot read the example's inputs %q", m[1])
		}
		in[last] += ", " + part
	}
	return in
}

// TestCIExampleNpm runs docs/ci.md's GitHub Actions example, inputs as
// written, on a clean npm project whose tests pass (with a local
// dependency, so nothing is fetched), from a fresh HOME outside /tmp (a
// HOME under /tmp would be the sandbox's private /tmp, where npm's log
// writes succeed). The step must exit 0 with no annotation: npm writes
// ~/.npm/_logs on every run, so an example without the node preset fails
// the passing project with 123.
func TestCIExampleNpm(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	in := ciExample(t)
	if in["command"] != "npm test" {
		t.Fatalf("docs/ci.md's example runs %q; this test builds an npm project for `npm test`", in["command"])
	}
	g := installSbx(t)
	base, err := os.MkdirTemp("/var/tmp", "sbx-ci-example-")
	if err != nil {
		t.Skipf("no directory in /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	files := map[string]string{
		"ws/package.json":       `{"name": "ci-demo", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}, "dependencies": {"greet": "file:./greet"}}`,
		"ws/test.js":            "const greet = require('greet');\nif (greet('ci') !== 'hello ci') { console.log('not ok 1'); process.exit(1); }\nconsole.log('ok 1 - greet');\n",
		"ws/greet/package.json": `{"name": "greet", "version": "1.0.0", "main": "index.js"}`,
		"ws/greet/index.js":     "module.exports = (who) => 'hello ' + who;\n",
		"home/.keep":            "",
	}
	if s := in["settings"]; s != "" {
		files["ws/"+s] = `{"filesystem": {"denyRead": ["~/.aws"]}, "network": {"allowedDomains": []}}`
	}
	for name, s := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The install step, as a workflow runs it before the test step
	// (outside the sandbox here); its cache goes elsewhere, so HOME
	// stays as fresh as a new runner's.
	install := exec.Command("npm", "install", "--offline", "--no-audit", "--no-fund", "--cache", filepath.Join(base, "install-cache"))
	install.Dir = ws
	install.Env = append(os.Environ(), "HOME="+filepath.Join(base, "install-home"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	inputs := map[string]string{"INPUT_COMMAND": in["command"], "INPUT_SETTINGS": in["settings"], "INPUT_ARGS": in["args"]}
	if v, ok := in["fail-on-violation"]; ok {
		inputs["INPUT_FAIL_ON_VIOLATION"] = v
	}
	env := append(g.env(inputs), "HOME="+home)
	r := g.runEnv("run.sh", ws, env, true)
	if r.code != 0 {
		t.Fatalf("docs/ci.md's example with %v on a passing npm project: exit %d, want 0:\n%s", in, r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "ok 1 - greet") {
		t.Errorf("the project's test did not run:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "::warning") || strings.Contains(r.stdout, "::error") {
		t.Errorf("annotations on a clean run:\n%s", r.stdout)
	}
	if o := outputs(t, g); o["exit-code"] != "0" || o["violations"] != "0" {
		t.Errorf("outputs %v", o)
	}
}
