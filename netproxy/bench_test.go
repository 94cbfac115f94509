package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkConnectLatency measures one new CONNECT tunnel end to end:
// connect to the proxy, CONNECT (match, fake resolve, guard, dial), 200,
// one echoed byte, close.
func BenchmarkConnectLatency(b *testing.B) {
	port := echoServer(b)
	e := startProxy(b, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	req := []byte(fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port))
	one := make([]byte, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", e.httpAddr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%v %v", resp, err)
		}
		if _, err := c.Write(one); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, one); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkConnectLatencyDirect is the baseline: a new connection straight
// to the echo server, one echoed byte, close.
func BenchmarkConnectLatencyDirect(b *testing.B) {
	addr := fmt.Sprintf("127.0.0.1:%d", echoServer(b))
	one := make([]byte, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		c.Write(one)
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkSOCKSConnectLatency is the same through SOCKS5 (by name).
func BenchmarkSOCKSConnectLatency(b *testing.B) {
	port := echoServer(b)
	e := startProxy(b, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len("allowed.test"))}, "allowed.test"...)
	req = append(req, byte(port>>8), byte(port))
	reply := make([]byte, 12)
	one := make([]byte, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", e.socksAddr)
		if err != nil {
			b.Fatal(err)
		}
		c.Write(req)
		if _, err := io.ReadFull(c, reply); err != nil || reply[3] != 0 {
			b.Fatalf("%v %v", reply, err)
		}
		c.Write(one)
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// sink accepts one connection and counts what it reads until EOF.
func sink(b *testing.B) (int, chan int64) {
	l := listen(b, "127.0.0.1:0")
	b.Cleanup(func() { l.Close() })
	got := make(chan int64, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		var n int64
		for {
			m, err := c.Read(buf)
			n += int64(m)
			if err != nil {
				got <- n
				return
			}
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, got
}

func pump(b *testing.B, c net.Conn, got chan int64) {
	chunk := make([]byte, 256<<10)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if n := <-got; n != int64(b.N)*int64(len(chunk)) {
		b.Fatalf("server got %d bytes, sent %d", n, int64(b.N)*int64(len(chunk)))
	}
}

// BenchmarkThroughput pushes bytes one way through an established CONNECT
// tunnel to a counting server (the proxy splices on Linux).
func BenchmarkThroughput(b *testing.B) {
	port, got := sink(b)
	e := startProxy(b, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c, resp, _ := connectVia(b, e.httpAddr, fmt.Sprintf("allowed.test:%d", port), "")
	defer c.Close()
	if resp.StatusCode != 200 {
		b.Fatal(resp.Status)
	}
	_ = c.SetDeadline(noDeadline)
	pump(b, c, got)
}

// BenchmarkThroughputDirect is the baseline without the proxy.
func BenchmarkThroughputDirect(b *testing.B) {
	port, got := sink(b)
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pump(b, c, got)
}
