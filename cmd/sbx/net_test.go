//go:build linux

package main

// Network tests. Every server here listens on the host's loopback and is
// allowed by an explicit IP or localhost entry; nothing is ever sent to
// any other address, not even to show that it would be blocked.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counter counts what reached one of the test's servers.
type counter struct {
	n     atomic.Int64
	mu    sync.Mutex
	lines []string
}

func (c *counter) add(line string) {
	c.n.Add(1)
	c.mu.Lock()
	c.lines = append(c.lines, line)
	c.mu.Unlock()
}

// tcpEcho listens on addr (e.g. "127.0.0.1:0", "[::1]:0") and answers
// each connection's first line with "echo: LINE".
func tcpEcho(t *testing.T, network, addr string) (string, *counter) {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	c := &counter{}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				line, _ := bufio.NewReader(conn).ReadString('\n')
				c.add(strings.TrimSpace(line))
				fmt.Fprintf(conn, "echo: %s\n", strings.TrimSpace(line))
			}()
		}
	}()
	return l.Addr().String(), c
}

// udpSink counts datagrams that reach addr.
func udpSink(t *testing.T, network, addr string) (string, *counter) {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { pc.Close() })
	c := &counter{}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			c.add(string(buf[:n]))
		}
	}()
	return pc.LocalAddr().String(), c
}

// httpServer is a plain HTTP server on 127.0.0.1 that counts requests.
func httpServer(t *testing.T, tls bool) (*httptest.Server, *counter) {
	t.Helper()
	c := &counter{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.Method + " " + r.URL.Path)
		fmt.Fprintf(w, "hello from the host %s\n", r.URL.Path)
	})
	var s *httptest.Server
	if tls {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s, c
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	return p
}

func hostPort(t *testing.T, u string) string {
	t.Helper()
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	return u
}

func TestNetHTTPThroughProxy(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)

	// Allowed: plain curl, using the environment the sandbox sets.
	r := sbx(t, runOpts{}, "--allow-domain", hp, "--", curl, "-sS", "--max-time", "10", s.URL+"/ok")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "hello from the host /ok") || c.n.Load() != 1 {
		t.Fatalf("allowed request did not arrive: %s (server saw %d)", r, c.n.Load())
	}

	// A name the policy does not allow: 403 from the proxy, with the
	// header and a body naming the host; nothing is resolved or sent.
	r = sbx(t, runOpts{}, "--allow-domain", hp, "--", curl, "-sS", "-i", "--max-time", "10", "http://not-allowed.example/x")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "403") || !strings.Contains(strings.ToLower(r.stdout), "x-proxy-error: blocked-by-sbx") || !strings.Contains(r.stdout, "not-allowed.example") {
		t.Fatalf("refusal is not a 403 naming the host: %s", r)
	}

	// Deny beats allow.
	r = sbx(t, runOpts{}, "--allow-domain", hp, "--deny-domain", "127.0.0.1", "--", curl, "-sS", "-i", "--max-time", "10", s.URL+"/denied")
	if !strings.Contains(r.stdout, "403") {
		t.Fatalf("denied entry did not win: %s", r)
	}
	// Another port of an allowed host is not allowed.
	other, oc := tcpEcho(t, "tcp4", "127.0.0.1:0")
	r = sbx(t, runOpts{}, "--allow-domain", hp, "--", curl, "-sS", "-i", "--max-time", "10", "http://"+other+"/")
	if !strings.Contains(r.stdout, "403") || oc.n.Load() != 0 {
		t.Fatalf("a port not in the entry got through: %s (echo saw %d)", r, oc.n.Load())
	}
	if c.n.Load() != 1 {
		t.Fatalf("refused requests reached the server: %d", c.n.Load())
	}
}

