// Package hostaddr owns what sbx knows about host names and addresses
// as text: the canonical form of a destination host (the spellings of
// one address that inet_aton(3), IPv6 and its embedded-IPv4 forms
// accept), the address ranges the egress proxy refuses after resolution
// (loopback, link-local, metadata, private, CGNAT, …: [Classify]), and
// the shape of an allowedDomains entry ([SplitEntry]).
//
// It is a leaf shared by two packages that may not import each other:
// netproxy, which enforces these facts on every connection, and policy,
// which refuses a settings file outside the trust boundary that names a
// guarded address (an address the proxy would otherwise exempt from its
// guard because an allow entry names it literally). One table, so that a
// range added for the proxy is refused in an untrusted file too.
package hostaddr

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Address classes the guard refuses after resolution.
const (
	Loopback    = "loopback"
	Metadata    = "cloud metadata"
	LinkLocal   = "link-local"
	Private     = "private"
	CGNAT       = "carrier-grade NAT"
	Unspecified = "unspecified"
	Multicast   = "multicast"
	Reserved    = "reserved"
)

// Range is one guarded range and its class.
type Range struct {
	Prefix netip.Prefix
	Class  string
}

// Guarded lists the refused ranges; more specific entries come first so
// the reason names the most precise class. NAT64 (64:ff9b::/96) and 6to4
// (2002::/16) addresses are judged by the IPv4 address they embed
// (Classify), IPv4-mapped ones as IPv4.
var Guarded = func() []Range {
	var out []Range
	add := func(class string, cidrs ...string) {
		for _, c := range cidrs {
			out = append(out, Range{netip.MustParsePrefix(c), class})
		}
	}
	add(Metadata, "169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32", "168.63.129.16/32")
	add(Unspecified, "0.0.0.0/8", "::/128")
	add(Loopback, "127.0.0.0/8", "::1/128")
	add(LinkLocal, "169.254.0.0/16", "fe80::/10")
	add(Private, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")
	add(CGNAT, "100.64.0.0/10")
	add(Multicast, "224.0.0.0/4", "ff00::/8")
	add(Reserved, "240.0.0.0/4", "::/96", "64:ff9b:1::/48")
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Classify returns the class of a guarded address (its range in
// Guarded, or the class of the IPv4 address a NAT64 or 6to4 address
// embeds, with " (NAT64)" or " (6to4)"), or "" for an ordinary public
// address. The host's own interface addresses are the caller's to add.
func Classify(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, g := range Guarded {
		if g.Prefix.Contains(ip) {
			return g.Class
		}
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		if c := Classify(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
			return c + " (NAT64)"
		}
	}
	if sixToFour.Contains(ip) {
		b := ip.As16()
		if c := Classify(netip.AddrFrom4([4]byte(b[2:6]))); c != "" {
			return c + " (6to4)"
		}
	}
	return ""
}

// IsLocalhostName reports whether the canonical name is "localhost" or
// ends in ".localhost": RFC 6761 §6.3 reserves these for loopback.
func IsLocalhostName(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// maxHostLen is the longest host name accepted (RFC 1035, without the
// optional trailing dot).
const maxHostLen = 253

// Canonical returns the canonical form of a destination host: lower
// case, no trailing dot, IPv6 without brackets, IPv4-mapped IPv6 as
// IPv4, and the numeric IPv4 forms that inet_aton(3) accepts (127.1,
// 2130706433, 0x7f.1, 0177.0.0.1) as a dotted quad. ip is valid iff the
// host is an address. It refuses control characters, spaces, non-ASCII
// bytes, IPv6 zones, empty or over-long labels and names whose last
// label is numeric but that are not a valid IPv4 address.
func Canonical(h string) (name string, ip netip.Addr, err error) {
	if h == "" {
		return "", netip.Addr{}, errors.New("empty host")
	}
	for i := 0; i < len(h); i++ {
		if b := h[i]; b <= ' ' || b >= 0x7f {
			return "", netip.Addr{}, fmt.Errorf("host %q contains a control character, space or non-ASCII byte (use the xn-- form for international names)", h)
		}
	}
	if strings.HasPrefix(h, "[") || strings.HasSuffix(h, "]") {
		if len(h) < 2 || h[0] != '[' || h[len(h)-1] != ']' {
			return "", netip.Addr{}, fmt.Errorf("host %q has unbalanced brackets", h)
		}
		inner := h[1 : len(h)-1]
		if !strings.Contains(inner, ":") {
			return "", netip.Addr{}, fmt.Errorf("host %q: brackets are only for IPv6 addresses", h)
		}
		h = inner
	}
	if strings.Contains(h, ":") {
		return canonIPv6(h)
	}
	if len(h) > maxHostLen+1 {
		return "", netip.Addr{}, fmt.Errorf("host %q is longer than %d bytes", h, maxHostLen)
	}
	h = strings.ToLower(h)
	h = strings.TrimSuffix(h, ".")
	if len(h) > maxHostLen {
		return "", netip.Addr{}, fmt.Errorf("host %q is longer than %d bytes", h, maxHostLen)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return "", netip.Addr{}, fmt.Errorf("host %q: %w", h, err)
		}
	}
	if looksNumeric(labels[len(labels)-1]) {
		ip, err := parseIPv4Numeric(labels)
		if err != nil {
			return "", netip.Addr{}, fmt.Errorf("host %q ends in a number but is not an IPv4 address: %w", h, err)
		}
		return ip.String(), ip, nil
	}
	return h, netip.Addr{}, nil
}

func canonIPv6(h string) (string, netip.Addr, error) {
	if strings.Contains(h, "%") {
		return "", netip.Addr{}, fmt.Errorf("host %q: IPv6 zones are not accepted", h)
	}
	ip, err := netip.ParseAddr(h)
	if err != nil || !ip.Is6() {
		return "", netip.Addr{}, fmt.Errorf("host %q is not a valid IPv6 address", h)
	}
	ip = ip.Unmap()
	return ip.String(), ip, nil
}

func checkLabel(l string) error {
	if l == "" {
		return errors.New("empty label")
	}
	if len(l) > 63 {
		return fmt.Errorf("label %q is longer than 63 bytes", l)
	}
	for i := 0; i < len(l); i++ {
		b := l[i]
		switch {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '-', b == '_':
		default:
			return fmt.Errorf("label %q contains %q", l, b)
		}
	}
	return nil
}

// looksNumeric reports whether a label is a number in the sense of the
// WHATWG URL host parser ("ends in a number"): all decimal digits, or 0x
// followed by hex digits.
func looksNumeric(l string) bool {
	if strings.HasPrefix(l, "0x") {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f'
}

// parseIPv4Numeric implements inet_aton's forms: one to four parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the
// remaining bytes.
func parseIPv4Numeric(parts []string) (netip.Addr, error) {
	if len(parts) > 4 {
		return netip.Addr{}, errors.New("more than four parts")
	}
	var v uint64
	for i, p := range parts {
		n, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, err
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, fmt.Errorf("part %q is larger than 255", p)
			}
			v = v<<8 | n
			continue
		}
		rest := uint(8 * (5 - len(parts)))
		if n >= 1<<rest {
			return netip.Addr{}, fmt.Errorf("part %q is out of range", p)
		}
		v = v<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

func parseIPv4Part(p string) (uint64, error) {
	base, digits := 10, p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, nil // "0x" is zero, as in the WHATWG parser
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if len(digits) > 12 {
		return 0, fmt.Errorf("part %q is out of range", p)
	}
	n, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, fmt.Errorf("part %q is not a number", p)
	}
	return n, nil
}

// SplitEntry splits an allowedDomains / deniedDomains entry's host part
// from its port: "host", "host:port", "[v6]", "[v6]:port" and a bare
// IPv6 address (no port). port is 0 when the entry has none. The host
// part is returned as written (a leading "*." included).
func SplitEntry(s string) (hostPart string, port int, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("missing \"]\" after an IPv6 address")
		}
		hostPart, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return hostPart, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("unexpected %q after \"]\"", rest)
		}
		port, err := ParsePort(rest[1:])
		return hostPart, port, err
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		hostPart, portText, _ := strings.Cut(s, ":")
		port, err := ParsePort(portText)
		return hostPart, port, err
	default:
		return s, 0, nil // a bare IPv6 address; Canonical validates it
	}
}

// ParsePort parses a port from 1 to 65535, decimal digits only.
func ParsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}
