package netproxy

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// TLSTerminate turns on TLS termination of CONNECT tunnels (srt's
// network.tlsTerminate): a CONNECT to an allowed host that no Exclude
// entry matches is answered by the proxy itself, which completes the
// client's TLS handshake with a certificate for the host signed by CA,
// reads HTTP/1.1 requests from it and sends each on over a TLS connection
// of its own to the vetted address, verifying the upstream's certificate
// against Roots. An excluded host is tunnelled opaquely, as without
// termination (mutual-TLS upstreams, certificate-pinning clients).
type TLSTerminate struct {
	// CA signs the leaf certificates; CA.Leaf must be set.
	CA tls.Certificate
	// Exclude lists hosts tunnelled opaquely, in the allowedDomains
	// pattern syntax ("*" excludes every host).
	Exclude []string
	// Roots verify upstream certificates; nil means the system pool,
	// which honours SSL_CERT_FILE and SSL_CERT_DIR.
	Roots *x509.CertPool
}

// RuleUpstreamTLS marks a terminated request that failed upstream (a bad
// certificate, a refused connection): answered 502 and reported.
const RuleUpstreamTLS = "tls-upstream"

// NewCA makes an ephemeral certificate authority for one run: an ECDSA
// P-256 key that exists only in this process's memory, and a certificate
// valid from an hour ago for 30 days.
func NewCA() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("netproxy: CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sbx TLS termination CA (this run only)", Organization: []string{"sbx"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("netproxy: CA certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// LoadCA reads a CA certificate and its key (PEM files, srt's caCertPath
// and caKeyPath). The certificate must be a CA and match the key.
func LoadCA(certFile, keyFile string) (tls.Certificate, error) {
	ca, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("network.tlsTerminate caCertPath %s / caKeyPath %s: %w", certFile, keyFile, err)
	}
	if ca.Leaf == nil {
		if ca.Leaf, err = x509.ParseCertificate(ca.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("network.tlsTerminate caCertPath %s: %w", certFile, err)
		}
	}
	if !ca.Leaf.IsCA || ca.Leaf.KeyUsage&x509.KeyUsageCertSign == 0 {
		return tls.Certificate{}, fmt.Errorf("network.tlsTerminate caCertPath %s: not a CA certificate (needs basicConstraints CA:TRUE and keyCertSign)", certFile)
	}
	return ca, nil
}

// CertPEM is c's certificate as one PEM block.
func CertPEM(c tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}

// maxLeaves bounds the minted certificates kept for reuse.
const maxLeaves = 4096

// mitm is a Proxy's TLS termination state.
type mitm struct {
	ca      tls.Certificate
	exclude *ruleSet
	roots   *x509.CertPool

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // host → leaf, minted once per run
	key    crypto.Signer               // one leaf key for the run
}

func newMITM(t *TLSTerminate) (*mitm, error) {
	if t.CA.Leaf == nil || t.CA.PrivateKey == nil {
		return nil, errors.New("netproxy: TLSTerminate.CA needs its parsed Leaf and PrivateKey")
	}
	ex, err := newRuleSet(t.Exclude, true)
	if err != nil {
		return nil, fmt.Errorf("network.tlsTerminate.excludeDomains: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &mitm{ca: t.CA, exclude: ex, roots: t.Roots, leaves: map[string]*tls.Certificate{}, key: key}, nil
}

// excluded reports whether hostname:port is tunnelled opaquely.
func (m *mitm) excluded(hostname string, port int) bool {
	h, err := canon(hostname)
	return err != nil || m.exclude.match(h, port) != nil
}

// leaf returns the certificate for host (a name or an IP address),
// minting it on first use.
func (m *mitm) leaf(host string) (*tls.Certificate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.leaves[host]; ok {
		return c, nil
	}
	if len(m.leaves) >= maxLeaves {
		clear(m.leaves) // wildcard DNS under a wildcard entry: bounded memory
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     m.ca.Leaf.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, m.ca.Leaf, m.key.Public(), m.ca.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("minting a certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, m.ca.Certificate[0]}, PrivateKey: m.key}
	m.leaves[host] = c
	return c, nil
}

// terminate serves a terminated CONNECT tunnel to hostname:port on the
// client connection (the 200 already sent): the TLS handshake with a
// minted certificate, then HTTP/1.1 requests, each sent on to the vetted
// targets over verified TLS, until either side closes. ALPN offers
// http/1.1 only, so an h2-capable client speaks HTTP/1.1.
func (p *Proxy) terminate(client net.Conn, early []byte, hostname string, port int, targets []netip.AddrPort) {
	host := hostname
	if h, err := canon(hostname); err == nil {
		host = h.name
	}
	cert, err := p.mitm.leaf(host)
	if err != nil {
		return
	}
	var raw net.Conn = client
	if len(early) > 0 {
		raw = &prefixConn{Conn: client, prefix: early}
	}
	tc := tls.Server(raw, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	defer tc.Close()
	_ = client.SetDeadline(time.Now().Add(p.lim.readHeader))
	if err := tc.HandshakeContext(p.ctx); err != nil {
		return // a client that distrusts the CA, or speaks no TLS
	}
	_ = client.SetDeadline(noDeadline)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := p.dialTracked(ctx, host, port, targets)
			if err != nil {
				return nil, err
			}
			return &untrackOnClose{Conn: c, p: p}, nil
		},
		TLSClientConfig:       &tls.Config{ServerName: host, RootCAs: p.mitm.roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   p.lim.dial,
		ResponseHeaderTimeout: 2 * time.Minute,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       p.lim.idle,
		ForceAttemptHTTP2:     false,
	}
	defer tr.CloseIdleConnections()
	// The request head is bounded like the proxy's own (maxHeader, within
	// readHeader of its first byte); bodies are not.
	lr := &io.LimitedReader{R: tc, N: 1 << 62}
	br := bufio.NewReader(lr)
	for {
		_ = client.SetReadDeadline(time.Now().Add(p.lim.idle))
		if _, err := br.Peek(1); err != nil {
			return
		}
		_ = client.SetReadDeadline(time.Now().Add(p.lim.readHeader))
		lr.N = int64(p.lim.maxHeader)
		req, err := http.ReadRequest(br)
		exhausted := lr.N <= 0
		lr.N = 1 << 62
		switch {
		case err != nil && exhausted:
			writeStatus(tc, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("sbx: request head over %d bytes on the terminated connection", p.lim.maxHeader))
			return
		case err != nil:
			if !isClosedErr(err) {
				writeStatus(tc, http.StatusBadRequest, "sbx: malformed request head on the terminated connection")
			}
			return
		}
		_ = client.SetReadDeadline(noDeadline)
		if !p.forward(tc, br, tr, req, host, port) {
			return
		}
	}
}

// sameTarget reports whether a request inside a terminated tunnel names
// the tunnel's own host:port, in its Host header and, in absolute form,
// its URL: a request may not reach (or be routed by a shared front end
// to) another host than the one vetted, and credentials decided for.
func sameTarget(req *http.Request, host string, port int) bool {
	check := func(hp string) bool {
		h, prt, err := splitTarget(hp)
		if err != nil {
			return false
		}
		if prt == 0 {
			prt = 443
		}
		c, err := canon(h)
		return err == nil && c.name == host && prt == port
	}
	if req.URL.IsAbs() && (!strings.EqualFold(req.URL.Scheme, "https") || !check(req.URL.Host)) {
		return false
	}
	return req.Host == "" || check(req.Host)
}

// forward sends one request upstream and writes the response to the
// client; it reports whether the connection may carry another.
func (p *Proxy) forward(tc *tls.Conn, br *bufio.Reader, tr *http.Transport, req *http.Request, host string, port int) bool {
	if req.Method == http.MethodConnect || !sameTarget(req, host, port) {
		reason := fmt.Sprintf("request inside the tunnel to %s:%d names another target (%s %s, Host %q)", host, port, req.Method, truncate(req.URL.String()), truncate(req.Host))
		p.report(Denial{Proto: "connect", Host: host, Port: port, Rule: RuleHostMismatch, Reason: reason})
		writeStatus(tc, http.StatusMisdirectedRequest, "sbx: "+reason)
		return false
	}
	req.Host = "" // the transport sends URL.Host, the vetted target
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	req = req.WithContext(ctx)
	req.RequestURI = ""
	req.URL.Scheme = "https"
	req.URL.Host = net.JoinHostPort(host, portString(port))
	if port == 443 {
		req.URL.Host = hostForURL(host)
	}
	if p.rewrite != nil {
		if reason := p.rewrite(req, host, port, true); reason != "" {
			writeStatus(tc, http.StatusForbidden, "sbx: "+reason)
			return false
		}
	}
	upgrade := strings.EqualFold(req.Header.Get("Connection"), "upgrade") || req.Header.Get("Upgrade") != ""
	resp, err := tr.RoundTrip(req)
	if err != nil {
		reason := fmt.Sprintf("upstream %s:%d: %s", host, port, oneLine(err.Error()))
		p.report(Denial{Proto: "connect", Host: host, Port: port, Rule: RuleUpstreamTLS, Reason: reason})
		writeStatus(tc, http.StatusBadGateway, "sbx: "+reason)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		up, ok := resp.Body.(io.ReadWriteCloser)
		if !ok || !upgrade {
			return false
		}
		if err := resp.Write(tc); err != nil {
			return false
		}
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return false
			}
		}
		done := make(chan struct{})
		go func() { _, _ = io.Copy(up, tc); up.Close(); close(done) }()
		_, _ = io.Copy(tc, up)
		tc.Close()
		<-done
		return false
	}
	if err := resp.Write(tc); err != nil {
		return false
	}
	return !req.Close && !resp.Close
}

// writeStatus writes a one-line text response and asks to close.
func writeStatus(w io.Writer, status int, msg string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
		status, http.StatusText(status), len(msg)+1, msg)
}

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }

func hostForURL(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection reset")
}

// prefixConn reads prefix before the connection's own bytes (what the
// client sent after CONNECT before it saw the 200).
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// untrackOnClose drops an upstream connection from the Proxy's set when
// the transport closes it.
type untrackOnClose struct {
	net.Conn
	p    *Proxy
	once sync.Once
}

func (c *untrackOnClose) Close() error {
	c.once.Do(func() { c.p.untrackUpstream(c.Conn) })
	return c.Conn.Close()
}
