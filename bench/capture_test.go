//go:build linux

package bench

// Capture benchmarks: one TCP stream and new connections
// through sbx's capture path, side by side with the proxy's CONNECT
// tunnel and a bare loopback connection, all in one process:
//
//	go test -run '^$' -bench 'Capture|Tunnel|Direct' -benchtime 3s ./bench/
//
// The sandbox's side of the capture path is a second gVisor stack on a
// SOCK_SEQPACKET pair, not the kernel behind a TUN device: two user-space
// stacks, so these numbers are a pessimistic bound on the real thing.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/capture"
	"github.com/sbx-sh/sbx/netproxy"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

const chunk = 1 << 20 // bytes per iteration of a throughput benchmark

var benchMTU = capture.DefaultMTU

// sinkServer reads each connection to EOF and answers one byte; a
// connection that starts with 'p' is answered at once (latency).
func sinkServer(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReaderSize(c, 64<<10)
				first, err := br.ReadByte()
				if err != nil {
					return
				}
				if first == 'p' {
					_, _ = c.Write([]byte{'o'})
					return
				}
				_, _ = io.Copy(io.Discard, br)
				_, _ = c.Write([]byte{'d'})
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

type dialer func(ctx context.Context) (net.Conn, error)

func throughput(b *testing.B, dial dialer) {
	c, err := dial(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, chunk)
	buf[0] = 'd'
	b.SetBytes(chunk)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		b.Fatal(err)
	}
}

// latency reports, besides the mean, the median and 99th percentile of
// one connect, one byte each way and close: the mean of the capture path
// carries rare 1 s SYN retransmissions when the sandbox-side stack
// reuses a port the capture side still holds in TIME_WAIT.
func latency(b *testing.B, dial dialer) {
	one := make([]byte, 1)
	var times []time.Duration
	defer func() {
		if len(times) == 0 {
			return
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
	}()
	for b.Loop() {
		start := time.Now()
		c, err := dial(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write([]byte{'p'}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatal(err)
		}
		c.Close()
		times = append(times, time.Since(start))
	}
}

func directDialer(port int) dialer {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	}
}

// tunnelDialer opens a CONNECT tunnel through netproxy on loopback.
func tunnelDialer(b *testing.B, port int) dialer {
	p, err := netproxy.New(netproxy.Config{Allowed: []string{"test.localhost", fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.ServeHTTP(l)
	b.Cleanup(func() { p.Close() })
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", l.Addr().String())
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "CONNECT test.localhost:%d HTTP/1.1\r\nHost: test.localhost:%d\r\n\r\n", port, port)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 || br.Buffered() != 0 {
			c.Close()
			return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
		}
		return c, nil
	}
}

// captureDialer serves capture on one end of a packet pair and dials
// test.localhost's synthetic address from a client stack on the other.
func captureDialer(b *testing.B, port int) dialer {
	p, err := netproxy.New(netproxy.Config{Allowed: []string{"test.localhost", fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		b.Fatal(err)
	}
	names, err := capture.NewNames(netip.Prefix{})
	if err != nil {
		b.Fatal(err)
	}
	v4, _, err := names.Assign("test.localhost")
	if err != nil {
		b.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, fd := range fds {
		// A full socket buffer drops packets (fdbased writes do not
		// block), and TCP then waits for retransmission timeouts.
		for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 4<<20)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = capture.Serve(ctx, fds[0], capture.Config{Policy: p, Names: names, MTU: benchMTU})
	}()
	link, err := fdbased.New(&fdbased.Options{FDs: []int{fds[1]}, MTU: uint32(benchMTU), PacketDispatchMode: fdbased.Readv})
	if err != nil {
		b.Fatal(err)
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	if e := s.CreateNIC(1, link); e != nil {
		b.Fatal(e)
	}
	sack := tcpip.TCPSACKEnabled(true) // as the kernel, the real client
	_ = s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	s4, _, _, _ := names.DeviceAddrs()
	if e := s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(s4.As4()), PrefixLen: 15}}, stack.AddressProperties{}); e != nil {
		b.Fatal(e)
	}
	sn, _ := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{}), tcpip.MaskFromBytes(make([]byte, 4)))
	s.SetRouteTable([]tcpip.Route{{Destination: sn, NIC: 1}})
	b.Cleanup(func() {
		cancel()
		s.Close()
		s.Wait()
		<-done
		p.Close()
		unix.Close(fds[0])
		unix.Close(fds[1])
	})
	fa := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(v4.As4()), Port: uint16(port)}
	return func(ctx context.Context) (net.Conn, error) {
		return gonet.DialContextTCP(ctx, s, fa, ipv4.ProtocolNumber)
	}
}

func BenchmarkCaptureThroughput(b *testing.B) { throughput(b, captureDialer(b, sinkServer(b))) }
func BenchmarkTunnelThroughput(b *testing.B)  { throughput(b, tunnelDialer(b, sinkServer(b))) }
func BenchmarkDirectThroughput(b *testing.B)  { throughput(b, directDialer(sinkServer(b))) }
func BenchmarkCaptureNewConn(b *testing.B)    { latency(b, captureDialer(b, sinkServer(b))) }
func BenchmarkTunnelNewConn(b *testing.B)     { latency(b, tunnelDialer(b, sinkServer(b))) }
func BenchmarkDirectNewConn(b *testing.B)     { latency(b, directDialer(sinkServer(b))) }
