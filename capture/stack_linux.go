package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-sh/sbx/netproxy"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// maxInFlight bounds the TCP handshakes the forwarder completes at once.
const maxInFlight = 1024

// Serve runs the user-space TCP/IP stack on fd, a TUN device opened with
// IFF_TUN|IFF_NO_PI, and IFF_VNET_HDR when cfg.VnetHdr (or any descriptor
// that carries one raw IPv4 or IPv6 packet per read and write, such as a
// SOCK_SEQPACKET socket), until ctx
// is done: TCP to any address goes to cfg.Policy (VetCaptured, then
// ServeVetted) as the name the address was handed out for (or the literal
// address), UDP to port 53 to the resolver, other UDP and pings are
// refused and recorded. Serve does not close fd.
func Serve(ctx context.Context, fd int, cfg Config) error {
	if cfg.Policy == nil || cfg.Names == nil {
		return errors.New("capture: Serve needs a Policy and Names")
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	dev, err := openDevice(fd)
	if err != nil {
		return err
	}
	first, err := firstPacket(ctx, dev, mtu, cfg.VnetHdr)
	if err != nil || first == nil {
		_ = dev.f.Close()
		return err
	}
	if cfg.Started != nil {
		cfg.Started()
	}
	link := newLink(fd, dev, uint32(mtu), cfg.VnetHdr)
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	closed := false
	defer func() {
		if !closed {
			link.halt()
			s.Close()
			s.Wait()
		}
		link.release()
	}()
	// The link is a local pipe, not a network: no stale segment outlives
	// a second, so TIME_WAIT is short and a new SYN may reuse it (clients
	// that open many short connections would otherwise wait out SYN
	// retransmissions on a port still in TIME_WAIT). SACK and receive
	// buffer moderation as Linux has them.
	tw := tcpip.TCPTimeWaitTimeoutOption(time.Second)
	reuse := tcpip.TCPTimeWaitReuseGlobal
	sack := tcpip.TCPSACKEnabled(true)
	moderate := tcpip.TCPModerateReceiveBufferOption(true)
	for _, opt := range []tcpip.SettableTransportProtocolOption{&tw, &reuse, &sack, &moderate} {
		if e := s.SetTransportProtocolOption(tcp.ProtocolNumber, opt); e != nil {
			return fmt.Errorf("capture: TCP option %T: %v", opt, e)
		}
	}
	sv := &server{cfg: cfg, res: NewResolver(cfg.Names, cfg.Policy), dev: link, budget: newBudget(captureBudget)}
	// Handlers first: the device delivers packets as soon as the NIC exists.
	fwd := tcp.NewForwarder(s, 0, maxInFlight, sv.tcp)
	s.SetTransportProtocolHandler(tcp.ProtocolNumber, fwd.HandlePacket)
	s.SetTransportProtocolHandler(udp.ProtocolNumber, func(id stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
		if id.LocalPort == 53 {
			sv.dns(id, pkt)
			return true
		}
		if inUDPHandler != nil {
			inUDPHandler()
		}
		sv.refuseUDP(id)
		return false // the stack answers ICMP port unreachable
	})
	const nic = 1
	filter := newICMPFilter(link, sv)
	// The dispatcher, which starts with the NIC, waits for the filter to
	// open (deliverFirst); every way out opens it, or s.Wait would wait
	// for a dispatcher that waits.
	defer filter.open()
	if e := s.CreateNIC(nic, filter); e != nil {
		return fmt.Errorf("capture: create NIC: %v", e)
	}
	if afterCreateNIC != nil {
		afterCreateNIC()
	}
	// Every destination is ours: accept packets to any address and answer
	// from it.
	if e := s.SetPromiscuousMode(nic, true); e != nil {
		return fmt.Errorf("capture: promiscuous mode: %v", e)
	}
	if e := s.SetSpoofing(nic, true); e != nil {
		return fmt.Errorf("capture: spoofing: %v", e)
	}
	s.SetRouteTable([]tcpip.Route{
		{Destination: header4Any(), NIC: nic},
		{Destination: header6Any(), NIC: nic},
	})
	deliverFirst(filter, first)
	<-ctx.Done()
	// Closing the stack ends every captured connection; then their
	// goroutines return.
	closed = true
	sv.mu.Lock()
	sv.closing = true
	sv.mu.Unlock()
	// No packet is delivered from here on (link.halt says why it comes
	// first).
	link.halt()
	if beforeStackClose != nil {
		beforeStackClose()
	}
	s.Close()
	s.Wait()
	sv.wg.Wait()
	return nil
}

// inUDPHandler, when not nil, runs in the reader's delivery of a
// datagram to a port other than 53, before the stack answers it with an
// ICMP error, which takes the stack's lock for a route (tests:
// TestShutdownWhileDelivering).
var inUDPHandler func()

// beforeStackClose, when not nil, runs as Serve's shutdown closes the
// stack (tests: TestShutdownWhileDelivering).
var beforeStackClose func()

// afterCreateNIC, when not nil, runs between the NIC's creation and the
// stack's configuration (tests: TestQueuedBehindFirst).
var afterCreateNIC func()

func header4Any() tcpip.Subnet {
	sn, _ := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{}), tcpip.MaskFromBytes(make([]byte, 4)))
	return sn
}

