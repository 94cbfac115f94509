// Package netproxy is sbx's egress proxy: the only way out of a sandbox
// whose network namespace has nothing but loopback. It runs in the
// supervisor process and serves an HTTP proxy and a SOCKS5 proxy on
// listeners it is handed (typically created inside the sandbox's network
// namespace and passed over a Unix socket); any net.Listener works.
//
// The package owns three things: matching destinations against the
// network.allowedDomains / network.deniedDomains lists, vetting the
// addresses an allowed name resolves to, and dialling exactly the vetted
// address. Proxy environment variables inside the sandbox are a
// convenience for clients; the namespace is the enforcement.
//
// # Matching
//
// Entries are validated by [ValidatePattern] (and [New]) at start-up:
//
//	example.com          that name exactly, any port (case-insensitive, trailing dot ignored)
//	example.com:443      that name, port 443 only
//	*.example.com        strict subdomains: a.example.com, a.b.example.com;
//	                     never example.com itself, never badexample.com
//	127.0.0.1, [::1]:8080, ::1
//	                     IP literals; only literal entries ever match an IP
//	localhost            the name localhost (127.0.0.1 and ::1, not looked up)
//
// Refused at start-up: "*" and wildcards over a public suffix or a single
// label ("*.com", "*.co.uk", "*.github.io") in the allow list; a scheme,
// path, query or user part; a "*" anywhere but a leading "*."; wildcards
// over IP addresses; bad ports; spaces, control or non-ASCII bytes (write
// international names in their xn-- form). The deny list may contain "*"
// (deny everything, IP literals included) and public-suffix wildcards.
//
// The deny list is checked first and wins; then the allow list; anything
// else is refused (rule [RuleDefault]). Before matching, a host is
// canonicalised by [Canonicalize]: lower case, no trailing dot, IPv6
// without brackets or zone, IPv4-mapped IPv6 as IPv4, and the numeric IPv4
// forms inet_aton(3) accepts turned into a dotted quad (127.1, 2130706433,
// 0x7f.1 and 0177.0.0.1 are all 127.0.0.1). A name whose last label is
// numeric but is not a valid IPv4 address, empty or over-long labels, and
// bytes other than letters, digits, '-', '_' and '.' are refused (rule
// [RuleInvalidHost]). [Proxy.Decide] is this matching alone.
//
// # Address guard
//
// After a name is allowed, the proxy resolves it once (through
// Config.Resolver) and refuses addresses that are loopback (127.0.0.0/8,
// ::1), link-local (169.254.0.0/16, fe80::/10), cloud metadata
// (169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16),
// private (RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16;
// fc00::/7, fec0::/10), CGNAT (100.64.0.0/10), unspecified (0.0.0.0/8,
// ::), multicast (224.0.0.0/4, ff00::/8), reserved
// (240.0.0.0/4, the IPv4-compatible ::/96, 64:ff9b:1::/48), NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) forms of any of those, and the
// host's own interface addresses (cached for 5 s); the ranges are
// internal/hostaddr's table, which policy also reads to refuse such
// addresses in untrusted settings files. IPv4-mapped addresses
// are judged as IPv4. An address is nevertheless allowed when an allow
// entry names it literally (with a matching port, if the entry has one),
// and loopback is allowed when the entry that allowed the name is
// "localhost". Config.DeniedResolved CIDRs and literal IP deny entries are
// refused always, whatever allowed the name.
//
// When a name resolves to several addresses, the refused ones are dropped
// and the rest are dialled in resolver order; when none is left the
// request is refused, naming the first refused address. The proxy dials
// the vetted IP itself (Config.Dial always gets an IP:port), so a second
// lookup — and with it DNS rebinding — never happens. Each request or
// tunnel resolves once; nothing is cached.
//
// # Protocols
//
// HTTP proxy ([Proxy.ServeHTTP]): CONNECT host:port opens a TCP tunnel
// (TLS, ssh, anything); absolute-form requests (GET http://host/path) are
// forwarded by net/http/httputil.ReverseProxy, used as a forward proxy.
// Origin-form requests (GET /path, OPTIONS *), https:// in absolute form
// and a Host header that disagrees with the target (after
// canonicalisation; a Host without a port means 80 for plain HTTP and is
// accepted for CONNECT) are refused. Each
// client connection carries one request: plain responses say
// "Connection: close", CONNECT hijacks the connection. This is what lets
// the proxy check the Host header at all: net/http deletes it from
// absolute-form and CONNECT requests, so the proxy keeps a copy of the
// request head as received.
//
// The forwarder sees only vetted absolute-form http:// requests (CONNECT
// and origin-form requests are answered before it, and it refuses them
// itself as a backstop). Its upstream Transport reads no
// HTTP_PROXY/HTTPS_PROXY (its Proxy names only a configured Parent), keeps
// no connection alive (every request dials its own vetted address) and
// has a DialContext that only dials the addresses vetted for that very
// request. The request goes upstream as the client sent it (after
// Config.Rewrite), less its hop-by-hop and Proxy-* headers; nothing is
// added (no X-Forwarded-For, no Via, no Go User-Agent) and Accept-Encoding,
// query and body pass untouched. The answer loses its hop-by-hop headers;
// a body of unknown length or of type text/event-stream is passed on as
// it arrives; a body that breaks off upstream is cut off for the client
// too; a 101 Switching Protocols (WebSocket) is relayed both ways until
// either side ends it. An upstream that cannot be reached or answers
// garbage is a 502 whose body starts "sbx proxy: ".
//
// SOCKS5 ([Proxy.ServeSOCKS]): the "no authentication" method and
// CONNECT, with names resolved by the proxy (socks5h, ATYP domain) or IPv4
// and IPv6 literals. BIND and UDP ASSOCIATE get reply 0x07 (command not
// supported), a refused destination 0x02 (not allowed by ruleset), a
// failed lookup 0x04, a refused connection 0x05; the bound address in a
// reply is always 0.0.0.0:0.
//
// A refusal over HTTP is status 403 (400 for a malformed request) with
// "X-Proxy-Error: blocked-by-sbx" and a one-line text body naming the host
// and the reason (the deniedDomainReasons text when there is one). Every
// refusal, on either protocol, is also passed to Config.OnDeny as a
// [Denial]. A lookup or connection failure is not a refusal: 502 over
// HTTP, without the header and without OnDeny.
//
// TLS server names: every path (CONNECT, SOCKS5, captured connections;
// opaque or terminated) reads the client's first bytes before any go
// upstream. Bytes that start a TLS handshake record must be a well-formed
// ClientHello (else [RuleBadClientHello]), read by a parser that holds it
// to a TLS server's rules (exact lengths, no repeated extension, one
// host_name); its server name, canonicalised as a destination is, must
// be the target ([RuleSNIMismatch]), or, when the target is an IP
// literal, a name the lists allow at that port on its own. No server name
// passes. The outer name of an Encrypted Client Hello is all that can be
// checked, and a connection reused for another name after its handshake
// (HTTP/2 coalescing) is seen only under termination.
//
// Tunnels (CONNECT and SOCKS) copy with io.Copy between the raw
// connections, which splices on Linux when both are *net.TCPConn (the
// default Dial); an EOF in one direction is passed on with CloseWrite and
// the tunnel ends when both directions have.
//
// # Limits
//
// Request head (HTTP) and handshake (SOCKS5): 10 s from accept; idle HTTP
// connections: 60 s; request head: 32 KiB (net/http answers 431 beyond
// it); one name lookup: 10 s; connecting to the vetted addresses: 15 s in
// all; 4096 concurrent client connections per Proxy (beyond that new ones
// are closed at once). Established tunnels have no idle timeout (an idle
// ssh session is legitimate); TCP keep-alive finds dead peers. [Proxy.Close]
// closes the listeners and every client and upstream connection, aborts
// lookups and dials in flight, and waits for the proxy's goroutines.
package netproxy
