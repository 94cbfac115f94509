package capture

import (
	"encoding/binary"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// TestSeedChecksum builds TCP and UDP packets over IPv4 and IPv6 as the
// stack sends them under transmit offload (transport sum left zero),
// seeds them, completes the sum as a NIC or the kernel's
// skb_checksum_help would (sum from csum_start to the end, complemented,
// stored at csum_start+csum_offset), and checks the result against the
// pseudo-header sum computed independently: a wrong seed, start, offset
// or length fails. ICMP keeps flags 0 and its bytes.
func TestSeedChecksum(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	src4, dst4 := tcpip.AddrFrom4([4]byte{198, 18, 0, 1}), tcpip.AddrFrom4([4]byte{198, 18, 1, 7})
	src6 := tcpip.AddrFrom16([16]byte{0xfd, 0x12, 15: 1})
	dst6 := tcpip.AddrFrom16([16]byte{0xfd, 0x12, 14: 1, 15: 0x07})
	for _, c := range []struct {
		name     string
		net      tcpip.NetworkProtocolNumber
		trans    tcpip.TransportProtocolNumber
		src, dst tcpip.Address
	}{
		{"tcp4", header.IPv4ProtocolNumber, header.TCPProtocolNumber, src4, dst4},
		{"udp4", header.IPv4ProtocolNumber, header.UDPProtocolNumber, src4, dst4},
		{"tcp6", header.IPv6ProtocolNumber, header.TCPProtocolNumber, src6, dst6},
		{"udp6", header.IPv6ProtocolNumber, header.UDPProtocolNumber, src6, dst6},
		{"icmp4", header.IPv4ProtocolNumber, header.ICMPv4ProtocolNumber, src4, dst4},
	} {
		for _, size := range []int{0, 1, 2, 7, 1460, 4097, 65000} {
			payload := make([]byte, size)
			rng.Read(payload)
			pkt := buildPacket(c.net, c.trans, c.src, c.dst, payload)
			before := flatten(pkt)
			hdr := make([]byte, vnetHdrLen)
			seedChecksum(pkt, hdr)
			b := flatten(pkt)
			pkt.DecRef()
			if c.trans == header.ICMPv4ProtocolNumber {
				if hdr[0] != 0 || string(b) != string(before) {
					t.Errorf("%s/%d: header %x, packet changed %v", c.name, size, hdr, string(b) != string(before))
				}
				continue
			}
			if hdr[0] != vnetNeedsCsum {
				t.Fatalf("%s/%d: flags %#x, want NEEDS_CSUM", c.name, size, hdr[0])
			}
			start := int(binary.NativeEndian.Uint16(hdr[vnetCsumStartOff:]))
			off := int(binary.NativeEndian.Uint16(hdr[vnetCsumOffsetOff:]))
			if start+off+2 > len(b) {
				t.Fatalf("%s/%d: csum_start %d + csum_offset %d past the packet (%d)", c.name, size, start, off, len(b))
			}
			binary.BigEndian.PutUint16(b[start+off:], ^checksum.Checksum(b[start:], 0))
			seg := b[start:]
			if got := checksum.Checksum(seg, header.PseudoHeaderChecksum(c.trans, c.src, c.dst, uint16(len(seg)))); got != 0xffff {
				t.Errorf("%s/%d: completed sum does not verify (%#x)", c.name, size, got)
			}
		}
	}
}

// buildPacket is an outbound packet as the stack hands it to the link:
// transport header (sum zero) and network header pushed, protocol
// numbers set.
func buildPacket(net tcpip.NetworkProtocolNumber, trans tcpip.TransportProtocolNumber, src, dst tcpip.Address, payload []byte) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: header.IPv6MinimumSize + header.TCPMinimumSize, Payload: buffer.MakeWithData(payload)})
	var proto uint8
	switch trans {
	case header.TCPProtocolNumber:
		header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize)).Encode(&header.TCPFields{
			SrcPort: 80, DstPort: 40000, SeqNum: 1, AckNum: 2, DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck, WindowSize: 1024})
		proto = uint8(header.TCPProtocolNumber)
	case header.UDPProtocolNumber:
		header.UDP(pkt.TransportHeader().Push(header.UDPMinimumSize)).Encode(&header.UDPFields{
			SrcPort: 53, DstPort: 40000, Length: uint16(header.UDPMinimumSize + len(payload))})
		proto = uint8(header.UDPProtocolNumber)
	default:
		icmp := header.ICMPv4(pkt.TransportHeader().Push(header.ICMPv4MinimumSize))
		icmp.SetType(header.ICMPv4DstUnreachable)
		icmp.SetChecksum(header.ICMPv4Checksum(icmp, checksum.Checksum(payload, 0)))
		proto = uint8(header.ICMPv4ProtocolNumber)
	}
	pkt.TransportProtocolNumber = trans
	if net == header.IPv4ProtocolNumber {
		ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(header.IPv4MinimumSize + pkt.Size()), TTL: 64, Protocol: proto, SrcAddr: src, DstAddr: dst})
		ip.SetChecksum(^ip.CalculateChecksum())
	} else {
		ip := header.IPv6(pkt.NetworkHeader().Push(header.IPv6MinimumSize))
		ip.Encode(&header.IPv6Fields{PayloadLength: uint16(pkt.Size()), TransportProtocol: trans, HopLimit: 64, SrcAddr: src, DstAddr: dst})
	}
	pkt.NetworkProtocolNumber = net
	return pkt
}

