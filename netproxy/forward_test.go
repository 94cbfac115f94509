package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/internal/testserve"
)

// rawServer is an upstream that reads each request head, sends it on the
// returned channel and hands the connection to serve.
func rawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader, req *http.Request)) (int, chan *http.Request) {
	t.Helper()
	l := listen(t, "127.0.0.1:0")
	heads := make(chan *http.Request, 8)
	testserve.Requests(t, l, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		heads <- req
		serve(c, br, req)
	})
	return l.Addr().(*net.TCPAddr).Port, heads
}

// head is the next request the rawServer read.
func head(t *testing.T, heads chan *http.Request) *http.Request {
	t.Helper()
	select {
	case r := <-heads:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the upstream server")
		return nil
	}
}

func replyWith(resp string) func(net.Conn, *bufio.Reader, *http.Request) {
	return func(c net.Conn, _ *bufio.Reader, _ *http.Request) { _, _ = io.WriteString(c, resp) }
}

// The request goes upstream as the client sent it, less the hop-by-hop
// and Proxy-* headers: no X-Forwarded-For or User-Agent is added, the
// client's own forwarding headers, Accept-Encoding and query are kept.
// The answer loses its hop-by-hop headers, says Connection: close, and
// keeps its encoded body; no Content-Type is invented.
func TestPlainHTTPHeadersPassedAsSent(t *testing.T) {
	port, heads := rawServer(t, func(c net.Conn, _ *bufio.Reader, req *http.Request) {
		if req.URL.Path == "/untyped" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n<html>")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Bar\r\nX-Bar: 1\r\nKeep-Alive: timeout=5\r\n"+
			"Proxy-Authenticate: Basic\r\nUpgrade: foo\r\nX-Up: yes\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc")
	})
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/p?a=1;b=2&c=%%zz HTTP/1.1\r\nHost: allowed.test:%d\r\n"+
		"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nConnection: X-Hop, keep-alive\r\nX-Hop: 1\r\nKeep-Alive: 300\r\n"+
		"X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Host: front.example\r\nX-Forwarded-Proto: https\r\nForwarded: for=203.0.113.7\r\n"+
		"Accept-Encoding: gzip, br\r\nX-Custom: v\r\n\r\n", port, port), 5*time.Second)
	req := head(t, heads)
	if req.RequestURI != "/p?a=1;b=2&c=%zz" {
		t.Errorf("request target %q", req.RequestURI)
	}
	for k, want := range map[string]string{
		"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Host": "front.example", "X-Forwarded-Proto": "https",
		"Forwarded": "for=203.0.113.7", "Accept-Encoding": "gzip, br", "X-Custom": "v", "Connection": "close",
	} {
		if got := req.Header.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("upstream %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"Proxy-Connection", "Proxy-Authorization", "X-Hop", "Keep-Alive", "User-Agent"} {
		if v, ok := req.Header[k]; ok {
			t.Errorf("upstream got %s: %q", k, v)
		}
	}
	resp := readResponse(t, raw)
	if resp.StatusCode != 200 || !resp.Close || resp.Header.Get("X-Up") != "yes" || resp.Header.Get("Content-Encoding") != "gzip" || bodyOf(resp) != "abc" {
		t.Errorf("answer %q", raw)
	}
	for _, k := range []string{"X-Bar", "Keep-Alive", "Proxy-Authenticate", "Upgrade", "Content-Type"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("client got %s: %q", k, v)
		}
	}

	// A User-Agent the client did send is passed on; no Accept-Encoding
	// is added when it sent none; an untyped body gets no Content-Type.
	raw = rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/untyped HTTP/1.1\r\nHost: allowed.test:%d\r\nUser-Agent: curl/8\r\n\r\n", port, port), 5*time.Second)
	if req := head(t, heads); req.UserAgent() != "curl/8" || req.Header.Get("Accept-Encoding") != "" {
		t.Errorf("upstream headers %v; answer %q", req.Header, raw)
	}
	if resp := readResponse(t, raw); bodyOf(resp) != "<html>" || resp.Header.Get("Content-Type") != "" {
		t.Errorf("untyped answer %q", raw)
	}
}

