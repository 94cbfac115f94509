package capture

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync"
)

// The reserved ranges. 198.18.0.0/15 is RFC 2544's benchmarking block,
// never routed on the Internet; the IPv6 side is a ULA /48 (RFC 4193),
// random per run unless given. The first 256 offsets are the capture
// device's own: offset 1 is the sandbox's end of the device, offset 2 the
// resolver. Names get the offsets from 256 on, the same offset in both
// families, so 198.18.1.0 and PREFIX::100 name the same host.
var (
	V4Range = netip.MustParsePrefix("198.18.0.0/15")
)

const (
	firstNameOffset = 256
	maxOffset       = 1<<17 - 2 // 198.19.255.254; .255.255 is left out
)

// ErrFull is returned when every synthetic address of the run is taken.
var ErrFull = errors.New("capture: every synthetic address of this run is in use (over 130,000 names)")

// Names is the run's address book: one synthetic IPv4 and one IPv6
// address per name, handed out on first request and kept for the run, and
// the way back from an address to its name. It is safe for concurrent use.
type Names struct {
	v6     netip.Prefix
	mu     sync.Mutex
	byName map[string]uint32
	byOff  []string // offset-firstNameOffset → name
}

// NewNames returns an empty address book. ula is the IPv6 /48 to use; the
// zero Prefix picks a random one in fd00::/8 (RFC 4193 §3.2).
func NewNames(ula netip.Prefix) (*Names, error) {
	if !ula.IsValid() {
		var b [16]byte
		b[0] = 0xfd
		if _, err := rand.Read(b[1:6]); err != nil {
			return nil, err
		}
		ula = netip.PrefixFrom(netip.AddrFrom16(b), 48)
	}
	if !ula.Addr().Is6() || ula.Bits() != 48 || !netip.MustParsePrefix("fd00::/8").Contains(ula.Addr()) {
		return nil, errors.New("capture: the IPv6 prefix must be a /48 inside fd00::/8, e.g. fd12:3456:789a::/48")
	}
	return &Names{v6: ula.Masked(), byName: map[string]uint32{}}, nil
}

// Prefix6 is the run's IPv6 /48.
func (n *Names) Prefix6() netip.Prefix { return n.v6 }

func (n *Names) v4At(off uint32) netip.Addr {
	b := V4Range.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + off
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

func (n *Names) v6At(off uint32) netip.Addr {
	b := n.v6.Addr().As16()
	binary.BigEndian.PutUint32(b[12:], off)
	return netip.AddrFrom16(b)
}

// DeviceAddrs are the sandbox's end of the capture device (offset 1) and
// the resolver's address (offset 2), in both families.
func (n *Names) DeviceAddrs() (sandbox4, sandbox6, resolver4, resolver6 netip.Addr) {
	return n.v4At(1), n.v6At(1), n.v4At(2), n.v6At(2)
}

// Assign returns name's addresses, handing them out on first use. name
// must be canonical (lower case, no trailing dot).
func (n *Names) Assign(name string) (v4, v6 netip.Addr, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	off, ok := n.byName[name]
	if !ok {
		if len(n.byOff)+firstNameOffset > maxOffset {
			return v4, v6, ErrFull
		}
		off = uint32(len(n.byOff) + firstNameOffset)
		n.byOff = append(n.byOff, name)
		n.byName[name] = off
	}
	return n.v4At(off), n.v6At(off), nil
}

// Name returns the name an address was handed out for.
func (n *Names) Name(a netip.Addr) (string, bool) {
	a = a.Unmap()
	var off uint32
	switch {
	case a.Is4() && V4Range.Contains(a):
		b, base := a.As4(), V4Range.Addr().As4()
		off = binary.BigEndian.Uint32(b[:]) - binary.BigEndian.Uint32(base[:])
	case a.Is6() && n.v6.Contains(a):
		b := a.As16()
		if !isZero(b[6:12]) {
			return "", false
		}
		off = binary.BigEndian.Uint32(b[12:])
	default:
		return "", false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	i := int(off) - firstNameOffset
	if off < firstNameOffset || i >= len(n.byOff) {
		return "", false
	}
	return n.byOff[i], true
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// canonicalName is the DNS question's name as the policy sees it: lower
// case, no trailing dot.
func canonicalName(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".")) }
