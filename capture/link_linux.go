package capture

import (
	"encoding/binary"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/rawfile"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// vnetHdrLen is the size of struct virtio_net_hdr, which a TUN device
// made with IFF_VNET_HDR puts before every packet, both ways (the
// device's default TUNSETVNETHDRSZ).
const vnetHdrLen = 10

// virtio_net_hdr fields (include/uapi/linux/virtio_net.h): flags at 0,
// csum_start at 6, csum_offset at 8, in the host's byte order for a
// device that was not switched with TUNSETVNETLE/BE.
const (
	vnetNeedsCsum     = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
	vnetCsumStartOff  = 6
	vnetCsumOffsetOff = 8

	udpChecksumOffset = 6 // in the UDP header (gVisor's header package keeps it private)
)

// link is the stack's link endpoint on the device. One goroutine reads
// packets and delivers each into the stack itself (no processor
// goroutine between: the thread that read a DNS query answers it), and
// WritePackets writes each packet with one writev.
//
// With vnet (the device made with IFF_VNET_HDR), the link claims
// transmit checksum offload: the stack leaves the TCP and UDP checksums
// of what it sends, and the link seeds each with its pseudo-header sum
// and marks the packet VIRTIO_NET_HDR_F_NEEDS_CSUM. The sandbox's kernel
// takes it as CHECKSUM_PARTIAL, which local delivery does not verify (as
// on loopback), so no one sums the payload at all: on a 2-core machine
// with costly page faults the two sums were about a tenth of the supervisor's CPU in a
// download (docs/benchmarks.md). Anything in the sandbox that had to
// complete the sum (nothing does on local delivery) would find the seed
// there, as a NIC would. Inbound, the kernel hands over complete sums
// (no TUNSETOFFLOAD) and the link claims receive offload: they are not
// verified again; the header is read past.
//
// Without vnet (a SOCK_SEQPACKET socket in tests) packets are raw IP and
// the stack sums what it sends.
type link struct {
	fd   int
	mtu  uint32
	vnet bool
	dev  *device // the reading side (firstPacket's, handed over)

	mu         sync.Mutex
	dispatcher stack.NetworkDispatcher
	wg         sync.WaitGroup
	haltOnce   sync.Once
	closeOnce  sync.Once
}

// newLink is the link on the device fd (written to directly) and dev,
// its reading side, which the link now owns.
//
// The reader waits in Go's poller (device) rather than in a blocking
// ppoll: a thread blocked in a system call holds its P until the
// runtime's monitor takes it back, every time the device runs dry.
// Measured (bench/netcompare, interleaved): the supervisor's CPU per GiB
// 1.69 -> 1.54, a new captured connection 0.99 -> 0.90 ms median; its
// p99 grew 5.0 -> 5.6 ms (a packet that arrives while every P is busy
// waits for the scheduler to poll).
func newLink(fd int, dev *device, mtu uint32, vnet bool) *link {
	return &link{fd: fd, mtu: mtu, vnet: vnet, dev: dev}
}

// deviceHdrLen is what the device puts before each packet: the
// virtio_net_hdr with vnet, nothing without.
func deviceHdrLen(vnet bool) int {
	if vnet {
		return vnetHdrLen
	}
	return 0
}

// Attach starts the reading goroutine; Attach(nil), the NIC's removal,
// stops it and waits for it.
func (l *link) Attach(d stack.NetworkDispatcher) {
	l.mu.Lock()
	if d == nil {
		running := l.dispatcher != nil
		l.dispatcher = nil
		l.mu.Unlock()
		if running {
			l.halt()
			l.release()
		}
		return
	}
	defer l.mu.Unlock()
	if l.dispatcher == nil {
		l.dispatcher = d
		l.wg.Add(1)
		go l.read(d)
	}
}

// halt stops the reader and waits for it. Serve calls it before it
// closes the stack: Stack.Wait removes the NIC holding the stack's lock
// and waits there for the reader (Attach(nil)), and a reader then
// delivering a packet that needs that lock (the reset for a segment to
// an endpoint Stack.Close just aborted, as when the command's client
// exits with the run) would wait for it for ever.
func (l *link) halt() {
	l.haltOnce.Do(func() { _ = l.dev.f.SetReadDeadline(time.Unix(1, 0)) })
	l.wg.Wait()
}

// release closes the reader's duplicate of the device, once the reader
// is gone or never ran (Serve calls it last, for a NIC that was never
// made).
func (l *link) release() {
	l.closeOnce.Do(func() { _ = l.dev.f.Close() })
}

// read delivers the device's packets to d until halt (which sets a read
// deadline in the past) or a read error (the device gone).
func (l *link) read(d stack.NetworkDispatcher) {
	defer l.wg.Done()
	off := deviceHdrLen(l.vnet)
	buf := make([]byte, off+int(l.mtu))
	for {
		n, err := l.dev.read(buf)
		if err != nil {
			return // halted (the deadline), or the device gone
		}
		if n <= off {
			continue
		}
		if proto, pkt := ipPacket(buf[off:n]); pkt != nil {
			d.DeliverNetworkPacket(proto, pkt)
			pkt.DecRef()
		}
	}
}

// ipPacket is a packet buffer holding a copy of p, a raw IPv4 or IPv6
// packet, and its protocol by the version in its first byte; nil for
// any other version.
func ipPacket(p []byte) (tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {
	var proto tcpip.NetworkProtocolNumber
	switch p[0] >> 4 {
	case 4:
		proto = header.IPv4ProtocolNumber
	case 6:
		proto = header.IPv6ProtocolNumber
	default:
		return 0, nil
	}
	return proto, stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(p)})
}

