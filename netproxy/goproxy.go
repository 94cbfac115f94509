package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
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
		Proxy:                  nil,
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
	h, port, err := splitTarget(addr)
	if err != nil || port != v.port {
		return nil, fmt.Errorf("netproxy: dial %s does not match vetted %s:%d", addr, v.host, v.port)
	}
	if a, err1 := canon(h); err1 != nil {
		return nil, fmt.Errorf("netproxy: dial %s: %w", addr, err1)
	} else if b, err2 := canon(v.host); err2 != nil || a.name != b.name {
		return nil, fmt.Errorf("netproxy: dial %s does not match vetted %s:%d", addr, v.host, v.port)
	}
	return p.dialVetted(ctx, v.targets)
}
