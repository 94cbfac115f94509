package netproxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// rawHello is a minimal ClientHello naming sni ("" for none), in one
// record, or split over two records when split.
func rawHello(sni string, split bool) []byte {
	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...)                // random
	body = append(body, 0)                                  // session id
	body = append(body, 0, 4, 0x13, 0x01, 0xc0, 0x2f, 1, 0) // suites, compression
	var exts []byte
	if sni != "" {
		entry := append([]byte{0}, binary.BigEndian.AppendUint16(nil, uint16(len(sni)))...)
		entry = append(entry, sni...)
		list := binary.BigEndian.AppendUint16(nil, uint16(len(entry)))
		list = append(list, entry...)
		exts = binary.BigEndian.AppendUint16(exts, extServerName)
		exts = binary.BigEndian.AppendUint16(exts, uint16(len(list)))
		exts = append(exts, list...)
	}
	exts = append(exts, 0, 10, 0, 4, 0, 2, 0, 29) // supported_groups: x25519
	body = binary.BigEndian.AppendUint16(body, uint16(len(exts)))
	body = append(body, exts...)
	msg := []byte{handshakeClientHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}
	msg = append(msg, body...)
	record := func(frag []byte) []byte {
		r := []byte{recordTypeHandshake, 3, 1}
		r = binary.BigEndian.AppendUint16(r, uint16(len(frag)))
		return append(r, frag...)
	}
	if split {
		return append(record(msg[:3]), record(msg[3:])...)
	}
	return record(msg)
}

// goHello is the ClientHello crypto/tls sends for sni.
func goHello(t *testing.T, sni string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		_ = tls.Client(b, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
		b.Close()
	}()
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(a, hdr); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
	if _, err := io.ReadFull(a, rest); err != nil {
		t.Fatal(err)
	}
	return append(hdr, rest...)
}

// helloOf parses a whole hello from b.
func helloOf(b []byte) (string, error) {
	a, c := net.Pipe()
	defer a.Close()
	go func() { _, _ = c.Write(b[1:]); c.Close() }()
	_, sni, err := readClientHello(a, b[:1], time.Second)
	return sni, err
}

// TestClientHelloSNI: the reader finds the server name in crypto/tls's
// own hellos and in hand-made ones (a trailing dot kept, a hello split
// over records), and refuses the malformed ones a TLS server refuses.
func TestClientHelloSNI(t *testing.T) {
	for _, name := range []string{"allowed.test", "a.b.example.com", ""} {
		if got, err := helloOf(goHello(t, name)); err != nil || got != name {
			t.Errorf("crypto/tls hello for %q: %q, %v", name, got, err)
		}
	}
	for _, tt := range []struct {
		b    []byte
		want string
	}{
		{rawHello("evil.test.", false), "evil.test."},
		{rawHello("Allowed.Test", true), "Allowed.Test"},
		{rawHello("", false), ""},
	} {
		if got, err := helloOf(tt.b); err != nil || got != tt.want {
			t.Errorf("hello for %q: %q, %v", tt.want, got, err)
		}
	}
	// The fuzz target's oracle reads these hellos as a server does.
	for _, b := range [][]byte{rawHello("allowed.test", false), rawHello("allowed.test", true)} {
		if sni, ok := tlsServerName(b); !ok || sni != "allowed.test" {
			t.Errorf("crypto/tls reads %q, %v from a hand-made hello", sni, ok)
		}
	}
	good := rawHello("allowed.test", false)
	twoSNI := func() []byte { // a second server_name extension after the first
		b := rawHello("allowed.test", false)
		ext := []byte{0, 0, 0, 13, 0, 11, 0, 0, 8, 'e', 'v', 'i', 'l', '.', 't', 'e', 's'}
		return patchHello(b, ext)
	}
	for name, b := range map[string][]byte{
		"garbage record":   {0x16, 3, 1, 0, 5, 'h', 'e', 'l', 'l', 'o'},
		"not a handshake":  append([]byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, good...),
		"record version 2": append([]byte{0x16, 2}, good[2:]...),
		"oversized record": {0x16, 3, 1, 0x48, 0x01},
		"truncated body":   truncatedHello(good),
		"two server names": twoSNI(),
		"alert in between": append(append([]byte(nil), rawHello("allowed.test", true)[:8]...), 0x15, 3, 3, 0, 2, 2, 40),
	} {
		if sni, err := helloOf(b); err == nil {
			t.Errorf("%s: parsed, SNI %q", name, sni)
		}
	}
}

