package netproxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Parent is an upstream proxy the allowed traffic leaves through (srt's
// network.parentProxy, or the HTTP_PROXY / HTTPS_PROXY / NO_PROXY of sbx's
// own environment): corporate networks often have no other way out. The
// proxy still decides every destination by its own lists first; only the
// hop after that changes. Tunnels (CONNECT, SOCKS, terminated TLS) go
// through HTTPS with CONNECT, plain HTTP through HTTP in absolute form,
// each with Basic proxy authentication when the URL carries a user. The
// parent resolves the name, so the resolved-address guard does not apply
// to those hops (as in srt).
type Parent struct {
	HTTP, HTTPS *url.URL // http:// URLs; nil: that traffic goes direct
	// NoProxy lists destinations reached directly (NO_PROXY syntax:
	// "*", a name and its subdomains, ".domain" for subdomains only, an
	// IP address or CIDR, each with an optional :port).
	NoProxy []string
}

// MITMUpstream is srt's network.mitmProxy: traffic to Domains (the
// allowedDomains pattern syntax) goes to an HTTP proxy listening on the
// Unix socket SocketPath — a company's inspecting proxy, say — after sbx's
// own lists allowed it: tunnels with CONNECT, plain HTTP in absolute form.
// It takes precedence over Parent for those domains.
type MITMUpstream struct {
	SocketPath string
	Domains    []string
}

// mitmHost is the placeholder authority of the MITM proxy's URL; the
// transport's dialer maps it to the Unix socket.
const mitmHost = "mitm-proxy.sbx.invalid:80"

// ParseParentURL checks one parent proxy URL: http://[user:pass@]host:port.
func ParseParentURL(key, s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s // curl's and Go's reading of a bare host:port
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("%s %q: not a proxy URL; write http://[user:password@]host:port", key, redactURL(s))
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s %q: only http:// parent proxies are supported", key, redactURL(s))
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "80")
	}
	return u, nil
}

// redactURL hides a URL's password (for messages).
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return s
}

// parentFor returns the parent that carries traffic to host:port (plain
// HTTP or a tunnel), or nil for a direct connection.
func (p *Proxy) parentFor(host string, port int, plain bool) *url.URL {
	if p.mitmDoms != nil {
		if h, err := canon(host); err == nil && p.mitmDoms.match(h, port) != nil {
			return &url.URL{Scheme: "http", Host: mitmHost}
		}
	}
	if p.parent == nil {
		return nil
	}
	u := p.parent.HTTPS
	if plain {
		u = p.parent.HTTP
	}
	if u == nil || noProxy(p.parent.NoProxy, host, port) {
		return nil
	}
	return u
}

// noProxy reports whether host:port is listed in NO_PROXY entries.
func noProxy(entries []string, host string, port int) bool {
	ip, ipErr := netip.ParseAddr(host)
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if e == "*" {
			return true
		}
		if pf, err := netip.ParsePrefix(e); err == nil {
			if ipErr == nil && pf.Contains(ip.Unmap()) {
				return true
			}
			continue
		}
		name, ep := e, 0
		if h, ps, err := net.SplitHostPort(e); err == nil {
			name = h
			fmt.Sscan(ps, &ep)
		}
		name = strings.Trim(name, "[]")
		if ep != 0 && ep != port {
			continue
		}
		if a, err := netip.ParseAddr(name); err == nil {
			if ipErr == nil && a.Unmap() == ip.Unmap() {
				return true
			}
			continue
		}
		sub := strings.HasPrefix(name, ".") || strings.HasPrefix(name, "*.")
		name = strings.TrimPrefix(strings.TrimPrefix(name, "*"), ".")
		if host == name && !sub || strings.HasSuffix(host, "."+name) {
			return true
		}
	}
	return false
}

// dialParent opens a tunnel to host:port through the parent proxy u with
// CONNECT.
func (p *Proxy) dialParent(ctx context.Context, u *url.URL, host string, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.lim.dial)
	defer cancel()
	c, err := p.dialHop(ctx, u.Host)
	if err != nil {
		return nil, fmt.Errorf("parent proxy %s: %w", u.Host, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	target := net.JoinHostPort(host, portString(port))
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if a := proxyAuth(u); a != "" {
		req += "Proxy-Authorization: " + a + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		c.Close()
		return nil, fmt.Errorf("parent proxy %s: %w", u.Host, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("parent proxy %s: %w", u.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("parent proxy %s refused CONNECT %s: %s", u.Host, target, resp.Status)
	}
	_ = c.SetDeadline(noDeadline)
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		return &prefixConn{Conn: c, prefix: append([]byte(nil), b...)}, nil
	}
	return c, nil
}

// proxyAuth is the Proxy-Authorization value for u's user, or "".
func proxyAuth(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
}

// dialHop connects to a parent proxy's address, or to the MITM proxy's
// Unix socket for its placeholder.
func (p *Proxy) dialHop(ctx context.Context, addr string) (net.Conn, error) {
	if addr == mitmHost && p.mitmUp != nil {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p.mitmUp.SocketPath)
	}
	return p.dial(ctx, "tcp", addr)
}
