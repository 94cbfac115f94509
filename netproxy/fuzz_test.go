package netproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var fuzzAllow = []string{"*.allowed.test", "example.com", "127.0.0.1", "[::1]:8080", "localhost", "10.0.0.5:5432"}
var fuzzDeny = []string{"*.bad.allowed.test", "evil.allowed.test", "10.0.0.5", "example.com:25", "[::1]:8080"}

// naiveEntry is an independent, simple reading of a list entry, used as
// the oracle for the indexed matcher.
type naiveEntry struct {
	wildcard bool
	host     string
	port     int
}

func naiveParse(t *testing.T, e string) naiveEntry {
	p, err := parsePattern(e, true)
	if err != nil {
		t.Fatalf("fixture %q: %v", e, err)
	}
	return naiveEntry{p.wildcard, p.host.name, p.port}
}

func naiveCovers(e naiveEntry, host string, isIP bool, port int) bool {
	if e.port != 0 && e.port != port {
		return false
	}
	if e.wildcard {
		return !isIP && strings.HasSuffix(host, "."+e.host)
	}
	return host == e.host
}

func FuzzMatch(f *testing.F) {
	for _, s := range []string{"a.allowed.test", "EVIL.allowed.test.", "x.bad.allowed.test", "127.1", "0x7f.1",
		"[::1]", "::ffff:10.0.0.5", "012.0.0.5", "localhost.", "example.com", "allowed.test", "a\x00.allowed.test",
		"2130706433", "1.2.3.4.5", "xn--80ak6aa92e.com", "[::ffff:127.0.0.1]"} {
		f.Add(s, uint16(443))
		f.Add(s, uint16(8080))
	}
	p, err := New(Config{Allowed: fuzzAllow, Denied: fuzzDeny})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string, port16 uint16) {
		port := int(port16)
		d := p.Decide(host, port)
		c, err := Canonicalize(host)
		if err != nil {
			if d.Allowed || d.Rule != RuleInvalidHost && d.Rule != RuleProtocol {
				t.Fatalf("invalid host %q decided %+v", host, d)
			}
			return
		}
		if c2, err := Canonicalize(c); err != nil || c2 != c {
			t.Fatalf("Canonicalize not idempotent: %q -> %q -> %q, %v", host, c, c2, err)
		}
		if strings.ContainsFunc(c, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			t.Fatalf("canonical %q has control or non-ASCII characters", c)
		}
		ch, _ := canon(c)
		if !d.Allowed {
			return
		}
		for _, e := range fuzzDeny {
			if naiveCovers(naiveParse(t, e), ch.name, ch.isIP(), port) {
				t.Fatalf("%q:%d allowed by %q but deny entry %q covers it", host, port, d.Rule, e)
			}
		}
		ok := false
		for _, e := range fuzzAllow {
			n := naiveParse(t, e)
			if ch.isIP() && n.wildcard {
				continue // IP literals never match wildcards
			}
			ok = ok || naiveCovers(n, ch.name, ch.isIP(), port)
		}
		if !ok {
			t.Fatalf("%q:%d allowed by %q, but no allow entry covers it", host, port, d.Rule)
		}
	})
}

// FuzzPattern: validation never panics, and a valid exact deny entry
// denies its own host.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "[::1]:80", "*", "*.com", "https://x", "a..b",
		"127.1:22", "[::ffff:1.2.3.4]", "x.y:0", "*.[::1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		_ = ValidatePattern(entry, false)
		if ValidatePattern(entry, true) != nil {
			return
		}
		pat, _ := parsePattern(entry, true)
		p, err := New(Config{Allowed: fuzzAllow, Denied: []string{entry}})
		if err != nil {
			t.Fatalf("New with a valid deny entry %q: %v", entry, err)
		}
		port := pat.port
		if port == 0 {
			port = 443
		}
		h := pat.host.name
		if pat.wildcard {
			h = "sub." + h
		}
		if pat.any {
			h = "example.com"
		}
		if len(h) > 253 {
			return
		}
		if d := p.Decide(h, port); d.Allowed {
			t.Fatalf("deny entry %q does not deny %q:%d: %+v", entry, h, port, d)
		}
	})
}

// fuzzProxy is a proxy whose only dial target is an in-memory echo
// (nothing is sent on any network) and which records what it looked up
// and dialled.
type fuzzProxy struct {
	*env
	mu      sync.Mutex
	lookups []string
	bad     []string
	panics  atomic.Int32
}

