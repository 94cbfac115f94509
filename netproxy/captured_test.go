package netproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// captured returns the proxy side of a loopback connection handed to
// ServeCaptured as hostname:port, and the client side.
func captured(t *testing.T, e *env, hostname string, port int) (client net.Conn, done chan struct{}) {
	t.Helper()
	l := listen(t, "127.0.0.1:0")
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		e.p.ServeCaptured(srv, hostname, port)
	}()
	t.Cleanup(func() { client.Close(); <-done })
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	return client, done
}

// recordServer accepts connections on loopback, greets each with
// "hello\n" (a server that speaks first) and records what it read.
func recordServer(t *testing.T) (port int, got func() string) {
	l := listen(t, "127.0.0.1:0")
	var mu sync.Mutex
	var b strings.Builder
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, "hello\n")
				buf := make([]byte, 4096)
				for {
					_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
					n, err := c.Read(buf)
					mu.Lock()
					b.Write(buf[:n])
					mu.Unlock()
					if err != nil {
						return
					}
					_, _ = c.Write(buf[:n])
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port, func() string { mu.Lock(); defer mu.Unlock(); return b.String() }
}

// TestServeCapturedAllowed: a captured connection to an allowed name is
// vetted as a CONNECT (the loopback target needs its literal entry) and
// relayed both ways, with the server speaking first.
func TestServeCapturedAllowed(t *testing.T) {
	port, got := recordServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", fmt.Sprintf("127.0.0.1:%d", port)}}, nil)
	defer e.close()
	c, _ := captured(t, e, "allowed.test", port)
	buf := make([]byte, 6)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello\n" {
		t.Fatalf("greeting %q, %v", buf, err)
	}
	_, _ = io.WriteString(c, "ping")
	if _, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("echo %q, %v", buf[:4], err)
	}
	if got() != "ping" {
		t.Errorf("server read %q", got())
	}
	if d := e.denied.all(); len(d) != 0 {
		t.Errorf("denials: %+v", d)
	}
	if dl := e.dials.dialed(); len(dl) != 1 || dl[0] != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Errorf("dialled %v", dl)
	}
}

// TestServeCapturedRefusals: a name the policy does not allow, and a
// loopback address the guard refuses, are refused with one record each
// and nothing dialled.
func TestServeCapturedRefusals(t *testing.T) {
	port, _ := recordServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test"}, Denied: []string{"other.test"}}, nil)
	defer e.close()
	for _, tt := range []struct{ host, rule string }{
		{"evil.test", RuleDefault},
		{"other.test", "other.test"},
		{"allowed.test", RuleAddressGuard}, // resolves to 127.0.0.1, port not listed
		{"127.0.0.2", RuleDefault},         // a literal nobody handed out
	} {
		c, done := captured(t, e, tt.host, port)
		<-done
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("%s: read %d, %v after refusal", tt.host, n, err)
		}
	}
	d := e.denied.all()
	if len(d) != 4 {
		t.Fatalf("denials: %+v", d)
	}
	for i, want := range []string{RuleDefault, "other.test", RuleAddressGuard, RuleDefault} {
		if d[i].Rule != want || d[i].Proto != ProtoCapture || d[i].Port != port {
			t.Errorf("denial %d: %+v, want rule %s", i, d[i], want)
		}
	}
	if dl := e.dials.dialed(); len(dl) != 0 {
		t.Errorf("dialled %v", dl)
	}
}

// TestServeCapturedSNI: a ClientHello naming another host than the one
// resolved is refused and recorded, and none of its bytes reach the
// upstream; the matching name and no name at all go through.
func TestServeCapturedSNI(t *testing.T) {
	port, got := recordServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "other.test", fmt.Sprintf("127.0.0.1:%d", port)}}, nil)
	defer e.close()
	hello := func(sni string) (refused bool) {
		c, done := captured(t, e, "allowed.test", port)
		go func() {
			tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			_ = tc.Handshake() // the server speaks no TLS; only the hello matters
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.Close()
		}
		return len(e.denied.all()) > 0
	}
	before := len(got())
	if !hello("other.test") {
		t.Fatal("SNI other.test on a connection to allowed.test was not refused")
	}
	d := e.denied.all()
	if len(d) != 1 || d[0].Rule != RuleSNIMismatch || d[0].Host != "allowed.test" || !strings.Contains(d[0].Reason, "other.test") {
		t.Errorf("denials: %+v", d)
	}
	time.Sleep(50 * time.Millisecond)
	if len(got()) != before {
		t.Errorf("upstream received %d bytes of a refused hello", len(got())-before)
	}
	e.denied.mu.Lock()
	e.denied.list = nil
	e.denied.mu.Unlock()
	// The client waits for a ServerHello the plain server never sends;
	// the relay ends when the server's read deadline or the cleanup closes.
	for _, sni := range []string{"allowed.test", "ALLOWED.test."} {
		c, _ := captured(t, e, "allowed.test", port)
		go func() { _ = tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake() }()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(got()[before:], "\x16\x03") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(got()[before:], "\x16\x03") {
			t.Errorf("SNI %s: the hello did not reach the upstream", sni)
		}
		before = len(got())
		c.Close()
	}
	if d := e.denied.all(); len(d) != 0 {
		t.Errorf("denials for matching SNI: %+v", d)
	}
}