// Config.Rewrite runs before forwarding; what it changed is what is sent.
func TestPlainHTTPRewriteIsSent(t *testing.T) {
	port, heads := rawServer(t, replyWith("HTTP/1.1 204 No Content\r\n\r\n"))
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}, Rewrite: func(r *http.Request, host string, _ int, terminated bool) string {
		if host != "allowed.test" || terminated {
			return "unexpected " + host
		}
		r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "SENTINEL", "real", 1))
		r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "SENTINEL", "real", 1)
		return ""
	}}, nil)
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/x?k=SENTINEL HTTP/1.1\r\nHost: allowed.test:%d\r\nAuthorization: Bearer SENTINEL\r\n\r\n", port, port), 5*time.Second)
	req := head(t, heads)
	if req.RequestURI != "/x?k=real" || req.Header.Get("Authorization") != "Bearer real" {
		t.Errorf("upstream saw %s %v; answer %q", req.RequestURI, req.Header, raw)
	}
}

// 1xx answers are relayed, and the final answer still says
// Connection: close (ReverseProxy clears the header map after a 1xx).
func TestPlainHTTPInformational(t *testing.T) {
	port, _ := rawServer(t, replyWith("HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port), 5*time.Second)
	br := bufio.NewReader(strings.NewReader(raw))
	early, err := http.ReadResponse(br, nil)
	if err != nil || early.StatusCode != 103 || early.Header.Get("Link") != "</s.css>" || early.Header.Get("Connection") != "" {
		t.Fatalf("first answer of %q: %v", raw, err)
	}
	final, err := http.ReadResponse(br, nil)
	if err != nil || final.StatusCode != 200 || !final.Close || bodyOf(final) != "ok" {
		t.Fatalf("final answer of %q: %v", raw, err)
	}
}

// Bodies of unknown length (chunked, or delimited by the server's close)
// reach the client as they arrive.
func TestPlainHTTPUnknownLengthStreams(t *testing.T) {
	for _, tc := range []struct{ name, head, first string }{
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n", "6\r\nfirst\n\r\n"},
		{"close-delimited", "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n", "first\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			port, _ := rawServer(t, func(c net.Conn, _ *bufio.Reader, _ *http.Request) {
				io.WriteString(c, tc.head+tc.first)
				<-release
			})
			e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
			c := dialProxy(t, e.httpAddr)
			fmt.Fprintf(c, "GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer while the body stays open: %v", err)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if line != "first\n" {
				t.Fatalf("first line %q, %v: held back", line, err)
			}
		})
	}
}

// A body that breaks off upstream does not look complete to the client;
// what did arrive is passed on.
func TestPlainHTTPTruncatedBody(t *testing.T) {
	for _, tc := range []struct{ name, resp string }{
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"},
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, _ := rawServer(t, replyWith(tc.resp))
			e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
			e.p.onPanic = func(v any) { t.Errorf("the abort was taken for a panic: %v", v) }
			raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port), 5*time.Second)
			resp := readResponse(t, raw)
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(b) != "abc" || err == nil {
				t.Fatalf("got %d %q, %v; want 200, abc, then an error: %q", resp.StatusCode, b, err, raw)
			}
		})
	}
}

// An upstream that cannot be reached is a 502 "sbx proxy: …", not a
// refusal.
func TestPlainHTTPUpstreamFailure(t *testing.T) {
	l := listen(t, "127.0.0.1:0")
	dead := l.Addr().(*net.TCPAddr).Port
	l.Close()
	port, _ := rawServer(t, replyWith("garbage\r\n\r\n"))
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	for p, want := range map[int]string{dead: "connection refused", port: "malformed HTTP response"} {
		raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", p, p), 5*time.Second)
		resp := readResponse(t, raw)
		body := bodyOf(resp)
		if resp.StatusCode != 502 || !resp.Close || resp.Header.Get("X-Proxy-Error") != "" || !strings.HasPrefix(body, "sbx proxy: ") || !strings.Contains(body, want) {
			t.Errorf("port %d: %q", p, raw)
		}
	}
	if d := e.denied.all(); len(d) != 0 {
		t.Errorf("denials %+v", d)
	}
}

