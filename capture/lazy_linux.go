package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// firstPacket waits until fd carries a packet that is not the kernel's
// own IPv6 housekeeping (router solicitations, neighbour discovery and
// MLD reports, which it sends as soon as the device is up and which need
// no answer on a point-to-point device), reading and dropping those, and
// returns that packet (without the device's virtio_net_hdr when vnet);
// nil when ctx ends first. Until then Serve builds no stack: a run that
// never uses the network pays for none.
func firstPacket(ctx context.Context, fd int, mtu int, vnet bool) ([]byte, error) {
	// The wait is in Go's poller, on a duplicate of fd (its close takes
	// it out again before the stack reads fd itself): no thread of its
	// own, which a blocking poll would take while the sandbox starts.
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("capture: device: %w", err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("capture: device: %w", err)
	}
	f := os.NewFile(uintptr(dup), "capture device")
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("capture: device: %w", err)
	}
	off := deviceHdrLen(vnet)
	buf := make([]byte, off+mtu)
	for {
		var n int
		var rerr error
		err := rc.Read(func(s uintptr) bool {
			n, rerr = unix.Read(int(s), buf)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, nil // ctx is done
		case err != nil:
			return nil, fmt.Errorf("capture: waiting on the device: %w", err)
		case errors.Is(rerr, unix.EINTR):
			continue
		case rerr != nil:
			return nil, fmt.Errorf("capture: reading the device: %w", rerr)
		}
		if n > off && !housekeeping(buf[off:n]) {
			return append([]byte(nil), buf[off:n]...), nil
		}
	}
}

// housekeeping reports whether p is an IPv6 packet the kernel sends by
// itself when a device comes up: ICMPv6 router solicitation, neighbour
// solicitation or advertisement, or an MLD report (which comes after a
// hop-by-hop header).
func housekeeping(p []byte) bool {
	if len(p) < 41 || p[0]>>4 != 6 {
		return false
	}
	next, off := p[6], 40
	if next == 0 { // hop-by-hop options (router alert), then ICMPv6
		if len(p) < off+8 {
			return false
		}
		next, off = p[off], off+(int(p[off+1])+1)*8
	}
	if next != 58 || len(p) <= off {
		return false
	}
	switch p[off] {
	case 130, 131, 132, 143, 133, 135, 136: // MLD query/report/done, MLDv2 report, RS, NS, NA
		return true
	}
	return false
}

// deliverFirst hands the packet firstPacket read to the stack, as the
// device's dispatcher would have, and then lets the dispatcher's packets
// through: the first packet is in the stack before any that came after it.
func deliverFirst(f *icmpFilter, p []byte) {
	defer f.open()
	if proto, pkt := ipPacket(p); pkt != nil {
		f.deliver(proto, pkt)
		pkt.DecRef()
	}
}
