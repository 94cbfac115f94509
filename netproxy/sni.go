package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// RuleBadClientHello is Denial.Rule for a connection whose first bytes
// start a TLS handshake record that does not carry a well-formed
// ClientHello: what the proxy cannot read, it cannot compare, so it is
// not sent on.
const RuleBadClientHello = "bad-client-hello"

// TLS wire constants used by the ClientHello reader.
const (
	recordTypeHandshake  = 0x16
	handshakeClientHello = 1
	extServerName        = 0
	maxRecordPlaintext   = 1 << 14
	maxClientHello       = 64 << 10 // no real ClientHello comes near this
)

// readClientHello reads the client's ClientHello from c, starting with
// first (bytes already read, first[0] == 0x16), reassembling a handshake
// message split over several records. It returns every byte read (to be
// sent on as they came) and the raw server name ("" when the hello has
// none). The reads after first share one deadline, timeout from now. An
// error means the bytes are not a well-formed ClientHello.
func readClientHello(c net.Conn, first []byte, timeout time.Duration) (raw []byte, sni string, err error) {
	raw = append(make([]byte, 0, max(len(first), 512)), first...)
	var msg []byte
	off := 0 // start of the next record in raw
	deadlineSet := false
	fill := func(n int) error { // read until len(raw) >= n
		if !deadlineSet {
			_ = c.SetReadDeadline(time.Now().Add(timeout))
			deadlineSet = true
		}
		for len(raw) < n {
			if cap(raw)-len(raw) < 512 {
				raw = append(raw, make([]byte, 4096)...)[:len(raw)]
			}
			m, err := c.Read(raw[len(raw):cap(raw)])
			raw = raw[:len(raw)+m]
			if err != nil && len(raw) < n {
				if errors.Is(err, io.EOF) {
					return io.ErrUnexpectedEOF
				}
				return err
			}
		}
		return nil
	}
	defer func() {
		if deadlineSet {
			_ = c.SetReadDeadline(noDeadline)
		}
	}()
	for {
		if err := fill(off + 5); err != nil {
			return raw, "", fmt.Errorf("record header: %w", err)
		}
		h := raw[off : off+5]
		if h[0] != recordTypeHandshake {
			return raw, "", fmt.Errorf("record type %#x before the ClientHello was complete", h[0])
		}
		if h[1] != 3 {
			return raw, "", fmt.Errorf("record version %d.%d", h[1], h[2])
		}
		n := int(binary.BigEndian.Uint16(h[3:5]))
		if n == 0 || n > maxRecordPlaintext {
			return raw, "", fmt.Errorf("record length %d", n)
		}
		if err := fill(off + 5 + n); err != nil {
			return raw, "", fmt.Errorf("record: %w", err)
		}
		msg = append(msg, raw[off+5:off+5+n]...)
		off += 5 + n
		if len(msg) < 4 {
			continue
		}
		if msg[0] != handshakeClientHello {
			return raw, "", fmt.Errorf("handshake message type %d, not a ClientHello", msg[0])
		}
		body := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if body > maxClientHello {
			return raw, "", fmt.Errorf("ClientHello of %d bytes", body)
		}
		if len(msg) < 4+body {
			continue
		}
		if len(msg) > 4+body {
			return raw, "", errors.New("bytes after the ClientHello in its record")
		}
		sni, err := clientHelloSNI(msg[4:])
		return raw, sni, err
	}
}

// clientHelloSNI returns the host_name of the server_name extension of a
// ClientHello body, "" when there is none. It holds the body to the
// rules a TLS server holds it to (exact lengths, each extension at most
// once, one host_name), so that the name read here is the one the
// server reads; unlike crypto/tls it keeps a trailing dot, which the
// caller normalises.
func clientHelloSNI(b []byte) (string, error) {
	s := cursor(b)
	if _, ok := s.take(2 + 32); !ok { // legacy_version, random
		return "", errors.New("short ClientHello")
	}
	sid, ok := s.vec8()
	if !ok || len(sid) > 32 {
		return "", errors.New("bad session id")
	}
	suites, ok := s.vec16()
	if !ok || len(suites) == 0 || len(suites)%2 != 0 {
		return "", errors.New("bad cipher suites")
	}
	if comp, ok := s.vec8(); !ok || len(comp) == 0 {
		return "", errors.New("bad compression methods")
	}
	if len(s) == 0 {
		return "", nil // no extensions
	}
	exts, ok := s.vec16()
	if !ok || len(s) != 0 {
		return "", errors.New("bad extensions block")
	}
	seen := map[uint16]bool{}
	sni := ""
	for len(exts) > 0 {
		typ, ok1 := exts.u16()
		data, ok2 := exts.vec16()
		if !ok1 || !ok2 {
			return "", errors.New("bad extension")
		}
		if seen[typ] {
			return "", fmt.Errorf("extension %d twice", typ)
		}
		seen[typ] = true
		if typ != extServerName {
			continue
		}
		list, ok := data.vec16()
		if !ok || len(data) != 0 || len(list) == 0 {
			return "", errors.New("bad server_name extension")
		}
		for len(list) > 0 {
			nt, ok1 := list.u8()
			name, ok2 := list.vec16()
			if !ok1 || !ok2 || len(name) == 0 {
				return "", errors.New("bad server_name entry")
			}
			if nt != 0 {
				continue
			}
			if sni != "" {
				return "", errors.New("two host names in server_name")
			}
			sni = string(name)
		}
	}
	return sni, nil
}

