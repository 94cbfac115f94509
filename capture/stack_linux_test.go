package capture

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// loopbackServer serves HTTP on the host's 127.0.0.1 and returns its port
// and a channel of the paths it was asked for.
func loopbackServer(t testing.TB) (int, chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 100)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Host + r.URL.Path
		fmt.Fprint(w, "hello from the host")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port, seen
}

// clientStack is the sandbox's side for tests without a namespace: a
// second netstack on the other end of a SOCK_SEQPACKET pair, addressed
// like the sandbox's end of the device.
type clientStack struct {
	s        *stack.Stack
	resolver netip.Addr
	resolv6  netip.Addr
	started  *atomic.Int32 // calls of Config.Started
	dev      int           // the client's end of the device: raw packets to Serve
}

func startCapture(t testing.TB, p Policy, names *Names) *clientStack {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// A SOCK_SEQPACKET pair holds about 200 KB (wmem_max for an
	// unprivileged test): at the device's 64 KiB MTU that is three
	// packets, and a bulk transfer both ways drops many and can stall in
	// retransmission backoff past the tests' deadlines. A real device
	// queues 500 packets; here a smaller MTU gives the pair that room.
	const pairMTU = 9000
	started := new(atomic.Int32)
	go func() {
		done <- Serve(ctx, fds[0], Config{Policy: p, Names: names, MTU: pairMTU, Started: func() { started.Add(1) }})
	}()
	link, err := fdbased.New(&fdbased.Options{FDs: []int{fds[1]}, MTU: pairMTU, PacketDispatchMode: fdbased.Readv})
	if err != nil {
		t.Fatal(err)
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	if e := s.CreateNIC(1, link); e != nil {
		t.Fatal(e)
	}
	s4, s6, r4, r6 := names.DeviceAddrs()
	for _, a := range []netip.Addr{s4, s6} {
		bits := 15
		if a.Is6() {
			bits = 48
		}
		pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFromSlice(a.AsSlice()), PrefixLen: bits}}
		if a.Is6() {
			pa.Protocol = ipv6.ProtocolNumber
		}
		if e := s.AddProtocolAddress(1, pa, stack.AddressProperties{}); e != nil {
			t.Fatal(e)
		}
	}
	s.SetRouteTable([]tcpip.Route{{Destination: header4Any(), NIC: 1}, {Destination: header6Any(), NIC: 1}})
	t.Cleanup(func() {
		cancel()
		s.Close()
		s.Wait()
		if err := <-done; err != nil {
			t.Error(err)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
	})
	return &clientStack{s: s, resolver: r4, resolv6: r6, started: started, dev: fds[1]}
}

func fullAddr(ap netip.AddrPort) (tcpip.FullAddress, tcpip.NetworkProtocolNumber) {
	proto := tcpip.NetworkProtocolNumber(ipv4.ProtocolNumber)
	if ap.Addr().Is6() {
		proto = ipv6.ProtocolNumber
	}
	return tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFromSlice(ap.Addr().AsSlice()), Port: ap.Port()}, proto
}

// lookup asks the capture resolver over UDP, as libc would.
func (c *clientStack) lookup(t testing.TB, name string, typ dnsmessage.Type) (dnsmessage.RCode, []netip.Addr) {
	t.Helper()
	return c.lookupAt(t, c.resolver, name, typ)
}

