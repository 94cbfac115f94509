//go:build linux

package main

// sbx learn on real projects, in two steps: an npm package (npm ci, then
// npm test) and a Go module (go mod download, then go test ./...), each
// against a registry the test serves on loopback through a name
// (registry.localhost, goproxy.localhost). Step one learns the install
// and its replay installs for real; step two learns the tests into the
// same file (--settings F --output F); then both commands replay under
// the one policy with --reads declared --fail-on-violation, and a host
// not learned stays unreachable.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// registry is a loopback HTTP server that answers the paths in files
// and counts every request by its Host and path.
func registry(t *testing.T, files map[string][]byte) (port int, c *counter) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c = &counter{}
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.Host + r.URL.Path)
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return l.Addr().(*net.TCPAddr).Port, c
}

// tgz is a gzipped tar of files.
func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range sortedKeys(files) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// writeTree writes files (relative to root), readable by everyone.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// twoSteps is a project learned in two steps and replayed.
type twoSteps struct {
	dir     string
	env     []string
	start   []string // the start flags of every run
	install []string // step one
	test    []string // step two
	// wantTest is in the test step's output when it passed.
	wantTest string
	// reach is a command that fetches url and fails unless it got it;
	// learned is a URL on the learned host.
	reach   func(url string) []string
	learned string
	// cache is the package cache the install fills (under HOME): emptied
	// before the last replay, so that the install fetches again.
	cache string
	port  int
	c     *counter
}

func (p *twoSteps) run(t *testing.T, args ...string) result {
	t.Helper()
	return sbx(t, runOpts{dir: p.dir, env: p.env}, args...)
}

// check learns install into pol, replays it (which installs for real),
// learns test into the same file, and replays both under the one
// policy; then a host not learned stays unreachable under it.
func (p *twoSteps) check(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.json")
	learn := func(step string, argv []string, settings ...string) {
		t.Helper()
		args := append(append(append([]string{"learn"}, settings...), "--output", pol), p.start...)
		r := p.run(t, append(append(args, "--"), argv...)...)
		if r.code != 0 {
			t.Fatalf("learn %s: want exit 0: %s", step, r)
		}
		text, _ := os.ReadFile(pol)
		t.Logf("after learning %s:\n%s\n%s", step, text, r.stderr)
	}
	replay := func(step string, argv []string) result {
		t.Helper()
		vf := filepath.Join(t.TempDir(), "v.jsonl")
		args := append([]string{"--settings", pol, "--reads", "declared", "--fail-on-violation", "--violations", vf}, p.start...)
		r := p.run(t, append(append(args, "--"), argv...)...)
		if recs := readRecords(t, vf); r.code != 0 || len(recs) != 0 || sbxLine(r.stderr) != "" {
			t.Fatalf("replay %s: want exit 0, no records, no sbx: line; got %d records %+v\n%s", step, len(recs), recs, r)
		}
		return r
	}
	learn("install", p.install)
	replay("install", p.install)
	learn("test", p.test, "--settings", pol)
	if r := replay("test", p.test); !strings.Contains(r.stdout+r.stderr, p.wantTest) {
		t.Fatalf("replay test: %q not in its output: %s", p.wantTest, r)
	}
	// Emptied caches: the install must fetch through the learned host.
	filepath.WalkDir(p.cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(path, 0o755) // the Go module cache is read-only
		}
		return nil
	})
	if err := os.RemoveAll(p.cache); err != nil {
		t.Fatal(err)
	}
	fetched := p.c.n.Load()
	replay("install again", p.install)
	if p.c.n.Load() == fetched {
		t.Fatalf("the last install fetched nothing: %q", p.c.all())
	}

	// The same fetch reaches the learned host, and not another.
	args := append([]string{"--settings", pol, "--reads", "declared"}, p.start...)
	served := p.c.n.Load()
	if r := p.run(t, append(append(args, "--"), p.reach(p.learned)...)...); r.code != 0 || p.c.n.Load() != served+1 {
		t.Fatalf("the learned host was not reachable with the same command: %s", r)
	}
	served = p.c.n.Load()
	other := fmt.Sprintf("http://other.localhost:%d/other", p.port)
	if r := p.run(t, append(append(args, "--"), p.reach(other)...)...); r.code == 0 {
		t.Fatalf("a host not learned was reachable under the learned policy: %s", r)
	}
	if n := p.c.n.Load(); n != served {
		t.Fatalf("the server saw %d requests for a host not learned: %q", n-served, p.c.all())
	}
}

