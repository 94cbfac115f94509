package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// tunnelWorks opens a CONNECT tunnel to the echo server and checks it.
func tunnelWorks(t *testing.T, e *env, port int) {
	t.Helper()
	c, resp, br := connectVia(t, e.httpAddr, fmt.Sprintf("allowed.test:%d", port), "")
	defer c.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT status %d", resp.StatusCode)
	}
	io.WriteString(c, "still alive")
	buf := make([]byte, len("still alive"))
	if _, err := io.ReadFull(br, buf); err != nil {
		t.Fatalf("tunnel: %v", err)
	}
}

func TestGarbage(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, func(l *limits) { l.readHeader = 500 * time.Millisecond })
	rng := rand.New(rand.NewSource(1))
	junk := []string{
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", // a TLS ClientHello on the HTTP port
		"\x00\x00\x00\x00\r\n\r\n",
		"GET\r\n\r\n",
		"CONNECT\r\n\r\n",
		"CONNECT :443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1 HTTP/1.1\r\n\r\n",
		"CONNECT allowed.test:99999 HTTP/1.1\r\n\r\n",
		"CONNECT allowed.test:-1 HTTP/1.1\r\n\r\n",
		"GET http://allowed.test:0/ HTTP/1.1\r\nHost: allowed.test:0\r\n\r\n",
		"GET http://[::1/ HTTP/1.1\r\n\r\n",
		"GET http://allowed.test:PORT/ HTTP/9.9\r\nHost: allowed.test:PORT\r\n\r\n",
		"GET http://allowed.test:PORT/ HTTP/1.1\r\nHost: allowed.test:PORT\r\nContent-Length: -5\r\n\r\n",
		"GET http://allowed.test:PORT/ HTTP/1.1\r\nHost: allowed.test:PORT\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET http://allowed.test:PORT/ HTTP/1.1\r\nHost: allow\x00ed.test\r\n\r\n",
		"GET http://allowed.test:PORT/ HTTP/1.1\r\n Host: metadata.test\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		strings.Repeat("A", 100000),
		"GET http://" + strings.Repeat("a.", 200) + "test/ HTTP/1.1\r\n\r\n",
	}
	for i := 0; i < 40; i++ {
		b := make([]byte, rng.Intn(2000))
		rng.Read(b)
		junk = append(junk, string(b))
	}
	for i := range junk {
		junk[i] = strings.ReplaceAll(junk[i], "PORT", fmt.Sprint(port))
	}
	var wg sync.WaitGroup
	for _, j := range junk {
		for _, addr := range []string{e.httpAddr, e.socksAddr} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := rawExchange(t, addr, j, 3*time.Second)
				if strings.HasPrefix(out, "HTTP/1.1 200") {
					t.Errorf("junk %.40q got 200", j)
				}
			}()
		}
	}
	wg.Wait()
	for _, d := range e.dials.dialed() {
		if d != fmt.Sprintf("127.0.0.1:%d", port) {
			t.Errorf("junk caused a dial to %s", d)
		}
	}
	tunnelWorks(t, e, port)
}

func TestSlowClientsAreCut(t *testing.T) {
	port := echoServer(t)
	const timeout = 300 * time.Millisecond
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, func(l *limits) { l.readHeader = timeout })
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		addr := e.httpAddr
		if i%3 == 2 {
			addr = e.socksAddr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			switch i % 3 {
			case 0: // slowloris: one header byte every 50 ms
				io.WriteString(c, "CONNECT allowed.test:443 HTTP/1.1\r\n")
				for {
					if _, err := io.WriteString(c, "X"); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
					if time.Since(start) > 5*time.Second {
						t.Error("slowloris connection not cut")
						return
					}
				}
			default: // half-open: connects, never speaks
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				var ne net.Error
				if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("silent connection not closed: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cutting slow clients took %v", d)
	}
	tunnelWorks(t, e, port)
}

func TestHugeHeaders(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	var many strings.Builder
	many.WriteString("GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&many, "X-Header-%d: value\r\n", i)
	}
	many.WriteString("\r\n")
	one := "CONNECT allowed.test:443 HTTP/1.1\r\nX-Big: " + strings.Repeat("b", 1<<20) + "\r\n\r\n"
	for name, req := range map[string]string{"10k headers": many.String(), "1 MiB header": one} {
		out := rawExchange(t, e.httpAddr, req, 5*time.Second)
		if out != "" && !strings.HasPrefix(out, "HTTP/1.1 431") {
			t.Errorf("%s: got %.60q, want 431 or a closed connection", name, out)
		}
	}
	if got := e.dials.dialed(); len(got) != 0 {
		t.Errorf("dials %v", got)
	}
	tunnelWorks(t, e, port)
}