// WritePackets writes each packet to the device.
func (l *link) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	for i, pkt := range pkts.AsSlice() {
		if err := l.write(pkt); err != nil {
			return i, err
		}
	}
	return pkts.Len(), nil
}

// writeIP writes p, a whole IP packet with its sums made, to the device;
// with vnet behind a zero virtio_net_hdr (no offload: the sums are
// checked as usual). The resolver's answers go this way.
func (l *link) writeIP(p []byte) {
	if l.vnet {
		_, _ = unix.Writev(l.fd, [][]byte{make([]byte, vnetHdrLen), p})
		return
	}
	_, _ = unix.Write(l.fd, p)
}

func (l *link) write(pkt *stack.PacketBuffer) tcpip.Error {
	views := pkt.AsSlices()
	iov := make([]unix.Iovec, 0, len(views)+1)
	if l.vnet {
		hdr := make([]byte, vnetHdrLen)
		seedChecksum(pkt, hdr)
		iov = append(iov, rawfile.IovecFromBytes(hdr))
	}
	// A segment the stack merged from many small writes has a view for
	// each: past UIO_MAXIOV (1024) writev fails with EINVAL, for every
	// retransmission of it too, so the tail is joined into the last
	// iovec instead.
	for _, v := range views {
		iov = rawfile.AppendIovecFromBytes(iov, v, rawfile.MaxIovs)
	}
	if errno := rawfile.NonBlockingWriteIovec(l.fd, iov); errno != 0 {
		return tcpip.TranslateErrno(errno)
	}
	return nil
}

// seedChecksum fills hdr, the packet's virtio_net_hdr: for a TCP or UDP
// packet (whose sum the stack left, under transmit offload) it writes the
// pseudo-header sum into the packet's checksum field and marks hdr
// NEEDS_CSUM with where the sum starts and lies; anything else (ICMP,
// whose sum the stack computes) goes with flags 0, checked as usual.
func seedChecksum(pkt *stack.PacketBuffer, hdr []byte) {
	var field int
	switch pkt.TransportProtocolNumber {
	case header.TCPProtocolNumber:
		field = header.TCPChecksumOffset
	case header.UDPProtocolNumber:
		field = udpChecksumOffset
	default:
		return
	}
	th := pkt.TransportHeader().Slice()
	nh := pkt.NetworkHeader().Slice()
	if len(th) < field+2 {
		return
	}
	var src, dst tcpip.Address
	switch {
	case pkt.NetworkProtocolNumber == header.IPv4ProtocolNumber && len(nh) >= header.IPv4MinimumSize:
		src, dst = header.IPv4(nh).SourceAddress(), header.IPv4(nh).DestinationAddress()
	case pkt.NetworkProtocolNumber == header.IPv6ProtocolNumber && len(nh) >= header.IPv6MinimumSize:
		src, dst = header.IPv6(nh).SourceAddress(), header.IPv6(nh).DestinationAddress()
	default:
		return
	}
	start := len(pkt.LinkHeader().Slice()) + len(nh)
	length := pkt.Size() - start
	binary.BigEndian.PutUint16(th[field:], header.PseudoHeaderChecksum(pkt.TransportProtocolNumber, src, dst, uint16(length)))
	hdr[0] = vnetNeedsCsum
	binary.NativeEndian.PutUint16(hdr[vnetCsumStartOff:], uint16(start))
	binary.NativeEndian.PutUint16(hdr[vnetCsumOffsetOff:], uint16(field))
}

// Capabilities: receive offload always (the sandbox's kernel summed what
// it sends), transmit offload with vnet.
func (l *link) Capabilities() stack.LinkEndpointCapabilities {
	c := stack.CapabilityRXChecksumOffload
	if l.vnet {
		c |= stack.CapabilityTXChecksumOffload
	}
	return c
}

// Wait waits for the reading goroutine.
func (l *link) Wait() { l.wg.Wait() }

// IsAttached reports whether the link delivers to a dispatcher.
func (l *link) IsAttached() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dispatcher != nil
}

// The rest of stack.LinkEndpoint: a point-to-point device of raw IP
// packets, with no link header or address; the MTU is the device's.

func (l *link) MTU() uint32                             { return l.mtu }
func (l *link) SetMTU(uint32)                           {}
func (l *link) MaxHeaderLength() uint16                 { return 0 }
func (l *link) LinkAddress() tcpip.LinkAddress          { return "" }
func (l *link) SetLinkAddress(tcpip.LinkAddress)        {}
func (l *link) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareNone }
func (l *link) AddHeader(*stack.PacketBuffer)           {}
func (l *link) ParseHeader(*stack.PacketBuffer) bool    { return true }
func (l *link) Close()                                  {}
func (l *link) SetOnCloseAction(func())                 {}