// TestLearnNpmProject: an npm package with one dependency from the
// test's registry; npm ci, then npm test.
func TestLearnNpmProject(t *testing.T) {
	node := node24()
	if node == "" {
		if p, err := exec.LookPath("node"); err == nil {
			node = p
		}
	}
	if node == "" {
		t.Skip("no Node (SBX_TEST_NODE, /opt/sbx-test/node24 or node on PATH)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm not installed")
	}
	pkg := tgz(t, map[string]string{
		"package/package.json": `{"name":"sbx-dep","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = (a, b) => a + b;\n",
	})
	sum := sha512.Sum512(pkg)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	files := map[string][]byte{"/sbx-dep/-/sbx-dep-1.0.0.tgz": pkg}
	port, c := registry(t, files)
	reg := fmt.Sprintf("http://registry.localhost:%d/", port)
	tarball := reg + "sbx-dep/-/sbx-dep-1.0.0.tgz"
	files["/sbx-dep"] = []byte(fmt.Sprintf(`{"name":"sbx-dep","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"sbx-dep","version":"1.0.0","dist":{"tarball":%q,"integrity":%q}}}}`, tarball, integrity))

	root := hostTempDir(t)
	dir, home := filepath.Join(root, "proj"), filepath.Join(root, "home")
	writeTree(t, dir, map[string]string{
		"package.json": `{"name":"sbx-npm-project","version":"1.0.0","private":true,` +
			`"dependencies":{"sbx-dep":"1.0.0"},"scripts":{"test":"node test.js"}}`,
		"package-lock.json": fmt.Sprintf(`{"name":"sbx-npm-project","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{`+
			`"":{"name":"sbx-npm-project","version":"1.0.0","dependencies":{"sbx-dep":"1.0.0"}},`+
			`"node_modules/sbx-dep":{"version":"1.0.0","resolved":%q,"integrity":%q}}}`, tarball, integrity),
		".npmrc":  "registry=" + reg + "\naudit=false\nfund=false\nupdate-notifier=false\n",
		"test.js": "const add = require('sbx-dep');\nif (add(2, 3) !== 5) { process.exit(1); }\nconsole.log('sbx-dep adds');\n",
	})
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &twoSteps{
		dir: dir, port: port, c: c,
		env:      append(hermeticEnvWithout("HOME", "PATH"), "HOME="+home, "PATH="+filepath.Dir(node)+":/usr/bin:/bin"),
		start:    []string{"--preset", "node", "--allow-domain", fmt.Sprintf("127.0.0.1:%d", port)},
		install:  []string{npm, "ci"},
		test:     []string{npm, "test"},
		wantTest: "sbx-dep adds",
		cache:    filepath.Join(home, ".npm"),
		learned:  reg + "sbx-dep",
		reach: func(url string) []string {
			return []string{node, "-e", fmt.Sprintf("fetch(%q).then(r => { if (!r.ok) process.exit(1) })", url)}
		},
	}
	p.check(t)
	if !c.saw(fmt.Sprintf("registry.localhost:%d/sbx-dep/-/sbx-dep-1.0.0.tgz", port)) {
		t.Fatalf("the registry never served the package: %q", c.all())
	}
}

// hermeticEnvWithout is hermeticEnv less the variables named.
func hermeticEnvWithout(names ...string) []string {
	var out []string
	for _, kv := range hermeticEnv() {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// hash1 is the go command's "h1:" hash of files (golang.org/x/mod's
// dirhash.Hash1): the SHA-256 of the sorted lines "SHA256  NAME".
func hash1(files map[string]string) string {
	h := sha256.New()
	for _, name := range sortedKeys(files) {
		fmt.Fprintf(h, "%x  %s\n", sha256.Sum256([]byte(files[name])), name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// TestLearnGoModule: a Go module with one dependency from the test's
// module proxy; go mod download, then go test ./....
func TestLearnGoModule(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not installed")
	}
	const mod, ver = "sbx.test/dep", "v1.0.0"
	depFiles := map[string]string{
		"go.mod":  "module " + mod + "\n\ngo 1.21\n",
		"dep.go":  "// Package dep adds.\npackage dep\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
		"LICENSE": "fake\n",
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	zipped := map[string]string{}
	for _, name := range sortedKeys(depFiles) {
		full := mod + "@" + ver + "/" + name
		zipped[full] = depFiles[name]
		w, err := zw.Create(full)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(depFiles[name]))
	}
	zw.Close()
	// go.sum, so that the download writes nothing in the project.
	goSum := mod + " " + ver + " " + hash1(zipped) + "\n" +
		mod + " " + ver + "/go.mod " + hash1(map[string]string{"go.mod": depFiles["go.mod"]}) + "\n"
	base := "/" + mod + "/@v/"
	port, c := registry(t, map[string][]byte{
		base + "list":        []byte(ver + "\n"),
		base + ver + ".info": []byte(`{"Version":"` + ver + `","Time":"2024-01-01T00:00:00Z"}`),
		base + ver + ".mod":  []byte("module " + mod + "\n\ngo 1.21\n"),
		base + ver + ".zip":  zbuf.Bytes(),
	})
	root := hostTempDir(t)
	dir, home := filepath.Join(root, "mod"), filepath.Join(root, "home")
	writeTree(t, dir, map[string]string{
		"go.sum":       goSum,
		"go.mod":       "module sbx.test/proj\n\ngo 1.21\n\nrequire " + mod + " " + ver + "\n",
		"proj.go":      "// Package proj sums.\npackage proj\n\nimport \"" + mod + "\"\n\n// Sum sums.\nfunc Sum(xs ...int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts = dep.Add(s, x)\n\t}\n\treturn s\n}\n",
		"proj_test.go": "package proj\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(1, 2, 3) != 6 {\n\t\tt.Fatal(\"sum\")\n\t}\n\tt.Log(\"sbx-dep sums\")\n}\n",
	})
	// A module cache and build cache of the test's own, under a HOME of
	// its own: the preset makes them writable; the build cache is the
	// caller's, warm, so that the standard library is not rebuilt.
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	gocache := strings.TrimSpace(versionOf(gobin, "env", "GOCACHE"))
	p := &twoSteps{
		dir: dir, port: port, c: c,
		env: append(hermeticEnvWithout("HOME", "GOPATH", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOSUMDB", "GOCACHE", "GOTOOLCHAIN"),
			"HOME="+home, "GOCACHE="+gocache, "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOTOOLCHAIN=local",
			fmt.Sprintf("GOPROXY=http://goproxy.localhost:%d", port)),
		start:    []string{"--preset", "go", "--allow-domain", fmt.Sprintf("127.0.0.1:%d", port)},
		install:  []string{gobin, "mod", "download"},
		test:     []string{gobin, "test", "-count=1", "-v", "./..."},
		wantTest: "sbx-dep sums",
		cache:    filepath.Join(home, "go"),
		learned:  fmt.Sprintf("http://goproxy.localhost:%d%slist", port, base),
		reach:    func(url string) []string { return []string{"curl", "-sf", url} },
	}
	p.check(t)
	if !c.saw(fmt.Sprintf("goproxy.localhost:%d%s%s.zip", port, base, ver)) {
		t.Fatalf("the proxy never served the module: %q", c.all())
	}
}
