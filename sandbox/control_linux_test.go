//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
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

// TestTakeStartAnyOrder: the supervisor takes the discard overlays'
// descriptors from the control socket whatever order the other messages
// came in ("capture", "listen", "notify" before, between or after the
// "overlays" ones), keeps the overlays' descriptors in the order they
// were sent, hands on every other message it read with its descriptors,
// and leaves the ones after the last overlays message queued. A missing
// overlays message is an error at once, not a wait, and leaks nothing.
func TestTakeStartAnyOrder(t *testing.T) {
	type msg struct {
		tag string
		n   int // descriptors
	}
	msgs := []msg{{"capture", 1}, {"overlays", 4}, {"listen", 2}, {"overlays", 2}, {"notify", 1}}
	var orders [][]int
	var permute func(prefix []int, rest []int)
	permute = func(prefix, rest []int) {
		if len(rest) == 0 {
			orders = append(orders, append([]int(nil), prefix...))
			return
		}
		for i := range rest {
			next := append(append([]int(nil), rest[:i]...), rest[i+1:]...)
			permute(append(prefix, rest[i]), next)
		}
	}
	permute(nil, []int{0, 1, 2, 3, 4})
	tried := 0
	for _, order := range orders {
		if slicesIndex(order, 1) > slicesIndex(order, 3) {
			continue // the overlays messages keep their order (SOCK_SEQPACKET)
		}
		tried++
		s, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Each descriptor sent is a fresh pipe end: its inode names it.
		var want []uint64 // the overlays' descriptors, in order
		others := map[string][]uint64{}
		for _, i := range order {
			var fds []int
			var inos []uint64
			for range msgs[i].n {
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				unix.Close(p[1])
				fds = append(fds, p[0])
				inos = append(inos, inode(t, p[0]))
			}
			if err := unix.Sendmsg(s[1], []byte(msgs[i].tag), unix.UnixRights(fds...), nil, 0); err != nil {
				t.Fatal(err)
			}
			for _, fd := range fds {
				unix.Close(fd)
			}
			if msgs[i].tag == "overlays" {
				want = append(want, inos...)
			} else {
				others[msgs[i].tag] = inos
			}
		}
		sock := os.NewFile(uintptr(s[0]), "ctl")
		fds, taken, err := takeStart(sock, 2)
		if err != nil {
			t.Fatalf("order %v: %v", order, err)
		}
		var got []uint64
		for _, fd := range fds {
			got = append(got, inode(t, fd))
			unix.Close(fd)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("order %v: overlays' descriptors %v, want %v", order, got, want)
		}
		// Taken: every other message sent before the last overlays one,
		// with its own descriptors; the rest are still queued.
		last := slicesIndex(order, 3)
		var wantTags, gotTags []string
		for _, i := range order[:last] {
			if msgs[i].tag != "overlays" {
				wantTags = append(wantTags, msgs[i].tag)
			}
		}
		for _, m := range taken {
			gotTags = append(gotTags, m.tag)
			var inos []uint64
			for _, f := range m.files {
				inos = append(inos, inode(t, int(f.Fd())))
			}
			if fmt.Sprint(inos) != fmt.Sprint(others[m.tag]) {
				t.Errorf("order %v: %q carried %v, want %v", order, m.tag, inos, others[m.tag])
			}
		}
		closeMessages(taken)
		if fmt.Sprint(gotTags) != fmt.Sprint(wantTags) {
			t.Errorf("order %v: taken %v, want %v", order, gotTags, wantTags)
		}
		queued := 0
		buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*8))
		for {
			_, oobn, _, _, err := unix.Recvmsg(s[0], buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
			if err != nil {
				break
			}
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					r, _ := unix.ParseUnixRights(&m)
					for _, fd := range r {
						unix.Close(fd)
					}
				}
			}
			queued++
		}
		if queued != len(order)-1-last {
			t.Errorf("order %v: %d messages left queued, want %d", order, queued, len(order)-1-last)
		}
		sock.Close()
		unix.Close(s[1])
	}
	if tried != 60 {
		t.Fatalf("tried %d orders, want 60", tried)
	}

	// One overlays message of two: an error at once, every descriptor
	// received closed.
	s, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(s[1])
	sock := os.NewFile(uintptr(s[0]), "ctl")
	defer sock.Close()
	// Let earlier tests' unreachable files be finalized first, so that
	// their closing does not hide a leak here.
	runtime.GC()
	runtime.GC()
	before := openFDs(t)
	for _, tag := range []string{"capture", "overlays"} {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := unix.Sendmsg(s[1], []byte(tag), unix.UnixRights(p[0], p[1]), nil, 0); err != nil {
			t.Fatal(err)
		}
		unix.Close(p[0])
		unix.Close(p[1])
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := takeStart(sock, 2)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "1 of 2") {
			t.Fatalf("a missing overlays message: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("takeStart waited for a message that never comes")
	}
	// More open after than before is a leak; fewer is an earlier test's
	// *os.File whose finalizer closed it meanwhile.
	if after := openFDs(t); after > before {
		t.Fatalf("%d descriptors open before, %d after: the received ones leaked", before, after)
	}
}

func slicesIndex(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func inode(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
