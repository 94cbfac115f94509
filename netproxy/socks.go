package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928) constants used here.
const (
	socksVersion      = 5
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff

	socksCmdConnect = 1
	socksCmdBind    = 2
	socksCmdUDP     = 3

	socksAtypIPv4   = 1
	socksAtypDomain = 3
	socksAtypIPv6   = 4

	socksOK              = 0x00
	socksGeneralFailure  = 0x01
	socksNotAllowed      = 0x02
	socksNetUnreachable  = 0x03
	socksHostUnreachable = 0x04
	socksRefused         = 0x05
	socksCmdUnsupported  = 0x07
	socksAtypUnsupported = 0x08
)

// ServeSOCKS serves SOCKS5 (no authentication, CONNECT only) on l until
// Close. Names are resolved by the proxy (socks5h). It returns nil after
// Close, ErrClosed if Close came first, or the listener's error.
func (p *Proxy) ServeSOCKS(l net.Listener) error {
	if err := p.addListener(l); err != nil {
		return err
	}
	defer p.removeListener(l)
	ln := &listener{Listener: l, p: p}
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosed() {
				return nil
			}
			if !errors.Is(err, net.ErrClosed) && p.acceptBackoff(&backoff) {
				continue // e.g. EMFILE: wait for descriptors to free up
			}
			if p.isClosed() {
				return nil
			}
			return fmt.Errorf("netproxy: socks5: %w", err)
		}
		backoff = 0
		go p.serveSOCKSConn(c.(*clientConn))
	}
}

func (p *Proxy) serveSOCKSConn(cc *clientConn) {
	defer cc.Close()
	defer func() {
		if v := recover(); v != nil {
			p.recovered(v)
		}
	}()
	c := cc.Conn // raw, so the tunnel can splice
	_ = c.SetDeadline(time.Now().Add(p.lim.readHeader))
	cmd, hostname, port, err := socksHandshake(c)
	if err != nil {
		return // garbage, a slow client or an unsupported address type
	}
	_ = c.SetDeadline(noDeadline) // lookup and dial have their own limits
	if cmd != socksCmdConnect {
		p.report(Denial{Proto: "socks5", Host: truncate(hostname), Port: port, Rule: RuleProtocol,
			Reason: "SOCKS5 " + socksCmdName(cmd) + " is not supported; only CONNECT"})
		_ = socksReply(c, socksCmdUnsupported)
		return
	}
	targets, d, err := p.vet(p.ctx, "socks5", hostname, port)
	switch {
	case d != nil:
		p.report(*d)
		_ = socksReply(c, socksNotAllowed)
		return
	case err != nil:
		_ = socksReply(c, socksHostUnreachable)
		return
	}
	upstream, err := p.dialVetted(p.ctx, hostname, port, targets)
	if err != nil {
		_ = socksReply(c, dialErrorCode(err))
		return
	}
	if err := socksReply(c, socksOK); err != nil {
		_ = upstream.Close()
		return
	}
	p.sniffTunnel("socks5", c, upstream, hostname, port, nil)
}

// socksHandshake reads the greeting, accepts "no authentication" and reads
// the request. It reads exactly the handshake's bytes, so data a client
// sends early stays in the socket for the tunnel.
func socksHandshake(c net.Conn) (cmd byte, hostname string, port int, err error) {
	var b [256]byte
	if _, err = io.ReadFull(c, b[:2]); err != nil {
		return 0, "", 0, fmt.Errorf("greeting: %w", err)
	}
	if b[0] != socksVersion {
		return 0, "", 0, fmt.Errorf("greeting: version %d", b[0])
	}
	methods := b[:b[1]]
	if _, err = io.ReadFull(c, methods); err != nil {
		return 0, "", 0, fmt.Errorf("greeting: %w", err)
	}
	method := byte(socksNoAcceptable)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err = c.Write([]byte{socksVersion, method}); err != nil || method != socksNoAuth {
		return 0, "", 0, fmt.Errorf("greeting: no acceptable method (%v)", err)
	}
	if _, err = io.ReadFull(c, b[:4]); err != nil {
		return 0, "", 0, fmt.Errorf("request: %w", err)
	}
	if b[0] != socksVersion {
		return 0, "", 0, fmt.Errorf("request: version %d", b[0])
	}
	cmd = b[1]
	switch atyp := b[3]; atyp {
	case socksAtypIPv4, socksAtypIPv6:
		n := 4
		if atyp == socksAtypIPv6 {
			n = 16
		}
		if _, err = io.ReadFull(c, b[:n]); err != nil {
			return 0, "", 0, fmt.Errorf("request: %w", err)
		}
		ip, _ := netip.AddrFromSlice(b[:n])
		hostname = ip.String()
	case socksAtypDomain:
		if _, err = io.ReadFull(c, b[:1]); err != nil {
			return 0, "", 0, fmt.Errorf("request: %w", err)
		}
		n := int(b[0])
		if _, err = io.ReadFull(c, b[:n]); err != nil {
			return 0, "", 0, fmt.Errorf("request: %w", err)
		}
		hostname = string(b[:n])
	default:
		_ = socksReply(c, socksAtypUnsupported)
		return 0, "", 0, fmt.Errorf("request: address type %d", atyp)
	}
	if _, err = io.ReadFull(c, b[:2]); err != nil {
		return 0, "", 0, fmt.Errorf("request: %w", err)
	}
	return cmd, hostname, int(binary.BigEndian.Uint16(b[:2])), nil
}

func socksCmdName(cmd byte) string {
	switch cmd {
	case socksCmdBind:
		return "BIND"
	case socksCmdUDP:
		return "UDP ASSOCIATE"
	}
	return fmt.Sprintf("command %d", cmd)
}

// socksReply sends a reply with an unspecified bound address (the
// supervisor's own addresses are none of the sandbox's business).
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func dialErrorCode(err error) byte {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return socksHostUnreachable
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return socksHostUnreachable
	}
	return socksGeneralFailure
}
