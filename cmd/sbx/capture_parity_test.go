//go:build linux

package main

// The capture must decide as the proxy decides: generated network
// policies (allow and deny entries with and without ports, wildcards,
// the address guard's loopback entry present or not) against a small
// model of the proxy's matching, each destination asked twice in one
// run — through the proxy variables and by a client that ignores them
// (capture). Both must agree with the model on what reaches the servers
// and on what is recorded.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/internal/testserve"
)

// pEntry is one generated allow or deny entry.
type pEntry struct {
	host string // a name, "*.suffix" or "127.0.0.1"
	port int    // 0: every port
}

func (e pEntry) String() string {
	if e.port == 0 {
		return e.host
	}
	return e.host + ":" + strconv.Itoa(e.port)
}

func (e pEntry) matches(name string, port int) bool {
	if e.port != 0 && e.port != port {
		return false
	}
	if s, ok := strings.CutPrefix(e.host, "*."); ok {
		return strings.HasSuffix(name, "."+s)
	}
	return e.host == name
}

type pPolicy struct{ allow, deny []pEntry }

func anyMatch(es []pEntry, name string, port int) bool {
	for _, e := range es {
		if e.matches(name, port) {
			return true
		}
	}
	return false
}

// decide is the model of the proxy's decision for name:port, where every
// name resolves to loopback (RFC 6761): deny over allow, then the
// address guard, which passes 127.0.0.1 only when an entry lists it.
func (p pPolicy) decide(name string, port int) bool {
	return !anyMatch(p.deny, name, port) && anyMatch(p.allow, name, port) &&
		!anyMatch(p.deny, "127.0.0.1", port) && anyMatch(p.allow, "127.0.0.1", port)
}

// dnsRefuses is the model of the capture resolver: a deny entry without
// a port, or no allow entry for the name at any port.
func (p pPolicy) dnsRefuses(name string) bool {
	for _, e := range p.deny {
		if e.port == 0 && e.matches(name, 0) {
			return true
		}
	}
	for _, e := range p.allow {
		if e.matches(name, e.port) {
			return false
		}
	}
	return true
}

func genPolicy(r *rand.Rand, names []string, ports []int) pPolicy {
	var p pPolicy
	pick := func() pEntry {
		var e pEntry
		switch r.Intn(3) {
		case 0:
			e.host = "*.p.localhost"
		default:
			e.host = names[r.Intn(len(names))]
		}
		if r.Intn(2) == 0 {
			e.port = ports[r.Intn(len(ports))]
		}
		return e
	}
	for n := 1 + r.Intn(3); n > 0; n-- {
		p.allow = append(p.allow, pick())
	}
	for n := r.Intn(3); n > 0; n-- {
		p.deny = append(p.deny, pick())
	}
	// The guard's entry: usually for every port, sometimes one port,
	// sometimes none.
	switch r.Intn(4) {
	case 0:
		p.allow = append(p.allow, pEntry{host: "127.0.0.1", port: ports[r.Intn(len(ports))]})
	case 1:
	default:
		p.allow = append(p.allow, pEntry{host: "127.0.0.1"})
	}
	return p
}

// parityClient asks every destination in both modes and prints one line
// each: MODE NAME PORT ok|refused.
const parityClient = `
import sys, urllib.request
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
proxied = urllib.request.build_opener()
for dest in sys.argv[1:]:
    name, port = dest.split(":")
    for mode, op in (("proxy", proxied), ("capture", direct)):
        try:
            r = op.open("http://%s:%s/%s/%s" % (name, port, mode, name), timeout=10)
            print(mode, name, port, "ok" if r.status == 200 else "status%d" % r.status)
        except Exception as e:
            print(mode, name, port, "refused")
`

