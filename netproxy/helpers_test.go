package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeResolver answers from a table and never touches real DNS. A name
// with several answers returns them on successive calls (the last one
// repeats), which is how the tests rebind DNS.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]string
	calls   map[string]int
}

func newFakeResolver(table map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]string{}, calls: map[string]int{}}
	for name, ips := range table {
		r.answers[name] = [][]string{ips}
	}
	return r
}

// sequence makes name answer differently on each call.
func (r *fakeResolver) sequence(name string, answers ...[]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[name] = answers
}

func (r *fakeResolver) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

func (r *fakeResolver) LookupIP(ctx context.Context, network, host string) ([]net.IP, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.calls[host]
	r.calls[host]++
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (fake resolver)", Name: host, IsNotFound: true}
	}
	ans := seq[min(n, len(seq)-1)]
	out := make([]net.IP, 0, len(ans))
	for _, s := range ans {
		out = append(out, net.ParseIP(s))
	}
	return out, nil
}

// testResolver maps the test names used throughout.
func testResolver() *fakeResolver {
	return newFakeResolver(map[string][]string{
		"allowed.test":      {"127.0.0.1"},
		"sub.allowed.test":  {"127.0.0.1"},
		"other.test":        {"127.0.0.1"},
		"metadata.test":     {"169.254.169.254"},
		"metadata6.test":    {"fd00:ec2::254"},
		"private.test":      {"10.1.2.3"},
		"loopback.test":     {"127.0.0.1"},
		"v6.test":           {"::1"},
		"mapped.test":       {"::ffff:127.0.0.1"},
		"public.test":       {"203.0.113.7"},
		"mixed.test":        {"169.254.169.254", "203.0.113.8"},
		"cgnat.test":        {"100.100.100.200"},
		"unspecified.test":  {"0.0.0.0"},
		"multicast.test":    {"224.0.0.1"},
		"azure.test":        {"168.63.129.16"},
		"nat64.test":        {"64:ff9b::a9fe:a9fe"},
		"ula.test":          {"fd12::1"},
		"linklocal6.test":   {"fe80::1"},
		"rfc1918b.test":     {"172.20.0.1"},
		"rfc1918c.test":     {"192.168.1.1"},
		"publicv6.test":     {"2001:db8::1"},
		"deniedcidr.test":   {"203.0.113.99"},
		"denyliteral.test":  {"198.51.100.5"},
		"empty.test":        {},
		"many.allowed.test": {"127.0.0.1", "127.0.0.1"},
	})
}

// dialRecorder is a Config.Dial that records every address and refuses
// (failing the test) anything that is not loopback: tests never send a
// packet anywhere else.
type dialRecorder struct {
	t     testing.TB
	mu    sync.Mutex
	addrs []string
}

func (d *dialRecorder) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		d.t.Errorf("proxy dialled %q, not an IP:port", addr)
		return nil, err
	}
	if !ap.Addr().IsLoopback() {
		d.t.Errorf("proxy dialled non-loopback %s", addr)
		return nil, errors.New("test refuses non-loopback dial")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *dialRecorder) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// denials collects OnDeny reports.
type denials struct {
	mu   sync.Mutex
	list []Denial
}

func (d *denials) add(x Denial) {
	d.mu.Lock()
	d.list = append(d.list, x)
	d.mu.Unlock()
}

func (d *denials) all() []Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Denial(nil), d.list...)
}

// env is a running proxy with HTTP and SOCKS listeners on loopback.
type env struct {
	p         *Proxy
	httpAddr  string
	socksAddr string
	dials     *dialRecorder
	res       *fakeResolver
	denied    *denials
	done      chan error
	once      sync.Once
	t         testing.TB
}

// startProxy starts a proxy with cfg (Resolver, Dial and OnDeny filled in
// when nil); tune may shorten limits before serving.
func startProxy(t testing.TB, cfg Config, tune func(*limits)) *env {
	t.Helper()
	e := &env{t: t, dials: &dialRecorder{t: t}, denied: &denials{}, done: make(chan error, 2)}
	if cfg.Resolver == nil {
		e.res = testResolver()
		cfg.Resolver = e.res
	}
	if cfg.Dial == nil {
		cfg.Dial = e.dials.Dial
	}
	if cfg.OnDeny == nil {
		cfg.OnDeny = e.denied.add
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if tune != nil {
		tune(&p.lim)
	}
	e.p = p
	hl := listen(t, "127.0.0.1:0")
	sl := listen(t, "127.0.0.1:0")
	e.httpAddr, e.socksAddr = hl.Addr().String(), sl.Addr().String()
	go func() { e.done <- p.ServeHTTP(hl) }()
	go func() { e.done <- p.ServeSOCKS(sl) }()
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	e.once.Do(func() {
		closed := make(chan struct{})
		go func() {
			_ = e.p.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			e.t.Errorf("Close did not return within 10s\n%s", goroutineDump())
			return
		}
		for i := 0; i < 2; i++ {
			select {
			case err := <-e.done:
				// ErrClosed: the test was done before Serve started.
				if err != nil && !errors.Is(err, ErrClosed) {
					e.t.Errorf("Serve returned %v after Close", err)
				}
			case <-time.After(5 * time.Second):
				e.t.Errorf("Serve did not return within 5s of Close")
			}
		}
	})
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	return l
}

// echoServer echoes every connection until the peer half-closes, then
// closes. It returns its port.
func echoServer(t testing.TB) int {
	t.Helper()
	l := listen(t, "127.0.0.1:0")
	// The accept loop is counted in wg while it runs, so its Adds never
	// race the cleanup's Wait (an Add from zero during Wait would), and a
	// connection accepted after the cleanup closed the others is closed
	// at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				_ = c.Close()
				continue
			}
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// connectVia opens a CONNECT tunnel through the HTTP proxy and returns the
// conn, the response and a reader positioned after the response head.
func connectVia(t testing.TB, proxyAddr, target string, extra string) (net.Conn, *http.Response, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, extra)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		_ = c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return c, resp, br
}

// rawExchange sends raw bytes to addr and returns what comes back until
// the proxy closes or the deadline passes.
func rawExchange(t testing.TB, addr, data string, wait time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	_, _ = io.WriteString(c, data)
	b, _ := io.ReadAll(c)
	return string(b)
}

// openFDs counts open descriptors, all and sockets only.
func openFDs(t testing.TB) (all, sockets int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count fds: %v", err)
	}
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(l, "socket:") {
			sockets++
		}
	}
	return len(ents), sockets
}

// fdList describes the open descriptors, for failure messages.
func fdList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"="+l)
	}
	return strings.Join(out, " ")
}

// settle waits until the goroutine count drops to at most want.
func settle(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// stableGoroutines returns the goroutine count once it stops changing.
func stableGoroutines() int {
	prev := runtime.NumGoroutine()
	for i := 0; i < 40; i++ {
		time.Sleep(50 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == prev {
			return n
		}
		prev = n
	}
	return prev
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	s := string(buf[:n])
	if len(s) > 20000 {
		s = s[:20000]
	}
	return strings.TrimSpace(s)
}

// dialProxy connects to the proxy at addr with a 5 s deadline; the
// connection is closed when the test ends.
func dialProxy(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}
