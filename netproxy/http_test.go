package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func serverPort(t testing.TB, s *httptest.Server) int {
	t.Helper()
	return s.Listener.Addr().(*net.TCPAddr).Port
}

func proxiedClient(e *env, base *http.Transport) *http.Client {
	tr := base.Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: e.httpAddr})
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestConnectTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over TLS %s", r.URL.Path)
	}))
	defer srv.Close()
	port := serverPort(t, srv)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)

	base := srv.Client().Transport.(*http.Transport)
	c := proxiedClient(e, base)
	// The server name must be the CONNECT target's (the SNI check); the
	// test certificate does not name it.
	c.Transport.(*http.Transport).TLSClientConfig.ServerName = "allowed.test"
	c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	defer c.CloseIdleConnections()
	resp, err := c.Get(fmt.Sprintf("https://allowed.test:%d/tls", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello over TLS /tls" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got, want := e.dials.dialed(), fmt.Sprintf("127.0.0.1:%d", port); len(got) != 1 || got[0] != want {
		t.Errorf("dials = %v, want exactly [%s]", got, want)
	}
	if n := e.res.count("allowed.test"); n != 1 {
		t.Errorf("resolved %d times, want 1", n)
	}
	if d := e.denied.all(); len(d) != 0 {
		t.Errorf("unexpected denials %+v", d)
	}
}

func TestPlainHTTPAbsoluteForm(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("Keep-Alive", "timeout=5")
		fmt.Fprintf(w, "%s %s host=%s proxy-auth=%q", r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("Proxy-Authorization"))
	}))
	defer srv.Close()
	port := serverPort(t, srv)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := proxiedClient(e, http.DefaultTransport.(*http.Transport))
	defer c.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://Allowed.Test:%d/p/a?q=%d", port, i), nil)
		req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf("GET /p/a?q=%d host=Allowed.Test:%d proxy-auth=\"\"", i, port)
		if resp.Header.Get("Keep-Alive") != "" || !resp.Close {
			t.Errorf("hop-by-hop headers: %v (close=%v)", resp.Header, resp.Close)
		}
		if resp.StatusCode != 200 || string(body) != want || resp.Header.Get("X-Upstream") != "yes" {
			t.Fatalf("got %d %q %v, want 200 %q", resp.StatusCode, body, resp.Header, want)
		}
	}
	if got := e.dials.dialed(); len(got) != 3 {
		t.Errorf("dials = %v, want one per request", got)
	}
	if n := e.res.count("allowed.test"); n != 3 {
		t.Errorf("resolved %d times, want once per request", n)
	}
}

func TestPlainHTTPPostBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	}))
	defer srv.Close()
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := proxiedClient(e, http.DefaultTransport.(*http.Transport))
	defer c.CloseIdleConnections()
	resp, err := c.Post(fmt.Sprintf("http://allowed.test:%d/", serverPort(t, srv)), "text/plain", strings.NewReader(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != fmt.Sprint(1<<20) {
		t.Errorf("upstream saw %s bytes", body)
	}
}

// readResponse parses one HTTP response from raw bytes.
func readResponse(t *testing.T, raw string) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("no HTTP response in %q: %v", raw, err)
	}
	return resp
}

