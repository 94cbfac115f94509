package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
)

// documentedRanges is the address guard's table as the package doc
// ("Address guard") states it, written here from the
// documentation, not from guard.go: dropping or narrowing an entry of the
// code's table fails TestGuardedRangesThroughTheProxy. Order: the more
// specific first, so an address's class is the most precise one.
var documentedRanges = []struct {
	cidr, class string
}{
	{"169.254.169.254/32", "cloud metadata"},
	{"fd00:ec2::254/128", "cloud metadata"},
	{"100.100.100.200/32", "cloud metadata"},
	{"168.63.129.16/32", "cloud metadata"},
	{"0.0.0.0/8", "unspecified"},
	{"::/128", "unspecified"},
	{"127.0.0.0/8", "loopback"},
	{"::1/128", "loopback"},
	{"169.254.0.0/16", "link-local"},
	{"fe80::/10", "link-local"},
	{"10.0.0.0/8", "private"},
	{"172.16.0.0/12", "private"},
	{"192.168.0.0/16", "private"},
	{"fc00::/7", "private"},
	{"fec0::/10", "private"},
	{"100.64.0.0/10", "carrier-grade NAT"},
	{"224.0.0.0/4", "multicast"},
	{"ff00::/8", "multicast"},
	{"240.0.0.0/4", "reserved"},
	{"::/96", "reserved"},
	{"64:ff9b:1::/48", "reserved"},
}

// expectClass is the documented class of ip ("" for an ordinary public
// address): the table, then the NAT64 (64:ff9b::/96) and 6to4
// (2002::/16) forms judged by the IPv4 address they embed.
func expectClass(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, r := range documentedRanges {
		if netip.MustParsePrefix(r.cidr).Contains(ip) {
			return r.class
		}
	}
	if netip.MustParsePrefix("64:ff9b::/96").Contains(ip) {
		b := ip.As16()
		if c := expectClass(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
			return c + " (NAT64)"
		}
	}
	if netip.MustParsePrefix("2002::/16").Contains(ip) {
		b := ip.As16()
		if c := expectClass(netip.AddrFrom4([4]byte(b[2:6]))); c != "" {
			return c + " (6to4)"
		}
	}
	return ""
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestGuardedRangesDocumented: every range the test's table holds is
// named in the package doc, so the table is the documented one.
func TestGuardedRangesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " ")
	for _, r := range documentedRanges {
		short := strings.TrimSuffix(strings.TrimSuffix(r.cidr, "/32"), "/128")
		if r.cidr == "::/128" {
			short = "::"
		}
		if !strings.Contains(text, short) {
			t.Errorf("%s (%s) is not in the package doc's address guard", r.cidr, r.class)
		}
	}
}

// TestGuardedRangesThroughTheProxy asks the running proxy (CONNECT on a
// loopback listener) for a name that resolves to each range's first and
// last address, to the addresses just outside it, and to the NAT64 and
// 6to4 forms of each IPv4 range: each must be refused with its
// documented class, or, where the documentation guards nothing, handed
// to the dialler. The dialler connects nowhere: it records the address
// and fails, so no packet leaves the host whatever the table says.
func TestGuardedRangesThroughTheProxy(t *testing.T) {
	var addrs []netip.Addr
	for _, r := range documentedRanges {
		p := netip.MustParsePrefix(r.cidr)
		first, last := p.Masked().Addr(), lastAddr(p)
		addrs = append(addrs, first, last)
		if prev := first.Prev(); prev.IsValid() {
			addrs = append(addrs, prev)
		}
		if next := last.Next(); next.IsValid() {
			addrs = append(addrs, next)
		}
		if first.Is4() {
			for _, a := range []netip.Addr{first, last} {
				b := a.As4()
				addrs = append(addrs,
					netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 10: 0, 11: 0, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
					netip.AddrFrom16([16]byte{0x20, 0x02, b[0], b[1], b[2], b[3], 15: 1}))
			}
		}
	}
	t.Logf("%d addresses", len(addrs))
	table := map[string][]string{}
	names := make([]string, len(addrs))
	for i, a := range addrs {
		names[i] = fmt.Sprintf("a%d.guard.test", i)
		table[names[i]] = []string{a.String()}
	}
	var mu sync.Mutex
	dialled := map[string]bool{}
	e := startProxy(t, Config{
		Allowed:  []string{"*.guard.test"},
		Resolver: newFakeResolver(table),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialled[addr] = true
			mu.Unlock()
			return nil, errors.New("test: nothing is dialled")
		},
	}, nil)
	for i, a := range addrs {
		want := expectClass(a)
		c, resp, _ := connectVia(t, e.httpAddr, names[i]+":443", "")
		c.Close()
		var got *Denial
		for _, d := range e.denied.all() {
			if d.Host == names[i] {
				d := d
				got = &d
			}
		}
		mu.Lock()
		wasDialled := dialled[netip.AddrPortFrom(a, 443).String()]
		mu.Unlock()
		switch {
		case want == "":
			if got != nil || !wasDialled {
				t.Errorf("%s (%s): an ordinary address by the documentation; got status %d, denial %+v, dialled %v", a, names[i], resp.StatusCode, got, wasDialled)
			}
		case got == nil || got.Rule != RuleAddressGuard || !strings.Contains(got.Reason, ": refused "+want+" address ("):
			t.Errorf("%s (%s): want refused as %q; got status %d, denial %+v, dialled %v", a, names[i], want, resp.StatusCode, got, wasDialled)
		case wasDialled || resp.StatusCode == http.StatusOK:
			t.Errorf("%s: refused, yet dialled (%v) or answered %d", a, wasDialled, resp.StatusCode)
		}
	}
}
