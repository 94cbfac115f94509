//go:build linux && (amd64 || arm64)

package rawexec

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenEnv makes the test binary a server: it listens on
// 127.0.0.1:$RAWEXEC_TEST_LISTEN, says "listening", answers every
// connection with "hello", answers "ping" on stdin with "pong" and exits 0
// at EOF on stdin.
const listenEnv = "RAWEXEC_TEST_LISTEN"

func listenHelper(port string) {
	l, err := net.Listen("tcp4", "127.0.0.1:"+port)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	fmt.Println("listening")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "ping" {
			fmt.Println("pong")
		}
	}
	os.Exit(0)
}

// loopbackUp brings up lo in the new network namespace (before the Fork).
func loopbackUp(p *Program) {
	sock := p.Syscall("loopback", unix.SYS_SOCKET, Imm(unix.AF_INET), Imm(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), Imm(0)).Save()
	ifr := make([]byte, unix.IFNAMSIZ+24)
	copy(ifr, "lo")
	binary.NativeEndian.PutUint16(ifr[unix.IFNAMSIZ:], unix.IFF_UP|unix.IFF_LOOPBACK)
	p.Syscall("loopback up", unix.SYS_IOCTL, sock, Imm(unix.SIOCSIFFLAGS), Bytes(ifr))
	p.Syscall("loopback", unix.SYS_CLOSE, sock)
}

// dial asks the first process for 127.0.0.1:port and returns its reply
// and the descriptor (-1: none).
func dial(t *testing.T, sock int, id uint64, port uint16) (DialReply, int) {
	t.Helper()
	if _, err := unix.Write(sock, DialRequest{ID: id, Port: port}.Encode()); err != nil {
		t.Fatalf("dial request: %v", err)
	}
	return reply(t, sock, id)
}

// reply reads the reply to request id.
func reply(t *testing.T, sock int, id uint64) (DialReply, int) {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 10000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Fatalf("no dial reply: %v", err)
		}
		break
	}
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		t.Fatalf("dial reply: %v, flags %#x", err, flags)
	}
	rep, err := DecodeDialReply(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil || len(fds) != 1 || fd >= 0 {
			t.Fatalf("dial reply's descriptors: %v %v", fds, err)
		}
		fd = fds[0]
	}
	if rep.ID != id {
		t.Fatalf("dial reply for %d, want %d", rep.ID, id)
	}
	if (rep.Errno == 0) != (fd >= 0) {
		t.Fatalf("dial reply %+v with descriptor %d", rep, fd)
	}
	return rep, fd
}

// readHello reads what the helper sends on a dialed connection.
func readHello(t *testing.T, fd int) string {
	t.Helper()
	if err := WaitConnected(fd, 10*time.Second); err != nil {
		unix.Close(fd)
		t.Fatalf("connecting: %v", err)
	}
	f := os.NewFile(uintptr(fd), "dialed")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the dialed connection: %q, %v", b, err)
	}
	return string(b)
}

// startListening starts a sandbox with the dial service whose command is
// the test binary listening on the sandbox's 127.0.0.1:8080, and waits
// until it listens.
func startListening(t *testing.T) *sandbox {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var prog Program
	loopbackUp(&prog)
	prog.Fork("fork")
	sb := startSandbox(t, sbOpts{prog: &prog, path: self, args: []string{"helper"}, dial: true,
		env: append([]string{listenEnv + "=8080"}, testEnv...)})
	if sb.err != nil {
		t.Fatal(sb.err)
	}
	sb.started(t)
	if l := sb.readLine(t); l != "listening\n" {
		t.Fatalf("helper: %q", l)
	}
	return sb
}

// TestReaperDial: the first process dials 127.0.0.1:PORT in the
// sandbox's network namespace for the parent and hands the sockets over;
// a closed port is ECONNREFUSED; closing the dial socket only ends the
// service.
func TestReaperDial(t *testing.T) {
	sb := startListening(t)
	// The host's 127.0.0.1 is another namespace: nothing of the test
	// listens on the sandbox's.
	for i := range 50 {
		rep, fd := dial(t, sb.dial, uint64(1000+i), 8080)
		if rep.Errno != 0 {
			t.Fatalf("dial %d: %v", i, unix.Errno(rep.Errno))
		}
		if got := readHello(t, fd); got != "hello\n" {
			t.Fatalf("dial %d: read %q", i, got)
		}
	}
	// A closed port: refused at once, or by the handed-over socket.
	rep, fd := dial(t, sb.dial, 7, 8081)
	refused := unix.Errno(rep.Errno)
	if fd >= 0 {
		refused = unix.Errno(0)
		if err := WaitConnected(fd, 10*time.Second); err != nil {
			refused, _ = err.(unix.Errno)
		}
		unix.Close(fd)
		t.Logf("closed port: a socket that fails with %v", refused)
	}
	if refused != unix.ECONNREFUSED {
		t.Fatalf("closed port: %v, want ECONNREFUSED", refused)
	}
	// Many requests at once, then the replies, in order.
	for i := range 20 {
		if _, err := unix.Write(sb.dial, DialRequest{ID: uint64(100 + i), Port: 8080}.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		rep, fd := reply(t, sb.dial, uint64(100+i))
		if rep.Errno != 0 || readHello(t, fd) != "hello\n" {
			t.Fatalf("burst %d: %+v", i, rep)
		}
	}
	// A malformed request is ignored; the next one is served.
	if _, err := unix.Write(sb.dial, []byte("dial 1 8080")); err != nil {
		t.Fatal(err)
	}
	if rep, fd := dial(t, sb.dial, 8, 8080); rep.Errno != 0 || readHello(t, fd) != "hello\n" {
		t.Fatalf("after a malformed request: %+v", rep)
	}
	// The parent closes its end: the sandbox goes on.
	unix.Close(sb.dial)
	sb.dial = -1
	time.Sleep(100 * time.Millisecond)
	if _, err := sb.stdin.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if l := sb.readLine(t); l != "pong\n" {
		t.Fatalf("after closing the dial socket: %q", l)
	}
	sb.stdin.Close()
	wantStatusExit(t, sb.exited(t), 0)
	sb.done(t)
	if out := sb.readAll(t, 10*time.Second); strings.TrimSpace(out) != "" {
		t.Errorf("helper output: %q", out)
	}
}

// TestReaperDialFlood: a parent that sends many requests and reads no
// reply does not block the first process (its replies are dropped once
// the queue is full); the sandbox still ends normally.
func TestReaperDialFlood(t *testing.T) {
	sb := startListening(t)
	// Many requests, no reads: the replies fill the socket's queue and
	// the rest are dropped.
	unix.SetNonblock(sb.dial, true)
	sent := 0
	for i := range 2000 {
		if _, err := unix.Write(sb.dial, DialRequest{ID: uint64(i), Port: 8081}.Encode()); err != nil {
			break
		}
		sent++
	}
	if _, err := sb.stdin.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if l := sb.readLine(t); l != "pong\n" {
		t.Fatalf("the command after %d unread dials: %q", sent, l)
	}
	sb.stdin.Close()
	wantStatusExit(t, sb.exited(t), 0)
	sb.done(t)
}
