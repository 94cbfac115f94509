// Package capture is sbx's transparent capture: the other end of a TUN
// device in the sandbox's network namespace, so that every TCP client
// obeys the domain policy whether or not it honours a proxy variable.
//
// # What it does
//
// Serve runs gVisor's netstack (gvisor.dev/gvisor/pkg/tcpip, the
// user-space TCP/IP stack of tailscale and wireguard-go) on a packet
// descriptor: a TUN device opened with IFF_TUN|IFF_NO_PI|IFF_VNET_HDR,
// whose other end, inside the sandbox, carries default routes for IPv4
// and IPv6. The stack accepts packets to every address (promiscuous,
// spoofing), so TCP is terminated here in user space; no packet is ever
// forwarded as such. The stack's link to the device is sbx's own (link,
// link_linux.go): one goroutine reads and delivers each packet itself,
// waiting in Go's poller (not in a blocking system call, which would hold
// the supervisor's one P), and with the virtio_net_hdr the stack's TCP sums are left to the
// sandbox's kernel, which does not compute them on local delivery.
//
// # Names
//
// Inside the sandbox the resolver is sbx's own (Resolver, on UDP port 53
// at any address of the device; DeviceAddrs names the one resolv.conf
// should carry). It never asks another resolver. For a query of class IN
// with one question:
//
//   - the name is decided by the proxy's own matcher (netproxy's
//     DecideName): a deny entry without a port refuses it, an allow entry
//     for any port allows it, with --ask-fd the decision waits for the
//     connection, where the port is known;
//   - a refused name gets NXDOMAIN for every query type, and one
//     `network` violation per name per run (Proto "dns"), however often a
//     client asks;
//   - an allowed name gets, for A and AAAA, a synthetic address: one per
//     name for the run, from 198.18.0.0/15 (RFC 2544, never routed) and a
//     ULA /48 in fd00::/8 that is random per run, the same offset in both
//     (198.18.1.0 and PREFIX::100 are the first name). Names remembers
//     the name for each address. TTL is 60 s;
//   - HTTPS and SVCB get NOERROR with no answer (NODATA), so browsers and
//     curl fall back to A/AAAA at once;
//   - every other type (MX, TXT, SRV, PTR, CNAME, ANY, ...) gets REFUSED:
//     sbx carries TCP to names and has no such data; no violation;
//   - another opcode gets NOTIMP, several questions or another class
//     FORMERR, a message that is not a query no answer.
//
// A synthetic answer says nothing about the name upstream: an allowed
// name that does not exist resolves inside the sandbox, and its
// connections fail when the proxy resolves it for real.
//
// # Connections
//
// A TCP connection to a synthetic address is handed to netproxy's
// VetCaptured and ServeVetted as the name that address was handed out for,
// at the port dialled: the same vetting as a CONNECT to name:port (deny
// over allow, the address guard on the real resolved addresses, the
// parent proxy, --ask-fd, and for port 443 credentials and TLS
// termination; other ports are relayed opaquely), the same
// violations (Proto "capture"). The upstream is always that name at that
// port, never anything taken from the payload. The client's first bytes
// pass netproxy's one TLS server-name check (rules sni-mismatch and
// bad-client-hello), before any byte goes upstream. A connection to an
// address sbx did not hand out is vetted as the IP literal it is: refused
// unless an allowedDomains entry lists it.
//
// The decision comes before the handshake completes (VetCaptured, in the
// forwarder's goroutine for that SYN): a refused or unresolvable
// destination gets a reset, so the client sees ECONNREFUSED, and a client
// waiting on --ask-fd sees its connect wait. An allowed destination's
// upstream is dialled as soon as it is decided, so that its connect
// overlaps the rest of the client's handshake (a connection terminated
// for TLS dials after its ClientHello, as a CONNECT would); one whose
// handshake fails then is closed (Captured.Abandon), and so is one the
// proxy cannot take (at its client limit). A client's kernel completes
// or resets a handshake at once; only a half-open one, which takes a raw
// socket the sandbox has no capability for, would hold its upstream
// until the stack gives up its SYN-ACK retries.
//
// UDP to any port but 53 is refused: the stack answers ICMP port
// unreachable (the client sees ECONNREFUSED on a connected socket) and
// one violation per destination is recorded (Proto "udp"). ICMP is never
// forwarded; echo requests are dropped before the stack sees them (it
// would answer an IPv6 ping to any address itself) with one violation per
// destination (Proto "icmp"); ICMP errors pass, TCP and UDP use them.
//
// # Cost
//
// Importing the package links netstack into the binary and runs its
// package initialisers at start-up (docs/benchmarks.md has the numbers);
// Serve builds the stack only when the device carries its first packet
// that is not the kernel's own IPv6 housekeeping (lazy_linux.go), so a
// run without filtered networking, or one that never uses the network,
// pays no memory for it.
//
// A captured connection's bytes wait in the supervisor's own memory (the
// stack's send buffer, the relay's buffer), where on the CONNECT path
// they wait in the kernel's sockets. So each connection starts with
// small buffers (a 32 KiB send buffer, 16 KiB copies), reads from the
// upstream only when the client side takes more, lets its copy buffer go
// once it has waited 200 ms for its peer, and grows (up to 1 MiB each)
// only while its client keeps up, out of a 64 MiB budget shared by all
// connections (stack_linux.go). 600 captured connections whose clients
// never read cost the supervisor about 70 MB in all, not 1.1 GB.
//
// # Platforms
//
// Serve is Linux-only (stack_linux.go); elsewhere it returns an error.
// The resolver and the address book are portable.
//
// # Where it runs
//
// sbx's supervisor calls Serve on the TUN device made in the sandbox's
// network namespace by the early process (which shares the supervisor's
// descriptor table) or by the sandbox's first process, which hands it
// over (package sandbox, capture_linux.go); the same package binds the
// resolv.conf, hosts and nsswitch.conf that send names here.
package capture