// lookupAt asks the resolver at server (its IPv4 or IPv6 address).
func (c *clientStack) lookupAt(t testing.TB, server netip.Addr, name string, typ dnsmessage.Type) (dnsmessage.RCode, []netip.Addr) {
	t.Helper()
	fa, proto := fullAddr(netip.AddrPortFrom(server, 53))
	u, err := gonet.DialUDP(c.s, nil, &fa, proto)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	_ = u.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := u.Write(query(t, name, typ)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	n, err := u.Read(buf)
	if err != nil {
		t.Fatalf("no DNS answer for %s: %v", name, err)
	}
	return parse(t, buf[:n])
}

// TestDNSTwoQueriesOneSocket: the A and AAAA queries of one lookup sent
// back to back from one socket, as glibc's getaddrinfo sends them, both
// get an answer (the resolver answered only the first; glibc then waited
// out its timeout and asked again).
func TestDNSTwoQueriesOneSocket(t *testing.T) {
	p, _ := testProxy(t, []string{"test.localhost"}, nil)
	names, err := NewNames(netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, p, names)
	fa, proto := fullAddr(netip.AddrPortFrom(c.resolver, 53))
	u, err := gonet.DialUDP(c.s, nil, &fa, proto)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	_ = u.SetDeadline(time.Now().Add(5 * time.Second))
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		if _, err := u.Write(query(t, "test.localhost.", typ)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1500)
	got := map[bool]bool{}
	for i := 0; i < 2; i++ {
		n, err := u.Read(buf)
		if err != nil {
			t.Fatalf("answer %d of 2: %v", i+1, err)
		}
		rc, addrs := parse(t, buf[:n])
		if rc != dnsmessage.RCodeSuccess || len(addrs) != 1 {
			t.Fatalf("answer %d: %v %v", i+1, rc, addrs)
		}
		got[addrs[0].Is4()] = true
	}
	if !got[true] || !got[false] {
		t.Fatalf("want one A and one AAAA answer, got %v", got)
	}
}

func (c *clientStack) dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	fa, proto := fullAddr(ap)
	return gonet.DialContextTCP(ctx, c.s, fa, proto)
}

// TestStackEndToEnd: through the netstack on a packet descriptor, a
// client resolves an allowed name, dials the synthetic address and
// reaches an HTTP server on the host's loopback through the proxy's
// CONNECT path; a denied name gets NXDOMAIN and one record; a TLS hello
// naming another host is refused and recorded; a datagram to port 9999 is
// refused (ICMP port unreachable) and recorded once.
func TestStackEndToEnd(t *testing.T) {
	port, seen := loopbackServer(t)
	p, rec := testProxy(t, []string{"test.localhost", "other.localhost", fmt.Sprintf("127.0.0.1:%d", port)}, []string{"denied.localhost"})
	names, err := NewNames(netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, p, names)
	// IPv6 housekeeping (a router solicitation, an MLDv2 report, as the
	// sandbox's kernel sends when the device comes up) is not traffic:
	// Started waits for the first lookup.
	for _, hk := range [][]byte{pkt6(58, 133, 0, 0, 0, 0, 0, 0, 0), pkt6(0, append([]byte{58, 0, 5, 2, 0, 0, 1, 0}, 143, 0, 0, 0)...)} {
		if _, err := unix.Write(c.dev, hk); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := c.started.Load(); n != 0 {
		t.Fatalf("Started called %d times before any traffic (after housekeeping only)", n)
	}
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		rc, addrs := c.lookup(t, "test.localhost.", typ)
		if rc != dnsmessage.RCodeSuccess || len(addrs) != 1 {
			t.Fatalf("lookup %v: %v %v", typ, rc, addrs)
		}
		hc := &http.Client{Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return c.dial(ctx, netip.AddrPortFrom(addrs[0], uint16(port)))
			},
		}, Timeout: 10 * time.Second}
		resp, err := hc.Get(fmt.Sprintf("http://test.localhost:%d/via-%v", port, typ))
		if err != nil {
			t.Fatalf("GET through capture (%v): %v", typ, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello from the host" {
			t.Errorf("body %q", body)
		}
		if got := <-seen; got != fmt.Sprintf("test.localhost:%d/via-%v", port, typ) {
			t.Errorf("server saw %q", got)
		}
		hc.CloseIdleConnections()
	}
	if r := rec.all(); len(r) != 0 {
		t.Fatalf("records on the allowed path: %+v", r)
	}
	if n := c.started.Load(); n != 1 {
		t.Fatalf("Started called %d times after lookups and connections, want once", n)
	}

	// A denied name: NXDOMAIN, one record.
	for i := 0; i < 2; i++ {
		if rc, addrs := c.lookup(t, "denied.localhost.", dnsmessage.TypeA); rc != dnsmessage.RCodeNameError || len(addrs) != 0 {
			t.Fatalf("denied name: %v %v", rc, addrs)
		}
	}
	if r := rec.all(); len(r) != 1 || r[0].Host != "denied.localhost" || r[0].Rule != "denied.localhost" {
		t.Fatalf("records after a denied name: %+v", r)
	}

	// SNI naming another (allowed) host on a connection to test.localhost.
	_, addrs := c.lookup(t, "test.localhost.", dnsmessage.TypeA)
	conn, err := c.dial(context.Background(), netip.AddrPortFrom(addrs[0], uint16(port)))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _ = tlsHello(conn, "other.localhost") }()
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("SNI mismatch: read %d, %v", n, err)
	}
	conn.Close()
	r := rec.all()
	if len(r) != 2 || r[1].Rule != "sni-mismatch" || r[1].Host != "test.localhost" {
		t.Fatalf("records after an SNI mismatch: %+v", r)
	}
	select {
	case got := <-seen:
		t.Errorf("the server saw %q from a refused connection", got)
	default:
	}

	// A literal address nobody handed out: vetted as an IP literal, and
	// refused with a reset before the handshake completes.
	if conn, err = c.dial(context.Background(), netip.MustParseAddrPort("198.18.200.1:80")); err == nil {
		conn.Close()
		t.Errorf("a connection to an address never handed out was accepted")
	}
	r = rec.all()
	if len(r) != 3 || r[2].Host != "198.18.200.1" || r[2].Rule != "default-deny" || r[2].Proto != "capture" {
		t.Fatalf("records after a literal address: %+v", r)
	}

	// UDP to port 9999: refused with ICMP, recorded once.
	fa, proto := fullAddr(netip.AddrPortFrom(addrs[0], 9999))
	u, err := gonet.DialUDP(c.s, nil, &fa, proto)
	if err != nil {
		t.Fatal(err)
	}
	_ = u.SetDeadline(time.Now().Add(time.Second))
	for i := 0; i < 3; i++ {
		_, _ = u.Write([]byte("datagram"))
	}
	// No answer comes back (the stack sends ICMP port unreachable, which
	// gonet does not surface; the namespace test sees ECONNREFUSED).
	if n, err := u.Read(make([]byte, 10)); n != 0 || err == nil {
		t.Errorf("UDP to 9999: read %d, %v", n, err)
	}
	u.Close()
	r = rec.all()
	if len(r) != 4 || r[3].Proto != ProtoUDP || r[3].Port != 9999 || r[3].Host != "test.localhost" {
		t.Fatalf("records after UDP: %+v", r)
	}
}

