package capture

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/sbx-sh/sbx/netproxy"
	"golang.org/x/net/dns/dnsmessage"
)

// records collects the proxy's refusals.
type records struct {
	mu   sync.Mutex
	list []netproxy.Denial
}

func (r *records) add(d netproxy.Denial) { r.mu.Lock(); r.list = append(r.list, d); r.mu.Unlock() }
func (r *records) all() []netproxy.Denial {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]netproxy.Denial(nil), r.list...)
}

func testProxy(t *testing.T, allowed, denied []string) (*netproxy.Proxy, *records) {
	t.Helper()
	rec := &records{}
	p, err := netproxy.New(netproxy.Config{Allowed: allowed, Denied: denied, OnDeny: rec.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, rec
}

func query(t testing.TB, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 4242, RecursionDesired: true})
	_ = b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// parse returns the response's rcode and its A/AAAA answers.
func parse(t testing.TB, msg []byte) (dnsmessage.RCode, []netip.Addr) {
	t.Helper()
	var m dnsmessage.Message
	if err := m.Unpack(msg); err != nil {
		t.Fatalf("unpack response: %v", err)
	}
	if m.ID != 4242 || !m.Response || len(m.Questions) != 1 {
		t.Fatalf("response header %+v, %d questions", m.Header, len(m.Questions))
	}
	var addrs []netip.Addr
	for _, a := range m.Answers {
		switch b := a.Body.(type) {
		case *dnsmessage.AResource:
			addrs = append(addrs, netip.AddrFrom4(b.A))
		case *dnsmessage.AAAAResource:
			addrs = append(addrs, netip.AddrFrom16(b.AAAA))
		}
	}
	return m.RCode, addrs
}

// TestResolver pins what every kind of query gets.
func TestResolver(t *testing.T) {
	p, rec := testProxy(t, []string{"allowed.test:443", "*.wild.test"}, []string{"bad.wild.test"})
	names, err := NewNames(netip.MustParsePrefix("fd12:3456:789a::/48"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(names, p)
	ask := func(name string, typ dnsmessage.Type) (dnsmessage.RCode, []netip.Addr) {
		return parse(t, r.Answer(query(t, name, typ)))
	}
	rc, a := ask("allowed.test.", dnsmessage.TypeA)
	if rc != dnsmessage.RCodeSuccess || len(a) != 1 || a[0] != netip.MustParseAddr("198.18.1.0") {
		t.Fatalf("A allowed.test: %v %v", rc, a)
	}
	rc, a6 := ask("ALLOWED.test.", dnsmessage.TypeAAAA)
	if rc != dnsmessage.RCodeSuccess || len(a6) != 1 || a6[0] != netip.MustParseAddr("fd12:3456:789a::100") {
		t.Fatalf("AAAA allowed.test: %v %v", rc, a6)
	}
	_, b := ask("x.wild.test.", dnsmessage.TypeA)
	if len(b) != 1 || b[0] != netip.MustParseAddr("198.18.1.1") {
		t.Fatalf("A x.wild.test: %v", b)
	}
	if _, again := ask("allowed.test.", dnsmessage.TypeA); again[0] != a[0] {
		t.Errorf("allowed.test moved from %v to %v", a[0], again[0])
	}
	for _, tt := range []struct {
		addr netip.Addr
		name string
	}{{a[0], "allowed.test"}, {a6[0], "allowed.test"}, {b[0], "x.wild.test"}} {
		if n, ok := names.Name(tt.addr); !ok || n != tt.name {
			t.Errorf("Name(%v) = %q, %v; want %s", tt.addr, n, ok, tt.name)
		}
	}
	for _, s := range []string{"198.18.1.2", "198.18.0.2", "fd12:3456:789a:1::100", "fd12:3456:789b::100", "10.0.0.1"} {
		if n, ok := names.Name(netip.MustParseAddr(s)); ok {
			t.Errorf("Name(%s) = %q for an address never handed out", s, n)
		}
	}
	for _, tt := range []struct {
		typ  dnsmessage.Type
		want dnsmessage.RCode
	}{
		{dnsmessage.TypeHTTPS, dnsmessage.RCodeSuccess}, // NODATA: fall back to A/AAAA
		{dnsmessage.TypeSVCB, dnsmessage.RCodeSuccess},
		{dnsmessage.TypeMX, dnsmessage.RCodeRefused},
		{dnsmessage.TypeTXT, dnsmessage.RCodeRefused},
		{dnsmessage.TypeSRV, dnsmessage.RCodeRefused},
		{dnsmessage.TypeALL, dnsmessage.RCodeRefused},
	} {
		if rc, a := ask("allowed.test.", tt.typ); rc != tt.want || len(a) != 0 {
			t.Errorf("type %v: %v %v, want %v and no answer", tt.typ, rc, a, tt.want)
		}
	}
	if len(rec.all()) != 0 {
		t.Fatalf("records for allowed names: %+v", rec.all())
	}
	// Denied and unlisted names: NXDOMAIN for every type, one record each
	// however often asked.
	for _, name := range []string{"bad.wild.test.", "nope.test."} {
		for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA, dnsmessage.TypeHTTPS, dnsmessage.TypeA} {
			if rc, a := ask(name, typ); rc != dnsmessage.RCodeNameError || len(a) != 0 {
				t.Errorf("%s %v: %v %v, want NXDOMAIN", name, typ, rc, a)
			}
		}
	}
	got := rec.all()
	if len(got) != 2 || got[0].Host != "bad.wild.test" || got[0].Rule != "bad.wild.test" || got[0].Proto != netproxy.ProtoDNS ||
		got[1].Host != "nope.test" || got[1].Rule != netproxy.RuleDefault {
		t.Errorf("records: %+v", got)
	}
	if r.Answer([]byte("garbage")) != nil {
		t.Error("garbage answered")
	}
}

func TestNamesRandomPrefix(t *testing.T) {
	a, err := NewNames(netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	if p := a.Prefix6(); p.Bits() != 48 || p.Addr().As16()[0] != 0xfd {
		t.Errorf("random prefix %v", p)
	}
	if _, err := NewNames(netip.MustParsePrefix("2001:db8::/48")); err == nil {
		t.Error("a global prefix was accepted")
	}
}
