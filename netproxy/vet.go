package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

// Resolver looks names up; *net.Resolver satisfies it.
type Resolver interface {
	LookupIP(ctx context.Context, network, host string) ([]net.IP, error)
}

// Denial describes one refused connection or request.
type Denial struct {
	Proto  string // "http", "connect" or "socks5"
	Host   string // canonical host when valid, else the host as received (truncated)
	Port   int
	Rule   string // the settings entry or Rule* constant that decided
	Reason string // human-readable; the deniedDomainReasons text when present
}

// errResolve marks a failed name lookup (not a policy refusal).
var errResolve = errors.New("cannot resolve")

var localhostAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}

// IsLocalhostName reports whether the canonical name is "localhost" or
// ends in ".localhost": RFC 6761 §6.3 reserves these for loopback, and sbx
// resolves them to 127.0.0.1 and ::1 itself, without asking any resolver,
// so such a name never leaves the machine.
func IsLocalhostName(name string) bool { return hostaddr.IsLocalhostName(name) }

// vet decides hostname:port and, when allowed, resolves the name once and
// returns the addresses that pass the guard, in resolver order. A non-nil
// Denial means a policy refusal; an error means the lookup failed.
func (p *Proxy) vet(ctx context.Context, proto, hostname string, port int) ([]netip.AddrPort, *Denial, error) {
	deny := func(h, rule, reason string) *Denial {
		return &Denial{Proto: proto, Host: h, Port: port, Rule: rule, Reason: reason}
	}
	if port < 1 || port > 65535 {
		return nil, deny(truncate(hostname), RuleProtocol, fmt.Sprintf("port %d is out of range", port)), nil
	}
	h, err := canon(hostname)
	if err != nil {
		return nil, deny(truncate(hostname), RuleInvalidHost, err.Error()), nil
	}
	pol := p.pol.Load() // one policy for the whole decision
	dec, entry := pol.decide(h, port)
	if !dec.Allowed && dec.Rule == RuleDefault && p.ask != nil {
		if p.askFor(ctx, proto, h.name, port) {
			dec = Decision{Allowed: true, Rule: "asked", Reason: "allowed when asked (--ask-fd)"}
		} else {
			dec.Reason = "not in network.allowedDomains, and refused when asked (--ask-fd)"
		}
	}
	if !dec.Allowed {
		return nil, deny(h.name, dec.Rule, dec.Reason), nil
	}
	passed := func() {
		if dec.Rule == "asked" && p.onAsked != nil {
			p.onAsked(h.name, port)
		}
	}
	if p.parentFor(h.name, port, proto == "http") != nil {
		// The parent resolves and connects (dialVetted). Where
		// addresses are denied, the name must not reach one here
		// either: sbx resolves it too, and a name it cannot resolve
		// is refused (the denial cannot be checked).
		if len(pol.deniedNets) > 0 {
			if d := p.vetDeniedNets(ctx, pol, h, deny); d != nil {
				return nil, d, nil
			}
		}
		passed()
		return nil, nil, nil
	}
	addrs, err := p.addrsOf(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	var out []netip.AddrPort
	var first *Denial
	for _, ip := range addrs {
		rule, reason := p.checkAddr(pol, ip, port, entry)
		if rule == "" {
			ap := netip.AddrPortFrom(ip, uint16(port))
			if !containsAP(out, ap) {
				out = append(out, ap)
			}
			continue
		}
		if first == nil && h.isIP() {
			first = deny(h.name, rule, reason)
		} else if first == nil {
			first = deny(h.name, rule, fmt.Sprintf("%s resolves to %s: %s", h.name, ip, reason))
		}
	}
	if len(out) == 0 {
		if first == nil {
			first = deny(h.name, RuleAddressGuard, h.name+" has no addresses")
		}
		return nil, first, nil
	}
	passed()
	return out, nil, nil
}

// addrsOf is what h stands for: itself when an address, the loopback
// addresses for a localhost name (RFC 6761 §6.3: never asked of a
// resolver), else the resolver's answer.
func (p *Proxy) addrsOf(ctx context.Context, h host) ([]netip.Addr, error) {
	switch {
	case h.isIP():
		return []netip.Addr{h.ip}, nil
	case IsLocalhostName(h.name):
		return localhostAddrs, nil
	}
	return p.lookup(ctx, h.name)
}

// vetDeniedNets refuses h when it is, or resolves to, an address in
// network.deniedResolvedAddresses (for traffic a parent proxy carries),
// or when it cannot be resolved to check that.
func (p *Proxy) vetDeniedNets(ctx context.Context, pol *policyOf, h host, deny func(h, rule, reason string) *Denial) *Denial {
	addrs, err := p.addrsOf(ctx, h)
	if err != nil {
		return deny(h.name, RuleAddressGuard, "network.deniedResolvedAddresses is set and "+h.name+" could not be resolved to check it ("+err.Error()+")")
	}
	for _, ip := range addrs {
		if n := pol.deniedBy(ip); n != nil {
			return deny(h.name, n.raw, fmt.Sprintf("%s resolves to %s: in network.deniedResolvedAddresses %s", h.name, ip, quote(n.raw)))
		}
	}
	return nil
}

// deniedBy is the network.deniedResolvedAddresses entry that holds ip,
// or nil.
func (pol *policyOf) deniedBy(ip netip.Addr) *deniedNet {
	for i := range pol.deniedNets {
		if pol.deniedNets[i].prefix.Contains(ip) {
			return &pol.deniedNets[i]
		}
	}
	return nil
}

// checkAddr applies, in order: deniedResolvedAddresses, literal deny
// entries, literal allow entries (which exempt the address from the guard)
// and the guard itself. It returns "" when ip may be dialled.
func (p *Proxy) checkAddr(pol *policyOf, ip netip.Addr, port int, entry *pattern) (rule, reason string) {
	if n := pol.deniedBy(ip); n != nil {
		return n.raw, "in network.deniedResolvedAddresses " + quote(n.raw)
	}
	h := host{name: ip.String(), ip: ip}
	if d := pol.deny.matchLiteral(h, port); d != nil {
		return d.raw, pol.denyReason(d)
	}
	if pol.allow.matchLiteral(h, port) != nil {
		return "", ""
	}
	class := classify(ip, p.own)
	if class == "" {
		return "", ""
	}
	if class == classLoopback && entry != nil && !entry.wildcard && entry.host.name == "localhost" {
		return "", ""
	}
	return RuleAddressGuard, "refused " + class + " address (allow it by listing " + quote(ip.String()) + " in network.allowedDomains)"
}

func (p *Proxy) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, p.lim.resolve)
	defer cancel()
	ips, err := p.resolver.LookupIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errResolve, name, err)
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %s: no addresses", errResolve, name)
	}
	return out, nil
}

