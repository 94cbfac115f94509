package netproxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"
)

// ProtoCapture is Denial.Proto for connections that reached the proxy by
// transparent capture (package capture) rather than through a proxy
// variable; ProtoDNS is Denial.Proto for names its resolver refused.
const (
	ProtoCapture = "capture"
	ProtoDNS     = "dns"
)

// RuleSNIMismatch is Denial.Rule for a TLS connection whose ClientHello
// names another host than the connection's target (checkSNI).
const RuleSNIMismatch = "sni-mismatch"

// DecideName is the resolver's question: may hostname be looked up at
// all, whatever the port? A deny entry without a port (or "*") refuses
// it; an allow entry for any port allows it; otherwise it is default-deny,
// except that with Config.Ask the question waits for the connection, where
// the port is known (Allowed, Rule "ask-later"). IP literals are not names
// and are refused with RuleInvalidHost. No resolver is asked.
func (p *Proxy) DecideName(hostname string) Decision {
	h, err := canon(hostname)
	if err != nil {
		return Decision{Rule: RuleInvalidHost, Reason: err.Error()}
	}
	if h.isIP() {
		return Decision{Rule: RuleInvalidHost, Reason: "an IP address is not a name to resolve"}
	}
	pol := p.pol.Load()
	portless := func(pt *pattern) bool { return pt.port == 0 }
	anyPort := func(*pattern) bool { return true }
	if d := pol.deny.matchWith(h, portless); d != nil {
		return Decision{Rule: d.raw, Reason: pol.denyReason(d)}
	}
	if a := pol.allow.matchWith(h, anyPort); a != nil {
		return Decision{Allowed: true, Rule: a.raw, Reason: "allowed by network.allowedDomains entry " + quote(a.raw)}
	}
	if p.ask != nil {
		return Decision{Allowed: true, Rule: "ask-later", Reason: "not listed; asked when a connection is made (--ask-fd)"}
	}
	return Decision{Rule: RuleDefault, Reason: "not in network.allowedDomains"}
}

// Report passes d to Config.OnDeny: for refusals decided outside the
// proxy's own listeners (the capture resolver's NXDOMAIN, a refused UDP
// datagram), so every network refusal reaches one place.
func (p *Proxy) Report(d Denial) { p.report(d) }

// Captured is a captured destination that VetCaptured allowed: the name
// (or IP literal) and port, the addresses that passed the guard, and the
// upstream connection already being dialled.
type Captured struct {
	host    string
	port    int
	targets []netip.AddrPort
	early   chan dialed // the dial VetCaptured started; nil when terminated
	p       *Proxy
}

// dialed is the outcome of an upstream dial.
type dialed struct {
	c   net.Conn
	err error
}

// Abandon closes the upstream connection VetCaptured started for t, for
// a connection that will not be served (its handshake failed). Every
// Captured is either served (ServeVetted) or abandoned.
func (t *Captured) Abandon() {
	if t == nil || t.early == nil {
		return
	}
	go func() {
		if d := <-t.early; d.c != nil {
			_ = d.c.Close()
			t.p.untrackUpstream(d.c)
		}
	}()
}

// terminates reports whether TLS termination serves hostname:port: only
// port 443 (a CONNECT says the client means to tunnel, a captured
// connection to another port may be any protocol, SSH or a database, and
// is relayed opaquely, with the SNI check).
func (p *Proxy) terminates(hostname string, port int) bool {
	return p.mitm != nil && port == 443 && !p.mitm.excluded(hostname, port)
}

// upstream is the connection to t's destination, registered with
// trackUpstream (Close interrupts it): the one VetCaptured started, or a
// new dial.
func (p *Proxy) upstream(t *Captured) (net.Conn, error) {
	if t.early != nil {
		d := <-t.early
		return d.c, d.err
	}
	return p.dialTracked(p.ctx, t.host, t.port, t.targets)
}

// ErrRefused is VetCaptured's error for a destination the policy refused
// (the refusal is already reported).
var ErrRefused = errors.New("netproxy: refused by policy")

