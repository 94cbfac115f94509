package capture

// Config is what Serve needs.
type Config struct {
	Policy Policy // decides names and serves connections (a *netproxy.Proxy)
	Names  *Names // the run's address book, shared with whoever writes resolv.conf
	MTU    int    // of the device; 0 means DefaultMTU
}

// DefaultMTU is the capture device's MTU.
const DefaultMTU = 1500

// ProtoUDP is netproxy.Denial.Proto for a refused datagram.
const ProtoUDP = "udp"