// A WebSocket upgrade is relayed both ways, the 101 carries the
// server's Connection: Upgrade (not ours), and when the server ends the
// session the client's connection is closed.
func TestPlainHTTPUpgradeRoundTrip(t *testing.T) {
	port, heads := rawServer(t, func(c net.Conn, br *bufio.Reader, _ *http.Request) {
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nhello")
		buf := make([]byte, 5)
		if _, err := io.ReadFull(br, buf); err == nil {
			io.WriteString(c, "echo:"+string(buf))
		}
	})
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := dialProxy(t, e.httpAddr)
	fmt.Fprintf(c, "GET http://allowed.test:%d/ws HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("%v %v", resp, err)
	}
	if got := resp.Header.Values("Connection"); len(got) != 1 || got[0] != "Upgrade" || resp.Header.Get("Upgrade") != "websocket" {
		t.Errorf("101 head %v", resp.Header)
	}
	req := head(t, heads)
	if req.Header.Get("Connection") != "Upgrade" || req.Header.Get("Upgrade") != "websocket" || req.Header.Get("Sec-Websocket-Key") == "" {
		t.Errorf("upstream upgrade request %v", req.Header)
	}
	io.WriteString(c, "frame")
	rest, err := io.ReadAll(br) // the server ends the session: so must we
	if err != nil || string(rest) != "helloecho:frame" {
		t.Fatalf("relayed %q, %v; want helloecho:frame then EOF", rest, err)
	}
}

// CONNECT, origin-form and non-http requests never get this far; if one
// did, the forwarder refuses it without dialling.
func TestForwardPlainBackstops(t *testing.T) {
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	for _, tc := range []struct {
		method, target string
		status         int
		rule           string
	}{
		{"CONNECT", "allowed.test:80", 400, RuleProtocol},
		{"GET", "/path", 403, RuleOriginForm},
		{"GET", "https://allowed.test/", 403, RuleProtocol},
	} {
		w := httptest.NewRecorder()
		e.p.forwardPlain(w, httptest.NewRequest(tc.method, tc.target, nil))
		if w.Code != tc.status || w.Header().Get("X-Proxy-Error") != "blocked-by-sbx" {
			t.Errorf("%s %s: %d %v %q", tc.method, tc.target, w.Code, w.Header(), w.Body)
		}
		if d := e.denied.all(); len(d) == 0 || d[len(d)-1].Rule != tc.rule {
			t.Errorf("%s %s: denials %+v", tc.method, tc.target, d)
		}
	}
	if got := e.dials.dialed(); len(got) != 0 {
		t.Errorf("dialled %v", got)
	}
}

