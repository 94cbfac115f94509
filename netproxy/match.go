package netproxy

import (
	"fmt"
	"strings"
)

// Rules reported in Decision.Rule and Denial.Rule when no settings entry
// decided.
const (
	RuleDefault      = "default-deny"  // no allowedDomains entry matches
	RuleInvalidHost  = "invalid-host"  // the host failed Canonicalize
	RuleAddressGuard = "address-guard" // resolved to a refused address class
	RuleHostMismatch = "host-mismatch" // Host header disagrees with the target
	RuleOriginForm   = "origin-form"   // HTTP request without an absolute URL
	RuleProtocol     = "protocol"      // malformed or unsupported request
)

// Decision is the result of pure matching (no name resolution).
type Decision struct {
	Allowed bool
	Rule    string // the settings entry as written, or one of the Rule* constants
	Reason  string // why, fit to show to a user
}

// ruleSet is one list (allow or deny), indexed for matching in O(labels).
type ruleSet struct {
	any   *pattern              // "*" (deny list only)
	exact map[string][]*pattern // canonical host → entries (in list order)
	wild  map[string][]*pattern // wildcard base → entries
	list  []*pattern
}

func newRuleSet(entries []string, deny bool) (*ruleSet, error) {
	rs := &ruleSet{exact: map[string][]*pattern{}, wild: map[string][]*pattern{}}
	for _, e := range entries {
		p, err := parsePattern(e, deny)
		if err != nil {
			return nil, err
		}
		rs.list = append(rs.list, p)
		switch {
		case p.any:
			if rs.any == nil {
				rs.any = p
			}
		case p.wildcard:
			rs.wild[p.host.name] = append(rs.wild[p.host.name], p)
		default:
			rs.exact[p.host.name] = append(rs.exact[p.host.name], p)
		}
	}
	return rs, nil
}

func portOK(p *pattern, port int) bool { return p.port == 0 || p.port == port }

// match returns the entry covering (h, port), or nil. "*" covers
// everything; wildcards cover strict subdomains of names only; IP
// addresses are covered only by literal entries.
func (rs *ruleSet) match(h host, port int) *pattern {
	return rs.matchWith(h, func(p *pattern) bool { return portOK(p, port) })
}

// matchWith is match with the port test given by ok (DecideName asks
// about a name at any port).
func (rs *ruleSet) matchWith(h host, ok func(*pattern) bool) *pattern {
	if rs.any != nil {
		return rs.any
	}
	for _, p := range rs.exact[h.name] {
		if ok(p) {
			return p
		}
	}
	if h.isIP() || len(rs.wild) == 0 {
		return nil
	}
	name := h.name
	for {
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return nil
		}
		name = name[i+1:]
		for _, p := range rs.wild[name] {
			if ok(p) {
				return p
			}
		}
	}
}

// matchLiteral returns the literal IP entry covering (ip, port), or nil.
func (rs *ruleSet) matchLiteral(h host, port int) *pattern {
	for _, p := range rs.exact[h.name] {
		if p.literal() && portOK(p, port) {
			return p
		}
	}
	return nil
}

// Decide matches host and port against the lists without resolving
// anything: the deny list first, then the allow list, else default deny.
func (p *Proxy) Decide(hostname string, port int) Decision {
	d, _ := p.decide(hostname, port)
	return d
}

func (p *Proxy) decide(hostname string, port int) (Decision, *pattern) {
	if port < 1 || port > 65535 {
		return Decision{Rule: RuleProtocol, Reason: fmt.Sprintf("port %d is out of range", port)}, nil
	}
	h, err := canon(hostname)
	if err != nil {
		return Decision{Rule: RuleInvalidHost, Reason: err.Error()}, nil
	}
	return p.decideCanon(h, port)
}

func (p *Proxy) decideCanon(h host, port int) (Decision, *pattern) {
	return p.pol.Load().decide(h, port)
}

func (pol *policyOf) decide(h host, port int) (Decision, *pattern) {
	if d := pol.deny.match(h, port); d != nil {
		return Decision{Rule: d.raw, Reason: pol.denyReason(d)}, nil
	}
	if a := pol.allow.match(h, port); a != nil {
		return Decision{Allowed: true, Rule: a.raw, Reason: "allowed by network.allowedDomains entry " + quote(a.raw)}, a
	}
	return Decision{Rule: RuleDefault, Reason: "not in network.allowedDomains"}, nil
}

func (pol *policyOf) denyReason(d *pattern) string {
	if r, ok := pol.reasons[d.raw]; ok {
		return r
	}
	return "denied by network.deniedDomains entry " + quote(d.raw)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// MatchAny reports whether host:port matches any of patterns, in the
// allowedDomains syntax ("*" matches everything). A malformed pattern
// matches nothing.
func MatchAny(patterns []string, host string, port int) bool {
	h, err := canon(host)
	if err != nil {
		return false
	}
	for _, p := range patterns {
		rs, err := newRuleSet([]string{p}, true)
		if err == nil && rs.match(h, port) != nil {
			return true
		}
	}
	return false
}
