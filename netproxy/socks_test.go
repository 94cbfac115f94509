package netproxy

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// socksRequest performs a SOCKS5 handshake with cmd to the address
// (atyp-encoded) and returns the open conn and the reply code.
func socksRequest(t *testing.T, addr string, cmd byte, atyp byte, dst []byte, port int) (net.Conn, byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte{5, 1, 0, 5, cmd, 0, atyp}
	if atyp == socksAtypDomain {
		msg = append(msg, byte(len(dst)))
	}
	msg = append(msg, dst...)
	msg = binary.BigEndian.AppendUint16(msg, uint16(port))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	var reply [12]byte
	if _, err := io.ReadFull(c, reply[:2]); err != nil || reply[0] != 5 || reply[1] != 0 {
		t.Fatalf("method reply %v %v", reply[:2], err)
	}
	if _, err := io.ReadFull(c, reply[:10]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if reply[0] != 5 || reply[3] != socksAtypIPv4 {
		t.Fatalf("malformed reply %v", reply[:10])
	}
	return c, reply[1]
}

func echoOK(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("echo %q, %v", buf, err)
	}
}

func TestSOCKSConnect(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1", "::1"}}, nil)

	c, code := socksRequest(t, e.socksAddr, socksCmdConnect, socksAtypDomain, []byte("allowed.test"), port)
	if code != socksOK {
		t.Fatalf("by name: reply %d", code)
	}
	echoOK(t, c, "by-name")
	c.Close()

	c, code = socksRequest(t, e.socksAddr, socksCmdConnect, socksAtypIPv4, []byte{127, 0, 0, 1}, port)
	if code != socksOK {
		t.Fatalf("by IPv4: reply %d", code)
	}
	echoOK(t, c, "by-ipv4")
	c.Close()

	c, code = socksRequest(t, e.socksAddr, socksCmdConnect, socksAtypDomain, []byte("0x7f.1"), port)
	if code != socksOK {
		t.Fatalf("by numeric name: reply %d", code)
	}
	c.Close()

	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback, skipping the IPv6 case: %v", err)
	} else {
		defer ln.Close()
		go func() {
			if s, err := ln.Accept(); err == nil {
				io.Copy(s, s)
				s.Close()
			}
		}()
		p6 := ln.Addr().(*net.TCPAddr).Port
		ip6 := netip.MustParseAddr("::1").As16()
		c, code = socksRequest(t, e.socksAddr, socksCmdConnect, socksAtypIPv6, ip6[:], p6)
		if code != socksOK {
			t.Fatalf("by IPv6: reply %d", code)
		}
		echoOK(t, c, "by-ipv6")
		c.Close()
	}
	if n := e.res.count("allowed.test"); n != 1 {
		t.Errorf("resolved %d times", n)
	}
	if d := e.denied.all(); len(d) != 0 {
		t.Errorf("denials %+v", d)
	}
}

func TestSOCKSWithXNetClient(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	d, err := proxy.SOCKS5("tcp", e.socksAddr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial("tcp", fmt.Sprintf("allowed.test:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	echoOK(t, c, "x/net/proxy")
	if _, err := d.Dial("tcp", "metadata.test:80"); err == nil {
		t.Error("metadata.test was not refused")
	}
}

func TestSOCKSRefusals(t *testing.T) {
	port := echoServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "metadata.test", "127.0.0.1"}, Denied: []string{"evil.test"}}, nil)
	tests := []struct {
		name string
		cmd  byte
		atyp byte
		dst  []byte
		port int
		code byte
		rule string
	}{
		{"bind", socksCmdBind, socksAtypDomain, []byte("allowed.test"), port, socksCmdUnsupported, RuleProtocol},
		{"udp associate", socksCmdUDP, socksAtypIPv4, []byte{127, 0, 0, 1}, port, socksCmdUnsupported, RuleProtocol},
		{"metadata by name", socksCmdConnect, socksAtypDomain, []byte("metadata.test"), 80, socksNotAllowed, RuleAddressGuard},
		{"metadata by ip", socksCmdConnect, socksAtypIPv4, []byte{169, 254, 169, 254}, 80, socksNotAllowed, RuleDefault},
		{"mapped metadata by ipv6", socksCmdConnect, socksAtypIPv6, netip.MustParseAddr("::ffff:169.254.169.254").AsSlice(), 80, socksNotAllowed, RuleDefault},
		{"denied", socksCmdConnect, socksAtypDomain, []byte("evil.test"), 443, socksNotAllowed, "evil.test"},
		{"not allowed", socksCmdConnect, socksAtypDomain, []byte("other.test"), 443, socksNotAllowed, RuleDefault},
		{"control bytes", socksCmdConnect, socksAtypDomain, []byte("allowed.test\x00.evil"), 443, socksNotAllowed, RuleInvalidHost},
		{"empty name", socksCmdConnect, socksAtypDomain, []byte{}, 443, socksNotAllowed, RuleInvalidHost},
		{"port zero", socksCmdConnect, socksAtypDomain, []byte("allowed.test"), 0, socksNotAllowed, RuleProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.denied.all())
			c, code := socksRequest(t, e.socksAddr, tt.cmd, tt.atyp, tt.dst, tt.port)
			defer c.Close()
			if code != tt.code {
				t.Errorf("reply %#x, want %#x", code, tt.code)
			}
			ds := e.denied.all()
			if len(ds) != before+1 || ds[before].Rule != tt.rule || ds[before].Proto != "socks5" {
				t.Errorf("denials %+v, want one socks5 by %q", ds[before:], tt.rule)
			}
			// The proxy closes after a refusal.
			if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
				t.Errorf("connection still open after refusal")
			}
		})
	}
	if got := e.dials.dialed(); len(got) != 0 {
		t.Errorf("refused requests dialled %v", got)
	}
}

func TestSOCKSProtocolErrors(t *testing.T) {
	e := startProxy(t, Config{Allowed: []string{"allowed.test"}}, func(l *limits) { l.readHeader = 300 * time.Millisecond })
	// Only username/password offered: 0xFF and close.
	out := rawExchange(t, e.socksAddr, "\x05\x01\x02", 5*time.Second)
	if out != "\x05\xff" {
		t.Errorf("no acceptable method: %q", out)
	}
	// Unknown address type: 0x08.
	out = rawExchange(t, e.socksAddr, "\x05\x01\x00\x05\x01\x00\x09", 5*time.Second)
	if out != "\x05\x00\x05\x08\x00\x01\x00\x00\x00\x00\x00\x00" {
		t.Errorf("bad atyp: %q", out)
	}
	// SOCKS4 and HTTP on the SOCKS port: closed without a reply.
	for _, junk := range []string{"\x04\x01\x00\x50\x7f\x00\x00\x01\x00", "GET / HTTP/1.1\r\n\r\n", "\x05"} {
		if out := rawExchange(t, e.socksAddr, junk, 5*time.Second); out != "" {
			t.Errorf("junk %q got %q", junk, out)
		}
	}
}
