package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
)

// newGoproxy builds the goproxy instance that forwards vetted plain-HTTP
// requests. It is hardened against goproxy's defaults: no upstream proxy
// from HTTP_PROXY/HTTPS_PROXY (Tr.Proxy nil, ConnectDial refusing), every
// CONNECT it might see rejected (Proxy.handle answers CONNECT itself), no
// origin-form requests, and a Transport whose only dialer dials the
// address vetted for this request.
func (p *Proxy) newGoproxy() (*goproxy.ProxyHttpServer, *http.Transport) {
	tr := &http.Transport{
		Proxy:                  p.proxyForTransport,
		DialContext:            p.dialForTransport,
		DisableKeepAlives:      true, // every request dials its own vetted address
		DisableCompression:     true, // pass Accept-Encoding and bodies through untouched
		MaxResponseHeaderBytes: 1 << 20,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        p.lim.idle,
	}
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	gp.Verbose = false
	gp.Tr = tr
	gp.KeepAcceptEncoding = true
	gp.KeepDestinationHeaders = true // keep our Connection: close
	gp.AllowHTTP2 = false
	gp.ConnectDial = func(network, addr string) (net.Conn, error) {
		return nil, errors.New("netproxy: goproxy must not dial CONNECT targets")
	}
	gp.ConnectDialWithReq = nil
	gp.OnRequest().HandleConnectFunc(func(string, *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		return goproxy.RejectConnect, ""
	})
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.refuse(w, http.StatusForbidden, Denial{Proto: "http", Host: truncate(r.Host), Rule: RuleOriginForm, Reason: "origin-form request"})
	})
	gp.OnResponse().DoFunc(func(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
		if resp != nil {
			if resp.StatusCode != http.StatusSwitchingProtocols {
				for _, h := range hopHeaders {
					resp.Header.Del(h)
				}
				// Not for 101: goproxy needs the body's io.ReadWriter
				// for the upgraded connection.
				if resp.Body != nil && (resp.ContentLength < 0 || resp.ContentLength > bulkBodyMin) {
					resp.Body = &bulkBody{resp.Body}
				}
			}
			return resp
		}
		msg := "upstream request failed"
		if ctx.Error != nil {
			msg = ctx.Error.Error()
		}
		return goproxy.NewResponse(ctx.Req, goproxy.ContentTypeText, http.StatusBadGateway, "sbx proxy: "+msg+"\n")
	})
	return gp, tr
}

// Plain-HTTP response bodies are copied by goproxy with io.Copy(w,
// resp.Body). http.ResponseWriter's ReadFrom would copy in 32 KiB steps,
// one read and one write system call each; bulkBody's WriteTo, which
// io.Copy prefers, copies large bodies in 256 KiB steps instead: with 1 GiB
// from a loopback server, a third less supervisor CPU and roughly a fifth
// more throughput (bench/netcompare). A read returns what has arrived, so
// streamed bodies (chunked, text/event-stream) are not held back. At most
// bulkBuffers copies use a large buffer at once, which bounds the memory;
// the rest copy as before.
const (
	bulkBodyMin = 256 << 10 // bodies known to be smaller keep the plain path
	bulkBufSize = 256 << 10
	bulkBuffers = 8
)

var (
	bulkSlots = make(chan struct{}, bulkBuffers)
	bulkPool  = sync.Pool{New: func() any { b := make([]byte, bulkBufSize); return &b }}
)

type bulkBody struct{ io.ReadCloser }

func (b *bulkBody) WriteTo(w io.Writer) (int64, error) {
	// Hide w's ReadFrom and the body's WriteTo, or the copy would go
	// back to 32 KiB steps (or recurse).
	dst, src := struct{ io.Writer }{w}, struct{ io.Reader }{b.ReadCloser}
	select {
	case bulkSlots <- struct{}{}:
		defer func() { <-bulkSlots }()
		bp := bulkPool.Get().(*[]byte)
		defer bulkPool.Put(bp)
		return io.CopyBuffer(dst, src, *bp)
	default:
		return io.Copy(dst, src)
	}
}

// hopHeaders are the upstream response's hop-by-hop headers, not passed on
// (the client gets our own Connection: close).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Upgrade"}

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