// dialVetted dials the vetted addresses in order and returns the first
// connection made. It never resolves anything. Like net.Dialer, it gives
// each attempt an equal share of the remaining time (at least 2 s), so one
// black-holed address does not use up the whole budget.
func (p *Proxy) dialVetted(ctx context.Context, host string, port int, targets []netip.AddrPort) (net.Conn, error) {
	if targets == nil {
		if u := p.parentFor(host, port, false); u != nil {
			return p.dialParent(ctx, u, host, port)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.lim.dial)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	var last error
	for i, t := range targets {
		actx, acancel := ctx, context.CancelFunc(func() {})
		if left := len(targets) - i; left > 1 {
			deadline, _ := ctx.Deadline()
			share := max(time.Until(deadline)/time.Duration(left), 2*time.Second)
			actx, acancel = context.WithTimeout(ctx, share)
		}
		c, err := p.dial(actx, "tcp", t.String())
		acancel()
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if last == nil {
		last = errors.New("no address to dial")
	}
	return nil, fmt.Errorf("dial %v: %w", targets, last)
}

// dialTracked is dialVetted, the connection registered with
// trackUpstream so that Close interrupts it; ErrClosed when the proxy
// closed meanwhile.
func (p *Proxy) dialTracked(ctx context.Context, host string, port int, targets []netip.AddrPort) (net.Conn, error) {
	c, err := p.dialVetted(ctx, host, port, targets)
	if err != nil {
		return nil, err
	}
	if !p.trackUpstream(c) {
		_ = c.Close()
		return nil, ErrClosed
	}
	return c, nil
}

func containsAP(list []netip.AddrPort, ap netip.AddrPort) bool {
	for _, x := range list {
		if x == ap {
			return true
		}
	}
	return false
}

func truncate(s string) string {
	const max = 256
	if len(s) > max {
		return s[:max]
	}
	return s
}

func portString(port int) string { return strconv.Itoa(port) }