func (fp *fuzzProxy) LookupIP(ctx context.Context, network, host string) ([]net.IP, error) {
	fp.mu.Lock()
	fp.lookups = append(fp.lookups, host)
	fp.mu.Unlock()
	switch host {
	case "a.allowed.test", "b.allowed.test", "example.com":
		return []net.IP{net.ParseIP("127.0.0.1")}, nil
	case "meta.allowed.test":
		return []net.IP{net.ParseIP("169.254.169.254")}, nil
	}
	return nil, errors.New("fuzz resolver: unknown name")
}

func (fp *fuzzProxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != "127.0.0.1:8080" && addr != "[::1]:8080" {
		fp.mu.Lock()
		fp.bad = append(fp.bad, addr)
		fp.mu.Unlock()
		return nil, errors.New("fuzz: unexpected dial")
	}
	a, b := net.Pipe()
	go func() {
		defer b.Close()
		_ = b.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.Copy(b, b)
	}()
	return a, nil
}

func newFuzzProxy(f *testing.F) *fuzzProxy {
	fp := &fuzzProxy{}
	fp.env = startProxy(f, Config{
		Allowed:  []string{"*.allowed.test", "example.com", "127.0.0.1:8080", "[::1]:8080"},
		Denied:   []string{"b.allowed.test"},
		Resolver: fp,
		Dial:     fp.dial,
		OnDeny:   func(Denial) {},
	}, func(l *limits) { l.readHeader = 500 * time.Millisecond })
	fp.p.onPanic = func(any) { fp.panics.Add(1) }
	return fp
}

// check fails on a panic, a dial to anything but the vetted loopback
// address, or a lookup of a name the lists do not allow.
func (fp *fuzzProxy) check(t *testing.T, in []byte) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if n := fp.panics.Load(); n != 0 {
		t.Fatalf("proxy panicked on %q", in)
	}
	if len(fp.bad) != 0 {
		t.Fatalf("proxy dialled %v for %q", fp.bad, in)
	}
	for _, l := range fp.lookups {
		if d := fp.p.Decide(l, 8080); !d.Allowed {
			t.Fatalf("proxy looked up %q (%+v) for %q", l, d, in)
		}
	}
	fp.lookups = fp.lookups[:0]
}

func exchange(addr string, in []byte) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	_, _ = c.Write(in)
	_ = c.(*net.TCPConn).CloseWrite()
	_, _ = io.Copy(io.Discard, c)
}

func FuzzHTTPRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT a.allowed.test:8080 HTTP/1.1\r\nHost: a.allowed.test:8080\r\n\r\nhello",
		"CONNECT 127.0.0.1:8080 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n",
		"CONNECT meta.allowed.test:80 HTTP/1.1\r\n\r\n",
		"CONNECT b.allowed.test:8080 HTTP/1.1\r\n\r\n",
		"CONNECT a.allowed.test:8080 HTTP/1.1\r\nHost: b.allowed.test:8080\r\n\r\n",
		"GET http://a.allowed.test:8080/x HTTP/1.1\r\nHost: a.allowed.test:8080\r\n\r\n",
		"GET http://example.com:8080/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		"POST http://a.allowed.test:8080/ HTTP/1.1\r\nHost: a.allowed.test:8080\r\nContent-Length: 5\r\n\r\nhello",
		"GET / HTTP/1.1\r\nHost: a.allowed.test\r\n\r\n",
		"GET http://127.1:8080/ HTTP/1.0\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	fp := newFuzzProxy(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		exchange(fp.httpAddr, in)
		fp.check(t, in)
	})
}

func FuzzSOCKSRequest(f *testing.F) {
	for _, s := range []string{
		"\x05\x01\x00\x05\x01\x00\x03\x0ea.allowed.test\x1f\x90hello",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x1f\x90",
		"\x05\x01\x00\x05\x01\x00\x03\x11meta.allowed.test\x00\x50",
		"\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x1f\x90",
		"\x05\x01\x00\x05\x03\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x1f\x90",
		"\x05\x02\x02\x00\x05\x01\x00\x03\x00\x00\x50",
	} {
		f.Add([]byte(s))
	}
	fp := newFuzzProxy(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		exchange(fp.socksAddr, in)
		fp.check(t, in)
	})
}
