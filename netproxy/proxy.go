package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the proxy's policy and plumbing.
type Config struct {
	Allowed, Denied []string          // network.allowedDomains / network.deniedDomains
	DeniedReasons   map[string]string // network.deniedDomainReasons, keyed by a Denied entry
	DeniedResolved  []string          // network.deniedResolvedAddresses (CIDRs or addresses)
	Resolver        Resolver          // nil = net.DefaultResolver
	// Dial connects to a vetted address; addr is always an IP:port. nil
	// means a net.Dialer.
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	OnDeny func(Denial) // called for every refusal; may be nil
	// TLS, when set, terminates HTTPS CONNECTs (see TLSTerminate).
	TLS *TLSTerminate
	// Rewrite, when set, sees every request the proxy reads before it
	// goes upstream: plain HTTP (terminated false) and requests inside
	// terminated TLS (terminated true). It may change the request (the
	// credentials injector swaps sentinels for real values there). A
	// non-empty refuse answers the request 403 with that one-line reason
	// instead of sending it.
	Rewrite func(r *http.Request, host string, port int, terminated bool) (refuse string)
	// Parent, when set, is the upstream proxy allowed traffic leaves
	// through (see Parent).
	Parent *Parent
	// MITM, when set, sends its domains to an upstream proxy on a Unix
	// socket (see MITMUpstream).
	MITM *MITMUpstream
	// Ask, when set, is asked about a host that no list entry allows or
	// denies (rule default-deny); true allows it for this request. The
	// address guard still applies. It must return within the context's
	// deadline (a caller's timeout is a refusal).
	Ask func(ctx context.Context, host string, port int) bool
	// Asked, when set, is told about each host that only Ask allowed
	// once it has also passed the address guard (and before it is
	// dialled): sbx learn notes there the hosts a command reached. A
	// host the guard refuses is reported to OnDeny instead.
	Asked func(host string, port int)
}

// limits are the timeouts and caps; tests shorten them.
type limits struct {
	readHeader time.Duration // HTTP request head, SOCKS handshake
	idle       time.Duration // HTTP keep-alive idle
	resolve    time.Duration // one name lookup
	dial       time.Duration // all connection attempts for one request
	maxHeader  int           // HTTP request head size
	maxConns   int           // concurrent client connections per Proxy
}

var defaultLimits = limits{
	readHeader: 10 * time.Second,
	idle:       60 * time.Second,
	resolve:    10 * time.Second,
	dial:       15 * time.Second,
	maxHeader:  32 << 10,
	maxConns:   4096,
}

// ErrClosed is returned by ServeHTTP and ServeSOCKS once Close was called
// before they started.
var ErrClosed = errors.New("netproxy: proxy is closed")

type deniedNet struct {
	prefix netip.Prefix
	raw    string
}

// Proxy is the egress proxy: one policy, any number of listeners.
type Proxy struct {
	pol      atomic.Pointer[policyOf] // the lists; SetPolicy swaps them
	resolver Resolver
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	onDeny   func(Denial)
	own      *ownAddrs
	lim      limits
	tr       *http.Transport // carries plain HTTP (forwardPlain)
	mitm     *mitm           // nil: CONNECTs are tunnelled opaquely
	rewrite  func(*http.Request, string, int, bool) string
	parent   *Parent
	mitmUp   *MITMUpstream
	mitmDoms *ruleSet // mitmUp.Domains, compiled once
	// capturedRefusals: each refused captured destination is reported
	// once (VetCaptured): a client tries every address a name resolved
	// to (IPv6, then IPv4), and some retry. A CONNECT is one decision per
	// request and is recorded each time.
	capturedRefusals OnceSet[Denial]
	ask              func(context.Context, string, int) bool
	onAsked          func(string, int) // Config.Asked
	// asked: captured connections' recent answers (askFor).
	askMu   sync.Mutex
	asked   map[askKey]askMemo
	onPanic func(any) // tests: observe a recovered panic

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	servers   map[*http.Server]struct{}
	conns     map[net.Conn]struct{} // client conns and tunnel upstreams
	nclients  int
	wg        sync.WaitGroup // tracked conns and serving goroutines
}

// policyOf is cfg's matching policy, parsed and validated.
type policyOf struct {
	allow, deny *ruleSet
	reasons     map[string]string
	deniedNets  []deniedNet
}

func parsePolicy(cfg Config) (policyOf, error) {
	var pol policyOf
	var err error
	if pol.allow, err = newRuleSet(cfg.Allowed, false); err != nil {
		return pol, err
	}
	if pol.deny, err = newRuleSet(cfg.Denied, true); err != nil {
		return pol, err
	}
	if pol.reasons, err = reasonsFor(pol.deny, cfg.DeniedReasons); err != nil {
		return pol, err
	}
	for _, c := range cfg.DeniedResolved {
		n, err := parseCIDR(c)
		if err != nil {
			return pol, err
		}
		pol.deniedNets = append(pol.deniedNets, deniedNet{n, c})
	}
	return pol, nil
}

// Validate checks every pattern, deniedDomainReasons key and CIDR of cfg,
// as New does, without making a Proxy.
func (cfg Config) Validate() error {
	_, err := parsePolicy(cfg)
	return err
}