func TestManyConcurrentTunnels(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	const n = 500
	var established, release sync.WaitGroup
	established.Add(n)
	release.Add(1)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			err := func() error {
				var c net.Conn
				var br *bufio.Reader
				var err error
				if i%2 == 0 {
					c, err = net.Dial("tcp", e.httpAddr)
					if err != nil {
						return err
					}
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(20 * time.Second))
					fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port)
					br = bufio.NewReader(c)
					resp, err := http.ReadResponse(br, nil)
					if err != nil || resp.StatusCode != 200 {
						return fmt.Errorf("CONNECT: %v %v", resp, err)
					}
				} else {
					c, err = net.Dial("tcp", e.socksAddr)
					if err != nil {
						return err
					}
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(20 * time.Second))
					msg := []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, byte(port >> 8), byte(port)}
					c.Write(msg)
					reply := make([]byte, 12)
					if _, err := io.ReadFull(c, reply); err != nil || reply[3] != 0 {
						return fmt.Errorf("SOCKS: %v %v", reply, err)
					}
					br = bufio.NewReader(c)
				}
				msg := fmt.Sprintf("conn-%d", i)
				io.WriteString(c, msg)
				buf := make([]byte, len(msg))
				if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
					return fmt.Errorf("echo %q: %v", buf, err)
				}
				established.Done()
				release.Wait() // hold all tunnels open at once
				return nil
			}()
			if err != nil {
				established.Done()
			}
			errs <- err
		}()
	}
	established.Wait()
	e.p.mu.Lock()
	open := e.p.nclients
	e.p.mu.Unlock()
	release.Done()
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if open < n-5 {
		t.Errorf("only %d client connections open at the peak", open)
	}
}

func TestConnectionCap(t *testing.T) {
	e := startProxy(t, Config{Allowed: []string{"allowed.test"}}, func(l *limits) { l.maxConns = 3 })
	var held []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", e.socksAddr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitFor(t, func() bool { e.p.mu.Lock(); defer e.p.mu.Unlock(); return e.p.nclients == 3 })
	if out := rawExchange(t, e.httpAddr, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n", 2*time.Second); out != "" {
		t.Errorf("over the cap got %q", out)
	}
	for _, c := range held {
		c.Close()
	}
	waitFor(t, func() bool { e.p.mu.Lock(); defer e.p.mu.Unlock(); return e.p.nclients == 0 })
	if out := rawExchange(t, e.httpAddr, "CONNECT other.test:443 HTTP/1.1\r\n\r\n", 2*time.Second); !strings.HasPrefix(out, "HTTP/1.1 403") {
		t.Errorf("after freeing got %q", out)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServeAfterClose(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	l := listen(t, "127.0.0.1:0")
	defer l.Close()
	if err := p.ServeHTTP(l); !errors.Is(err, ErrClosed) {
		t.Errorf("ServeHTTP after Close = %v", err)
	}
	if err := p.ServeSOCKS(l); !errors.Is(err, ErrClosed) {
		t.Errorf("ServeSOCKS after Close = %v", err)
	}
}

// TestCloseLeaksNothing fills the proxy with every kind of connection
// state, closes it, and checks goroutines and file descriptors return to
// where they were.
func TestCloseLeaksNothing(t *testing.T) {
	warm := startProxy(t, Config{Allowed: []string{"x.test"}}, nil) // netpoller, timers, DNS-free warm-up
	rawExchange(t, warm.httpAddr, "CONNECT x.test:1 HTTP/1.1\r\n\r\n", time.Second)
	warm.close()
	runtime.GC()
	runtime.GC()
	g0 := stableGoroutines()
	fd0, sock0 := openFDs(t)

	t.Run("busy", func(t *testing.T) {
		port := echoServer(t)
		block := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}))
		defer slow.Close()
		defer close(block)
		e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
		var clients []net.Conn
		defer func() {
			for _, c := range clients {
				c.Close()
			}
		}()
		for i := 0; i < 10; i++ { // open tunnels, some mid-transfer
			c, resp, _ := connectVia(t, e.httpAddr, fmt.Sprintf("allowed.test:%d", port), "")
			if resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			if i%2 == 0 {
				io.WriteString(c, "pending")
			}
			if i%3 == 0 {
				c.(*net.TCPConn).CloseWrite() // half-closed
			}
			clients = append(clients, c)
		}
		for i := 0; i < 5; i++ { // silent, partial-head and mid-handshake clients
			for _, addr := range []string{e.httpAddr, e.socksAddr} {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				if i%2 == 1 {
					io.WriteString(c, "\x05\x01")
				}
				clients = append(clients, c)
			}
		}
		plainDone := make(chan struct{})
		go func() { // a plain request stuck waiting for upstream
			defer close(plainDone)
			rawExchange(t, e.httpAddr, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", serverPort(t, slow), serverPort(t, slow)), 10*time.Second)
		}()
		waitFor(t, func() bool { return len(e.dials.dialed()) == 11 })
		start := time.Now()
		e.close()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Close took %v", d)
		}
		<-plainDone
		for _, c := range clients[:10] { // every tunnel is closed by the proxy
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.ReadAll(c); err != nil {
				t.Errorf("tunnel not closed after Close: %v", err)
			}
		}
	})

	if g := settle(g0); g > g0 {
		t.Errorf("goroutines: %d before, %d after Close\n%s", g0, g, goroutineDump())
	}
	// Sockets first, without forcing a GC: a GC would let finalizers
	// close leaked but unreachable sockets and hide the leak.
	deadline := time.Now().Add(3 * time.Second)
	_, socks := openFDs(t)
	for socks > sock0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		_, socks = openFDs(t)
	}
	if socks > sock0 {
		t.Errorf("sockets: %d before, %d after Close: %s", sock0, socks, fdList())
	}
	// Spliced tunnels leave pipes in the runtime's splice pipe pool (a
	// sync.Pool whose finalizers close them): GC drains it.
	fd, _ := openFDs(t)
	for fd > fd0 && time.Now().Before(deadline.Add(3*time.Second)) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		fd, _ = openFDs(t)
	}
	if fd > fd0 {
		t.Errorf("fds: %d before, %d after Close: %s", fd0, fd, fdList())
	}
}
