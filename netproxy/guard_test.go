package netproxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := map[string]string{
		"127.0.0.1":          classLoopback,
		"127.255.0.9":        classLoopback,
		"::1":                classLoopback,
		"::ffff:127.0.0.1":   classLoopback,
		"169.254.169.254":    classMetadata,
		"fd00:ec2::254":      classMetadata,
		"100.100.100.200":    classMetadata,
		"168.63.129.16":      classMetadata,
		"169.254.1.1":        classLinkLocal,
		"fe80::1":            classLinkLocal,
		"10.0.0.1":           classPrivate,
		"172.16.0.1":         classPrivate,
		"172.31.255.255":     classPrivate,
		"192.168.0.1":        classPrivate,
		"fc00::1":            classPrivate,
		"fd12:3456::1":       classPrivate,
		"100.64.0.1":         classCGNAT,
		"100.127.255.255":    classCGNAT,
		"0.0.0.0":            classUnspecified,
		"::":                 classUnspecified,
		"224.0.0.1":          classMulticast,
		"ff02::1":            classMulticast,
		"255.255.255.255":    classReserved,
		"::7f00:1":           classReserved,
		"64:ff9b::a9fe:a9fe": classMetadata + " (NAT64)",
		"64:ff9b::7f00:1":    classLoopback + " (NAT64)",
		"2002:a9fe:a9fe::1":  classMetadata + " (6to4)",
		"::ffff:10.0.0.1":    classPrivate,
		"8.8.8.8":            "",
		"203.0.113.7":        "",
		"172.32.0.1":         "",
		"100.128.0.1":        "",
		"2001:db8::1":        "",
		"64:ff9b::808:808":   "",
	}
	for in, want := range tests {
		if got := classify(netip.MustParseAddr(in), nil); got != want {
			t.Errorf("classify(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestOwnAddressesRefused(t *testing.T) {
	own := &ownAddrs{ttl: ownAddrsTTL, fetch: func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("203.0.113.50"), Mask: net.CIDRMask(24, 32)}}, nil
	}}
	if got := classify(netip.MustParseAddr("203.0.113.50"), own); got != classOwn {
		t.Errorf("own address: %q", got)
	}
	if got := classify(netip.MustParseAddr("203.0.113.51"), own); got != "" {
		t.Errorf("neighbour address: %q", got)
	}
	failing := &ownAddrs{ttl: 0, fetch: func() ([]net.Addr, error) { return nil, errors.New("netlink down") }}
	if got := classify(netip.MustParseAddr("203.0.113.51"), failing); got != "" {
		t.Errorf("with failing interface list: %q", got)
	}
}

