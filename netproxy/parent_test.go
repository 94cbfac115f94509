package netproxy

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sbx-sh/sbx/internal/testserve"
)

// fakeParent is a parent proxy on 127.0.0.1: CONNECT to any host is
// joined to the echo server at echoPort; a plain request is answered by
// the parent itself. It records each request line and its
// Proxy-Authorization.
type fakeParent struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func (f *fakeParent) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func startParent(t *testing.T, echoPort int) *fakeParent {
	return startParentOn(t, listen(t, "127.0.0.1:0"), echoPort)
}

func startParentOn(t *testing.T, l net.Listener, echoPort int) *fakeParent {
	f := &fakeParent{addr: l.Addr().String()}
	testserve.Requests(t, l, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, req.Method+" "+req.RequestURI+" auth="+req.Header.Get("Proxy-Authorization"))
		f.mu.Unlock()
		if req.Method != http.MethodConnect {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nvia parent")
			return
		}
		up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", echoPort))
		if err != nil {
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
			return
		}
		defer up.Close()
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go io.Copy(up, br)
		io.Copy(c, up)
	})
	return f
}

func TestParentProxy(t *testing.T) {
	port := echoServer(t)
	parent := startParent(t, port)
	u, err := ParseParentURL("HTTPS_PROXY", "http://user:s3cret@"+parent.addr)
	if err != nil {
		t.Fatal(err)
	}
	// remote.test is unknown to the fake resolver: only the parent can
	// reach it. direct.test bypasses the parent (NoProxy) and resolves.
	e := startProxy(t, Config{
		Allowed: []string{"remote.test", "direct.test", "127.0.0.1"},
		Denied:  []string{"denied.test"},
		Parent:  &Parent{HTTP: u, HTTPS: u, NoProxy: []string{".direct.test", "direct.test"}},
	}, nil)
	e.res.answers["direct.test"] = [][]string{{"127.0.0.1"}}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:s3cret"))

	// A CONNECT tunnel through the parent, with Basic proxy auth.
	c, resp, br := connectVia(t, e.httpAddr, fmt.Sprintf("remote.test:%d", port), "")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT via parent: %s", resp.Status)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("tunnel via parent: %q %v", buf, err)
	}
	c.Close()
	// Plain HTTP goes to the parent in absolute form.
	pu, _ := url.Parse("http://" + e.httpAddr)
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	r, err := hc.Get("http://remote.test/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != "via parent" {
		t.Fatalf("plain HTTP via parent: %q", b)
	}
	// NoProxy: direct, not through the parent.
	c, resp, _ = connectVia(t, e.httpAddr, fmt.Sprintf("direct.test:%d", port), "")
	if resp.StatusCode != 200 {
		t.Fatalf("direct: %s", resp.Status)
	}
	c.Close()
	// A denied host never reaches the parent.
	c, resp, _ = connectVia(t, e.httpAddr, "denied.test:443", "")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("denied: %s", resp.Status)
	}
	c.Close()
	got := strings.Join(parent.log(), "\n")
	want := fmt.Sprintf("CONNECT remote.test:%d auth=%s\nGET http://remote.test/x auth=%s", port, auth, auth)
	if got != want {
		t.Fatalf("the parent saw:\n%s\nwant:\n%s", got, want)
	}
	if e.res.count("remote.test") != 0 {
		t.Fatal("sbx resolved a name the parent should resolve")
	}
}

func TestNoProxyMatch(t *testing.T) {
	entries := []string{"example.com", ".sub.org", "10.0.0.0/8", "::1", "host.test:8080"}
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"example.com", 443, true}, {"a.example.com", 443, true}, {"badexample.com", 443, false},
		{"sub.org", 80, false}, {"x.sub.org", 80, true}, {"10.1.2.3", 80, true}, {"11.1.2.3", 80, false},
		{"::1", 80, true}, {"host.test", 8080, true}, {"host.test", 80, false},
	} {
		if got := noProxy(entries, c.host, c.port); got != c.want {
			t.Errorf("noProxy(%s:%d) = %v", c.host, c.port, got)
		}
	}
	if !noProxy([]string{"*"}, "anything", 1) {
		t.Error("* should bypass everything")
	}
	for _, bad := range []string{"https://p:1", "socks5://p:1", "http://p:1/path", "http://"} {
		if _, err := ParseParentURL("k", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseParentURL("k", "http://u:pw@p:1"); err != nil {
		t.Error(err)
	} else if _, err := ParseParentURL("k", "ftp://u:topsecret@p:1"); err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("the password leaked into the error: %v", err)
	}
}