// VetCaptured decides a captured connection to hostname:port before its
// handshake completes, exactly as a CONNECT to hostname:port is decided
// (matching and Ask, the address guard on the real resolved addresses,
// the parent proxy): a refusal is reported (Proto "capture") and returned
// as ErrRefused; a failed lookup is returned as it is. Capture answers
// either with a reset, so the client sees ECONNREFUSED.
func (p *Proxy) VetCaptured(hostname string, port int) (*Captured, error) {
	targets, d, err := p.vet(p.ctx, ProtoCapture, hostname, port)
	switch {
	case d != nil:
		if p.capturedRefusals.First(*d) {
			p.report(*d)
		}
		return nil, ErrRefused
	case err != nil:
		return nil, err
	}
	t := &Captured{host: hostname, port: port, targets: targets, p: p}
	if !p.terminates(hostname, port) {
		// Dial now: the upstream's connect overlaps the client's
		// handshake, which completes after VetCaptured returns
		// (bench/netcompare's capture latency rows: 0.05 ms sooner to a
		// server's greeting on loopback). The connection is registered
		// at once, so that Close ends it even before anyone takes it.
		// Terminated connections dial after the ClientHello.
		t.early = make(chan dialed, 1)
		go func() {
			c, err := p.dialTracked(p.ctx, hostname, port, targets)
			t.early <- dialed{c, err}
		}()
	}
	return t, nil
}

// askWindow is how long an --ask-fd answer about a captured name:port
// stands for the same client's next attempts.
const askWindow = 2 * time.Second

type askKey struct {
	host string
	port int
}

type askMemo struct {
	allow bool
	at    time.Time
}

// askFor asks about hostname:port (--ask-fd). A captured connection is
// one of several attempts of one client (each address the name resolved
// to, IPv6 then IPv4, and retries), so an answer about a captured
// destination stands for the next askWindow: the user is asked once per
// connection, as for a CONNECT.
func (p *Proxy) askFor(ctx context.Context, proto, hostname string, port int) bool {
	if proto != ProtoCapture {
		return p.ask(ctx, hostname, port)
	}
	k := askKey{hostname, port}
	p.askMu.Lock()
	m, ok := p.asked[k]
	p.askMu.Unlock()
	if ok && time.Since(m.at) < askWindow {
		return m.allow
	}
	allow := p.ask(ctx, hostname, port)
	p.askMu.Lock()
	if p.asked == nil || len(p.asked) >= maxOnce {
		p.asked = map[askKey]askMemo{}
	}
	p.asked[k] = askMemo{allow, time.Now()}
	p.askMu.Unlock()
	return allow
}

// ServeCaptured serves a TCP connection that the sandbox's command made to
// hostname:port and that capture took off the wire: VetCaptured, then
// ServeVetted. A refused connection is closed.
func (p *Proxy) ServeCaptured(c net.Conn, hostname string, port int) {
	t, err := p.VetCaptured(hostname, port)
	if err != nil {
		_ = c.Close()
		return
	}
	p.ServeVetted(c, t)
}

// ServeVetted serves a captured connection that VetCaptured allowed, as a
// CONNECT to the same name and port would be served (the same parent
// proxy and, for port 443 only, TLS termination and credentials; the same
// violations). The upstream is always that name at that port; nothing in
// the payload can change it. The client's first flight passes the SNI
// check every path applies (sniff): a ClientHello naming another host is
// refused (RuleSNIMismatch), a handshake record that is no well-formed
// ClientHello too (RuleBadClientHello), before any of its bytes go
// upstream.
// ServeVetted closes c and returns when the connection is done.
func (p *Proxy) ServeVetted(c net.Conn, t *Captured) {
	if !p.trackClient(c) {
		_ = c.Close()
		t.Abandon()
		return
	}
	defer func() {
		_ = c.Close()
		p.untrackClient(c)
	}()
	defer func() {
		if v := recover(); v != nil {
			p.recovered(v)
		}
	}()
	hostname, port, targets := t.host, t.port, t.targets
	if p.terminates(hostname, port) {
		// Terminated as a CONNECT to name:443 would be.
		_ = c.SetReadDeadline(time.Now().Add(p.lim.readHeader))
		early, d, err := p.sniff(ProtoCapture, c, hostname, port, nil)
		_ = c.SetReadDeadline(noDeadline)
		if d != nil {
			p.report(*d)
		}
		if d != nil || err != nil {
			return
		}
		p.terminate(c, early, hostname, port, targets)
		return
	}
	upstream, err := p.upstream(t)
	if err != nil {
		return
	}
	defer p.untrackUpstream(upstream)
	p.sniffTunnel(ProtoCapture, c, upstream, hostname, port, nil)
}