func flatten(pkt *stack.PacketBuffer) []byte {
	var b []byte
	for _, v := range pkt.AsSlices() {
		b = append(b, v...)
	}
	return b
}

// TestWriteManyViews writes a packet of 2000 one-byte views, as the
// stack builds when it merges a segment from many small writes, and
// reads it whole at the other end of the device (without and with the
// virtio header): writev takes at most 1024 iovecs, and past that every
// write, retransmissions too, failed with EINVAL and the connection
// stalled (found in review).
func TestWriteManyViews(t *testing.T) {
	for _, vnet := range []bool{false, true} {
		fds := seqpacketPair(t)
		l := newLink(fds[0], testDevice(t, fds[0]), DefaultMTU, vnet)
		var payload buffer.Buffer
		want := make([]byte, 2000)
		for i := range want {
			want[i] = byte(i * 7)
			one := buffer.MakeWithData(want[i : i+1])
			payload.Merge(&one) // chained, as the stack merges segments, not copied

		}
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: header.IPv4MinimumSize + header.TCPMinimumSize, Payload: payload})
		header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize)).Encode(&header.TCPFields{SrcPort: 80, DstPort: 40000, DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck})
		pkt.TransportProtocolNumber = header.TCPProtocolNumber
		ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(header.IPv4MinimumSize + pkt.Size()), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
			SrcAddr: tcpip.AddrFrom4([4]byte{198, 18, 1, 0}), DstAddr: tcpip.AddrFrom4([4]byte{198, 18, 0, 1})})
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		if views := len(pkt.AsSlices()); views <= 1024 {
			t.Fatalf("the packet has %d views, want more than 1024", views)
		}
		var list stack.PacketBufferList
		list.PushBack(pkt)
		n, werr := l.WritePackets(list)
		pkt.DecRef()
		if n != 1 || werr != nil {
			t.Fatalf("vnet %v: WritePackets = %d, %v", vnet, n, werr)
		}
		got := make([]byte, 70000)
		m, err := unix.Read(fds[1], got)
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		if vnet {
			off = vnetHdrLen
		}
		if m != off+header.IPv4MinimumSize+header.TCPMinimumSize+len(want) || string(got[off+40:m]) != string(want) {
			t.Fatalf("vnet %v: read %d bytes, payload intact %v", vnet, m, string(got[off+40:m]) == string(want))
		}
		l.release()
	}
}

// seqpacketPair is a connected SOCK_SEQPACKET pair standing for the
// device (one packet per read and write), closed when the test ends.
func seqpacketPair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return [2]int{fds[0], fds[1]}
}

// TestOpenDeviceNeedsPoller: the reader is stopped with a read
// deadline, so a descriptor the poller cannot take (a regular file) is
// refused up front rather than given a reader that nothing could stop.
func TestOpenDeviceNeedsPoller(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "notadevice")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := openDevice(int(f.Fd())); err == nil || !strings.Contains(err.Error(), "cannot be polled") {
		t.Fatalf("openDevice on a regular file: %v, want a refusal", err)
	}
	fds := seqpacketPair(t)
	dev, err := openDevice(fds[0])
	if err != nil {
		t.Fatalf("openDevice on a socket: %v", err)
	}
	dev.f.Close()
}

// TestReaderStopsAtEOF: a device whose other end is gone ends the
// reader; a socket standing for it then reads 0 bytes at once, and a
// reader that took that for an empty packet would spin on it.
func TestReaderStopsAtEOF(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	dev, err := openDevice(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	l := newLink(fds[0], dev, DefaultMTU, false)
	defer l.release()
	l.Attach(dropAll{})
	unix.Close(fds[1])
	done := make(chan struct{})
	go func() { l.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		l.halt()
		t.Fatal("the reader went on after the device's other end closed")
	}
}

// dropAll is a dispatcher that drops every packet.
type dropAll struct{}

func (dropAll) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}
func (dropAll) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer)    {}