func header6Any() tcpip.Subnet {
	sn, _ := tcpip.NewSubnet(tcpip.AddrFrom16([16]byte{}), tcpip.MaskFromBytes(make([]byte, 16)))
	return sn
}

type server struct {
	cfg Config
	res *Resolver
	dev *link // DNS answers are written to it directly (dnsreply_linux.go)
	wg  sync.WaitGroup

	mu      sync.Mutex
	closing bool

	budget *budget // what captured connections' buffers may grow by, together

	refusedUDP  netproxy.OnceSet[netip.AddrPort] // one record per destination
	refusedICMP netproxy.OnceSet[netip.Addr]
}

// host is the name dst was handed out for, or the literal address (which
// the proxy vets as an IP-literal host: refused unless listed).
func (sv *server) host(dst tcpip.Address) string {
	a, _ := netip.AddrFromSlice(dst.AsSlice())
	if name, ok := sv.cfg.Names.Name(a); ok {
		return name
	}
	return a.Unmap().String()
}

// tcp runs in a goroutine of its own for each new connection (the
// forwarder's): the decision comes before the handshake completes, so a
// refused or unresolvable destination gets a reset (ECONNREFUSED) and a
// client waiting on --ask-fd sees its connect wait.
func (sv *server) tcp(r *tcp.ForwarderRequest) {
	if !sv.begin() {
		r.Complete(true)
		return
	}
	defer sv.wg.Done()
	id := r.ID()
	t, err := sv.cfg.Policy.VetCaptured(sv.host(id.LocalAddress), int(id.LocalPort))
	if err != nil {
		r.Complete(true)
		return
	}
	var wq waiter.Queue
	ep, e := r.CreateEndpoint(&wq)
	if e != nil {
		r.Complete(true)
		t.Abandon()
		return
	}
	r.Complete(false)
	sv.cfg.Policy.ServeVetted(newTCPConn(&wq, ep, sv.budget), t)
}

// The buffers of a captured connection's download direction (upstream
// to client), and the budget for all of them. A client that does not
// read must not make the supervisor hold what it does not take: on the
// CONNECT path those bytes wait in the kernel's socket buffers, outside
// sbx; here gVisor's send buffer and the relay's buffer are sbx's own
// memory (1.9 MB per stalled connection with gVisor's 1 MiB default and
// a relay buffer grown to 1 MiB: 1.07 GB for 600).
//
// So each connection starts with a small send buffer (sendBufBase) and a
// small relay buffer (copySmall), reads from the upstream only when the
// client side can take more, and drops its relay buffer when it has
// waited stallAfter for the client (the same for an idle client's bytes
// the other way).
// Only a connection that has moved growAfter bytes and whose client
// keeps up doubles them, up to sendBufMax and copyLarge, and only with
// bytes taken from the server's budget (captureBudget for all
// connections together), given back when the connection ends (the relay
// buffer's share as soon as it waits). A stalled connection costs about
// sendBufBase + copySmall; the budget bounds everything above that.
//
// Why large buffers at all: each Write into the stack has a fixed cost
// (segmenting, waking its goroutines); with 32 KiB copies a download
// through the capture ran at 590-760 MB/s against 890-960 with 256 KiB
// (curl -4 inside sbx, 500 MB, alternating runs) and about 1,140 with
// 1 MiB.
const (
	sendBufBase   = 32 << 10
	sendBufMax    = 1 << 20
	copySmall     = 16 << 10
	copyLarge     = 1 << 20
	growAfter     = 512 << 10
	captureBudget = 64 << 20
)

// budget is memory the connections may take beyond their base buffers.
type budget struct{ left atomic.Int64 }

func newBudget(n int64) *budget {
	b := &budget{}
	b.left.Store(n)
	return b
}

