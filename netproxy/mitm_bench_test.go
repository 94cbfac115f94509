package netproxy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TLS termination against an opaque tunnel, side by side: the cost of a
// new HTTPS connection (the client's handshake, one small GET) and the
// throughput of a large download over a kept-alive connection.
//
//	go test -run XXX -bench 'HTTPS' -benchtime 2s ./netproxy

const bigBody = 8 << 20

func httpsBenchEnv(b *testing.B, terminate, keepAlive bool) (*http.Client, string) {
	big := strings.Repeat("x", bigBody)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	b.Cleanup(srv.Close)
	srvRoots := x509.NewCertPool()
	srvRoots.AddCert(srv.Certificate())
	cfg := Config{Allowed: []string{strings.TrimPrefix(srv.URL, "https://")}}
	clientRoots := srvRoots
	if terminate {
		ca, err := NewCA()
		if err != nil {
			b.Fatal(err)
		}
		cfg.TLS = &TLSTerminate{CA: ca, Roots: srvRoots}
		clientRoots = x509.NewCertPool()
		clientRoots.AddCert(ca.Leaf)
	}
	e := startProxy(b, cfg, nil)
	pu, _ := url.Parse("http://" + e.httpAddr)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: clientRoots}, DisableKeepAlives: !keepAlive}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, srv.URL
}

func benchNewConn(b *testing.B, terminate bool) {
	c, base := httpsBenchEnv(b, terminate, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get(base + "/small")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func benchDownload(b *testing.B, terminate bool) {
	c, base := httpsBenchEnv(b, terminate, true)
	b.SetBytes(bigBody)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get(base + "/big")
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, resp.Body); n != bigBody {
			b.Fatalf("got %d bytes", n)
		}
		resp.Body.Close()
	}
}

func BenchmarkHTTPSNewConnTunnel(b *testing.B)     { benchNewConn(b, false) }
func BenchmarkHTTPSNewConnTerminated(b *testing.B) { benchNewConn(b, true) }
func BenchmarkHTTPSDownloadTunnel(b *testing.B)    { benchDownload(b, false) }
func BenchmarkHTTPSDownloadTerminated(b *testing.B) {
	benchDownload(b, true)
}