func bodyOf(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestRefusals(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{
		Allowed:       []string{"allowed.test", "metadata.test", "127.0.0.1:1", "evil.test"},
		Denied:        []string{"evil.test"},
		DeniedReasons: map[string]string{"evil.test": "evil.test is an exfiltration sink"},
	}, nil)
	tests := []struct {
		name, req    string
		status       int
		proto, rule  string
		host, reason string
	}{
		{"connect metadata", "CONNECT metadata.test:80 HTTP/1.1\r\nHost: metadata.test:80\r\n\r\n",
			403, "connect", RuleAddressGuard, "metadata.test", "cloud metadata"},
		{"connect loopback by name", fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port),
			403, "connect", RuleAddressGuard, "allowed.test", "loopback"},
		{"plain metadata", "GET http://metadata.test/latest/meta-data/ HTTP/1.1\r\nHost: metadata.test\r\n\r\n",
			403, "http", RuleAddressGuard, "metadata.test", "169.254.169.254"},
		{"denied with reason", "CONNECT evil.test:443 HTTP/1.1\r\n\r\n",
			403, "connect", "evil.test", "evil.test", "exfiltration sink"},
		{"not allowed", "CONNECT other.test:443 HTTP/1.1\r\n\r\n",
			403, "connect", RuleDefault, "other.test", "allowedDomains"},
		{"literal ip other port", fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", port),
			403, "connect", RuleDefault, "127.0.0.1", "allowedDomains"},
		{"numeric ip form", "CONNECT 2852039166:80 HTTP/1.1\r\n\r\n",
			403, "connect", RuleDefault, "169.254.169.254", "allowedDomains"},
		{"origin-form", "GET /index.html HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
			403, "http", RuleOriginForm, "allowed.test", "absolute URL"},
		{"asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
			403, "http", RuleOriginForm, "allowed.test", "origin-form"},
		{"https absolute-form", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
			403, "http", RuleProtocol, "allowed.test", "CONNECT"},
		{"host mismatch plain", "GET http://allowed.test/ HTTP/1.1\r\nHost: metadata.test\r\n\r\n",
			403, "http", RuleHostMismatch, "allowed.test", "disagrees"},
		{"host mismatch plain port", "GET http://allowed.test:8080/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
			403, "http", RuleHostMismatch, "allowed.test", "disagrees"},
		{"host mismatch connect", "CONNECT allowed.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n",
			403, "connect", RuleHostMismatch, "allowed.test", "disagrees"},
		{"host mismatch connect port", "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n",
			403, "connect", RuleHostMismatch, "allowed.test", "disagrees"},
		{"connect without port", "CONNECT allowed.test HTTP/1.1\r\n\r\n",
			400, "connect", RuleProtocol, "allowed.test", "host:port"},
		{"connect bad host", "CONNECT a..b:443 HTTP/1.1\r\n\r\n",
			403, "connect", RuleInvalidHost, "a..b", "empty label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.denied.all())
			resp := readResponse(t, rawExchange(t, e.httpAddr, tt.req, 5*time.Second))
			body := bodyOf(resp)
			if resp.StatusCode != tt.status || resp.Header.Get("X-Proxy-Error") != "blocked-by-sbx" {
				t.Errorf("status %d, X-Proxy-Error %q; want %d blocked-by-sbx", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), tt.status)
			}
			if !strings.Contains(body, tt.host) || !strings.Contains(body, tt.reason) || !strings.HasPrefix(body, "sbx: blocked") {
				t.Errorf("body %q should name %q and %q", body, tt.host, tt.reason)
			}
			ds := e.denied.all()
			if len(ds) != before+1 {
				t.Fatalf("OnDeny called %d times, want 1", len(ds)-before)
			}
			if d := ds[before]; d.Proto != tt.proto || d.Rule != tt.rule || d.Host != tt.host {
				t.Errorf("denial %+v, want proto %q rule %q host %q", d, tt.proto, tt.rule, tt.host)
			}
		})
	}
	if got := e.dials.dialed(); len(got) != 0 {
		t.Errorf("refused requests dialled %v", got)
	}
}

func TestHostHeaderAgreementIsCanonical(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	for _, hostHdr := range []string{"", "Host: ALLOWED.test.:%d\r\n", "Host: allowed.test\r\n"} {
		extra := hostHdr
		if strings.Contains(extra, "%d") {
			extra = fmt.Sprintf(extra, port)
		}
		c, err := net.Dial("tcp", e.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n%s\r\n", port, extra)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("Host %q: %v %v", hostHdr, resp, err)
		}
		c.Close()
	}
}

func TestDuplicateHostHeader(t *testing.T) {
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	raw := rawExchange(t, e.httpAddr, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nHost: metadata.test\r\n\r\n", 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode != 400 {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if got := e.dials.dialed(); len(got) != 0 {
		t.Errorf("dialled %v", got)
	}
}

func TestConnectEarlyDataAndHalfClose(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := dialProxy(t, e.httpAddr)
	// The request and the first tunnel bytes in one write, before the 200.
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\nearly-", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if _, err := io.WriteString(c, "late"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br) // the echo server closes after our EOF arrives
	if err != nil || string(rest) != "early-late" {
		t.Fatalf("echo %q, %v; want early-late then EOF", rest, err)
	}
}

func TestPlainHTTPIgnoresProxyEnvironment(t *testing.T) {
	// A proxy on loopback that fails the test if anything reaches it.
	trap := listen(t, "127.0.0.1:0")
	defer trap.Close()
	go func() {
		if c, err := trap.Accept(); err == nil {
			t.Errorf("the plain-HTTP forwarder dialled the environment's proxy")
			c.Close()
		}
	}()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"} {
		t.Setenv(k, "http://"+trap.Addr().String())
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	defer srv.Close()
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", serverPort(t, srv), serverPort(t, srv)), 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode != 200 || bodyOf(resp) != "direct" {
		t.Errorf("plain: %q", raw)
	}
	c, resp, _ := connectVia(t, e.httpAddr, fmt.Sprintf("allowed.test:%d", port), "")
	c.Close()
	if resp.StatusCode != 200 {
		t.Errorf("CONNECT: %d", resp.StatusCode)
	}
}