func TestCaptureParity(t *testing.T) {
	needCapture(t)
	py := needTool(t, "python3")
	names := []string{"a.p.localhost", "b.p.localhost", "c.q.localhost"}
	var ports []int
	var mu sync.Mutex
	seen := map[string]int{} // "PORT /mode/name" → requests
	for i := 0; i < 2; i++ {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ports = append(ports, port)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[fmt.Sprintf("%d %s", port, r.URL.Path)]++
			mu.Unlock()
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	var dests []string
	for _, n := range names {
		for _, p := range ports {
			dests = append(dests, fmt.Sprintf("%s:%d", n, p))
		}
	}
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	for seed := 1; seed <= seeds; seed++ {
		r := rand.New(rand.NewSource(int64(seed)))
		pol := genPolicy(r, names, ports)
		vf := filepath.Join(t.TempDir(), "v.jsonl")
		args := []string{"--violations", vf, "--quiet-violations"}
		for _, e := range pol.allow {
			args = append(args, "--allow-domain", e.String())
		}
		for _, e := range pol.deny {
			args = append(args, "--deny-domain", e.String())
		}
		mu.Lock()
		clear(seen)
		mu.Unlock()
		res := sbx(t, runOpts{}, append(append(args, "--", py, "-c", parityClient), dests...)...)
		desc := fmt.Sprintf("seed %d: allow %v deny %v", seed, pol.allow, pol.deny)
		if res.code != 0 {
			t.Fatalf("%s: %s", desc, res)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
			f := strings.Fields(line)
			if len(f) == 4 {
				got[f[0]+" "+f[1]+":"+f[2]] = f[3] == "ok"
			}
		}
		var wantRecs []string
		for _, n := range names {
			if pol.dnsRefuses(n) {
				wantRecs = append(wantRecs, "dns "+n)
			}
			for _, port := range ports {
				allowed := pol.decide(n, port)
				for _, mode := range []string{"proxy", "capture"} {
					k := fmt.Sprintf("%s %s:%d", mode, n, port)
					ok, asked := got[k]
					if !asked {
						t.Fatalf("%s: no answer for %s:\n%s", desc, k, res)
					}
					mu.Lock()
					n2 := seen[fmt.Sprintf("%d /%s/%s", port, mode, n)]
					mu.Unlock()
					if ok != allowed || (n2 == 1) != allowed {
						t.Errorf("%s: %s: reached=%v server saw %d, model says allowed=%v", desc, k, ok, n2, allowed)
					}
				}
				if !allowed {
					wantRecs = append(wantRecs, fmt.Sprintf("http %s:%d", n, port))
					if !pol.dnsRefuses(n) {
						wantRecs = append(wantRecs, fmt.Sprintf("capture %s:%d", n, port))
					}
				}
			}
		}
		var gotRecs []string
		for _, rec := range readRecords(t, vf) {
			if rec.Kind != "network" {
				continue
			}
			proto, _, _ := strings.Cut(rec.Detail, ":")
			if rec.Port == 0 {
				gotRecs = append(gotRecs, proto+" "+rec.Host)
			} else {
				gotRecs = append(gotRecs, fmt.Sprintf("%s %s:%d", proto, rec.Host, rec.Port))
			}
		}
		sort.Strings(wantRecs)
		sort.Strings(gotRecs)
		if strings.Join(gotRecs, "\n") != strings.Join(wantRecs, "\n") {
			t.Errorf("%s: records\n%s\nwant\n%s", desc, strings.Join(gotRecs, "\n"), strings.Join(wantRecs, "\n"))
		}
	}
}

// TestCaptureTLSTerminateAndInject: with tlsTerminate, a captured
// connection to port 443 is terminated as a CONNECT to that name would
// be, and a masked credential is put back for its inject host, through
// the proxy variables and through capture alike; a host that may not
// receive it gets the sentinel. Port 443 on the host's loopback needs
// root (or a lowered ip_unprivileged_port_start).
func TestCaptureTLSTerminateAndInject(t *testing.T) {
	needCapture(t)
	py := needTool(t, "python3")
	l, err := net.Listen("tcp4", "127.0.0.1:443")
	if err != nil {
		t.Skipf("capture terminates port 443 only, and this user cannot listen on the host's 127.0.0.1:443: %v", err)
	}
	caPEM, cert := testCA(t)
	d := t.TempDir()
	os.Chmod(d, 0o755)
	caFile := filepath.Join(d, "ca.pem")
	writeFile(t, caFile, string(caPEM))
	e := &echoTLS{}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Host+" "+r.URL.Path+" header="+r.Header.Get("X-Token"))
		e.mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	e.srv.Listener.Close()
	e.srv.Listener = l
	e.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	e.srv.StartTLS()
	t.Cleanup(e.srv.Close)
	const real = "realTOKENcapture0123456789"
	settings := filepath.Join(d, "s.json")
	writeFile(t, settings, `{"network": {"allowedDomains": ["inject.localhost:443", "other.localhost:443", "127.0.0.1:443"], "tlsTerminate": {}}, "filesystem": {},
		"credentials": {"envVars": [{"name": "API_TOKEN", "mode": "mask", "injectHosts": ["inject.localhost"]}]}}`)
	env := append(os.Environ(), "SSL_CERT_FILE="+caFile, "API_TOKEN="+real)
	client := `
import os, sys, urllib.request
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
proxied = urllib.request.build_opener()
for mode, op in (("proxy", proxied), ("capture", direct)):
    for host in ("inject", "other"):
        req = urllib.request.Request("https://%s.localhost/%s" % (host, mode), headers={"X-Token": os.environ["API_TOKEN"]})
        try:
            print(mode, host, op.open(req, timeout=10).read().decode().strip())
        except Exception as e:
            print(mode, host, "failed", e)
`
	vio := filepath.Join(d, "v.jsonl")
	r := sbx(t, runOpts{dir: d, env: env}, "--trust-project-settings", "--settings", settings, "--violations", vio, "--quiet-violations", "--", py, "-c", client)
	wantCode(t, r, 0)
	for _, w := range []string{"proxy inject ok", "proxy other ok", "capture inject ok", "capture other ok"} {
		if !strings.Contains(r.stdout, w) {
			t.Fatalf("want %q: %s", w, r)
		}
	}
	got := e.got()
	for _, mode := range []string{"proxy", "capture"} {
		if !strings.Contains(got, "inject.localhost /"+mode+" header="+real) {
			t.Errorf("%s: the inject host did not get the real token:\n%s", mode, got)
		}
		if !regexp.MustCompile(`other.localhost /` + mode + ` header=sbxsecret_[0-9a-f]+`).MatchString(got) {
			t.Errorf("%s: the other host must get the sentinel, never the token:\n%s", mode, got)
		}
	}
	if strings.Count(got, real) != 2 {
		t.Errorf("the token went elsewhere:\n%s", got)
	}
}

