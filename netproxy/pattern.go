package netproxy

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

// pattern is one parsed allowedDomains / deniedDomains entry.
type pattern struct {
	raw      string // the entry as written in the settings
	any      bool   // "*" (deny list only)
	wildcard bool   // "*.base": strict subdomains of base
	host     host   // exact host, or the base of a wildcard
	port     int    // 0 = any port
}

// literal reports whether the entry names one IP address.
func (p *pattern) literal() bool { return !p.any && !p.wildcard && p.host.isIP() }

// ValidatePattern checks one allowedDomains (denyList false) or
// deniedDomains (denyList true) entry. The error names the entry and says
// how to fix it; sbx exits 125 on such an error.
func ValidatePattern(p string, denyList bool) error {
	_, err := parsePattern(p, denyList)
	return err
}

// ExactHost is the canonical host an allowedDomains entry names exactly
// ("localhost" for "localhost:5432", "::1" for "[::1]:80"), and false for
// a wildcard or an entry ValidatePattern refuses.
func ExactHost(entry string) (string, bool) {
	p, err := parsePattern(entry, false)
	if err != nil || p.wildcard || p.any {
		return "", false
	}
	return p.host.name, true
}

func parsePattern(raw string, deny bool) (*pattern, error) {
	list := "allowedDomains"
	if deny {
		list = "deniedDomains"
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("network.%s entry %q: %s", list, raw, fmt.Sprintf(format, a...))
	}
	switch {
	case raw == "":
		return nil, bad("empty entry; remove it")
	case strings.Contains(raw, "://"):
		return nil, bad("has a scheme; write only the host, e.g. \"example.com\" or \"example.com:443\"")
	case strings.ContainsAny(raw, "/?#"):
		return nil, bad("has a path, query or fragment; write only the host, e.g. \"example.com\"")
	case strings.Contains(raw, "@"):
		return nil, bad("has user information; write only the host, e.g. \"example.com\"")
	case strings.TrimSpace(raw) != raw:
		return nil, bad("has leading or trailing spaces; remove them")
	}
	if raw == "*" {
		if !deny {
			return nil, bad("\"*\" would allow every destination; list the domains you need")
		}
		return &pattern{raw: raw, any: true}, nil
	}
	hostPart, port, err := hostaddr.SplitEntry(raw)
	if err != nil {
		return nil, bad("%v", err)
	}
	p := &pattern{raw: raw, port: port}
	if base, ok := strings.CutPrefix(hostPart, "*."); ok {
		p.wildcard = true
		hostPart = base
	}
	if strings.Contains(hostPart, "*") {
		return nil, bad("a wildcard may only be a leading \"*.\", e.g. \"*.example.com\"")
	}
	h, err := canon(hostPart)
	if err != nil {
		return nil, bad("%v", err)
	}
	p.host = h
	if p.wildcard {
		if h.isIP() {
			return nil, bad("a wildcard cannot cover an IP address; list the address itself")
		}
		if !deny && isPublicSuffix(h.name) {
			return nil, bad("%q is a public suffix (or a single label), so the wildcard would allow domains of anyone; list the domains you need, e.g. \"*.example.%s\"", h.name, h.name)
		}
	}
	return p, nil
}

// isPublicSuffix reports whether name is a public suffix (com, co.uk,
// github.io) or a single label, which a wildcard must not cover.
func isPublicSuffix(name string) bool {
	if !strings.Contains(name, ".") {
		return true
	}
	ps, _ := publicsuffix.PublicSuffix(name)
	return ps == name
}
