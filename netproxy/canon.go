package netproxy

import (
	"net/netip"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

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
	name, ip, err := hostaddr.Canonical(h)
	if err != nil {
		return host{}, err
	}
	return host{name: name, ip: ip}, nil
}