// captureGet is a shell function for a client that ignores the proxy
// variables: "get URL" prints the status or "refused".
const captureGet = `get() { python3 -c '
import sys, urllib.request
try:
    print(urllib.request.build_opener(urllib.request.ProxyHandler({})).open(sys.argv[1], timeout=10).status)
except Exception as e:
    print("refused")' "$1"; }
`

// TestCaptureControlFD: --control-fd lines decide captured connections
// as they decide the proxy's: refused before the line that allows the
// name, reached after it, refused again after the line that denies all.
func TestCaptureControlFD(t *testing.T) {
	needCapture(t)
	needTool(t, "python3")
	s, c := httpServer(t, false)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	u := fmt.Sprintf("http://ctl.localhost:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := captureGet + fmt.Sprintf(`echo "first:$(get %[1]s/a)"
		read line < /dev/stdin
		echo "second:$(get %[1]s/b)"
		read line < /dev/stdin
		echo "third:$(get %[1]s/c)"`, u)
	r := startControlled(t, ctx, nil, "--", "/bin/sh", "-c", script)
	if l := r.next(t); l != "first:refused" {
		t.Fatalf("before any update: %q", l)
	}
	r.step(t, fmt.Sprintf(`{"network": {"allowedDomains": ["ctl.localhost:%d", "127.0.0.1:%d"]}}`, port, port))
	if l := r.next(t); l != "second:200" {
		t.Fatalf("after allowing: %q (%s)", l, r.stderr.String())
	}
	r.step(t, `{"network": {"allowedDomains": [], "deniedDomains": ["*"]}}`)
	if l := r.next(t); l != "third:refused" {
		t.Fatalf("after denying: %q", l)
	}
	r.close()
	for r.out.Scan() {
	}
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("sbx: %v; stderr %s", err, r.stderr.String())
	}
	if c.n.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1", c.n.Load())
	}
}

// TestCaptureParentProxy: with an upstream proxy, a captured connection
// leaves through it as a CONNECT to the name the client resolved and the
// port it dialled (never resolved by sbx), with the parent's credentials.
func TestCaptureParentProxy(t *testing.T) {
	needCapture(t)
	needTool(t, "python3")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	testserve.Requests(t, l, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		mu.Lock()
		seen = append(seen, req.Method+" "+req.RequestURI+" "+req.Header.Get("Proxy-Authorization"))
		mu.Unlock()
		if req.Method != http.MethodConnect {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nvia parent")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		inner, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		mu.Lock()
		seen = append(seen, "inner "+inner.Method+" "+inner.Host+inner.RequestURI)
		mu.Unlock()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 17\r\nConnection: close\r\n\r\nthrough the tunnel")
	})
	// A CONNECT leaves through HTTPS_PROXY, and so does a captured
	// connection.
	env := append(hermeticEnv(), "HTTPS_PROXY=http://corp:pa55word@"+l.Addr().String())
	r := sbx(t, runOpts{env: env}, "--allow-domain", "remote.test:8080", "--", "/bin/sh", "-c", captureGet+`get http://remote.test:8080/cap`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "200" {
		t.Fatalf("%s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"CONNECT remote.test:8080 Basic Y29ycDpwYTU1d29yZA==", "inner GET remote.test:8080/cap"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the parent saw %q, want %q", seen, want)
	}
}

