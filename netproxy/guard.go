package netproxy

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Address classes the guard refuses after resolution.
const (
	classLoopback    = "loopback"
	classMetadata    = "cloud metadata"
	classLinkLocal   = "link-local"
	classPrivate     = "private"
	classCGNAT       = "carrier-grade NAT"
	classUnspecified = "unspecified"
	classMulticast   = "multicast"
	classReserved    = "reserved"
	classOwn         = "an address of this host"
)

type classPrefix struct {
	prefix netip.Prefix
	class  string
}

// guarded lists the refused ranges; more specific entries come first so
// the reason names the most precise class.
var guarded = func() []classPrefix {
	var out []classPrefix
	add := func(class string, cidrs ...string) {
		for _, c := range cidrs {
			out = append(out, classPrefix{netip.MustParsePrefix(c), class})
		}
	}
	add(classMetadata, "169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32", "168.63.129.16/32")
	add(classUnspecified, "0.0.0.0/8", "::/128")
	add(classLoopback, "127.0.0.0/8", "::1/128")
	add(classLinkLocal, "169.254.0.0/16", "fe80::/10")
	add(classPrivate, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")
	add(classCGNAT, "100.64.0.0/10")
	add(classMulticast, "224.0.0.0/4", "ff00::/8")
	add(classReserved, "240.0.0.0/4", "::/96", "64:ff9b:1::/48")
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// classify returns why ip must not be dialled without an explicit literal
// allow entry, or "" when it is an ordinary public address.
func classify(ip netip.Addr, own *ownAddrs) string {
	ip = ip.Unmap()
	for _, g := range guarded {
		if g.prefix.Contains(ip) {
			return g.class
		}
	}
	// IPv6 forms that embed an IPv4 destination: judge the embedded one.
	if nat64.Contains(ip) {
		b := ip.As16()
		if c := classify(netip.AddrFrom4([4]byte(b[12:16])), nil); c != "" {
			return c + " (NAT64)"
		}
	}
	if sixToFour.Contains(ip) {
		b := ip.As16()
		if c := classify(netip.AddrFrom4([4]byte(b[2:6])), nil); c != "" {
			return c + " (6to4)"
		}
	}
	if own != nil && own.has(ip) {
		return classOwn
	}
	return ""
}

// ownAddrs caches the host's interface addresses, refreshed at most every
// ownAddrsTTL so a new connection rarely pays for a netlink dump.
type ownAddrs struct {
	mu    sync.Mutex
	at    time.Time
	set   map[netip.Addr]struct{}
	fetch func() ([]net.Addr, error)
	ttl   time.Duration
}

const ownAddrsTTL = 5 * time.Second

func newOwnAddrs() *ownAddrs {
	return &ownAddrs{fetch: net.InterfaceAddrs, ttl: ownAddrsTTL}
}

func (o *ownAddrs) has(ip netip.Addr) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set == nil || time.Since(o.at) > o.ttl {
		o.refresh()
	}
	_, ok := o.set[ip]
	return ok
}

func (o *ownAddrs) refresh() {
	addrs, err := o.fetch()
	o.at = time.Now()
	if err != nil && o.set != nil {
		return // keep the previous snapshot
	}
	set := make(map[netip.Addr]struct{}, len(addrs))
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			set[addr.Unmap()] = struct{}{}
		}
	}
	o.set = set
}