func TestDNSRebinding(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"rebind.test", "127.0.0.1"}}, nil)
	e.res.sequence("rebind.test",
		[]string{"127.0.0.1"},                    // 1: CONNECT, vetted and dialled
		[]string{"169.254.169.254"},              // 2: CONNECT, refused without dialling
		[]string{"127.0.0.1"},                    // 3: plain HTTP, vetted and dialled
		[]string{"169.254.169.254"},              // 4: plain HTTP, refused
		[]string{"169.254.169.254", "127.0.0.1"}, // 5: only the good address is dialled
	)
	target := fmt.Sprintf("rebind.test:%d", port)
	want := fmt.Sprintf("127.0.0.1:%d", port)

	c, resp, br := connectVia(t, e.httpAddr, target, "")
	if resp.StatusCode != 200 {
		t.Fatalf("1: status %d", resp.StatusCode)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("1: echo %q %v", buf, err)
	}
	c.Close()
	if n := e.res.count("rebind.test"); n != 1 {
		t.Fatalf("1: resolved %d times", n)
	}

	c, resp, _ = connectVia(t, e.httpAddr, target, "")
	c.Close()
	if resp.StatusCode != 403 || e.res.count("rebind.test") != 2 {
		t.Fatalf("2: status %d after %d lookups", resp.StatusCode, e.res.count("rebind.test"))
	}

	// Plain HTTP: the echo server answers the request line back, which is
	// not HTTP, so expect a 502 from the forwarder — what matters is the dial.
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target, target), 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode == 403 {
		t.Fatalf("3: refused: %q", raw)
	}
	raw = rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target, target), 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode != 403 {
		t.Fatalf("4: not refused: %q", raw)
	}
	c, resp, _ = connectVia(t, e.httpAddr, target, "")
	c.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("5: status %d", resp.StatusCode)
	}
	if n := e.res.count("rebind.test"); n != 5 {
		t.Errorf("resolved %d times for 5 requests", n)
	}
	dials := e.dials.dialed()
	if len(dials) != 3 {
		t.Errorf("dials %v, want 3", dials)
	}
	for _, d := range dials {
		if d != want {
			t.Errorf("dialled %s, want only the vetted %s", d, want)
		}
	}
}

func TestPlainHTTPUpgrade(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want upgrade", 400)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		io.Copy(c, brw)
	}))
	defer srv.Close()
	port := serverPort(t, srv)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := dialProxy(t, e.httpAddr)
	fmt.Fprintf(c, "GET http://allowed.test:%d/ws HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("%v %v", resp, err)
	}
	io.WriteString(c, "frame")
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "frame" {
		t.Fatalf("upgraded echo %q %v", buf, err)
	}
}

func TestDialFallbackAndGatewayErrors(t *testing.T) {
	port := echoServer(t)
	closed := listen(t, "127.0.0.1:0")
	deadPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	e := startProxy(t, Config{Allowed: []string{"two.test", "127.0.0.1", "127.0.0.2", "nx.test"}}, nil)
	e.res.sequence("two.test", []string{"127.0.0.2", "127.0.0.1"})

	// 127.0.0.2 refuses (nothing listens there), 127.0.0.1 answers.
	c, resp, _ := connectVia(t, e.httpAddr, fmt.Sprintf("two.test:%d", port), "")
	c.Close()
	want := []string{fmt.Sprintf("127.0.0.2:%d", port), fmt.Sprintf("127.0.0.1:%d", port)}
	if got := e.dials.dialed(); resp.StatusCode != 200 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("status %d, dials %v; want 200 after %v", resp.StatusCode, got, want)
	}

	// Nothing answers at all: 502 without X-Proxy-Error, and no OnDeny.
	c, resp, _ = connectVia(t, e.httpAddr, fmt.Sprintf("127.0.0.1:%d", deadPort), "")
	c.Close()
	if resp.StatusCode != 502 || resp.Header.Get("X-Proxy-Error") != "" {
		t.Errorf("CONNECT to a closed port: %d %v", resp.StatusCode, resp.Header)
	}
	raw := rawExchange(t, e.httpAddr, "GET http://unknown.two.test/ HTTP/1.1\r\nHost: unknown.two.test\r\n\r\n", 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode != 403 {
		t.Errorf("not-allowed name: %d", resp.StatusCode)
	}
	raw = rawExchange(t, e.httpAddr, "GET http://nx.test/ HTTP/1.1\r\nHost: nx.test\r\n\r\n", 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode != 502 || !strings.Contains(bodyOf(resp), "cannot resolve") {
		t.Errorf("unresolvable allowed name: %q", raw)
	}
	socks, code := socksRequest(t, e.socksAddr, socksCmdConnect, socksAtypIPv4, []byte{127, 0, 0, 1}, deadPort)
	socks.Close()
	if code != socksRefused {
		t.Errorf("SOCKS to a closed port: reply %d", code)
	}
	socks, code = socksRequest(t, e.socksAddr, socksCmdConnect, socksAtypDomain, []byte("nx.test"), 80)
	socks.Close()
	if code != socksHostUnreachable {
		t.Errorf("SOCKS to an unresolvable name: reply %d", code)
	}
	if d := e.denied.all(); len(d) != 1 {
		t.Errorf("denials %+v, want only the not-allowed name", d)
	}
}