// New validates every pattern and CIDR and returns a Proxy ready to serve.
func New(cfg Config) (*Proxy, error) {
	pol, err := parsePolicy(cfg)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		resolver:  cfg.Resolver,
		dial:      cfg.Dial,
		onDeny:    cfg.OnDeny,
		rewrite:   cfg.Rewrite,
		parent:    cfg.Parent,
		mitmUp:    cfg.MITM,
		ask:       cfg.Ask,
		onAsked:   cfg.Asked,
		own:       newOwnAddrs(),
		lim:       defaultLimits,
		listeners: map[net.Listener]struct{}{},
		servers:   map[*http.Server]struct{}{},
		conns:     map[net.Conn]struct{}{},
	}
	p.pol.Store(&pol)
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dial == nil {
		d := &net.Dialer{}
		p.dial = d.DialContext
	}
	if cfg.MITM != nil {
		if p.mitmDoms, err = newRuleSet(cfg.MITM.Domains, true); err != nil {
			return nil, fmt.Errorf("network.mitmProxy.domains: %w", err)
		}
	}
	if cfg.TLS != nil {
		if p.mitm, err = newMITM(cfg.TLS); err != nil {
			return nil, err
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.tr = p.newTransport()
	return p, nil
}

// SetPolicy replaces the proxy's lists (allowed and denied domains, their
// reasons, the denied resolved addresses) while it serves: srt's
// --control-fd, where only the network lists change a running sandbox.
// Connections already made keep going; every new decision uses the new
// lists. A bad cfg changes nothing and is returned as the error.
func (p *Proxy) SetPolicy(cfg Config) error {
	pol, err := parsePolicy(cfg)
	if err != nil {
		return err
	}
	p.pol.Store(&pol)
	return nil
}

// reasonsFor maps each deny entry to its deniedDomainReasons text. Keys
// match an entry exactly or case-insensitively; a key naming no entry is
// an error, so a typo does not silently lose its message.
func reasonsFor(deny *ruleSet, given map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range deny.list {
		if v, ok := given[d.raw]; ok {
			out[d.raw] = v
			continue
		}
		for k, v := range given {
			if strings.EqualFold(k, d.raw) {
				out[d.raw] = v
				break
			}
		}
	}
	for k := range given {
		found := false
		for _, d := range deny.list {
			found = found || strings.EqualFold(k, d.raw)
		}
		if !found {
			return nil, fmt.Errorf("network.deniedDomainReasons key %q is not a network.deniedDomains entry; add the entry or remove the reason", k)
		}
	}
	return out, nil
}

func parseCIDR(s string) (netip.Prefix, error) {
	if n, err := netip.ParsePrefix(s); err == nil {
		if n.Addr().Is4In6() {
			bits := n.Bits() - 96
			if bits < 0 {
				return netip.Prefix{}, fmt.Errorf("network.deniedResolvedAddresses entry %q: IPv4-mapped prefix shorter than /96", s)
			}
			n = netip.PrefixFrom(n.Addr().Unmap(), bits)
		}
		return n.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("network.deniedResolvedAddresses entry %q is not a CIDR (e.g. \"10.0.0.0/8\", \"fd00::/8\") or an IP address", s)
}

// recovered handles a panic in a connection's goroutine: the connection
// is dropped, the supervisor lives on.
func (p *Proxy) recovered(v any) {
	if p.onPanic != nil {
		p.onPanic(v)
	}
}

// report calls OnDeny.
func (p *Proxy) report(d Denial) {
	if p.onDeny != nil {
		p.onDeny(d)
	}
}

// Close stops every listener, aborts lookups and dials, closes every client
// connection and tunnel, and waits for the proxy's goroutines to finish.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel()
	for l := range p.listeners {
		_ = l.Close()
	}
	servers := make([]*http.Server, 0, len(p.servers))
	for s := range p.servers {
		servers = append(servers, s)
	}
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, s := range servers {
		_ = s.Close()
	}
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	return nil
}

// addListener registers l, or reports that the proxy is closed.
func (p *Proxy) addListener(l net.Listener) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	return nil
}

func (p *Proxy) removeListener(l net.Listener) {
	p.mu.Lock()
	delete(p.listeners, l)
	p.mu.Unlock()
}

// trackClient registers an accepted client connection; false means it
// must be closed (proxy closed or too many connections).
func (p *Proxy) trackClient(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.nclients >= p.lim.maxConns {
		return false
	}
	p.nclients++
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrackClient(c net.Conn) {
	p.mu.Lock()
	p.nclients--
	delete(p.conns, c)
	p.mu.Unlock()
	p.wg.Done()
}

// trackUpstream registers a tunnel's upstream connection so Close can
// interrupt it; false means the proxy is closing.
func (p *Proxy) trackUpstream(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrackUpstream(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// isClosed reports whether Close was called.
func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// acceptBackoff sleeps after a failed Accept (e.g. EMFILE), doubling from
// 5 ms up to 1 s, or returns false when the proxy closes meanwhile.
func (p *Proxy) acceptBackoff(d *time.Duration) bool {
	if *d == 0 {
		*d = 5 * time.Millisecond
	} else if *d *= 2; *d > time.Second {
		*d = time.Second
	}
	t := time.NewTimer(*d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}