// TestVet exercises resolution and the guard without dialling anything.
func TestVet(t *testing.T) {
	res := testResolver()
	p, err := New(Config{
		Allowed: []string{"*.test", "allowed.test", "literal.test", "localhost", "127.0.0.1:9000",
			"fd12::1", "198.51.100.5", "169.254.169.254:80"},
		Denied:         []string{"198.51.100.5"},
		DeniedResolved: []string{"203.0.113.96/28"},
		Resolver:       res,
	})
	if err == nil {
		t.Fatal("*.test must be rejected as a public-suffix wildcard")
	}
	p, err = New(Config{
		Allowed: []string{"*.ok.test", "metadata.test", "metadata6.test", "private.test", "loopback.test", "v6.test",
			"mapped.test", "public.test", "mixed.test", "cgnat.test", "unspecified.test", "multicast.test",
			"azure.test", "nat64.test", "ula.test", "linklocal6.test", "rfc1918b.test", "rfc1918c.test",
			"publicv6.test", "deniedcidr.test", "denyliteral.test", "empty.test", "nxdomain.test",
			"localhost", "127.0.0.1:9000", "fd12::1", "169.254.169.254:80", "203.0.113.100"},
		Denied:         []string{"198.51.100.5"},
		DeniedResolved: []string{"203.0.113.96/28"},
		Resolver:       res,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.own = &ownAddrs{ttl: ownAddrsTTL, fetch: func() ([]net.Addr, error) { return nil, nil }}
	tests := []struct {
		host   string
		port   int
		want   string // comma-separated vetted targets, or "" when refused
		rule   string // rule of the refusal
		reason string // part of the reason
	}{
		{"public.test", 443, "203.0.113.7:443", "", ""},
		{"publicv6.test", 443, "[2001:db8::1]:443", "", ""},
		{"mixed.test", 443, "203.0.113.8:443", "", ""},
		{"metadata.test", 443, "", RuleAddressGuard, "cloud metadata"},
		{"metadata.test", 80, "169.254.169.254:80", "", ""}, // the literal entry 169.254.169.254:80 names it
		{"metadata6.test", 443, "", RuleAddressGuard, "cloud metadata"},
		{"private.test", 443, "", RuleAddressGuard, "private"},
		{"rfc1918b.test", 443, "", RuleAddressGuard, "private"},
		{"rfc1918c.test", 443, "", RuleAddressGuard, "private"},
		{"ula.test", 443, "[fd12::1]:443", "", ""}, // literal entry fd12::1
		{"loopback.test", 443, "", RuleAddressGuard, "loopback"},
		{"loopback.test", 9000, "127.0.0.1:9000", "", ""}, // literal entry 127.0.0.1:9000
		{"v6.test", 443, "", RuleAddressGuard, "loopback"},
		{"mapped.test", 443, "", RuleAddressGuard, "loopback"},
		{"cgnat.test", 443, "", RuleAddressGuard, "cloud metadata"},
		{"unspecified.test", 443, "", RuleAddressGuard, "unspecified"},
		{"multicast.test", 443, "", RuleAddressGuard, "multicast"},
		{"azure.test", 443, "", RuleAddressGuard, "cloud metadata"},
		{"nat64.test", 443, "", RuleAddressGuard, "NAT64"},
		{"linklocal6.test", 443, "", RuleAddressGuard, "link-local"},
		{"deniedcidr.test", 443, "", "203.0.113.96/28", "deniedResolvedAddresses"},
		{"denyliteral.test", 443, "", "198.51.100.5", "deniedDomains"},
		{"empty.test", 443, "", "", ""}, // no addresses: a lookup error
		{"localhost", 3000, "127.0.0.1:3000,[::1]:3000", "", ""},
		{"127.0.0.1", 9000, "127.0.0.1:9000", "", ""},
		{"127.0.0.1", 9001, "", RuleDefault, "allowedDomains"},
		{"169.254.169.254", 80, "169.254.169.254:80", "", ""},
		{"x.ok.test", 443, "", "", ""}, // unknown to the resolver: lookup error
		{"metadata.test.", 443, "", RuleAddressGuard, "cloud metadata"},
		{"evil.test", 443, "", RuleDefault, "not in"},
		{"203.0.113.100", 443, "", "203.0.113.96/28", "deniedResolvedAddresses"}, // CIDRs beat literal entries
	}
	for _, tt := range tests {
		targets, d, err := p.vet(context.Background(), "connect", tt.host, tt.port)
		var got []string
		for _, ap := range targets {
			got = append(got, ap.String())
		}
		switch {
		case tt.want != "":
			if d != nil || err != nil || strings.Join(got, ",") != tt.want {
				t.Errorf("vet(%s:%d) = %v, %+v, %v; want %s", tt.host, tt.port, got, d, err, tt.want)
			}
		case tt.rule == "":
			if !errors.Is(err, errResolve) || d != nil || got != nil {
				t.Errorf("vet(%s:%d) = %v, %+v, %v; want a lookup error", tt.host, tt.port, got, d, err)
			}
		default:
			if d == nil || got != nil || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) || d.Proto != "connect" || d.Port != tt.port {
				t.Errorf("vet(%s:%d) = %v, %+v, %v; want refusal by %q mentioning %q", tt.host, tt.port, got, d, err, tt.rule, tt.reason)
			}
		}
	}
}

func TestVetResolvesOnce(t *testing.T) {
	res := testResolver()
	p, err := New(Config{Allowed: []string{"public.test"}, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, _, err := p.vet(context.Background(), "http", "public.test", 80); err != nil {
			t.Fatal(err)
		}
	}
	if n := res.count("public.test"); n != 3 {
		t.Errorf("resolver called %d times for 3 vets", n)
	}
	if _, _, err := p.vet(context.Background(), "http", "127.0.0.1", 80); err != nil {
		t.Fatal(err)
	}
	if n := res.count("127.0.0.1"); n != 0 {
		t.Errorf("an IP literal was looked up")
	}
}

// TestVetLocalhostNames: RFC 6761 §6.3. "localhost" and every name under
// ".localhost" resolve to 127.0.0.1 and ::1 without asking the resolver
// (which here would answer a public address), and the address guard still
// applies: test.localhost reaches loopback only on a listed port.
func TestVetLocalhostNames(t *testing.T) {
	res := testResolver()
	res.sequence("test.localhost", []string{"203.0.113.7"}) // a resolver that would send it away
	p, err := New(Config{Allowed: []string{"test.localhost", "*.dev.localhost", "127.0.0.1:9000", "[::1]:9000"}, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host string
		port int
		want string
		rule string
	}{
		{"test.localhost", 9000, "127.0.0.1:9000,[::1]:9000", ""},
		{"Test.LocalHost.", 9000, "127.0.0.1:9000,[::1]:9000", ""},
		{"a.b.dev.localhost", 9000, "127.0.0.1:9000,[::1]:9000", ""},
		{"test.localhost", 9001, "", RuleAddressGuard}, // loopback, port not listed
	} {
		targets, d, err := p.vet(context.Background(), "connect", tt.host, tt.port)
		var got []string
		for _, ap := range targets {
			got = append(got, ap.String())
		}
		if tt.want != "" && (d != nil || err != nil || strings.Join(got, ",") != tt.want) {
			t.Errorf("vet(%s:%d) = %v, %+v, %v; want %s", tt.host, tt.port, got, d, err, tt.want)
		}
		if tt.rule != "" && (d == nil || d.Rule != tt.rule) {
			t.Errorf("vet(%s:%d) = %v, %+v, %v; want refusal by %s", tt.host, tt.port, got, d, err, tt.rule)
		}
	}
	if n := res.count("test.localhost"); n != 0 {
		t.Errorf("test.localhost was asked of the resolver %d times", n)
	}
	for _, name := range []string{"localhostx", "localhost.example", "xlocalhost"} {
		if IsLocalhostName(name) {
			t.Errorf("IsLocalhostName(%q) = true", name)
		}
	}
}
