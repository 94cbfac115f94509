// Package testserve owns the accept loop of the HTTP test servers that
// sbx's tests start on loopback addresses and Unix sockets (origins,
// fake parent proxies, a fake MITM proxy): accept, read the request head,
// hand the connection to the test. Only tests import it; no sbx binary
// links it.
package testserve

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// Requests accepts on l until the test ends (then closes l and waits
// for the accept loop), reads each connection's request head and hands
// the connection to serve, which has 10 s; the connection is closed when
// serve returns. A connection whose head does not parse is closed
// unserved.
func Requests(t testing.TB, l net.Listener, serve func(c net.Conn, br *bufio.Reader, req *http.Request)) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				serve(c, br, req)
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
}