// Large and unknown-length bodies get a large copy buffer while one of
// bulkBuffers is free; the rest, and small bodies, 32 KiB.
func TestPlainForwardBuffers(t *testing.T) {
	sizeFor := func(cl int64, body io.ReadCloser) int {
		f := &plainForward{w: httptest.NewRecorder()}
		_ = f.response(&http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: cl, Body: body})
		b := f.Get()
		defer f.Put(b)
		return len(b)
	}
	some := io.NopCloser(strings.NewReader("x"))
	for _, tc := range []struct {
		cl   int64
		body io.ReadCloser
		want int
	}{
		{-1, some, bulkBufSize},
		{bulkBodyMin + 1, some, bulkBufSize},
		{bulkBodyMin, some, copyBufSize},
		{100, some, copyBufSize},
		{-1, http.NoBody, copyBufSize},
	} {
		if got := sizeFor(tc.cl, tc.body); got != tc.want {
			t.Errorf("Content-Length %d: buffer %d, want %d", tc.cl, got, tc.want)
		}
	}
	// bulkSlots is the process's: a forward of an earlier test may still
	// be finishing its copy. Wait for it (Put always releases).
	for deadline := time.Now().Add(5 * time.Second); len(bulkSlots) != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := len(bulkSlots); n != 0 {
		t.Fatalf("%d large buffers still taken", n)
	}
	for i := 0; i < bulkBuffers; i++ {
		bulkSlots <- struct{}{}
	}
	if got := sizeFor(-1, some); got != copyBufSize {
		t.Errorf("every large buffer taken: buffer %d, want %d", got, copyBufSize)
	}
	for i := 0; i < bulkBuffers; i++ {
		<-bulkSlots
	}
}

// A 101 the client did not ask for is a 502, and the upstream connection
// is closed.
func TestPlainHTTPUnaskedUpgrade(t *testing.T) {
	closed := make(chan error, 1)
	port, _ := rawServer(t, func(c net.Conn, br *bufio.Reader, _ *http.Request) {
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err := br.ReadByte()
		closed <- err
	})
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port), 5*time.Second)
	if resp := readResponse(t, raw); resp.StatusCode != 502 || !resp.Close || !strings.HasPrefix(bodyOf(resp), "sbx proxy: ") {
		t.Errorf("answer %q", raw)
	}
	if err := <-closed; err != io.EOF {
		t.Errorf("upstream connection after the refused switch: %v, want EOF", err)
	}
}

// A client's Expect: 100-continue is answered by the proxy before it
// forwards anything, and not sent upstream; the body follows and the
// upstream's own 1xx answers still reach the client. (Both net/http's
// automatic 100 and ReverseProxy's 1xx relay wrote the client's buffer
// from different goroutines: a data race under go test -race.)
func TestPlainHTTPExpectContinue(t *testing.T) {
	got := make(chan string, 1)
	port, heads := rawServer(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n")
		b, _ := io.ReadAll(io.LimitReader(br, 5))
		got <- string(b)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := dialProxy(t, e.httpAddr)
	fmt.Fprintf(c, "POST http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	cont, err := http.ReadResponse(br, nil)
	if err != nil || cont.StatusCode != 100 {
		t.Fatalf("first answer: %v %v", cont, err)
	}
	io.WriteString(c, "hello")
	var final *http.Response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("after the body: %v", err)
		}
		if resp.StatusCode == 103 {
			continue
		}
		final = resp
		break
	}
	if final.StatusCode != 200 || bodyOf(final) != "ok" {
		t.Fatalf("final answer %v", final.Status)
	}
	if req := head(t, heads); req.Header.Get("Expect") != "" {
		t.Errorf("upstream got Expect: %q", req.Header.Get("Expect"))
	}
	if b := <-got; b != "hello" {
		t.Errorf("upstream body %q", b)
	}
}

// An upstream that sends 1xx answers without end gets max1xx of them
// relayed, and one more, then the request fails (502): the Transport's
// own limit of five is off while ReverseProxy relays them.
func TestPlainHTTPInformationalFlood(t *testing.T) {
	port, _ := rawServer(t, func(c net.Conn, _ *bufio.Reader, _ *http.Request) {
		for i := 0; i < 1000; i++ {
			if _, err := io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"); err != nil {
				return
			}
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	raw := rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port), 5*time.Second)
	br := bufio.NewReader(strings.NewReader(raw))
	early := 0
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("after %d 1xx answers: %v", early, err)
		}
		if resp.StatusCode == 103 {
			early++
			continue
		}
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("final answer %s after %d 1xx answers", resp.Status, early)
		}
		break
	}
	if early > max1xx+1 {
		t.Fatalf("%d 1xx answers relayed, at most %d", early, max1xx+1)
	}
}