// TestCaptureAskFD: under --ask-fd a name no rule decides resolves, and
// the question comes with the connection, where the port is known: a yes
// reaches the server, a no is refused and recorded, a name denied by a
// rule is never asked (NXDOMAIN).
func TestCaptureAskFD(t *testing.T) {
	needCapture(t)
	needTool(t, "python3")
	s, c := httpServer(t, false)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	theirs, asked := askPeer(t, func(host string) string { return fmt.Sprintf(`"allow": %v`, host == "yes.localhost") })
	vio := filepath.Join(t.TempDir(), "v.jsonl")
	script := captureGet + fmt.Sprintf(`echo "$(get http://yes.localhost:%[1]d/y) $(get http://no.localhost:%[1]d/n) $(get http://denied.localhost:%[1]d/d)"`, port)
	cmd := exec.Command(sbxBin, "--ask-fd", "8", "--ask-timeout", "5s", "--allow-domain", fmt.Sprintf("127.0.0.1:%d", port),
		"--deny-domain", "denied.localhost", "--violations", vio, "--quiet-violations", "--", "/bin/sh", "-c", script)
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, theirs}
	cmd.Env = hermeticEnv()
	out, err := cmd.Output()
	theirs.Close()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "200 refused refused" {
		t.Fatalf("answers: %q", got)
	}
	got := strings.Join(asked(), " ")
	if want := fmt.Sprintf("yes.localhost:%[1]d no.localhost:%[1]d", port); got != want {
		t.Fatalf("asked %q, want %q", got, want)
	}
	if c.n.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1", c.n.Load())
	}
	recs := readRecords(t, vio)
	var hosts []string
	for _, r := range recs {
		hosts = append(hosts, r.Host)
	}
	if strings.Join(hosts, " ") != "no.localhost denied.localhost" {
		t.Fatalf("records for %q, want no.localhost then denied.localhost", hosts)
	}
}

// TestCaptureOnlyWhenFiltered: the capture device and the resolver's
// files are in use only with filtered networking and capture on; --net
// none, --capture off and network.capture false keep the namespace as it
// was (no route but the loopback's), with the host's resolv.conf. (With
// settings that turn the capture off and a command line that allows
// domains, the early process has made the device already: it is down,
// without routes.)
func TestCaptureOnlyWhenFiltered(t *testing.T) {
	needCapture(t)
	host, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Skipf("no /etc/resolv.conf: %v", err)
	}
	// The devices that carry a route (/proc/net is the namespace's own;
	// /sys/class/net is the host's sysfs), the loopback left out.
	script := `{ tail -n +2 /proc/net/route | cut -f1; awk '{print $10}' /proc/net/ipv6_route; } | grep -vx lo | sort -u | tr '\n' ' '; echo; cat /etc/resolv.conf`
	for _, c := range []struct {
		name, devices string
		flags         []string
		captured      bool
	}{
		{"filtered", "sbx0", []string{"--allow-domain", "x.localhost"}, true},
		{"capture-off", "", []string{"--allow-domain", "x.localhost", "--capture", "off"}, false},
		{"net-none", "", nil, false},
		{"settings-off", "", []string{"--allow-domain", "x.localhost", "--settings", "SETTINGS"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			for i, f := range c.flags {
				if f == "SETTINGS" {
					p := filepath.Join(d, "s.json")
					writeFile(t, p, `{"network": {"capture": false}, "filesystem": {}}`)
					c.flags[i] = p
				}
			}
			r := sh(t, runOpts{dir: d}, script, c.flags...)
			wantCode(t, r, 0)
			devs, conf, _ := strings.Cut(r.stdout, "\n")
			if strings.TrimSpace(devs) != c.devices {
				t.Fatalf("devices with routes %q, want %q: %s", devs, c.devices, r)
			}
			if got := strings.Contains(conf, "nameserver 198.18.0.2"); got != c.captured || (!c.captured && conf != string(host)) {
				t.Fatalf("resolv.conf (captured=%v):\n%s", c.captured, conf)
			}
		})
	}
}
