package capture

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// dns answers a datagram to port 53, any address, statelessly: the
// resolver's answer goes back to the query's source as one raw IP packet
// written to the device. It runs in the stack's packet processing, on
// the link's goroutine that read the query (link_linux.go); Names, the
// once-sets and the collector take
// their own locks all the same. No endpoint is made per flow, so every
// query of a flow is answered alike (glibc sends A and AAAA back to back
// from one socket, Go from two), and a lookup costs one trip through the
// stack each way: on a machine where a page fault costs 11 µs, a UDP
// endpoint, a goroutine
// and a 2 s idle timer per flow put a lookup at +1.3 ms over a CONNECT
// to the name (docs/benchmarks.md). Resolver.Answer never blocks (a
// name's decision has no --ask-fd question; a refusal is one queued
// record).
func (sv *server) dns(id stack.TransportEndpointID, pkt *stack.PacketBuffer) {
	query := pkt.Data().AsRange().ToSlice()
	out := sv.res.Answer(query)
	if out == nil {
		return
	}
	if b := udpReply(pkt.NetworkProtocolNumber, id, out); b != nil {
		sv.dev.writeIP(b)
	}
}

// udpReply is a UDP datagram carrying payload from id's local end to its
// remote end, with its IPv4 or IPv6 header and checksums; nil for a
// payload too large for one datagram.
func udpReply(proto tcpip.NetworkProtocolNumber, id stack.TransportEndpointID, payload []byte) []byte {
	ulen := header.UDPMinimumSize + len(payload)
	var hl int
	switch proto {
	case header.IPv4ProtocolNumber:
		hl = header.IPv4MinimumSize
	case header.IPv6ProtocolNumber:
		hl = header.IPv6MinimumSize
	default:
		return nil
	}
	// Both the UDP length and IPv4's total length are 16 bits (IPv6's
	// payload length is the UDP length).
	if hl+ulen > 0xffff {
		return nil
	}
	b := make([]byte, hl+ulen)
	src, dst := id.LocalAddress, id.RemoteAddress
	if proto == header.IPv4ProtocolNumber {
		ip := header.IPv4(b)
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(len(b)),
			Flags:       header.IPv4FlagDontFragment, // an atomic datagram: ID 0 is fine (RFC 6864)
			TTL:         64,
			Protocol:    uint8(header.UDPProtocolNumber),
			SrcAddr:     src,
			DstAddr:     dst,
		})
		ip.SetChecksum(^ip.CalculateChecksum())
	} else {
		header.IPv6(b).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(ulen),
			TransportProtocol: header.UDPProtocolNumber,
			HopLimit:          64,
			SrcAddr:           src,
			DstAddr:           dst,
		})
	}
	u := header.UDP(b[hl:])
	u.Encode(&header.UDPFields{SrcPort: id.LocalPort, DstPort: id.RemotePort, Length: uint16(ulen)})
	copy(u.Payload(), payload)
	xsum := header.PseudoHeaderChecksum(header.UDPProtocolNumber, src, dst, uint16(ulen))
	xsum = checksum.Checksum(payload, xsum)
	if c := ^u.CalculateChecksum(xsum); c != 0 {
		u.SetChecksum(c)
	} else {
		u.SetChecksum(0xffff) // 0 means "no checksum" in UDP over IPv4 and is invalid over IPv6
	}
	return b
}