// TestMITMUpstream: srt's network.mitmProxy. Its domains go to the proxy
// on the Unix socket (tunnels and plain HTTP), after sbx's lists allowed
// them; other allowed hosts go their usual way.
func TestMITMUpstream(t *testing.T) {
	port := echoServer(t)
	sock := filepath.Join(t.TempDir(), "mitm.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	mitm := startParentOn(t, ul, port)
	e := startProxy(t, Config{
		Allowed: []string{"*.corp.test", "other.test", "127.0.0.1"},
		Denied:  []string{"secret.corp.test"},
		MITM:    &MITMUpstream{SocketPath: sock, Domains: []string{"*.corp.test"}},
	}, nil)
	e.res.answers["other.test"] = [][]string{{"127.0.0.1"}}
	c, resp, br := connectVia(t, e.httpAddr, fmt.Sprintf("api.corp.test:%d", port), "")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT via the MITM proxy: %s", resp.Status)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("tunnel: %q %v", buf, err)
	}
	c.Close()
	pu, _ := url.Parse("http://" + e.httpAddr)
	r, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}).Get("http://www.corp.test/p")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != "via parent" {
		t.Fatalf("plain HTTP: %q", b)
	}
	c, resp, _ = connectVia(t, e.httpAddr, fmt.Sprintf("other.test:%d", port), "")
	if resp.StatusCode != 200 {
		t.Fatalf("other.test: %s", resp.Status)
	}
	c.Close()
	c, resp, _ = connectVia(t, e.httpAddr, "secret.corp.test:443", "")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a denied MITM domain: %s", resp.Status)
	}
	c.Close()
	got := strings.Join(mitm.log(), "\n")
	if want := fmt.Sprintf("CONNECT api.corp.test:%d auth=\nGET http://www.corp.test/p auth=", port); got != want {
		t.Fatalf("the MITM proxy saw:\n%s\nwant\n%s", got, want)
	}
}

// TestParentKeepsDeniedAddresses: with network.deniedResolvedAddresses
// set, a name the parent would resolve is resolved by sbx too and
// refused when it reaches a denied address, or when it cannot be
// resolved at all (the denial could not be checked); without the list,
// the parent resolves alone, as TestParentProxy shows.
func TestParentKeepsDeniedAddresses(t *testing.T) {
	port := echoServer(t)
	parent := startParent(t, port)
	u, err := ParseParentURL("HTTPS_PROXY", "http://"+parent.addr)
	if err != nil {
		t.Fatal(err)
	}
	e := startProxy(t, Config{
		Allowed:        []string{"inside.test", "outside.test", "unknown.test", "127.0.0.1"},
		DeniedResolved: []string{"203.0.113.0/24", "127.0.0.0/8"},
		Parent:         &Parent{HTTP: u, HTTPS: u},
	}, nil)
	e.res.answers["inside.test"] = [][]string{{"203.0.113.7"}}
	e.res.answers["outside.test"] = [][]string{{"198.51.100.7"}}
	for _, c := range []struct {
		target string
		want   int
	}{
		{"inside.test:443", http.StatusForbidden},
		{"unknown.test:443", http.StatusForbidden},
		{"127.0.0.1:443", http.StatusForbidden},
		{fmt.Sprintf("outside.test:%d", port), http.StatusOK},
	} {
		conn, resp, _ := connectVia(t, e.httpAddr, c.target, "")
		conn.Close()
		if resp.StatusCode != c.want {
			t.Errorf("CONNECT %s: %s, want %d", c.target, resp.Status, c.want)
		}
	}
	if got := strings.Join(parent.log(), "\n"); got != fmt.Sprintf("CONNECT outside.test:%d auth=", port) {
		t.Fatalf("the parent saw:\n%s", got)
	}
}
