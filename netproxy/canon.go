package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// maxHostLen is the longest host name accepted (RFC 1035, without the
// optional trailing dot).
const maxHostLen = 253

// host is a canonical destination: either a lower-case DNS name or an IP
// address (IPv4-mapped IPv6 addresses are unmapped to IPv4).
type host struct {
	name string     // canonical text: lower-case name, dotted quad or RFC 5952 IPv6
	ip   netip.Addr // valid iff the host is an IP literal
}

func (h host) isIP() bool { return h.ip.IsValid() }

// Canonicalize returns the canonical form of a destination host as the
// proxy matches it: lower case, no trailing dot, IPv6 without brackets or
// zone, IPv4-mapped IPv6 as IPv4, and the numeric IPv4 forms that
// inet_aton(3) accepts (127.1, 2130706433, 0x7f.1, 0177.0.0.1) as a dotted
// quad. It refuses control characters, spaces, non-ASCII bytes, empty or
// over-long labels and names whose last label is numeric but that are not
// a valid IPv4 address.
func Canonicalize(h string) (string, error) {
	c, err := canon(h)
	if err != nil {
		return "", err
	}
	return c.name, nil
}

func canon(h string) (host, error) {
	if h == "" {
		return host{}, errors.New("empty host")
	}
	for i := 0; i < len(h); i++ {
		if b := h[i]; b <= ' ' || b >= 0x7f {
			return host{}, fmt.Errorf("host %q contains a control character, space or non-ASCII byte (use the xn-- form for international names)", h)
		}
	}
	if strings.HasPrefix(h, "[") || strings.HasSuffix(h, "]") {
		if len(h) < 2 || h[0] != '[' || h[len(h)-1] != ']' {
			return host{}, fmt.Errorf("host %q has unbalanced brackets", h)
		}
		inner := h[1 : len(h)-1]
		if !strings.Contains(inner, ":") {
			return host{}, fmt.Errorf("host %q: brackets are only for IPv6 addresses", h)
		}
		h = inner
	}
	if strings.Contains(h, ":") {
		return canonIPv6(h)
	}
	if len(h) > maxHostLen+1 {
		return host{}, fmt.Errorf("host %q is longer than %d bytes", h, maxHostLen)
	}
	h = strings.ToLower(h)
	h = strings.TrimSuffix(h, ".")
	if len(h) > maxHostLen {
		return host{}, fmt.Errorf("host %q is longer than %d bytes", h, maxHostLen)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return host{}, fmt.Errorf("host %q: %w", h, err)
		}
	}
	if looksNumeric(labels[len(labels)-1]) {
		ip, err := parseIPv4Numeric(labels)
		if err != nil {
			return host{}, fmt.Errorf("host %q ends in a number but is not an IPv4 address: %w", h, err)
		}
		return host{name: ip.String(), ip: ip}, nil
	}
	return host{name: h}, nil
}

func canonIPv6(h string) (host, error) {
	if strings.Contains(h, "%") {
		return host{}, fmt.Errorf("host %q: IPv6 zones are not accepted", h)
	}
	ip, err := netip.ParseAddr(h)
	if err != nil || !ip.Is6() {
		return host{}, fmt.Errorf("host %q is not a valid IPv6 address", h)
	}
	ip = ip.Unmap()
	return host{name: ip.String(), ip: ip}, nil
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
