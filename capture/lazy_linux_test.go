package capture

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pkt6 is a minimal IPv6 packet: next header nh, then payload.
func pkt6(nh byte, payload ...byte) []byte {
	p := make([]byte, 40, 40+len(payload))
	p[0], p[6] = 0x60, nh
	return append(p, payload...)
}

// TestFirstPacket: the stack is built on the first packet that is not the
// kernel's own IPv6 housekeeping; those are dropped, a cancelled context
// ends the wait with no packet.
func TestFirstPacket(t *testing.T) {
	mldv2 := pkt6(0, append([]byte{58, 0, 5, 2, 0, 0, 1, 0}, 143, 0, 0, 0)...) // hop-by-hop (router alert), then an MLDv2 report
	rs := pkt6(58, 133, 0, 0, 0, 0, 0, 0, 0)
	ns := pkt6(58, 135, 0, 0, 0, 0, 0, 0, 0)
	echo := pkt6(58, 128, 0, 0, 0, 0, 0, 0, 0)
	tcp6 := pkt6(6, make([]byte, 20)...)
	tcp4 := append([]byte{0x45}, make([]byte, 39)...)
	for _, c := range []struct {
		name string
		p    []byte
		want bool
	}{{"mldv2", mldv2, true}, {"rs", rs, true}, {"ns", ns, true}, {"echo", echo, false}, {"tcp6", tcp6, false}, {"tcp4", tcp4, false}, {"short", []byte{0x60}, false}} {
		if got := housekeeping(c.p); got != c.want {
			t.Errorf("%s: housekeeping %v, want %v", c.name, got, c.want)
		}
	}
	// With vnet every packet comes after a virtio_net_hdr, which
	// firstPacket reads past (non-zero here, so that a header left on
	// the packet shows).
	for _, vnet := range []bool{false, true} {
		fds := seqpacketPair(t)
		frame := func(p []byte) []byte {
			if !vnet {
				return p
			}
			return append([]byte{1, 0, 0xaa, 0xaa, 0xaa, 0xaa, 40, 0, 16, 0}, p...)
		}
		for _, p := range [][]byte{mldv2, rs, ns, tcp6} {
			if _, err := unix.Write(fds[1], frame(p)); err != nil {
				t.Fatal(err)
			}
		}
		dev := testDevice(t, fds[0])
		got, err := firstPacket(context.Background(), dev, 1500, vnet)
		if err != nil || string(got) != string(tcp6) {
			t.Fatalf("vnet %v: first packet %x (%v), want the TCP one", vnet, got, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := unix.Write(fds[1], frame(rs)); err != nil {
			t.Fatal(err)
		}
		if got, err := firstPacket(ctx, dev, 1500, vnet); got != nil || err != nil {
			t.Fatalf("vnet %v: after the context: %x %v, want nothing", vnet, got, err)
		}
	}
}

// TestFirstPacketEOF: a device whose other end is gone is an error, not
// a wait: a socket standing for it reads 0 bytes at once, and a loop that
// took that for an empty packet would spin until the run ends.
func TestFirstPacketEOF(t *testing.T) {
	fds := seqpacketPair(t)
	dev := testDevice(t, fds[0])
	unix.Close(fds[1])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := firstPacket(ctx, dev, 1500, false); got != nil || err == nil || ctx.Err() != nil {
		t.Fatalf("first packet from a closed device: %x %v (context: %v), want an error at once", got, err, ctx.Err())
	}
}

// testDevice is openDevice(fd), closed when the test ends.
func testDevice(t *testing.T, fd int) *device {
	t.Helper()
	dev, err := openDevice(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.f.Close() })
	return dev
}
