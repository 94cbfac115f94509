package netproxy

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

// Address classes the guard refuses after resolution: the shared table's
// (package hostaddr, which policy reads too) and the host's own.
const (
	classLoopback    = hostaddr.Loopback
	classMetadata    = hostaddr.Metadata
	classLinkLocal   = hostaddr.LinkLocal
	classPrivate     = hostaddr.Private
	classCGNAT       = hostaddr.CGNAT
	classUnspecified = hostaddr.Unspecified
	classMulticast   = hostaddr.Multicast
	classReserved    = hostaddr.Reserved
	classOwn         = "an address of this host"
)

// classify returns why ip must not be dialled without an explicit literal
// allow entry, or "" when it is an ordinary public address.
func classify(ip netip.Addr, own *ownAddrs) string {
	if c := hostaddr.Classify(ip); c != "" {
		return c
	}
	if own != nil && own.has(ip.Unmap()) {
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