// TestStackBulkBothWays: 3 MiB from the host's server to the client and
// 3 MiB back arrive whole and in order through the capture (the download
// direction goes through tcpConn.ReadFrom, whose buffer grows once a read
// fills it).
func TestStackBulkBothWays(t *testing.T) {
	const size = 3 << 20
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pattern := func(i int) byte { return byte(i*7 + i>>12) }
	got := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(60 * time.Second)) // a stall fails, it does not hang
		out := make([]byte, size)
		for i := range out {
			out[i] = pattern(i)
		}
		go func() { _, _ = c.Write(out); _ = c.(*net.TCPConn).CloseWrite() }()
		in, err := io.ReadAll(c)
		if err == nil && len(in) != size {
			err = fmt.Errorf("server got %d bytes, want %d", len(in), size)
		}
		for i := 0; err == nil && i < len(in); i++ {
			if in[i] != pattern(size-1-i) {
				err = fmt.Errorf("server: byte %d differs", i)
			}
		}
		got <- err
	}()
	port := l.Addr().(*net.TCPAddr).Port
	p, _ := testProxy(t, []string{"bulk.localhost", fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	names, err := NewNames(netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, p, names)
	_, addrs := c.lookup(t, "bulk.localhost.", dnsmessage.TypeA)
	if len(addrs) != 1 {
		t.Fatalf("lookup: %v", addrs)
	}
	conn, err := c.dial(context.Background(), netip.AddrPortFrom(addrs[0], uint16(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	back := make([]byte, size)
	for i := range back {
		back[i] = pattern(size - 1 - i)
	}
	go func() { _, _ = conn.Write(back); _ = conn.(*gonet.TCPConn).CloseWrite() }()
	in, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != size {
		t.Fatalf("client got %d bytes, want %d", len(in), size)
	}
	for i := range in {
		if in[i] != pattern(i) {
			t.Fatalf("client: byte %d differs", i)
		}
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestQueuedBehindFirst: packets queued on the device while the lazy
// start builds the stack (here the second DNS query of one flow, as glibc
// sends A and AAAA back to back) reach the stack after the first packet
// and after the stack has its routes. The device's dispatcher starts with
// the NIC: it read the second query before the stack was configured and
// dropped it, or raced the first packet for the flow's endpoint (sbx's
// TestCaptureResolverTwoQueriesOneSocket saw "2222 timeout" once the first
// packet also gave the runtime its CPUs). afterCreateNIC widens that
// window to 30 ms so that the order is not left to the scheduler.
func TestQueuedBehindFirst(t *testing.T) {
	afterCreateNIC = func() { time.Sleep(30 * time.Millisecond) }
	defer func() { afterCreateNIC = nil }()
	p, _ := testProxy(t, []string{"race.localhost"}, nil)
	for round := 0; round < 3; round++ {
		names, err := NewNames(netip.Prefix{})
		if err != nil {
			t.Fatal(err)
		}
		s4, _, r4, _ := names.DeviceAddrs()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The queries go from the client to the resolver: udpReply builds
		// a datagram from an ID's local end to its remote end.
		flow := stack.TransportEndpointID{LocalAddress: tcpip.AddrFrom4(s4.As4()), LocalPort: 40000, RemoteAddress: tcpip.AddrFrom4(r4.As4()), RemotePort: 53}
		for _, id := range []uint16{0x1111, 0x2222} {
			q := query(t, "race.localhost.", dnsmessage.TypeA)
			q[0], q[1] = byte(id>>8), byte(id)
			if _, err := unix.Write(fds[1], udpReply(header.IPv4ProtocolNumber, flow, q)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, fds[0], Config{Policy: p, Names: names, MTU: 1500}) }()
		got := map[uint16]bool{}
		buf := make([]byte, 1500)
		_ = unix.SetsockoptTimeval(fds[1], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 3})
		for len(got) < 2 {
			n, err := unix.Read(fds[1], buf)
			if err != nil {
				break
			}
			ip := header.IPv4(buf[:n])
			if n < header.IPv4MinimumSize || ip.IsValid(n) == false || ip.TransportProtocol() != header.UDPProtocolNumber {
				continue
			}
			pl := header.UDP(ip.Payload()).Payload()
			if len(pl) >= 2 {
				got[uint16(pl[0])<<8|uint16(pl[1])] = true
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		if !got[0x1111] || !got[0x2222] {
			t.Fatalf("round %d: answered %v, want both 1111 and 2222", round, got)
		}
	}
}

// TestDNSBothFamilies: the resolver answers on its IPv4 and its IPv6
// address (the replies are written to the device as raw packets, each
// family with its own header and checksum), queries of one socket and of
// several, and a denied name gets NXDOMAIN on either.
func TestDNSBothFamilies(t *testing.T) {
	p, rec := testProxy(t, []string{"both.localhost"}, []string{"denied.localhost"})
	names, err := NewNames(netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, p, names)
	for _, server := range []netip.Addr{c.resolver, c.resolv6} {
		for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
			for i := 0; i < 3; i++ {
				rc, addrs := c.lookupAt(t, server, "both.localhost.", typ)
				if rc != dnsmessage.RCodeSuccess || len(addrs) != 1 {
					t.Fatalf("%v %v: %v %v", server, typ, rc, addrs)
				}
			}
		}
		if rc, addrs := c.lookupAt(t, server, "denied.localhost.", dnsmessage.TypeA); rc != dnsmessage.RCodeNameError || len(addrs) != 0 {
			t.Fatalf("%v denied name: %v %v", server, rc, addrs)
		}
	}
	if r := rec.all(); len(r) != 1 || r[0].Host != "denied.localhost" {
		t.Fatalf("records: %+v", r)
	}
}

// TestUDPReplyZeroChecksum: a reply whose UDP checksum computes to 0
// carries 0xffff (0 means "none" over IPv4 and is invalid over IPv6), and
// every reply's checksums verify, for both families.
func TestUDPReplyZeroChecksum(t *testing.T) {
	for _, fam := range []struct {
		proto    tcpip.NetworkProtocolNumber
		src, dst netip.Addr
	}{
		{header.IPv4ProtocolNumber, netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.1")},
		{header.IPv6ProtocolNumber, netip.MustParseAddr("fd00::2"), netip.MustParseAddr("fd00::1")},
	} {
		id := stack.TransportEndpointID{LocalPort: 53, LocalAddress: tcpip.AddrFromSlice(fam.src.AsSlice()), RemotePort: 40000, RemoteAddress: tcpip.AddrFromSlice(fam.dst.AsSlice())}
		zero := false
		for i := 0; i < 1<<16 && !zero; i++ {
			payload := []byte{byte(i >> 8), byte(i), 1, 2, 3}
			b := udpReply(fam.proto, id, payload)
			var u header.UDP
			var src, dst tcpip.Address
			if fam.proto == header.IPv4ProtocolNumber {
				ip := header.IPv4(b)
				if !ip.IsChecksumValid() {
					t.Fatalf("%v: IPv4 header checksum invalid", fam.proto)
				}
				u, src, dst = header.UDP(ip.Payload()), ip.SourceAddress(), ip.DestinationAddress()
			} else {
				ip := header.IPv6(b)
				u, src, dst = header.UDP(ip.Payload()), ip.SourceAddress(), ip.DestinationAddress()
			}
			if u.Checksum() == 0xffff {
				zero = true
			}
			if !u.IsChecksumValid(src, dst, checksum.Checksum(u.Payload(), 0)) {
				t.Fatalf("%v payload %x: UDP checksum %#x invalid", fam.proto, payload, u.Checksum())
			}
			if u.Checksum() == 0 {
				t.Fatalf("%v payload %x: UDP checksum 0", fam.proto, payload)
			}
		}
		if !zero {
			t.Fatalf("%v: no payload reached the zero checksum", fam.proto)
		}
	}
}

// TestShutdownWhileDelivering: the run ends while the device's reader is
// in the middle of delivering a packet. Stack.Wait takes the stack's lock
// and then waits for the reader (the NIC's removal), so a reader still
// delivering a packet whose answer needs a route (a reset for a client's
// closing segment at the end of a run; here an ICMP port unreachable)
// could wait for that lock for ever. Serve must stop the reader before
// it tears the stack down: the stack is not closed while a delivery is
// held (inUDPHandler), and Serve returns once it is let go.
func TestShutdownWhileDelivering(t *testing.T) {
	p, _ := testProxy(t, []string{"end.localhost"}, nil)
	names, err := NewNames(netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	s4, _, r4, _ := names.DeviceAddrs()
	fds := seqpacketPair(t)
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var delivering, closedWhileDelivering atomic.Bool
	inUDPHandler = func() {
		delivering.Store(true)
		once.Do(func() { close(held) })
		<-release
		delivering.Store(false)
	}
	beforeStackClose = func() { closedWhileDelivering.Store(delivering.Load()) }
	defer func() { inUDPHandler, beforeStackClose = nil, nil }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, fds[0], Config{Policy: p, Names: names, MTU: 1500}) }()
	// The first packet, a query, Serve delivers itself; wait for its
	// answer, so that the datagram after it goes through the reader.
	dns := stack.TransportEndpointID{LocalAddress: tcpip.AddrFrom4(s4.As4()), LocalPort: 40001, RemoteAddress: tcpip.AddrFrom4(r4.As4()), RemotePort: 53}
	if _, err := unix.Write(fds[1], udpReply(header.IPv4ProtocolNumber, dns, query(t, "end.localhost.", dnsmessage.TypeA))); err != nil {
		t.Fatal(err)
	}
	_ = unix.SetsockoptTimeval(fds[1], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	if _, err := unix.Read(fds[1], make([]byte, 1500)); err != nil {
		t.Fatalf("no answer to the first query: %v", err)
	}
	flow := stack.TransportEndpointID{LocalAddress: tcpip.AddrFrom4(s4.As4()), LocalPort: 40000, RemoteAddress: tcpip.AddrFrom4(r4.As4()), RemotePort: 9999}
	if _, err := unix.Write(fds[1], udpReply(header.IPv4ProtocolNumber, flow, []byte("datagram"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the datagram never reached the UDP handler")
	}
	cancel()
	// Let Serve go as far into its shutdown as it will while the
	// delivery is held, then let the delivery go on.
	time.Sleep(200 * time.Millisecond)
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return: the reader and Stack.Wait wait for each other")
	}
	if closedWhileDelivering.Load() {
		t.Fatal("the stack was closed while the reader was delivering a packet")
	}
}

// TestBudget: the connections' growth never takes more than the budget
// holds, and what is given back can be taken again.
func TestBudget(t *testing.T) {
	b := newBudget(100)
	if !b.take(60) || b.take(41) || !b.take(40) || b.take(1) {
		t.Fatal("the budget gave more than it holds")
	}
	b.give(60)
	if !b.take(60) {
		t.Fatal("what was given back cannot be taken again")
	}
}