// take reserves n bytes, or reports that they are not there.
func (b *budget) take(n int64) bool {
	for {
		l := b.left.Load()
		if l < n {
			return false
		}
		if b.left.CompareAndSwap(l, l-n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.left.Add(n) }

// tcpConn is a captured connection whose ReadFrom (what the proxy's relay
// uses for the upstream's bytes) moves them into the stack under the
// buffer rules above.
type tcpConn struct {
	*gonet.TCPConn
	ep tcpip.Endpoint
	wq *waiter.Queue
	b  *budget
}

func newTCPConn(wq *waiter.Queue, ep tcpip.Endpoint, b *budget) *tcpConn {
	// An explicit size also turns gVisor's send-buffer auto-tuning off,
	// which would grow a stalled connection's buffer without a budget.
	ep.SocketOptions().SetSendBufferSize(sendBufBase, true)
	return &tcpConn{TCPConn: gonet.NewTCPConn(wq, ep), ep: ep, wq: wq, b: b}
}

const writeReady = waiter.WritableEvents | waiter.EventHUp | waiter.EventErr

// writable reports whether the stack takes more bytes now (or the
// connection is closed, in which case the next Write says so).
func (c *tcpConn) writable() bool { return c.ep.Readiness(writeReady) != 0 }

// stallAfter is how long a connection waits for its peer, holding its
// buffer, before it counts as stalled and lets the buffer go: shorter
// waits are flow control in a transfer that goes on.
const stallAfter = 200 * time.Millisecond

// wait waits until the endpoint is ready for one of mask, at most d (0:
// no limit), and reports whether it is.
func (c *tcpConn) wait(mask waiter.EventMask, d time.Duration) bool {
	if c.ep.Readiness(mask) != 0 {
		return true
	}
	e, ch := waiter.NewChannelEntry(mask)
	c.wq.EventRegister(&e)
	defer c.wq.EventUnregister(&e)
	var limit <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		limit = t.C
	}
	tick := time.NewTicker(time.Second) // a missed wake-up costs a second, never a hang
	defer tick.Stop()
	for c.ep.Readiness(mask) == 0 {
		select {
		case <-ch:
		case <-tick.C:
		case <-limit:
			return c.ep.Readiness(mask) != 0
		}
	}
	return true
}

// smallBufs are the copySmall buffers both directions start with.
var smallBufs = sync.Pool{New: func() any { return new([copySmall]byte) }}

const readReady = waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr

// WriteTo (what the proxy's relay uses for the client's bytes) copies
// them to w, holding a copySmall buffer only while bytes are there: an
// idle client, or one the upstream does not read from, costs no buffer.
func (c *tcpConn) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var buf *[copySmall]byte
	defer func() {
		if buf != nil {
			smallBufs.Put(buf)
		}
	}()
	for {
		if !c.wait(readReady, stallAfter) {
			if buf != nil {
				smallBufs.Put(buf)
				buf = nil
			}
			c.wait(readReady, 0)
		}
		if buf == nil {
			buf = smallBufs.Get().(*[copySmall]byte)
		}
		n, rerr := c.TCPConn.Read(buf[:])
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			if m < n {
				return total, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

func (c *tcpConn) ReadFrom(r io.Reader) (int64, error) {
	var total, granted int64
	sndbuf, chunk := int64(sendBufBase), int64(copySmall)
	defer func() { c.b.give(granted) }()
	var buf []byte
	var small *[copySmall]byte // buf, when it is a pooled small buffer
	defer func() {
		if small != nil {
			smallBufs.Put(small)
		}
	}()
	for {
		if !c.wait(writeReady, stallAfter) {
			// The client has stopped reading: hold no relay buffer, and
			// give back its share of the budget, until it reads again.
			if small != nil {
				smallBufs.Put(small)
				small = nil
			}
			buf = nil
			if chunk > copySmall {
				c.b.give(chunk - copySmall)
				granted -= chunk - copySmall
				chunk = copySmall
			}
			c.wait(writeReady, 0)
		}
		if buf == nil {
			if chunk == copySmall {
				small = smallBufs.Get().(*[copySmall]byte)
				buf = small[:]
			} else {
				buf = make([]byte, chunk)
			}
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			w, werr := c.TCPConn.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
			if n == len(buf) && total >= growAfter && c.writable() {
				// Bulk data, and the client keeps up: double both.
				if chunk < copyLarge && c.b.take(chunk) {
					granted += chunk
					chunk *= 2
					if small != nil {
						smallBufs.Put(small)
						small = nil
					}
					buf = make([]byte, chunk)
				}
				if sndbuf < sendBufMax && c.b.take(sndbuf) {
					granted += sndbuf
					sndbuf *= 2
					c.ep.SocketOptions().SetSendBufferSize(sndbuf, true)
				}
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// begin counts a handler in, unless Serve is shutting down.
func (sv *server) begin() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.closing {
		return false
	}
	sv.wg.Add(1)
	return true
}

// refuseUDP records one violation per destination: a client retrying a
// datagram is one refusal.
func (sv *server) refuseUDP(id stack.TransportEndpointID) {
	a, _ := netip.AddrFromSlice(id.LocalAddress.AsSlice())
	ap := netip.AddrPortFrom(a.Unmap(), id.LocalPort)
	if !sv.refusedUDP.First(ap) {
		return
	}
	sv.cfg.Policy.Report(netproxy.Denial{Proto: ProtoUDP, Host: sv.host(id.LocalAddress), Port: int(id.LocalPort),
		Rule: netproxy.RuleProtocol, Reason: "UDP is not carried (only DNS to sbx's resolver); use TCP"})
}

var _ net.Conn = (*gonet.TCPConn)(nil)