// TestNetOtherClients: wget and a Go program (net/http's default client)
// reach an allowed server through the proxy with nothing but the
// environment sbx sets.
func TestNetOtherClients(t *testing.T) {
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	_, port, _ := net.SplitHostPort(hp)
	// Go never proxies "localhost" or a loopback IP (net/http's
	// ProxyFromEnvironment); "localhost." is neither to it, and the
	// proxy canonicalises it to the allowed localhost entry.
	r := sbx(t, runOpts{}, append(append([]string{"--allow-domain", "localhost:" + port}, probeDir()...), "--", attackBin, "get", "http://localhost.:"+port+"/go")...)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "200 OK hello from the host /go") {
		t.Fatalf("Go client: %s", r)
	}
	if wget, err := exec.LookPath("wget"); err == nil {
		r = sbx(t, runOpts{}, "--allow-domain", hp, "--", wget, "-q", "-O", "-", "--timeout=10", s.URL+"/wget")
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, "hello from the host /wget") {
			t.Fatalf("wget: %s", r)
		}
	}
	if c.n.Load() < 1 {
		t.Fatal("nothing arrived")
	}
}

func TestNetHTTPSConnect(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, true)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := hostPort(t, s.URL)
	_, port, _ := net.SplitHostPort(hp)
	r := sbx(t, runOpts{}, "--allow-read", dir, "--allow-domain", hp, "--", curl, "-sS", "--max-time", "10", "--cacert", ca, s.URL+"/tls")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "hello from the host /tls") {
		t.Fatalf("HTTPS through CONNECT failed: %s", r)
	}
	// localhost: an explicit entry reaches the host's loopback (the
	// test certificate names example.com, 127.0.0.1 and ::1, so resolve
	// localhost to 127.0.0.1 for the TLS check).
	r = sbx(t, runOpts{}, "--allow-read", dir, "--allow-domain", "localhost:"+port, "--", curl, "-sS", "--max-time", "10", "--cacert", ca,
		"--connect-to", "localhost:"+port+":localhost:"+port, "https://localhost:"+port+"/local", "-k")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "/local") {
		t.Fatalf("localhost entry did not reach the host: %s", r)
	}
	if c.n.Load() != 2 {
		t.Fatalf("server saw %d requests, want 2", c.n.Load())
	}
}

func TestNetSOCKS(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	r := sbx(t, runOpts{}, "--allow-domain", hp, "--", "/bin/sh", "-c", `exec "$0" -sS --max-time 10 -x "$ALL_PROXY" "$1"`, curl, s.URL+"/socks")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "/socks") || c.n.Load() != 1 {
		t.Fatalf("SOCKS5 request failed: %s", r)
	}
	// A refused name: SOCKS reply 0x02, curl fails, nothing sent.
	r = sbx(t, runOpts{}, "--allow-domain", hp, "--", "/bin/sh", "-c", `exec "$0" -sS --max-time 10 -x "$ALL_PROXY" http://not-allowed.example/`, curl)
	if r.code == 0 || c.n.Load() != 1 {
		t.Fatalf("refused SOCKS request: %s", r)
	}
}

