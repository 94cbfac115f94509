//go:build linux

package main

// The real-runtime matrix: each language's own test runner on a small
// fixture project (testdata/runtimes), under sbx with --fail-on-violation
// and --observe-files all. A clean run must be clean — exit 0, zero
// records, no "sbx:" line — whatever the runtime probes at start
// (seccomp.Probes); then one planted refusal each (a denied read, a host
// not allowed, an unshare) must make exactly one record of its kind. A
// runtime that is not installed is skipped, and the test says which.

import (
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/violations"
)

// runtimeCase is one runtime of the matrix.
type runtimeCase struct {
	name, fixture string
	// setup finds the runtime (a skip reason when it is missing) and
	// returns how to run the fixture in dir: the clean command, the
	// command of the planted runs, sbx flags and environment.
	setup func(t *testing.T, dir string) (rc runtimeRun, skip string)
}

type runtimeRun struct {
	clean, plant []string // argv; plant defaults to clean
	flags        []string // sbx flags for every run
	env          []string // added to the environment
}

func TestRuntimeMatrix(t *testing.T) {
	for _, c := range runtimeCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(hostTempDir(t), c.fixture)
			copyTree(t, filepath.Join("testdata", "runtimes", c.fixture), dir)
			rc, skip := c.setup(t, dir)
			if skip != "" {
				t.Skipf("%s: %s", c.name, skip)
			}
			if rc.plant == nil {
				rc.plant = rc.clean
			}
			env := append(hermeticEnv(), rc.env...)
			run := func(argv []string, flags ...string) (result, []violations.Record) {
				vf := filepath.Join(t.TempDir(), "v.jsonl")
				args := append([]string{"--fail-on-violation", "--violations", vf, "--observe-files", "all"}, rc.flags...)
				args = append(append(append(args, flags...), "--"), argv...)
				r := sbx(t, runOpts{dir: dir, env: env}, args...)
				return r, readRecords(t, vf)
			}

			r, recs := run(rc.clean)
			if r.code != 0 || len(recs) != 0 || sbxLine(r.stderr) != "" {
				t.Fatalf("clean run: want exit 0, no records, no sbx: line; got %d records %+v\n%s", len(recs), recs, r)
			}

			secret := filepath.Join(dir, "secret.txt")
			writeFile(t, secret, "S3CRET")
			srv, hits := loopbackServer(t)
			for _, p := range []struct {
				plant, kind string
				flags       []string
				check       func(violations.Record) bool
			}{
				{"read", violations.KindFileRead, []string{"--deny-read", secret},
					func(g violations.Record) bool { return g.Path == secret && g.Source == violations.SourceObserver }},
				{"net", violations.KindNetwork, []string{"--allow-domain", "allowed.example"},
					func(g violations.Record) bool { return g.Host == "127.0.0.1" && g.Source == violations.SourceProxy }},
				{"unshare", violations.KindSyscall, nil,
					func(g violations.Record) bool {
						return g.Syscall == "unshare" && strings.Contains(g.Detail, "CLONE_NEWUSER") && !g.Probe
					}},
			} {
				flags := append([]string{"--set-env", "SBX_PLANT=" + p.plant, "--set-env", "SBX_PLANT_PATH=" + secret,
					"--set-env", "SBX_PLANT_URL=" + srv + "/planted"}, p.flags...)
				r, recs := run(rc.plant, flags...)
				// The fixture's test passes when its call was refused, so
				// --fail-on-violation turns the one record into 123.
				if r.code != ExitViolation || len(recs) != 1 || recs[0].Kind != p.kind || !p.check(recs[0]) {
					t.Errorf("planted %s: want exit %d and one %s record; got %d records %+v\n%s", p.plant, ExitViolation, p.kind, len(recs), recs, r)
				}
				if strings.Contains(r.stdout, "S3CRET") {
					t.Errorf("planted %s: the denied file was read: %s", p.plant, r)
				}
			}
			if n := hits.n.Load(); n != 0 {
				t.Errorf("the refused host was reached %d times", n)
			}
		})
	}
}

// sbxLine is the first line of stderr that sbx wrote ("sbx: …"), or "".
func sbxLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "sbx:") {
			return l
		}
	}
	return ""
}

// loopbackServer is an HTTP server on 127.0.0.1 that counts requests;
// the planted network refusal names it (and must not reach it).
func loopbackServer(t *testing.T) (string, *counter) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.add(r.URL.Path) })}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return "http://" + l.Addr().String(), c
}

// copyTree copies the fixture src to dst, readable by everyone (the
// suite also runs as an unprivileged user).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// versionOf runs bin with args and returns its combined output.
func versionOf(bin string, args ...string) string {
	out, _ := exec.Command(bin, args...).CombinedOutput()
	return string(out)
}

// nodeCase is Node major version major with npm test: nodeBin finds it.
func nodeCase(major int, nodeBin func() string) func(t *testing.T, dir string) (runtimeRun, string) {
	return func(t *testing.T, dir string) (runtimeRun, string) {
		node := nodeBin()
		if node == "" {
			return runtimeRun{}, "not installed (scripts/setup.sh installs Node 24 at /opt/sbx-test/node24)"
		}
		v := strings.TrimSpace(versionOf(node, "--version"))
		if !strings.HasPrefix(v, "v"+strconv.Itoa(major)+".") {
			return runtimeRun{}, node + " is " + v
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			return runtimeRun{}, "npm not installed"
		}
		// A HOME of its own: the caller's ~/.npmrc is masked by default
		// (a credentials file), and npm reading it is a refusal the
		// observer rightly reports.
		home := hostTempDir(t)
		return runtimeRun{
			clean: []string{npm, "test"},
			flags: []string{"--preset", "node"},
			env:   []string{"HOME=" + home, "PATH=" + filepath.Dir(node) + ":/usr/bin:/bin"},
		}, ""
	}
}