// TestDecideName: the resolver's question, a name at any port.
func TestDecideName(t *testing.T) {
	p, err := New(Config{Allowed: []string{"a.test:443", "*.w.test", "both.test"}, Denied: []string{"both.test:80", "d.a.test", "*.dw.test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		ok   bool
		rule string
	}{
		{"a.test", true, "a.test:443"}, // allowed on one port: it resolves
		{"x.w.test", true, "*.w.test"},
		{"both.test", true, "both.test"}, // denied on one port only: it resolves
		{"d.a.test", false, "d.a.test"},
		{"z.dw.test", false, "*.dw.test"},
		{"w.test", false, RuleDefault},
		{"127.0.0.1", false, RuleInvalidHost},
		{"bad name", false, RuleInvalidHost},
	} {
		d := p.DecideName(tt.name)
		if d.Allowed != tt.ok || d.Rule != tt.rule {
			t.Errorf("DecideName(%q) = %+v, want %v by %s", tt.name, d, tt.ok, tt.rule)
		}
	}
	p.ask = func(ctx context.Context, h string, port int) bool { return false }
	if d := p.DecideName("w.test"); !d.Allowed || d.Rule != "ask-later" {
		t.Errorf("with Ask: %+v", d)
	}
	if d := p.DecideName("d.a.test"); d.Allowed {
		t.Errorf("with Ask, a denied name: %+v", d)
	}
}

// TestServeCapturedTerminateOnly443: with TLS termination on, a captured
// connection to another port than 443 is relayed opaquely, so a server
// that speaks first (SSH, SMTP, a database) still works.
func TestServeCapturedTerminateOnly443(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	port, got := recordServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", fmt.Sprintf("127.0.0.1:%d", port)}, TLS: &TLSTerminate{CA: ca}}, nil)
	defer e.close()
	c, _ := captured(t, e, "allowed.test", port)
	buf := make([]byte, 6)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello\n" {
		t.Fatalf("greeting %q, %v", buf, err)
	}
	_, _ = io.WriteString(c, "SSH-2.0-x\r\n")
	if _, err := io.ReadFull(c, make([]byte, 11)); err != nil || got() != "SSH-2.0-x\r\n" {
		t.Fatalf("server read %q, %v", got(), err)
	}
}

// earlyDialed vets allowed.test at a loopback listener's port and
// returns the vetted destination and the upstream side of the connection
// VetCaptured dialled for it at once (closed when the test ends).
func earlyDialed(t *testing.T) (*env, *Captured, net.Conn) {
	t.Helper()
	l := listen(t, "127.0.0.1:0")
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	e := startProxy(t, Config{Allowed: []string{"allowed.test", fmt.Sprintf("127.0.0.1:%d", port)}}, nil)
	t.Cleanup(e.close)
	vetted, err := e.p.VetCaptured("allowed.test", port)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	up, err := l.Accept()
	if err != nil {
		t.Fatalf("no early dial: %v", err)
	}
	t.Cleanup(func() { up.Close() })
	_ = up.SetReadDeadline(time.Now().Add(10 * time.Second))
	return e, vetted, up
}

// TestVetCapturedAbandon: VetCaptured dials the upstream at once, so that
// the connect overlaps the client's handshake; a connection whose
// handshake then fails is abandoned, and the upstream must see it close
// rather than hold it open for the rest of the run.
func TestVetCapturedAbandon(t *testing.T) {
	_, vetted, up := earlyDialed(t)
	vetted.Abandon()
	if n, err := up.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("abandoned upstream: read %d, %v; want EOF", n, err)
	}
	(*Captured)(nil).Abandon() // a refused destination has none
}

// TestServeVettedRefusedClientAbandons: a captured connection the proxy
// cannot take (here: at its client limit) is closed, and so is the
// upstream VetCaptured dialled for it, at once rather than when the run
// ends.
func TestServeVettedRefusedClientAbandons(t *testing.T) {
	e, vetted, up := earlyDialed(t)
	e.p.mu.Lock()
	full := e.p.nclients
	e.p.nclients = e.p.lim.maxConns
	e.p.mu.Unlock()
	defer func() { e.p.mu.Lock(); e.p.nclients = full; e.p.mu.Unlock() }()
	client, srv := net.Pipe()
	defer client.Close()
	e.p.ServeVetted(srv, vetted)
	if n, err := up.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("upstream of a refused client: read %d, %v; want EOF", n, err)
	}
}