// TestNetBypass: the proxy is the only way out, whatever the command does
// with the environment or the sockets. Each target is the test's own
// listener on the host's loopback, which must receive nothing.
func TestNetBypass(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	tcp4, c4 := tcpEcho(t, "tcp4", "127.0.0.1:0")
	udp4, u4 := udpSink(t, "udp4", "127.0.0.1:0")
	for _, mode := range [][]string{{"--allow-domain", hp}, {"--net", "none"}} {
		t.Run(mode[1], func(t *testing.T) {
			r := sbx(t, runOpts{}, append(mode, "--", curl, "-sS", "--max-time", "5", "--noproxy", "*", s.URL+"/direct")...)
			if r.code == 0 {
				t.Fatalf("curl --noproxy '*' got through: %s", r)
			}
			args := append(append([]string{}, mode...), probeDir()...)
			args = append(args, "--", "/bin/sh", "-c", probes(
				[]string{"dial", "tcp4", tcp4},
				[]string{"dial", "udp4", udp4},
			))
			r = sbx(t, runOpts{}, args...)
			wantCode(t, r, 0)
			wantNot(t, r, "dial tcp4 "+tcp4, "OK")
		})
	}
	// IPv6 loopback, when the host has it.
	if tcp6, c6 := tcpEchoMaybe(t, "tcp6", "[::1]:0"); tcp6 != "" {
		udp6, u6 := udpSink(t, "udp6", "[::1]:0")
		r := sbx(t, runOpts{}, append([]string{"--allow-domain", hp}, append(probeDir(), "--", "/bin/sh", "-c", probes(
			[]string{"dial", "tcp6", tcp6},
			[]string{"dial", "udp6", udp6},
		))...)...)
		wantCode(t, r, 0)
		wantNot(t, r, "dial tcp6 "+tcp6, "OK")
		t.Logf("IPv6: %s", r.stdout)
		// The control below is the barrier: what the sandboxed run sent
		// was queued before it, so once it has arrived, exactly one
		// connection and one datagram means nothing else did.
		controlArrives(t, "tcp6", tcp6, c6)
		controlArrives(t, "udp6", udp6, u6)
		if c6.n.Load() != 1 || u6.n.Load() != 1 {
			t.Fatalf("IPv6 traffic reached the host: tcp %d udp %d (1 each is the control)", c6.n.Load(), u6.n.Load())
		}
	}

	// Control: the same probes without sbx reach the listeners, so the
	// zeros mean something; and the barrier (see above).
	controlArrives(t, "tcp4", tcp4, c4)
	controlArrives(t, "udp4", udp4, u4)
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := direct.Get(s.URL + "/control")
	if err != nil {
		t.Fatalf("control request: %v", err)
	}
	resp.Body.Close()
	if c.n.Load() != 1 || c4.n.Load() != 1 || u4.n.Load() != 1 {
		t.Fatalf("direct traffic reached the host: http %d tcp %d udp %d (1 each is the control)", c.n.Load(), c4.n.Load(), u4.n.Load())
	}
}

// controlArrives sends one probe of network to addr from outside the
// sandbox and waits (10 s at most) until the listener has counted it.
func controlArrives(t *testing.T, network, addr string, c *counter) {
	t.Helper()
	before := c.n.Load()
	out, err := exec.Command(attackBin, "dial", network, addr).CombinedOutput()
	if strings.HasPrefix(network, "tcp") && (err != nil || !strings.Contains(string(out), "OK echo")) {
		t.Fatalf("control dial %s %s failed: %v %s", network, addr, err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.n.Load() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.n.Load() == before {
		t.Fatalf("control %s traffic to %s did not arrive", network, addr)
	}
}

func tcpEchoMaybe(t *testing.T, network, addr string) (string, *counter) {
	l, err := net.Listen(network, addr)
	if err != nil {
		return "", nil
	}
	l.Close()
	return tcpEcho(t, network, addr)
}

// TestNetGitSmartHTTP clones over git's smart HTTP protocol through the
// proxy (git http-backend behind the test's own loopback server).
func TestNetGitSmartHTTP(t *testing.T) {
	git := needTool(t, "git")
	backend, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Skip("git --exec-path failed")
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, filepath.Join(root, "repo.git")},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	s := httptest.NewServer(h)
	defer s.Close()
	work := t.TempDir()
	r := sbx(t, runOpts{dir: work}, "--allow-write", work, "--allow-domain", hostPort(t, s.URL), "--",
		git, "clone", "-q", s.URL+"/repo.git", filepath.Join(work, "clone"))
	wantCode(t, r, 0)
	out, err := exec.Command(git, "-C", filepath.Join(work, "clone"), "log", "--format=%s").Output()
	if err != nil || strings.TrimSpace(string(out)) != "first" {
		t.Fatalf("clone incomplete: %v %q (%s)", err, out, r)
	}
}

// TestNetConnectForSSH: `sbx connect` is the ProxyCommand that
// GIT_SSH_COMMAND names; ssh speaks to the test's fake server through it.
func TestNetConnectForSSH(t *testing.T) {
	addr, c := tcpEcho(t, "tcp4", "127.0.0.1:0")
	host, port, _ := net.SplitHostPort(addr)
	r := sbx(t, runOpts{stdin: "hello through connect\n"}, "--allow-domain", addr, "--", sbxBin, "connect", host, port)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "echo: hello through connect") {
		t.Fatalf("sbx connect: %s", r)
	}
	// A refused target: exit 1, the proxy's reason on stderr.
	r = sbx(t, runOpts{stdin: "x\n"}, "--allow-domain", addr, "--", sbxBin, "connect", "not-allowed.example", "22")
	if r.code != 1 || !strings.Contains(r.stderr, "not-allowed.example") {
		t.Fatalf("refused connect: %s", r)
	}
	if c.n.Load() != 1 {
		t.Fatalf("echo server saw %d connections, want 1", c.n.Load())
	}
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		return
	}
	// ssh through GIT_SSH_COMMAND: the server sees ssh's banner.
	r = sbx(t, runOpts{}, "--allow-domain", addr, "--", "/bin/sh", "-c",
		`eval "$GIT_SSH_COMMAND -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 -p $1 $2 true"`, ssh, port, host)
	deadline := time.Now().Add(5 * time.Second)
	for c.n.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	c.mu.Lock()
	lines := append([]string{}, c.lines...)
	c.mu.Unlock()
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "SSH-2.0-") {
		t.Fatalf("ssh did not reach the server through sbx connect: %q %s", lines, r)
	}
	t.Logf("ssh's banner arrived through the proxy: %q", lines[1])
}

