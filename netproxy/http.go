package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

type connKey struct{}

// ServeHTTP serves the HTTP proxy (CONNECT and absolute-form plain HTTP)
// on l until Close. It returns nil after Close, ErrClosed if Close came
// first, or the listener's error.
func (p *Proxy) ServeHTTP(l net.Listener) error {
	if err := p.addListener(l); err != nil {
		return err
	}
	defer p.removeListener(l)
	srv := &http.Server{
		Handler:                      http.HandlerFunc(p.handle),
		ReadHeaderTimeout:            p.lim.readHeader,
		IdleTimeout:                  p.lim.idle,
		MaxHeaderBytes:               p.lim.maxHeader,
		DisableGeneralOptionsHandler: true, // "OPTIONS *" reaches handle and is refused
		ErrorLog:                     log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, s http.ConnState) {
			if cc, ok := c.(*clientConn); ok && s == http.StateHijacked {
				cc.hijacked.Store(true)
			}
		},
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.servers[srv] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.servers, srv)
		p.mu.Unlock()
	}()
	err := srv.Serve(&listener{Listener: l, p: p, capture: true})
	if p.isClosed() || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("netproxy: http: %w", err)
}

// handle serves one request; every connection carries exactly one (plain
// responses say Connection: close, CONNECT hijacks), so the captured head
// is this request's.
func (p *Proxy) handle(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler { // forwardPlain's abort of a body it cannot finish
				p.recovered(v)
			}
			panic(http.ErrAbortHandler) // net/http closes the connection quietly
		}
	}()
	w.Header().Set("Connection", "close")
	cc, _ := r.Context().Value(connKey{}).(*clientConn)
	proto := "http"
	if r.Method == http.MethodConnect {
		proto = "connect"
	}
	if cc == nil || cc.requests.Add(1) != 1 {
		p.refuse(w, http.StatusBadRequest, Denial{Proto: proto, Host: truncate(r.Host), Rule: RuleProtocol, Reason: "one request per connection"})
		return
	}
	hostHdr, err := cc.hostHeaders()
	if err != nil {
		p.refuse(w, http.StatusBadRequest, Denial{Proto: proto, Host: truncate(r.Host), Rule: RuleProtocol, Reason: err.Error()})
		return
	}
	if proto == "connect" {
		p.handleConnect(w, r, cc, hostHdr)
		return
	}
	p.handlePlain(w, r, cc, hostHdr)
}

func (p *Proxy) handleConnect(w http.ResponseWriter, r *http.Request, cc *clientConn, hostHdr []string) {
	hostname, port, err := splitTarget(r.URL.Host)
	if err != nil || port == 0 || r.URL.Path != "" || r.URL.Scheme != "" {
		p.refuse(w, http.StatusBadRequest, Denial{Proto: "connect", Host: truncate(r.RequestURI), Rule: RuleProtocol,
			Reason: "CONNECT needs an authority target, host:port"})
		return
	}
	if d := hostMismatch("connect", hostname, port, hostHdr, false); d != nil {
		p.refuse(w, http.StatusForbidden, *d)
		return
	}
	targets, d, err := p.vet(r.Context(), "connect", hostname, port)
	if !p.vetted(w, d, err) {
		return
	}
	if p.mitm != nil && !p.mitm.excluded(hostname, port) {
		// Terminated: the proxy is the client's TLS peer and dials
		// upstream per request (a failure is a 502 inside the tunnel).
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		client := cc.Conn
		status := fmt.Sprintf("HTTP/%d.%d 200 Connection established\r\n\r\n", r.ProtoMajor, r.ProtoMinor)
		if _, err := io.WriteString(client, status); err != nil {
			return
		}
		var early []byte
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			early = append([]byte(nil), b...)
		}
		_ = client.SetReadDeadline(time.Now().Add(p.lim.readHeader))
		early, d, err := p.sniff("connect", client, hostname, port, early)
		_ = client.SetReadDeadline(noDeadline)
		if d != nil {
			p.report(*d)
		}
		if d != nil || err != nil {
			return
		}
		p.terminate(client, early, hostname, port, targets)
		return
	}
	upstream, err := p.dialVetted(r.Context(), hostname, port, targets)
	if err != nil {
		gatewayError(w, http.StatusBadGateway, fmt.Sprintf("cannot connect to %s:%d: %v", hostname, port, err))
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	defer conn.Close()
	client := cc.Conn // the raw conn, so tunnel copies can splice
	_ = client.SetDeadline(noDeadline)
	status := fmt.Sprintf("HTTP/%d.%d 200 Connection established\r\n\r\n", r.ProtoMajor, r.ProtoMinor)
	if _, err := io.WriteString(client, status); err != nil {
		_ = upstream.Close()
		return
	}
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n) // bytes the client sent before our 200
		early = append([]byte(nil), b...)
	}
	p.sniffTunnel("connect", client, upstream, hostname, port, early)
}

type vettedKey struct{}

type vettedTarget struct {
	host    string
	port    int
	targets []netip.AddrPort
}

