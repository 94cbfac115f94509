package capture

import (
	"net/netip"
	"sync"

	"github.com/sbx-sh/sbx/netproxy"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// ProtoICMP is netproxy.Denial.Proto for a refused ICMP echo request.
const ProtoICMP = "icmp"

// icmpFilter sits between the device and the stack and drops ICMP and
// ICMPv6 echo requests, with one violation per destination: the stack
// would otherwise answer a ping to any address itself (it accepts every
// destination), telling the command a host is up that sbx never reached.
// ICMP errors pass: TCP and UDP use them.
//
// It is also the gate of the lazy start: the device's dispatcher starts
// reading when the NIC is created, before the stack has its addresses and
// routes, and packets queued while the stack was built (a second DNS query
// of one flow, a retransmitted SYN) would be dropped there, or race the
// first packet, which Serve hands over itself. DeliverNetworkPacket holds
// them until open, which Serve calls once the first packet is in.
type icmpFilter struct {
	nested.Endpoint
	sv       *server
	ready    chan struct{} // closed by open
	openOnce sync.Once
}

func newICMPFilter(child stack.LinkEndpoint, sv *server) *icmpFilter {
	f := &icmpFilter{sv: sv, ready: make(chan struct{})}
	f.Endpoint.Init(child, f)
	return f
}

// open lets the device's packets through (idempotent).
func (f *icmpFilter) open() { f.openOnce.Do(func() { close(f.ready) }) }

// DeliverNetworkPacket is the device's dispatcher's path into the stack.
func (f *icmpFilter) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	<-f.ready
	f.deliver(proto, pkt)
}

func (f *icmpFilter) deliver(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	if dst, ok := echoRequest(pkt); ok {
		f.sv.refuseICMP(dst)
		return
	}
	f.Endpoint.DeliverNetworkPacket(proto, pkt)
}

// echoRequest reports whether pkt (a raw IP packet) is an ICMP echo
// request, and its destination.
func echoRequest(pkt *stack.PacketBuffer) (netip.Addr, bool) {
	b, ok := pkt.Data().PullUp(min(pkt.Data().Size(), 64))
	if !ok || len(b) < 1 {
		return netip.Addr{}, false
	}
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		if len(b) < 20 || ihl < 20 || len(b) <= ihl || b[9] != 1 || b[ihl] != 8 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(b[16:20])), true
	case 6:
		if len(b) <= 40 || b[6] != 58 || b[40] != 128 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom16([16]byte(b[24:40])), true
	}
	return netip.Addr{}, false
}

func (sv *server) refuseICMP(dst netip.Addr) {
	if !sv.refusedICMP.First(dst) {
		return
	}
	host := dst.String()
	if name, ok := sv.cfg.Names.Name(dst); ok {
		host = name
	}
	sv.cfg.Policy.Report(netproxy.Denial{Proto: ProtoICMP, Host: host, Rule: netproxy.RuleProtocol,
		Reason: "ICMP echo is not carried; sbx carries TCP to allowed names"})
}