// TestNetLocalBindingAndPublish: without --allow-local-binding the
// command cannot listen; with it, it can; --publish makes a port
// reachable from the host's loopback.
func TestNetLocalBindingAndPublish(t *testing.T) {
	r := sbx(t, runOpts{}, append(probeDir(), "--", attackBin, "serve", "tcp4", "127.0.0.1:8080")...)
	wantCode(t, r, 0)
	want(t, r, "listen 127.0.0.1:8080", "EACCES")

	// Allowed: the command listens and connects to itself.
	r = sbx(t, runOpts{}, append(append([]string{"--allow-local-binding"}, probeDir()...), "--", "/bin/sh", "-c",
		attackBin+" serve tcp4 127.0.0.1:8080 & sleep 0.3; "+attackBin+" dial tcp4 127.0.0.1:8080; wait")...)
	wantCode(t, r, 0)
	want(t, r, "dial tcp4 127.0.0.1:8080", "OK")
	if !strings.Contains(r.stdout, "OK hello from inside") {
		t.Fatalf("the command could not talk to its own listener: %s", r)
	}

	// Published: the host reaches the command's listener.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostPortN := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(sbxBin, append(append([]string{"--publish", fmt.Sprintf("%d:8080", hostPortN)}, probeDir()...), "--", attackBin, "serve", "tcp4", "127.0.0.1:8080")...)
	cmd.Dir = t.TempDir()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	br := bufio.NewReader(stdout)
	line, _ := br.ReadString('\n')
	if strings.TrimSpace(line) != "listening" {
		t.Fatalf("published server did not start: %q %s", line, stderr.String())
	}
	conn, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(hostPortN), 5*time.Second)
	if err != nil {
		t.Fatalf("dialing the published port: %v", err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(conn)
	conn.Close()
	if strings.TrimSpace(string(got)) != "hello from inside" {
		t.Fatalf("published port answered %q; stderr %s", got, stderr.String())
	}
	rest, _ := io.ReadAll(br)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "served: OK") {
		t.Fatalf("sbx: %v %q %s", err, rest, stderr.String())
	}

	// A host port in use: 125, nothing run.
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	bp := busy.Addr().(*net.TCPAddr).Port
	r = sbx(t, runOpts{}, "--publish", fmt.Sprintf("%d:8080", bp), "--", "/bin/echo", "ran")
	wantCode(t, r, 125)
	if strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, strconv.Itoa(bp)) {
		t.Fatalf("busy publish port: %s", r)
	}
}

