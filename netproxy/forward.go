package netproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"
)

// newTransport builds the Transport that carries vetted plain-HTTP
// requests: no upstream proxy from HTTP_PROXY/HTTPS_PROXY (Proxy only
// names the configured parent), and a DialContext that only dials the
// address vetted for this very request.
func (p *Proxy) newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  p.proxyForTransport,
		DialContext:            p.dialForTransport,
		DisableKeepAlives:      true, // every request dials its own vetted address
		DisableCompression:     true, // pass Accept-Encoding and bodies through untouched
		MaxResponseHeaderBytes: 1 << 20,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        p.lim.idle,
	}
}

// forwardPlain sends a vetted absolute-form request upstream as it stands
// (after p.rewrite) and relays the answer. It is
// net/http/httputil.ReverseProxy used as a forward proxy:
//
//   - the request goes to its own absolute URL over p.tr, query and body
//     untouched; hop-by-hop headers (Connection and the fields it names,
//     Proxy-Connection, Proxy-Authorization, Proxy-Authenticate,
//     Keep-Alive, TE except "trailers", Trailer, Transfer-Encoding, and
//     Upgrade unless an upgrade is asked for) are not sent; every other
//     header goes as the client sent it, Forwarded and X-Forwarded-*
//     included, and none is added (no X-Forwarded-For, and no Go
//     User-Agent when the client sent none);
//   - 1xx answers are relayed; the final answer loses its hop-by-hop
//     headers and says Connection: close; no Content-Type is made up for
//     a body that has none; a body of unknown length or of type
//     text/event-stream is flushed to the client as it arrives;
//   - a 101 Switching Protocols (a WebSocket) is relayed both ways on the
//     hijacked client connection, which is closed at the end;
//   - an upstream failure is a 502 "sbx proxy: …"; a failure halfway
//     through a body aborts the client connection, so a truncated body
//     never looks complete.
func (p *Proxy) forwardPlain(w http.ResponseWriter, r *http.Request) {
	// Backstops: handle answers CONNECT itself and handlePlain refuses
	// these before vetting anything.
	switch {
	case r.Method == http.MethodConnect:
		p.refuse(w, http.StatusBadRequest, Denial{Proto: "connect", Host: truncate(r.Host), Rule: RuleProtocol, Reason: "CONNECT is not forwarded"})
		return
	case !r.URL.IsAbs() || r.URL.Host == "":
		p.refuse(w, http.StatusForbidden, Denial{Proto: "http", Host: truncate(r.Host), Rule: RuleOriginForm, Reason: "origin-form request"})
		return
	case !strings.EqualFold(r.URL.Scheme, "http"):
		p.refuse(w, http.StatusForbidden, Denial{Proto: "http", Host: truncate(r.URL.Host), Rule: RuleProtocol, Reason: "only http:// URLs are forwarded"})
		return
	}
	// handle's Connection: close belongs on the final answer only:
	// ReverseProxy writes 1xx answers with w's header map (and clears it
	// after each), and a 101 carries its own Connection: Upgrade.
	// response and failed set it again.
	w.Header().Del("Connection")
	if r.ProtoAtLeast(1, 1) && r.ContentLength != 0 && hasToken(r.Header, "Expect", "100-continue") {
		// Answered here, on the handler's goroutine, before anything is
		// forwarded, and not sent upstream. Otherwise net/http writes its
		// own 100 Continue from the goroutine that reads the body for the
		// upstream request while ReverseProxy relays the upstream's 1xx
		// answers from another, both into the client's buffer without a
		// common lock (golang/go#80949; go test -race shows it).
		w.WriteHeader(http.StatusContinue)
		r.Header.Del("Expect")
	}
	// ReverseProxy relays every 1xx answer, and with its hook installed
	// the Transport no longer stops at five: cap them, as a body-less
	// flood costs the supervisor a write and a flush each. The hook runs
	// after ReverseProxy's (httptrace composes them so) on the
	// Transport's reading goroutine only.
	informational := 0
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(int, textproto.MIMEHeader) error {
			if informational++; informational > max1xx {
				return fmt.Errorf("upstream sent more than %d informational (1xx) answers", max1xx)
			}
			return nil
		},
	}))
	f := &plainForward{w: w}
	rp := &httputil.ReverseProxy{
		Transport:      p.tr,
		Rewrite:        sendAsReceived,
		ModifyResponse: f.response,
		ErrorHandler:   f.failed,
		BufferPool:     f,
		ErrorLog:       discardLog,
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				// The body broke off: what did arrive goes to the
				// client before the abort closes the connection.
				_ = http.NewResponseController(w).Flush()
			}
			panic(v)
		}
	}()
	rp.ServeHTTP(w, r)
}

var discardLog = log.New(io.Discard, "", 0)

// max1xx is how many 1xx answers one forwarded request may get; the next
// one (relayed before the hook sees it) ends the request with a 502.
const max1xx = 16

// sendAsReceived undoes what ReverseProxy does to a request before Rewrite
// that a forward proxy must not: it drops the client's Forwarded and
// X-Forwarded-* headers and re-encodes a query it cannot parse (a ";", a
// bad escape).
func sendAsReceived(pr *httputil.ProxyRequest) {
	for _, k := range [...]string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
}

