//go:build linux

package main

// TLS termination (network.tlsTerminate, --tls-terminate): real clients
// in the sandbox reach the test's own HTTPS server on 127.0.0.1 through
// sbx's proxy, which terminates their TLS with a CA made for the run and
// verifies the server against the supervisor's SSL_CERT_FILE.

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/bench"
)

// tlsRegistry is an HTTPS server with its own test CA (written to a PEM
// file) that answers /hello, an npm packument, a pip simple index, and
// git's smart HTTP for /repo.git; it records the X-Client header of each
// request.
type tlsRegistry struct {
	srv    *httptest.Server
	caFile string
	mu     sync.Mutex
	seen   []string
}

func (r *tlsRegistry) saw() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func newTLSRegistry(t *testing.T) *tlsRegistry {
	t.Helper()
	reg := &tlsRegistry{}
	wheel := testWheel()
	var gitHandler http.Handler = http.NotFoundHandler()
	if git, err := exec.LookPath("git"); err == nil {
		if backend, err := exec.Command(git, "--exec-path").Output(); err == nil {
			root := t.TempDir()
			src := filepath.Join(root, "src")
			ok := true
			for _, args := range [][]string{
				{"init", "-q", "-b", "main", src},
				{"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
				{"clone", "-q", "--bare", src, filepath.Join(root, "repo.git")},
			} {
				if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
					t.Logf("git %v: %v %s", args, err, out)
					ok = false
				}
			}
			if ok {
				gitHandler = &cgi.Handler{
					Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
					Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
				}
			}
		}
	}
	reg.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		reg.seen = append(reg.seen, r.URL.Path+" "+r.Header.Get("X-Client"))
		reg.mu.Unlock()
		switch {
		case r.URL.Path == "/hello":
			fmt.Fprintf(w, "hello over TLS, client %s", r.Header.Get("X-Client"))
		case r.URL.Path == "/sbx-test-pkg":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"sbx-test-pkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"sbx-test-pkg","version":"1.0.0","dist":{"tarball":"%s/sbx-test-pkg/-/sbx-test-pkg-1.0.0.tgz"}}}}`, reg.srv.URL)
		case r.URL.Path == "/simple/sbx-test-pkg/":
			fmt.Fprintf(w, `<html><body><a href="/files/%s">%s</a></body></html>`, whl, whl)
		case r.URL.Path == "/files/"+whl:
			w.Write(wheel.Bytes())
		case strings.HasPrefix(r.URL.Path, "/repo.git/"):
			gitHandler.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	caPEM, cert := testCA(t)
	reg.srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}, Certificates: []tls.Certificate{cert}}
	reg.srv.StartTLS()
	t.Cleanup(reg.srv.Close)
	// Clients name it localhost (npm's proxy agent checks an IP host
	// against "localhost"): the allow entry localhost:PORT reaches the
	// host's loopback.
	reg.srv.URL = strings.Replace(reg.srv.URL, "127.0.0.1", "localhost", 1)
	dir := t.TempDir()
	reg.caFile = filepath.Join(dir, "upstream-ca.pem")
	if err := os.WriteFile(reg.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	return reg
}

// testCA makes a CA (returned as PEM) and a server certificate it signed
// for localhost and 127.0.0.1.
func testCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caPEM, cert, err := bench.LocalhostCA("sbx test upstream CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return caPEM, cert
}