func (p *Proxy) handlePlain(w http.ResponseWriter, r *http.Request, cc *clientConn, hostHdr []string) {
	if r.URL.Scheme == "" || r.URL.Host == "" {
		p.refuse(w, http.StatusForbidden, Denial{Proto: "http", Host: truncate(firstOr(hostHdr, "")), Rule: RuleOriginForm,
			Reason: "origin-form request " + quote(truncate(r.RequestURI)) + "; send requests to this proxy with an absolute URL (http://host/path) or use CONNECT"})
		return
	}
	if !strings.EqualFold(r.URL.Scheme, "http") {
		p.refuse(w, http.StatusForbidden, Denial{Proto: "http", Host: truncate(r.URL.Host), Rule: RuleProtocol,
			Reason: "only http:// URLs are proxied in absolute form; use CONNECT for " + quote(truncate(r.URL.Scheme))})
		return
	}
	hostname, port, err := splitTarget(r.URL.Host)
	if port == 0 {
		port = 80
	}
	if err != nil {
		p.refuse(w, http.StatusBadRequest, Denial{Proto: "http", Host: truncate(r.URL.Host), Rule: RuleProtocol, Reason: err.Error()})
		return
	}
	if d := hostMismatch("http", hostname, port, hostHdr, true); d != nil {
		p.refuse(w, http.StatusForbidden, *d)
		return
	}
	targets, d, err := p.vet(r.Context(), "http", hostname, port)
	if !p.vetted(w, d, err) {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	ctx = context.WithValue(ctx, vettedKey{}, &vettedTarget{host: hostname, port: port, targets: targets})
	r = r.WithContext(ctx)
	if p.rewrite != nil {
		h := hostname
		if c, err := canon(hostname); err == nil {
			h = c.name
		}
		if reason := p.rewrite(r, h, port, false); reason != "" {
			gatewayError(w, http.StatusForbidden, reason)
			return
		}
	}
	p.forwardPlain(w, r)
	if cc.hijacked.Load() { // a protocol switch (WebSocket) ended: the client is done too
		_ = cc.Close()
	}
}

// vetted answers a refusal or lookup failure and reports whether to go on.
func (p *Proxy) vetted(w http.ResponseWriter, d *Denial, err error) bool {
	switch {
	case d != nil:
		p.refuse(w, http.StatusForbidden, *d)
		return false
	case err != nil:
		gatewayError(w, http.StatusBadGateway, err.Error())
		return false
	}
	return true
}

// splitTarget splits host:port, [v6]:port, [v6] or host; port is 0 when
// absent.
func splitTarget(hostport string) (string, int, error) {
	h, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		switch {
		case strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]"):
			return hostport[1 : len(hostport)-1], 0, nil
		case strings.Contains(hostport, ":"):
			return "", 0, fmt.Errorf("target %q: %w", truncate(hostport), err)
		}
		return hostport, 0, nil
	}
	if ps == "" {
		return h, 0, nil
	}
	port, err := hostaddr.ParsePort(ps)
	if err != nil {
		return "", 0, fmt.Errorf("target %q: %w", truncate(hostport), err)
	}
	return h, port, nil
}

// hostMismatch compares the Host header (when present) with the request
// target: the canonical hosts must be equal, and so must the ports. A
// header without a port means 80 for plain HTTP and "any" for CONNECT.
func hostMismatch(proto, hostname string, port int, hostHdr []string, plain bool) *Denial {
	if len(hostHdr) == 0 {
		return nil
	}
	bad := &Denial{Proto: proto, Host: truncate(hostname), Port: port, Rule: RuleHostMismatch,
		Reason: "Host header " + quote(truncate(hostHdr[0])) + " disagrees with the request target"}
	if len(hostHdr) > 1 {
		return bad
	}
	hh, hp, err := splitTarget(hostHdr[0])
	if err != nil {
		return bad
	}
	if hp == 0 {
		hp = port
		if plain {
			hp = 80
		}
	}
	want, err1 := canon(hostname)
	got, err2 := canon(hh)
	if err1 != nil || err2 != nil || want.name != got.name || hp != port {
		return bad
	}
	return nil
}

// refuse answers a refused request: status (403 for policy, 400 for a
// malformed request), X-Proxy-Error: blocked-by-sbx and a one-line text
// body naming the host and the reason. It reports the Denial.
func (p *Proxy) refuse(w http.ResponseWriter, status int, d Denial) {
	p.report(d)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Proxy-Error", "blocked-by-sbx")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, denialText(d)+"\n")
}

func denialText(d Denial) string {
	target := d.Host
	if d.Port != 0 {
		target = net.JoinHostPort(d.Host, portString(d.Port))
	}
	return fmt.Sprintf("sbx: blocked %s %s: %s", d.Proto, quote(target), d.Reason)
}

func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "sbx proxy: "+msg+"\n")
}

func firstOr(v []string, def string) string {
	if len(v) > 0 {
		return v[0]
	}
	return def
}
