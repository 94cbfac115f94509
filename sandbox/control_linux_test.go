//go:build linux

package sandbox

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDialReplyOutlivesControlEOF: a published port's connection that
// PID 1 made just before the sandbox ended is still handed to its
// waiter. PID 1's reply is on the dial socket before its control socket
// reaches EOF, but the two are read by different goroutines: the end of
// the control socket must not fail a waiter whose reply is still queued
// (it did, and the published port then answered nothing:
// TestNetLocalBindingAndPublish's flake under load).
func TestDialReplyOutlivesControlEOF(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			io.WriteString(c, "hello from inside\n")
			c.Close()
		}
	}()
	d, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(d[1])
	ns := &ctlSide{pl: &Plan{}, wait: map[uint64]chan *os.File{}, conns: map[net.Conn]struct{}{}}
	if err := ns.useDial(os.NewFile(uintptr(d[0]), "dial")); err != nil {
		t.Fatal(err)
	}
	if ns.ctl, err = unixConn(os.NewFile(uintptr(c[0]), "ctl")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := ns.dialInside(uint16(l.Addr().(*net.TCPAddr).Port))
		done <- result{conn, err}
	}()
	// PID 1's side: read the request, connect, reply with the socket.
	req := make([]byte, 64)
	n, err := unix.Read(d[1], req)
	if err != nil || n < 10 {
		t.Fatalf("request: %d %v", n, err)
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sa := &unix.SockaddrInet4{Port: l.Addr().(*net.TCPAddr).Port, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Connect(s, sa); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 16)
	copy(reply, req[:8]) // the request's ID
	if err := unix.Sendmsg(d[1], reply, unix.UnixRights(s), nil, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(s)
	// Then PID 1 exits: its control socket ends first, before the dial
	// loop has run at all.
	unix.Close(c[1])
	ns.wg.Add(1)
	ns.readLoop()
	ns.wg.Add(1)
	go ns.dialLoop()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer from dialInside")
	}
	if r.err != nil {
		t.Fatalf("the connection PID 1 made was dropped: %v", r.err)
	}
	defer r.c.Close()
	b, _ := io.ReadAll(r.c)
	if string(b) != "hello from inside\n" {
		t.Fatalf("read %q", b)
	}
}