func TestTLSTerminateClients(t *testing.T) {
	curl := needTool(t, "curl")
	reg := newTLSRegistry(t)
	hp := hostPort(t, reg.srv.URL)
	w := t.TempDir()
	os.Chmod(w, 0o755)
	// The supervisor trusts the test CA (SSL_CERT_FILE), as a host would
	// trust its own roots; the command gets the bundle sbx makes.
	env := append(os.Environ(), "SSL_CERT_FILE="+reg.caFile, "HOME="+w, "npm_config_cache="+filepath.Join(w, ".npm"),
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false")
	flags := []string{"--tls-terminate", "--allow-domain", hp, "--allow-write", w, "--allow-read", reg.caFile}

	// curl, unchanged: it trusts the bundle through CURL_CA_BUNDLE.
	r := sbx(t, runOpts{dir: w, env: env}, append(flags, "--", curl, "-sS", "--max-time", "10", "-H", "X-Client: curl", reg.srv.URL+"/hello")...)
	if r.code != 0 || r.stdout != "hello over TLS, client curl" {
		t.Fatalf("curl through the terminating proxy: %s", r)
	}
	// The tunnel is terminated: a curl that trusts only the server's own
	// CA refuses the certificate it is shown.
	r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", curl, "-sS", "--max-time", "10", "--cacert", reg.caFile, reg.srv.URL+"/hello")...)
	if r.code == 0 {
		t.Fatalf("a client trusting only the upstream CA got through: %s", r)
	}
	// Without termination, the same client sees the server's own
	// certificate (the control).
	r = sbx(t, runOpts{dir: w, env: env}, "--allow-domain", hp, "--allow-read", reg.caFile, "--", curl, "-sS", "--max-time", "10", "--cacert", reg.caFile, reg.srv.URL+"/hello")
	if r.code != 0 {
		t.Fatalf("control, an opaque tunnel: %s", r)
	}
	// The bundle is where the variables say, holds certificates only, and
	// the run's CA key is nowhere in the sandbox's /tmp.
	r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", "/bin/sh", "-c", `echo "$SSL_CERT_FILE $GIT_SSL_CAINFO $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE $npm_config_cafile"; echo "node-env=$NODE_USE_ENV_PROXY"; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"; grep -rl "PRIVATE KEY" /tmp; ls -l "$SSL_CERT_FILE"`)...)
	if !strings.Contains(r.stdout, strings.Repeat("/tmp/.sbx/ca-bundle.pem ", 4)+"/tmp/.sbx/ca-bundle.pem\n") || strings.Contains(r.stdout, "PRIVATE") || !strings.Contains(r.stdout, "-r--r--r--") || !strings.Contains(r.stdout, "node-env=1") {
		t.Fatalf("bundle: %s", r)
	}

	ran := 1
	// A Go program trusts the bundle through SSL_CERT_FILE. (Go's
	// ProxyFromEnvironment never proxies loopback hosts, so the helper
	// names the proxy explicitly; against any other host it is the
	// default transport.)
	if gobin, err := exec.LookPath("go"); err == nil {
		src := filepath.Join(w, "goclient")
		writeFile(t, filepath.Join(src, "go.mod"), "module goclient\n\ngo 1.21\n")
		writeFile(t, filepath.Join(src, "main.go"), `package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
)

func main() {
	pu, _ := url.Parse(os.Getenv("HTTPS_PROXY"))
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	req, _ := http.NewRequest("GET", os.Args[1], nil)
	req.Header.Set("X-Client", "go")
	resp, err := c.Do(req)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(string(b))
}
`)
		bin := filepath.Join(w, "goclient-bin")
		cmd := exec.Command(gobin, "build", "-o", bin, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the Go client: %v %s", err, out)
		}
		ran++
		r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", bin, reg.srv.URL+"/hello")...)
		if r.code != 0 || r.stdout != "hello over TLS, client go" {
			t.Errorf("Go client: %s", r)
		}
	}
	if git, err := exec.LookPath("git"); err == nil {
		ran++
		r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", git, "clone", "-q", reg.srv.URL+"/repo.git", filepath.Join(w, "clone"))...)
		if r.code != 0 {
			t.Errorf("git clone over https: %s", r)
		} else if out, err := exec.Command(git, "-C", filepath.Join(w, "clone"), "log", "--format=%s").Output(); err != nil || strings.TrimSpace(string(out)) != "first" {
			t.Errorf("clone incomplete: %v %q", err, out)
		}
	}
	if npm, err := exec.LookPath("npm"); err == nil {
		ran++
		r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", npm, "view", "sbx-test-pkg", "version", "--registry", reg.srv.URL+"/")...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "1.0.0" {
			t.Errorf("npm view over https: %s", r)
		}
	}
	if py, err := exec.LookPath("python3"); err == nil && exec.Command(py, "-m", "pip", "--version").Run() == nil {
		ran++
		dl := filepath.Join(w, "dl")
		r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", py, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
			"--disable-pip-version-check", "--index-url", reg.srv.URL+"/simple/", "-d", dl, "sbx-test-pkg")...)
		if _, err := os.Stat(filepath.Join(dl, "sbx_test_pkg-1.0.0-py3-none-any.whl")); r.code != 0 || err != nil {
			t.Errorf("pip download over https: %v %s", err, r)
		}
	}
	// Node's fetch honours the proxy variables from Node 22.21 and 24 on,
	// with NODE_USE_ENV_PROXY=1, which sbx sets. SBX_TEST_NODE names a
	// newer Node than the machine's (scripts/setup.sh installs one).
	node, err := exec.LookPath("node")
	if n := os.Getenv("SBX_TEST_NODE"); n != "" {
		node, err = n, nil
	}
	if err == nil {
		out, _ := exec.Command(node, "-p", "process.versions.node").Output()
		var major, minor int
		fmt.Sscanf(strings.TrimSpace(string(out)), "%d.%d", &major, &minor)
		if major >= 24 || (major == 22 && minor >= 21) {
			ran++
			r = sbx(t, runOpts{dir: w, env: env}, append(flags, "--", node, "-e",
				`fetch(process.argv[1], {headers: {"X-Client": "node"}}).then(r => r.text()).then(t => process.stdout.write(t))`, reg.srv.URL+"/hello")...)
			if r.code != 0 || r.stdout != "hello over TLS, client node" {
				t.Errorf("node fetch: %s", r)
			}
		} else {
			t.Logf("node %s: its fetch ignores proxy variables (22.21+ or 24+ needed); not run", strings.TrimSpace(string(out)))
		}
	}
	t.Logf("%d clients ran; the server saw %q", ran, reg.saw())
}

func TestTLSTerminateExcludeAndFailures(t *testing.T) {
	curl := needTool(t, "curl")
	reg := newTLSRegistry(t)
	hp := hostPort(t, reg.srv.URL)
	d := t.TempDir()
	os.Chmod(d, 0o755)
	env := append(os.Environ(), "SSL_CERT_FILE="+reg.caFile)

	// excludeDomains: tunnelled opaquely, the server's own certificate.
	settings := filepath.Join(d, "s.json")
	writeFile(t, settings, `{"network": {"allowedDomains": ["`+hp+`"], "tlsTerminate": {"excludeDomains": ["localhost"]}}, "filesystem": {}}`)
	r := sbx(t, runOpts{env: env}, "--settings", settings, "--allow-read", d, "--allow-read", reg.caFile, "--", curl, "-sS", "--max-time", "10", "--cacert", reg.caFile, reg.srv.URL+"/hello")
	if r.code != 0 {
		t.Fatalf("excluded host: %s", r)
	}

	// An upstream the supervisor does not trust: 502 with one line, and a
	// network violation.
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "untrusted") }))
	defer other.Close()
	vio := filepath.Join(d, "v.jsonl")
	r = sbx(t, runOpts{env: env}, "--tls-terminate", "--allow-domain", hostPort(t, other.URL), "--violations", vio, "--",
		curl, "-sS", "--max-time", "10", "-w", "\n%{http_code}", other.URL+"/x")
	if !strings.HasSuffix(r.stdout, "\n502") || !strings.Contains(r.stdout, "certificate") || strings.Contains(r.stdout, "untrusted") {
		t.Fatalf("want a 502 naming the certificate problem, got %s", r)
	}
	b, _ := os.ReadFile(vio)
	var rec struct{ Kind, Host, Rule string }
	if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &rec); err != nil || rec.Kind != "network" || !strings.Contains(rec.Rule, "tls-upstream") {
		t.Fatalf("want a network violation for the upstream, got %q (%v)", b, err)
	}

	// Bad input: exit 125, one line naming the key and the file.
	ca := filepath.Join(d, "ca.pem")
	key := filepath.Join(d, "key.pem")
	writeFile(t, ca, "not a certificate")
	writeFile(t, key, "not a key")
	for _, s := range []string{
		`{"network": {"allowedDomains": ["x.test"], "tlsTerminate": {"caCertPath": "` + ca + `", "caKeyPath": "` + key + `"}}, "filesystem": {}}`,
		`{"network": {"allowedDomains": ["x.test"], "tlsTerminate": {"caCertPath": "` + ca + `"}}, "filesystem": {}}`,
		`{"network": {"allowedDomains": ["x.test"], "tlsTerminate": {"extraCaCertPaths": ["` + filepath.Join(d, "missing.pem") + `"]}}, "filesystem": {}}`,
		`{"network": {"allowedDomains": ["x.test"], "tlsTerminate": {"extraCaCertPaths": ["` + key + `"]}}, "filesystem": {}}`,
		`{"network": {"allowedDomains": ["x.test"], "tlsTerminate": {"excludeDomains": ["http://x"]}}, "filesystem": {}}`,
	} {
		writeFile(t, settings, s)
		wantRefusedIn(t, d, "tlsTerminate", "--settings", settings)
	}
	wantRefused(t, []string{"--tls-terminate", "--net", "host"})
}