// javaHomes are the JDKs under /usr/lib/jvm with javac, by feature
// version (the release file's JAVA_VERSION), symbolic links skipped.
func javaHomes() map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/usr/lib/jvm")
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		home := filepath.Join("/usr/lib/jvm", e.Name())
		if _, err := os.Stat(filepath.Join(home, "bin", "javac")); err != nil {
			continue
		}
		rel, err := os.ReadFile(filepath.Join(home, "release"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(rel), "\n") {
			if v, ok := strings.CutPrefix(l, "JAVA_VERSION="); ok {
				v = strings.Trim(v, `"`)
				major, _, _ := strings.Cut(strings.TrimPrefix(v, "1."), ".")
				if n, err := strconv.Atoi(major); err == nil {
					if _, dup := out[n]; !dup {
						out[n] = home
					}
				}
			}
		}
	}
	return out
}

// javaCase compiles and runs the fixture with the JDK pick chooses.
func javaCase(pick func(map[int]string) (string, string)) func(t *testing.T, dir string) (runtimeRun, string) {
	return func(t *testing.T, dir string) (runtimeRun, string) {
		home, skip := pick(javaHomes())
		if skip != "" {
			return runtimeRun{}, skip
		}
		out := filepath.Join(dir, "out")
		if err := os.MkdirAll(out, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(out, 0o777)
		java, javac := filepath.Join(home, "bin", "java"), filepath.Join(home, "bin", "javac")
		return runtimeRun{
			clean: []string{"/bin/sh", "-c", `"$1" -d out Plant.java && "$2" -cp out Plant`, "sh", javac, java},
			plant: []string{java, "-cp", "out", "Plant"},
			flags: []string{"--allow-write", out},
		}, ""
	}
}

func runtimeCases() []runtimeCase {
	return []runtimeCase{
		{"node20", "node", nodeCase(20, func() string {
			if p, err := exec.LookPath("node"); err == nil {
				return p
			}
			return ""
		})},
		{"node24", "node", nodeCase(24, node24)},
		{"python", "python", func(t *testing.T, dir string) (runtimeRun, string) {
			py := "/usr/bin/python3"
			if _, err := os.Stat(py); err != nil {
				return runtimeRun{}, "no /usr/bin/python3"
			}
			return runtimeRun{
				clean: []string{py, "-m", "unittest", "-q"},
				env:   []string{"PYTHONDONTWRITEBYTECODE=1"},
			}, ""
		}},
		{"go", "go", func(t *testing.T, dir string) (runtimeRun, string) {
			gobin, err := exec.LookPath("go")
			if err != nil {
				return runtimeRun{}, "go not installed"
			}
			return runtimeRun{
				clean: []string{gobin, "test", "-count=1", "./..."},
				flags: []string{"--preset", "go"},
				env:   []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS="},
			}, ""
		}},
		{"rust", "rust", func(t *testing.T, dir string) (runtimeRun, string) {
			// Debian's cargo: a rustup toolchain under /root is not the
			// unprivileged user's.
			cargo := "/usr/bin/cargo"
			if _, err := os.Stat(cargo); err != nil {
				return runtimeRun{}, "no /usr/bin/cargo (scripts/setup.sh installs Debian's cargo)"
			}
			target, home := filepath.Join(dir, "target"), hostTempDir(t)
			if err := os.MkdirAll(target, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(target, 0o777)
			// cargo locks $CARGO_HOME/.package-cache even offline: a
			// CARGO_HOME of the run's own, writable.
			return runtimeRun{
				clean: []string{cargo, "test", "--offline", "-q"},
				flags: []string{"--allow-write", target, "--allow-write", home},
				env:   []string{"CARGO_HOME=" + home, "CARGO_TERM_COLOR=never"},
			}, ""
		}},
		{"java17", "java", javaCase(func(h map[int]string) (string, string) {
			if h[17] == "" {
				return "", "no JDK 17 under /usr/lib/jvm"
			}
			return h[17], ""
		})},
		{"java-newest", "java", javaCase(func(h map[int]string) (string, string) {
			vs := make([]int, 0, len(h))
			for v := range h {
				vs = append(vs, v)
			}
			if len(vs) == 0 {
				return "", "no JDK under /usr/lib/jvm"
			}
			newest := slices.Max(vs)
			if newest == 17 {
				return "", "the newest JDK installed is 17 (run as java17)"
			}
			return h[newest], ""
		})},
	}
}

// TestNode24StartIsClean is the acceptance line of the probes: a bare
// `node -e 1` under Node 24 (whose libuv probes io_uring_setup on every
// start) with --fail-on-violation exits 0 and prints nothing on stderr.
func TestNode24StartIsClean(t *testing.T) {
	node := node24()
	if node == "" {
		t.Skip("no Node 24 (scripts/setup.sh installs one at /opt/sbx-test/node24)")
	}
	r := sbx(t, runOpts{}, "--fail-on-violation", "--", node, "-e", "1")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("want exit 0 and an empty stderr: %s", r)
	}
}

// node24 is the Node 24 the tests use: $SBX_TEST_NODE, else the one
// scripts/setup.sh installs; "" when neither is there.
func node24() string {
	for _, p := range []string{os.Getenv("SBX_TEST_NODE"), "/opt/sbx-test/node24/bin/node"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}
