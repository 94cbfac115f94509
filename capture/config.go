package capture

// Config is what Serve needs.
type Config struct {
	Policy Policy // decides names and serves connections (a *netproxy.Proxy)
	Names  *Names // the run's address book, shared with whoever writes resolv.conf
	MTU    int    // of the device; 0 means DefaultMTU

	// VnetHdr: the device was made with IFF_VNET_HDR, so every packet
	// read and written starts with a struct virtio_net_hdr; Serve then
	// leaves TCP and UDP sums to the sandbox's kernel, which does not
	// verify them on local delivery (link_linux.go). sbx's device is
	// made so; a SOCK_SEQPACKET socket (tests) carries raw packets.
	VnetHdr bool

	// Started, when not nil, is called once, when the first packet that
	// is not the kernel's IPv6 housekeeping has arrived and before the
	// stack is built for it (a run whose command never uses the network
	// never calls it). The supervisor gives the Go runtime its CPUs
	// there.
	Started func()
}

// DefaultMTU is the capture device's MTU: as large as a TUN device takes,
// like loopback's, because per-packet work dominates the stack's cost
// (bench/capture_test.go: 68 MB/s at 1500, 298 at 9000, 837 at 65520).
const DefaultMTU = 65520

// ProtoUDP is netproxy.Denial.Proto for a refused datagram.
const ProtoUDP = "udp"
