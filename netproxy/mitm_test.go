package netproxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tlsUpstream is an HTTPS server on 127.0.0.1 with its own test CA; it
// echoes what it received.
func tlsUpstream(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s token=%s body=%s", r.Method, r.URL.Path, r.Header.Get("X-Token"), body)
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool
}

// viaProxy is an HTTPS client that goes through the proxy at addr and
// trusts roots only.
func viaProxy(addr string, roots *x509.CertPool) *http.Client {
	pu, _ := url.Parse("http://" + addr)
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

func TestTLSTerminate(t *testing.T) {
	srv, srvRoots := tlsUpstream(t)
	target := strings.TrimPrefix(srv.URL, "https://")
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	caRoots := x509.NewCertPool()
	caRoots.AddCert(ca.Leaf)
	e := startProxy(t, Config{Allowed: []string{target}, TLS: &TLSTerminate{CA: ca, Roots: srvRoots}}, nil)

	// The client trusts only sbx's CA: the proxy terminated the tunnel,
	// and sent the request on, headers and body intact, keeping the
	// connection for a second request.
	c := viaProxy(e.httpAddr, caRoots)
	for i := 0; i < 2; i++ {
		req, _ := http.NewRequest("POST", srv.URL+"/p", strings.NewReader("hello"))
		req.Header.Set("X-Token", "t0k")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("terminated request: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "POST /p token=t0k body=hello" {
			t.Fatalf("upstream saw %q", b)
		}
		if resp.TLS == nil || resp.TLS.PeerCertificates[0].Issuer.CommonName != ca.Leaf.Subject.CommonName {
			t.Fatalf("the client's peer certificate is not sbx's")
		}
		if resp.TLS.NegotiatedProtocol == "h2" {
			t.Fatal("h2 negotiated; only http/1.1 is offered")
		}
	}
	// A client that trusts only the upstream's own CA refuses sbx's
	// certificate: the tunnel is terminated, not opaque.
	if _, err := viaProxy(e.httpAddr, srvRoots).Get(srv.URL + "/"); err == nil {
		t.Fatal("a client trusting only the upstream CA got through a terminated tunnel")
	}
	if got := e.denied.all(); len(got) != 0 {
		t.Fatalf("denials: %+v", got)
	}
}

func TestTLSTerminateExcludedAndUpstreamFailure(t *testing.T) {
	srv, srvRoots := tlsUpstream(t)
	target := strings.TrimPrefix(srv.URL, "https://")
	ca, _ := NewCA()
	caRoots := x509.NewCertPool()
	caRoots.AddCert(ca.Leaf)

	// Excluded: tunnelled opaquely, the client sees the upstream's own
	// certificate.
	e := startProxy(t, Config{Allowed: []string{target}, TLS: &TLSTerminate{CA: ca, Roots: srvRoots, Exclude: []string{"127.0.0.1"}}}, nil)
	resp, err := viaProxy(e.httpAddr, srvRoots).Get(srv.URL + "/x")
	if err != nil {
		t.Fatalf("excluded host: %v", err)
	}
	resp.Body.Close()

	// An upstream whose certificate the proxy does not trust: 502 with a
	// one-line reason, and a report.
	e2 := startProxy(t, Config{Allowed: []string{target}, TLS: &TLSTerminate{CA: ca, Roots: x509.NewCertPool()}}, nil)
	resp, err = viaProxy(e2.httpAddr, caRoots).Get(srv.URL + "/x")
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "certificate") || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
		t.Fatalf("want a one-line 502 about the certificate, got %d %q", resp.StatusCode, b)
	}
	d := e2.denied.all()
	if len(d) != 1 || d[0].Rule != RuleUpstreamTLS {
		t.Fatalf("want one %s report, got %+v", RuleUpstreamTLS, d)
	}
	// Bad exclude patterns are refused.
	if _, err := New(Config{TLS: &TLSTerminate{CA: ca, Exclude: []string{"http://x"}}}); err == nil {
		t.Fatal("a malformed excludeDomains entry was accepted")
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	ca, _ := NewCA()
	other, _ := NewCA()
	key, _ := x509.MarshalPKCS8PrivateKey(other.PrivateKey)
	cert := filepath.Join(dir, "ca.pem")
	os.WriteFile(cert, CertPEM(ca), 0o600)
	keyFile := filepath.Join(dir, "key.pem")
	os.WriteFile(keyFile, pemBlock("PRIVATE KEY", key), 0o600)
	if _, err := LoadCA(cert, keyFile); err == nil || !strings.Contains(err.Error(), "caCertPath") {
		t.Fatalf("a key that does not match: %v", err)
	}
	if _, err := LoadCA(filepath.Join(dir, "missing.pem"), keyFile); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
	key, _ = x509.MarshalPKCS8PrivateKey(ca.PrivateKey)
	os.WriteFile(keyFile, pemBlock("PRIVATE KEY", key), 0o600)
	if got, err := LoadCA(cert, keyFile); err != nil || !got.Leaf.IsCA {
		t.Fatalf("a good CA: %v", err)
	}
}

// TestTLSTerminateTargetAndHead: inside a terminated tunnel a request
// may name only the tunnel's own target (Host header, absolute form, an
// inner CONNECT), and its head is bounded like the proxy's own.
func TestTLSTerminateTargetAndHead(t *testing.T) {
	srv, srvRoots := tlsUpstream(t)
	target := strings.TrimPrefix(srv.URL, "https://")
	ca, _ := NewCA()
	e := startProxy(t, Config{Allowed: []string{target}, TLS: &TLSTerminate{CA: ca, Roots: srvRoots}}, func(l *limits) { l.maxHeader = 4 << 10 })
	open := func() (*tls.Conn, *bufio.Reader) {
		c, br := connectTo(t, e.httpAddr, target)
		roots := x509.NewCertPool()
		roots.AddCert(ca.Leaf)
		tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		_ = br
		return tc, bufio.NewReader(tc)
	}
	for _, head := range []string{
		"GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET https://evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET http://" + target + "/x HTTP/1.1\r\nHost: " + target + "\r\n\r\n",
		"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: " + target + "\r\nX-Big: " + strings.Repeat("A", 8<<10) + "\r\n\r\n",
	} {
		tc, br := open()
		io.WriteString(tc, head)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%.40q: %v", head, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode < 400 || strings.Contains(string(b), "token=") {
			t.Errorf("%.40q: got %d %q", head, resp.StatusCode, b)
		}
		tc.Close()
	}
	// The tunnel's own target, by name or implied, goes through.
	tc, br := open()
	io.WriteString(tc, "GET /ok HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("own target: %v %v", resp, err)
	}
	tc.Close()
}

func connectTo(t *testing.T, proxyAddr, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c, br
}