// cursor reads big-endian fields off the front of a byte slice.
type cursor []byte

func (c *cursor) take(n int) ([]byte, bool) {
	if len(*c) < n {
		return nil, false
	}
	b := (*c)[:n]
	*c = (*c)[n:]
	return b, true
}

func (c *cursor) u8() (byte, bool) {
	b, ok := c.take(1)
	if !ok {
		return 0, false
	}
	return b[0], true
}

func (c *cursor) u16() (uint16, bool) {
	b, ok := c.take(2)
	if !ok {
		return 0, false
	}
	return binary.BigEndian.Uint16(b), true
}

func (c *cursor) vec8() (cursor, bool) {
	n, ok := c.u8()
	if !ok {
		return nil, false
	}
	b, ok := c.take(int(n))
	return b, ok
}

func (c *cursor) vec16() (cursor, bool) {
	n, ok := c.u16()
	if !ok {
		return nil, false
	}
	b, ok := c.take(int(n))
	return b, ok
}

// checkSNI is the one server-name check of every path (capture, CONNECT,
// SOCKS, terminated or not): the ClientHello's server name, normalised
// as a destination is (case, trailing dot), must be the target's name.
// No server name passes (a client that dialled an address sends none).
// When the target is an IP literal, a server name cannot be compared
// with it, and must then be a name the rules allow at that port on its
// own (the deny list first); it is never asked about (--ask-fd).
func (p *Proxy) checkSNI(proto string, target host, port int, sni string) *Denial {
	if sni == "" {
		return nil
	}
	deny := func(reason string) *Denial {
		return &Denial{Proto: proto, Host: target.name, Port: port, Rule: RuleSNIMismatch, Reason: reason}
	}
	s, err := canon(sni)
	if err != nil {
		return deny("TLS server name " + quote(truncate(sni)) + " is not a host name: " + err.Error())
	}
	if s.name == target.name {
		return nil
	}
	if target.isIP() && !s.isIP() {
		d, _ := p.pol.Load().decide(s, port)
		if d.Allowed {
			return nil
		}
		return deny("TLS server name " + quote(s.name) + " on a connection to the address " + target.name + " is not allowed itself (" + d.Reason + ")")
	}
	return deny("TLS server name " + quote(truncate(sni)) + " differs from the connection's target, " + quote(target.name))
}

// sniff reads the client's first bytes on a connection to hostname:port
// (early: bytes already read, such as those a CONNECT client sent after
// its request). When they start a TLS handshake record, it reads the
// whole ClientHello and applies checkSNI; bytes that start a handshake
// record but are no well-formed ClientHello are refused
// (RuleBadClientHello). It returns every byte read, to be sent on first,
// or the refusal. A first read that returns nothing (the client closed
// or half-closed) returns nothing; a client that goes away in the middle
// of its ClientHello is an error, not a refusal.
func (p *Proxy) sniff(proto string, c net.Conn, hostname string, port int, early []byte) ([]byte, *Denial, error) {
	target, err := canon(hostname)
	if err != nil {
		target = host{name: hostname}
	}
	first := early
	if len(first) == 0 {
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		if n == 0 {
			return nil, nil, nil
		}
		first = buf[:n]
	}
	if first[0] != recordTypeHandshake {
		return first, nil, nil
	}
	raw, sni, err := readClientHello(c, first, p.lim.readHeader)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return nil, nil, fmt.Errorf("client went away during its ClientHello: %w", err)
	}
	if err != nil {
		return nil, &Denial{Proto: proto, Host: target.name, Port: port, Rule: RuleBadClientHello,
			Reason: "the client's first bytes start a TLS handshake but are no well-formed ClientHello (" + err.Error() + ")"}, nil
	}
	if d := p.checkSNI(proto, target, port, sni); d != nil {
		return nil, d, nil
	}
	return raw, nil, nil
}

// sniffTunnel is the opaque tunnel of every path (CONNECT, SOCKS,
// capture): the upstream's bytes flow to the client at once (a server may
// speak first: SSH, SMTP, databases) while the client's first flight is
// read and checked by sniff; then those bytes go upstream and the rest is
// relayed as tunnel relays it (spliced when both are *net.TCPConn). A
// refusal is reported and closes both before any client byte went
// upstream. early are client bytes already read.
func (p *Proxy) sniffTunnel(proto string, client, upstream net.Conn, hostname string, port int, early []byte) {
	if !p.trackUpstream(upstream) {
		_ = upstream.Close()
		return
	}
	defer p.untrackUpstream(upstream)
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay(client, upstream)
	}()
	first, d, err := p.sniff(proto, client, hostname, port, early)
	if d != nil {
		p.report(*d)
	}
	if d == nil && err == nil && len(first) > 0 {
		if _, werr := upstream.Write(first); werr != nil {
			err = werr
		}
	}
	if d != nil || err != nil {
		_ = upstream.Close()
		_ = client.Close()
		<-done
		return
	}
	relay(upstream, client)
	<-done
	_ = client.Close()
	_ = upstream.Close()
}
