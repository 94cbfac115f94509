//go:build linux

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sbx-sh/sbx/internal/testserve"
)

// TestParentProxyFromEnvironment: with HTTP_PROXY in sbx's own
// environment, allowed plain-HTTP traffic leaves through that parent
// (Basic auth from its URL); the parent's credentials never enter the
// sandbox; a denied host never reaches it.
func TestParentProxyFromEnvironment(t *testing.T) {
	curl := needTool(t, "curl")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	testserve.Requests(t, l, func(c net.Conn, _ *bufio.Reader, req *http.Request) {
		mu.Lock()
		seen = append(seen, req.Method+" "+req.RequestURI+" "+req.Header.Get("Proxy-Authorization"))
		mu.Unlock()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nvia parent")
	})
	env := append(hermeticEnv(), "HTTP_PROXY=http://corp:pa55word@"+l.Addr().String())
	r := sbx(t, runOpts{env: env}, "--allow-domain", "remote.test", "--deny-domain", "denied.test", "--", "/bin/sh", "-c",
		curl+` -sS http://remote.test/x; echo; `+curl+` -s -o /dev/null -w '%{http_code}\n' http://denied.test/; env | grep -i pa55word || echo clean`)
	if r.code != 0 || !strings.Contains(r.stdout, "via parent") || !strings.Contains(r.stdout, "403") || !strings.Contains(r.stdout, "clean") {
		t.Fatalf("%s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET http://remote.test/x Basic Y29ycDpwYTU1d29yZA==" {
		t.Fatalf("the parent saw %q", seen)
	}
	// A parent URL sbx cannot use is refused, its password not shown.
	r = sbx(t, runOpts{env: append(hermeticEnv(), "HTTPS_PROXY=socks5://u:topsecret@127.0.0.1:1")}, "--allow-domain", "remote.test", "--", "true")
	if r.code != 125 || strings.Contains(r.stderr, "topsecret") || !strings.Contains(r.stderr, "HTTPS_PROXY") {
		t.Fatalf("bad parent: %s", r)
	}
}

// TestMITMProxySetting: network.mitmProxy sends its domains to the proxy
// on the Unix socket; a socket that is not there is exit 125.
func TestMITMProxySetting(t *testing.T) {
	curl := needTool(t, "curl")
	d := t.TempDir()
	sock := filepath.Join(d, "mitm.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	testserve.Requests(t, l, func(c net.Conn, _ *bufio.Reader, _ *http.Request) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nvia mitm")
	})
	settings := filepath.Join(d, "s.json")
	writeFile(t, settings, `{"network": {"allowedDomains": ["*.corp.test"], "mitmProxy": {"socketPath": "`+sock+`", "domains": ["*.corp.test"]}}, "filesystem": {}}`)
	r := sbx(t, runOpts{}, "--settings", settings, "--", curl, "-sS", "http://www.corp.test/x")
	if r.code != 0 || r.stdout != "via mitm" {
		t.Fatalf("%s", r)
	}
	writeFile(t, settings, `{"network": {"allowedDomains": ["*.corp.test"], "mitmProxy": {"socketPath": "`+filepath.Join(d, "none.sock")+`", "domains": ["*.corp.test"]}}, "filesystem": {}}`)
	wantRefusedIn(t, d, "mitmProxy", "--settings", settings)
}
