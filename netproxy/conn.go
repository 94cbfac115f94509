package netproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/textproto"
	"sync"
	"sync/atomic"
)

// clientConn is an accepted client connection. It untracks itself on
// Close. For the HTTP proxy it also keeps a copy of the first request head
// as received: net/http drops the Host header of absolute-form and CONNECT
// requests, and the proxy must compare it with the target.
type clientConn struct {
	net.Conn
	p         *Proxy
	closeOnce sync.Once
	closeErr  error

	capture   bool        // record the first request head
	headDone  atomic.Bool // head complete (or truncated): stop recording
	head      []byte      // written only until headDone, by the reading goroutine
	headLimit int
	hijacked  atomic.Bool // HTTP: the handler owns the connection now
	requests  atomic.Int32
}

func (c *clientConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.capture && !c.headDone.Load() {
		c.record(b[:n])
	}
	return n, err
}

func (c *clientConn) record(b []byte) {
	start := max(0, len(c.head)-2)
	if room := c.headLimit - len(c.head); len(b) > room {
		b = b[:room]
	}
	c.head = append(c.head, b...)
	if end := headEnd(c.head[start:]); end >= 0 {
		c.head = c.head[:start+end]
		c.headDone.Store(true)
		return
	}
	if len(c.head) >= c.headLimit {
		c.head = nil
		c.headDone.Store(true)
	}
}

// headEnd returns the offset just past the blank line that ends a request
// head ("\n\n" or "\n\r\n", as net/textproto accepts both), or -1.
func headEnd(b []byte) int {
	end := -1
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		end = i + 2
	}
	if i := bytes.Index(b, []byte("\n\r\n")); i >= 0 && (end < 0 || i+3 < end) {
		end = i + 3
	}
	return end
}

// hostHeaders returns the Host header values of the first request head.
func (c *clientConn) hostHeaders() ([]string, error) {
	if !c.headDone.Load() || c.head == nil {
		return nil, fmt.Errorf("request head not captured")
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(c.head)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, fmt.Errorf("request line: %w", err)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("request head: %w", err)
	}
	return h["Host"], nil
}

func (c *clientConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.p.untrackClient(c)
	})
	return c.closeErr
}

// listener wraps accepted connections in clientConn and enforces the
// connection cap.
type listener struct {
	net.Listener
	p       *Proxy
	capture bool
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &clientConn{Conn: c, p: l.p, capture: l.capture, headLimit: l.p.lim.maxHeader + 8<<10}
		if l.p.trackClient(cc) {
			return cc, nil
		}
		_ = c.Close()
		if l.p.isClosed() {
			return nil, fmt.Errorf("accept: %w", net.ErrClosed)
		}
	}
}