// plainForward is one forwarded request's state: its ResponseWriter, and
// the copy buffer its response body gets (ReverseProxy's BufferPool, which
// asks once per response).
type plainForward struct {
	w    http.ResponseWriter
	bulk bool    // the body is large or of unknown length
	buf  *[]byte // the buffer Get handed out
	slot bool    // buf is a large one, holding a bulkSlots slot
}

// response runs once the answer's head is in, before any of it is written.
func (f *plainForward) response(res *http.Response) error {
	if res.StatusCode == http.StatusSwitchingProtocols {
		// ReverseProxy refuses a switch the client did not ask for but
		// leaves the upstream connection open; an error here closes it.
		if got, asked := upgradeOf(res.Header), upgradeOf(res.Request.Header); got == "" || !strings.EqualFold(got, asked) {
			return fmt.Errorf("upstream switched protocols to %q, asked for %q", truncate(got), truncate(asked))
		}
		return nil // the upgraded connection is not ours to close or buffer
	}
	h := f.w.Header()
	h.Set("Connection", "close")
	if _, ok := res.Header["Content-Type"]; !ok {
		h["Content-Type"] = nil // net/http would sniff one from the body
	}
	f.bulk = res.Body != http.NoBody && (res.ContentLength < 0 || res.ContentLength > bulkBodyMin)
	return nil
}

// hasToken reports whether one of h's key fields lists token (a
// comma-separated list, compared case-insensitively, as net/http reads
// Connection and Expect).
func hasToken(h http.Header, key, token string) bool {
	for _, v := range h[key] {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// upgradeOf is the protocol h's Upgrade header asks for when its
// Connection header says "upgrade", or "".
func upgradeOf(h http.Header) string {
	if hasToken(h, "Connection", "upgrade") {
		return h.Get("Upgrade")
	}
	return ""
}

// failed answers an upstream failure (dial, malformed answer, refused
// protocol switch) before the answer's head was written.
func (f *plainForward) failed(w http.ResponseWriter, _ *http.Request, err error) {
	w.Header().Set("Connection", "close")
	gatewayError(w, http.StatusBadGateway, err.Error())
}

// Response bodies are copied by ReverseProxy in steps of the buffer it
// gets from plainForward. Large or unknown-length bodies get a 256 KiB
// buffer instead of the usual 32 KiB: with 1 GiB from a loopback server,
// a third less supervisor CPU and roughly a fifth more throughput
// (bench/netcompare). A read returns what has arrived, so streamed bodies
// (chunked, text/event-stream) are not held back. At most bulkBuffers
// copies use a large buffer at once, which bounds the memory; the rest
// copy with 32 KiB.
const (
	bulkBodyMin = 256 << 10 // bodies known to be smaller keep the plain path
	bulkBufSize = 256 << 10
	bulkBuffers = 8
	copyBufSize = 32 << 10
)

var (
	bulkSlots = make(chan struct{}, bulkBuffers)
	bulkPool  = sync.Pool{New: func() any { b := make([]byte, bulkBufSize); return &b }}
	copyPool  = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}
)

// Get is httputil.BufferPool's: a buffer for this response's body.
func (f *plainForward) Get() []byte {
	if f.bulk {
		select {
		case bulkSlots <- struct{}{}:
			f.buf, f.slot = bulkPool.Get().(*[]byte), true
			return *f.buf
		default:
		}
	}
	f.buf, f.slot = copyPool.Get().(*[]byte), false
	return *f.buf
}

// Put is httputil.BufferPool's: the copy is done with the buffer.
func (f *plainForward) Put([]byte) {
	switch {
	case f.buf == nil:
	case f.slot:
		bulkPool.Put(f.buf)
		<-bulkSlots
	default:
		copyPool.Put(f.buf)
	}
	f.buf, f.slot = nil, false
}

// dialForTransport is the Transport's only dialer: it dials what vet
// returned for this very request, never the name in addr.
func (p *Proxy) dialForTransport(ctx context.Context, network, addr string) (net.Conn, error) {
	v, _ := ctx.Value(vettedKey{}).(*vettedTarget)
	if v == nil {
		return nil, fmt.Errorf("netproxy: refusing unvetted dial to %s", addr)
	}
	if u := p.parentFor(v.host, v.port, true); u != nil && v.targets == nil {
		if addr != u.Host {
			return nil, fmt.Errorf("netproxy: dial %s is not the parent proxy %s", addr, u.Host)
		}
		return p.dialHop(ctx, addr)
	}
	h, port, err := splitTarget(addr)
	if err != nil || port != v.port {
		return nil, fmt.Errorf("netproxy: dial %s does not match vetted %s:%d", addr, v.host, v.port)
	}
	if a, err1 := canon(h); err1 != nil {
		return nil, fmt.Errorf("netproxy: dial %s: %w", addr, err1)
	} else if b, err2 := canon(v.host); err2 != nil || a.name != b.name {
		return nil, fmt.Errorf("netproxy: dial %s does not match vetted %s:%d", addr, v.host, v.port)
	}
	return p.dialVetted(ctx, v.host, v.port, v.targets)
}

// proxyForTransport sends a plain-HTTP request through the parent proxy
// when one carries it (absolute form, Proxy-Authorization from the URL's
// user); otherwise nil: direct, to the vetted address.
func (p *Proxy) proxyForTransport(r *http.Request) (*url.URL, error) {
	v, _ := r.Context().Value(vettedKey{}).(*vettedTarget)
	if v == nil || v.targets != nil {
		return nil, nil
	}
	return p.parentFor(v.host, v.port, true), nil
}
