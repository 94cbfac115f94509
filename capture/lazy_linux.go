package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// device is the reading side of the capture device: a duplicate of its
// descriptor in Go's poller, so that a wait for a packet holds no thread
// in a system call (which would also hold the supervisor's one P while
// the sandbox starts and each time the device runs dry; see link), and
// is stopped by a read deadline. firstPacket reads it, then the link.
type device struct {
	f  *os.File
	rc syscall.RawConn
}

// openDevice makes fd non-blocking and duplicates it into the poller. It
// refuses a descriptor the poller cannot take (a regular file): a read
// deadline, the only way to stop a wait, needs the poller.
func openDevice(fd int) (*device, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("capture: device: %w", err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("capture: device: %w", err)
	}
	f := os.NewFile(uintptr(dup), "capture device")
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("capture: device cannot be polled: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("capture: device: %w", err)
	}
	return &device{f: f, rc: rc}, nil
}

// read reads one packet into buf and returns its length. An error is the
// poller's (os.ErrDeadlineExceeded once stopped) or the read's: io.EOF
// for a device whose other end is gone (a socket standing for it; a TUN
// device answers EBADFD), which would otherwise read 0 bytes at once for
// ever.
func (d *device) read(buf []byte) (int, error) {
	for {
		var n int
		var rerr error
		err := d.rc.Read(func(s uintptr) bool {
			n, rerr = unix.Read(int(s), buf)
			return rerr != unix.EAGAIN
		})
		switch {
		case err != nil:
			return 0, err
		case rerr == unix.EINTR:
			continue
		case rerr != nil:
			return 0, rerr
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// firstPacket waits until dev carries a packet that is not the kernel's
// own IPv6 housekeeping (router solicitations, neighbour discovery and
// MLD reports, which it sends as soon as the device is up and which need
// no answer on a point-to-point device), reading and dropping those, and
// returns that packet (without the device's virtio_net_hdr when vnet);
// nil when ctx ends first. Until then Serve builds no stack: a run that
// never uses the network pays for none.
func firstPacket(ctx context.Context, dev *device, mtu int, vnet bool) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { _ = dev.f.SetReadDeadline(time.Now()) })
	defer stop()
	off := deviceHdrLen(vnet)
	buf := make([]byte, off+mtu)
	for {
		n, err := dev.read(buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, nil // ctx is done
		case err != nil:
			return nil, fmt.Errorf("capture: reading the device: %w", err)
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