// patchHello appends ext to the extensions of a one-record rawHello,
// fixing every length on the way.
func patchHello(b, ext []byte) []byte {
	out := append(append([]byte(nil), b...), ext...)
	bump := func(off, width int) {
		var v int
		for i := 0; i < width; i++ {
			v = v<<8 | int(out[off+i])
		}
		v += len(ext)
		for i := width - 1; i >= 0; i-- {
			out[off+i] = byte(v)
			v >>= 8
		}
	}
	bump(3, 2) // record
	bump(6, 3) // handshake
	// extensions length: after version(2) random(32) sid(1) suites(2+4) comp(2)
	bump(9+2+32+1+6+2, 2)
	return out
}

// truncatedHello shortens the hello's body by one byte but keeps the
// lengths of record and message consistent, so only the body is wrong.
func truncatedHello(b []byte) []byte {
	out := append([]byte(nil), b[:len(b)-1]...)
	binary.BigEndian.PutUint16(out[3:], binary.BigEndian.Uint16(out[3:])-1)
	n := int(out[6])<<16 | int(out[7])<<8 | int(out[8]) - 1
	out[6], out[7], out[8] = byte(n>>16), byte(n>>8), byte(n)
	return out
}

// sniPath opens a tunnel to host:port over one of the proxy's paths and
// returns the client side, after the server's greeting.
type sniPath func(t *testing.T, e *env, host string, port int) net.Conn

// bufferedConn reads through the reader that read the CONNECT answer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

var sniPaths = map[string]sniPath{
	"capture": func(t *testing.T, e *env, host string, port int) net.Conn {
		c, _ := captured(t, e, host, port)
		return c
	},
	"connect": func(t *testing.T, e *env, host string, port int) net.Conn {
		c, resp, br := connectVia(t, e.httpAddr, net.JoinHostPort(host, fmt.Sprint(port)), "")
		t.Cleanup(func() { c.Close() })
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s: %s", host, resp.Status)
		}
		return bufferedConn{c, br}
	},
	"socks": func(t *testing.T, e *env, host string, port int) net.Conn {
		atyp, dst := byte(socksAtypDomain), []byte(host)
		if ip := net.ParseIP(host).To4(); ip != nil {
			atyp, dst = socksAtypIPv4, ip
		}
		c, code := socksRequest(t, e.socksAddr, socksCmdConnect, atyp, dst, port)
		t.Cleanup(func() { c.Close() })
		if code != socksOK {
			t.Fatalf("SOCKS %s: reply %d", host, code)
		}
		return c
	},
}

