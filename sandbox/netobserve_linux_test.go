package sandbox

import (
	"net/netip"
	"testing"

	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// TestDNSQuestion: the name of a DNS query, and nothing from a reply, a
// compressed or odd name, or a short message.
func TestDNSQuestion(t *testing.T) {
	q := func(labels ...string) []byte {
		b := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
		for _, l := range labels {
			b = append(b, byte(len(l)))
			b = append(b, l...)
		}
		return append(b, 0, 0, 1, 0, 1)
	}
	for _, c := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"a query", q("Proxy", "golang", "org"), "proxy.golang.org"},
		{"underscore", q("_srv", "example", "com"), "_srv.example.com"},
		{"a reply", func() []byte { b := q("a", "example"); b[2] |= 0x80; return b }(), ""},
		{"no question", func() []byte { b := q("a", "example"); b[5] = 0; return b }(), ""},
		{"the root", q(), ""},
		{"a pointer", append([]byte{0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 0xc0, 12), ""},
		{"a control character", q("a\x01b", "example"), ""},
		{"truncated", q("example", "com")[:16], ""},
		{"short", []byte{0, 1, 2}, ""},
	} {
		got, ok := dnsQuestion(c.msg)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: got %q %v, want %q", c.name, got, ok, c.want)
		}
	}
}

// TestNetRecord: which destinations and sockets make a record under
// --net none.
func TestNetRecord(t *testing.T) {
	dst := func(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
	for _, c := range []struct {
		name    string
		syscall string
		flags   uint64
		nc      seccomp.NetCall
		host    string // "" for no record
	}{
		{"tcp connect", "connect", 0, seccomp.NetCall{Dest: dst("192.0.2.1:443"), SockType: unix.SOCK_STREAM}, "192.0.2.1"},
		{"udp connect v6", "connect", 0, seccomp.NetCall{Dest: dst("[2001:db8::1]:53"), SockType: unix.SOCK_DGRAM}, "2001:db8::1"},
		{"v4-mapped", "connect", 0, seccomp.NetCall{Dest: dst("[::ffff:192.0.2.1]:80"), SockType: unix.SOCK_STREAM}, "192.0.2.1"},
		{"loopback", "connect", 0, seccomp.NetCall{Dest: dst("127.0.0.5:80"), SockType: unix.SOCK_STREAM}, ""},
		{"loopback resolver, none inside", "connect", 0, seccomp.NetCall{Dest: dst("127.0.0.53:53"), SockType: unix.SOCK_DGRAM}, "127.0.0.53"},
		{"loopback resolver, one inside", "connect", 0, seccomp.NetCall{Dest: dst("127.0.0.1:53"), SockType: unix.SOCK_DGRAM}, ""},
		{"v6 loopback", "connect", 0, seccomp.NetCall{Dest: dst("[::1]:80"), SockType: unix.SOCK_STREAM}, ""},
		{"mapped loopback", "connect", 0, seccomp.NetCall{Dest: dst("[::ffff:127.0.0.1]:80"), SockType: unix.SOCK_STREAM}, ""},
		{"unspecified", "connect", 0, seccomp.NetCall{Dest: dst("0.0.0.0:80"), SockType: unix.SOCK_STREAM}, ""},
		{"no destination", "connect", 0, seccomp.NetCall{}, ""},
		{"not an inet socket", "connect", 0, seccomp.NetCall{Dest: dst("192.0.2.1:80")}, ""},
		{"tcp sendto ignores the address", "sendto", 0, seccomp.NetCall{Dest: dst("192.0.2.1:80"), SockType: unix.SOCK_STREAM}, ""},
		{"tcp fast open", "sendto", unix.MSG_FASTOPEN, seccomp.NetCall{Dest: dst("192.0.2.1:80"), SockType: unix.SOCK_STREAM}, "192.0.2.1"},
		{"udp sendto", "sendto", 0, seccomp.NetCall{Dest: dst("192.0.2.1:9"), SockType: unix.SOCK_DGRAM, Payload: []byte("x")}, "192.0.2.1"},
		{"dns sendto", "sendto", 0, seccomp.NetCall{Dest: dst("192.0.2.1:53"), SockType: unix.SOCK_DGRAM,
			Payload: []byte{1, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1}}, "a.test"},
	} {
		r := &seccomp.Request{PID: 1, Syscall: c.syscall}
		r.Args[3] = c.flags
		c.nc.Syscall = c.syscall
		// A resolver runs inside on 127.0.0.1 only (the PID stands
		// for the namespace here).
		serves := func(int) bool { return c.nc.Dest.Addr() == netip.MustParseAddr("127.0.0.1") }
		rec, ok := netRecord(r, &c.nc, serves)
		if ok != (c.host != "") || rec.Host != c.host {
			t.Errorf("%s: got %v %+v, want host %q", c.name, ok, rec, c.host)
			continue
		}
		if ok && (rec.Kind != violations.KindNetwork || rec.Rule != violations.RuleNetNone) {
			t.Errorf("%s: record %+v", c.name, rec)
		}
	}
}