func TestNetBadPatterns(t *testing.T) {
	wantRefused(t,
		[]string{"--allow-domain", "*"},
		[]string{"--allow-domain", "*.com"},
		[]string{"--allow-domain", "http://example.com"},
		[]string{"--allow-domain", "example.com/path"},
		[]string{"--allow-domain", "exa mple.com"},
		[]string{"--allow-domain", "example.com:99999"},
		[]string{"--allow-domain", "ex*ample.com"},
		[]string{"--publish", "0"},
		[]string{"--publish", "80:abc"},
	)
}

// whl is the name of testWheel's package file.
const whl = "sbx_test_pkg-1.0.0-py3-none-any.whl"

// testWheel is a minimal pure-Python wheel, sbx-test-pkg 1.0.0, for the
// tests' own package index.
func testWheel() *bytes.Buffer {
	var wheel bytes.Buffer
	zw := zip.NewWriter(&wheel)
	for name, body := range map[string]string{
		"sbx_test_pkg/__init__.py":              "",
		"sbx_test_pkg-1.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbx-test-pkg\nVersion: 1.0.0\n",
		"sbx_test_pkg-1.0.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"sbx_test_pkg-1.0.0.dist-info/RECORD":   "",
	} {
		w, _ := zw.Create(name)
		io.WriteString(w, body)
	}
	zw.Close()
	return &wheel
}

// TestNetNpmAndPip: npm and pip reach an allowed registry (the test's own
// loopback server) through the proxy, configured by nothing but the
// environment sbx sets.
func TestNetNpmAndPip(t *testing.T) {
	wheel := testWheel()
	c := &counter{}
	var base string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.URL.Path)
		switch r.URL.Path {
		case "/sbx-test-pkg": // npm packument
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"sbx-test-pkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"sbx-test-pkg","version":"1.0.0","dist":{"tarball":"%s/sbx-test-pkg/-/sbx-test-pkg-1.0.0.tgz"}}}}`, base)
		case "/simple/sbx-test-pkg/": // pip simple index
			fmt.Fprintf(w, `<html><body><a href="/files/%s">%s</a></body></html>`, whl, whl)
		case "/files/" + whl:
			w.Write(wheel.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	defer s.Close()
	base = s.URL
	hp := hostPort(t, s.URL)
	w := t.TempDir()
	env := append(os.Environ(), "HOME="+w, "npm_config_cache="+filepath.Join(w, ".npm"),
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false")
	ran := 0
	if npm, err := exec.LookPath("npm"); err == nil {
		ran++
		r := sbx(t, runOpts{dir: w, env: env}, "--allow-write", w, "--allow-domain", hp, "--", npm, "view", "sbx-test-pkg", "version", "--registry", s.URL+"/")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "1.0.0" {
			t.Errorf("npm view through the proxy: %s", r)
		}
	}
	if py, err := exec.LookPath("python3"); err == nil && exec.Command(py, "-m", "pip", "--version").Run() == nil {
		ran++
		dl := filepath.Join(w, "dl")
		r := sbx(t, runOpts{dir: w, env: env}, "--allow-write", w, "--allow-domain", hp, "--", py, "-m", "pip", "download",
			"--no-deps", "--no-cache-dir", "--disable-pip-version-check", "--index-url", s.URL+"/simple/", "-d", dl, "sbx-test-pkg")
		if _, err := os.Stat(filepath.Join(dl, whl)); r.code != 0 || err != nil {
			t.Errorf("pip download through the proxy: %v %s", err, r)
		}
	}
	if ran == 0 {
		t.Skip("neither npm nor pip is installed")
	}
	if c.n.Load() == 0 {
		t.Fatal("the registry saw nothing")
	}
}