// TestSNICheckEveryPath: capture, CONNECT and SOCKS hold the ClientHello
// to the same rule: the server name, normalised (case, trailing dot),
// must be the target; a handshake record that is no ClientHello is
// refused; on a connection to an IP literal the name must be allowed on
// its own. A refused hello never reaches the upstream, and each refusal
// is one record naming the target.
func TestSNICheckEveryPath(t *testing.T) {
	port, got := recordServer(t)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "other.test", fmt.Sprintf("127.0.0.1:%d", port)},
		Denied: []string{"denied.test"}}, nil)
	defer e.close()
	garbage := []byte{0x16, 3, 1, 0, 9, 'b', 'a', 'd', '-', 'h', 'e', 'l', 'l', 'o'}
	cases := []struct {
		name, target string
		hello        []byte
		rule         string // "" when it must pass
	}{
		{"same name", "allowed.test", rawHello("allowed.test", false), ""},
		{"case and trailing dot", "allowed.test", rawHello("ALLOWED.test.", false), ""},
		{"no name", "allowed.test", rawHello("", false), ""},
		{"split over records", "allowed.test", rawHello("allowed.test", true), ""},
		{"crypto/tls", "allowed.test", goHello(t, "allowed.test"), ""},
		{"trailing dot other name", "allowed.test", rawHello("evil.test.", false), RuleSNIMismatch},
		{"other allowed name", "allowed.test", rawHello("other.test", false), RuleSNIMismatch},
		{"an address as name", "allowed.test", rawHello("127.0.0.1", false), RuleSNIMismatch},
		{"not a host name", "allowed.test", rawHello("a b.test", false), RuleSNIMismatch},
		{"malformed", "allowed.test", garbage, RuleBadClientHello},
		{"address, allowed name", "127.0.0.1", rawHello("other.test.", false), ""},
		{"address, no name", "127.0.0.1", rawHello("", false), ""},
		{"address, unlisted name", "127.0.0.1", rawHello("evil.test", false), RuleSNIMismatch},
		{"address, denied name", "127.0.0.1", rawHello("denied.test", false), RuleSNIMismatch},
		{"address, other address", "127.0.0.1", rawHello("127.0.0.2", false), RuleSNIMismatch},
	}
	for pname, open := range sniPaths {
		for _, tt := range cases {
			t.Run(pname+"/"+tt.name, func(t *testing.T) {
				before := len(e.denied.all())
				c := open(t, e, tt.target, port)
				greet := make([]byte, 6)
				if _, err := io.ReadFull(c, greet); err != nil || string(greet) != "hello\n" {
					t.Fatalf("greeting %q, %v", greet, err)
				}
				_, _ = c.Write(tt.hello)
				back, err := io.ReadAll(io.LimitReader(c, int64(len(tt.hello))))
				passed := bytes.Equal(back, tt.hello)
				d := e.denied.all()[before:]
				if tt.rule == "" {
					if !passed || len(d) != 0 {
						t.Fatalf("want the hello carried: echoed %d of %d bytes (%v), denials %+v", len(back), len(tt.hello), err, d)
					}
					return
				}
				if passed || len(back) != 0 {
					t.Fatalf("want the hello refused; %d bytes came back", len(back))
				}
				if len(d) != 1 || d[0].Rule != tt.rule || d[0].Host != tt.target || d[0].Port != port {
					t.Fatalf("want one %s denial for %s:%d, got %+v", tt.rule, tt.target, port, d)
				}
				if strings.Contains(got(), string(tt.hello[5:])) {
					t.Fatalf("the upstream received the refused hello")
				}
			})
		}
	}
}

// tlsServerName is the server name crypto/tls's own server reads from a
// ClientHello in b; ok is false when it refuses the hello.
func tlsServerName(b []byte) (sni string, ok bool) {
	a, c := net.Pipe()
	defer a.Close()
	go func() { _, _ = c.Write(b); c.Close() }()
	_ = a.SetDeadline(time.Now().Add(time.Second))
	errStop := fmt.Errorf("stop")
	_ = tls.Server(sniffOnly{a}, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni, ok = h.ServerName, true
		return nil, errStop
	}}).Handshake()
	return sni, ok
}

// sniffOnly drops what the TLS server would answer.
type sniffOnly struct{ net.Conn }

func (sniffOnly) Write(b []byte) (int, error) { return len(b), nil }

// FuzzClientHelloSNI: whatever a TLS server (crypto/tls) reads as the
// server name of a hello, the proxy's reader reads the same name, or
// refuses the hello: no hello carries one name past the check and another
// to the server. (The reader is stricter in places: bytes after the
// ClientHello in its record, a trailing dot it keeps where crypto/tls
// refuses the hello.)
func FuzzClientHelloSNI(f *testing.F) {
	f.Add(rawHello("allowed.test", false))
	f.Add(rawHello("allowed.test", true))
	f.Add(rawHello("", false))
	f.Add(patchHello(rawHello("allowed.test", false), []byte{0, 0, 0, 13, 0, 11, 0, 0, 8, 'e', 'v', 'i', 'l', '.', 't', 'e', 's'}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != recordTypeHandshake || len(b) > 1<<16 {
			return
		}
		want, ok := tlsServerName(b)
		if !ok {
			return
		}
		got, err := helloOf(b)
		if err == nil && got != want {
			t.Fatalf("crypto/tls reads %q, the proxy %q (%v)", want, got, err)
		}
	})
}
