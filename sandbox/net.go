package sandbox

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sbx-sh/sbx/capture"
	"github.com/sbx-sh/sbx/netproxy"
	"github.com/sbx-sh/sbx/policy"
)

// Ports of the proxy inside the sandbox's network namespace. The
// namespace is the sandbox's own, so fixed ports cannot collide with the
// host; they are the conventional ones so that a user reading the
// environment recognises them.
const (
	ProxyHTTPPort  = 3128
	ProxySOCKSPort = 1080
)

// NetPlan is the network part of a Plan.
type NetPlan struct {
	// Proxy is set in filtered mode: init creates the proxy's listeners
	// on 127.0.0.1 inside the namespace and hands them to the supervisor,
	// which serves them with package netproxy.
	Proxy     bool   `json:"proxy"`
	HTTPPort  uint16 `json:"httpPort,omitempty"`
	SOCKSPort uint16 `json:"socksPort,omitempty"`
	// Publish forwards host loopback ports to ports inside.
	Publish []Publish `json:"publish,omitempty"`
	// Control is set when init and the supervisor talk over the network
	// control socket (listeners, published connections, the seccomp
	// listener).
	Control bool `json:"control"`
	// UnixSockets are the socket paths the command may connect to
	// (network.allowUnixSockets), decided by the supervisor.
	UnixSockets []string `json:"unixSockets,omitempty"`
	// Allowed and Denied are the proxy's lists, shown by --dry-run.
	Allowed []string `json:"allowedDomains,omitempty"`
	Denied  []string `json:"deniedDomains,omitempty"`
	// TLS is set when the proxy terminates HTTPS (network.tlsTerminate).
	TLS *TLSPlan `json:"tlsTerminate,omitempty"`
	// Parent names the upstream proxy, password hidden, for --dry-run.
	Parent []string `json:"parentProxy,omitempty"`
	// ProxyLoopback sends the loopback names (localhost, 127.0.0.1, ::1)
	// to the proxy too: NO_PROXY leaves them out. Set when the command
	// cannot use the sandbox's own loopback (no allowLocalBinding:
	// Landlock lets it connect only to the proxy's ports), so that a
	// loopback host allowed at any time — at start, by --control-fd, by
	// an --ask-fd answer — is reached through the proxy, and one not
	// allowed is refused there and recorded rather than failing in the
	// dark.
	ProxyLoopback bool `json:"proxyLoopback,omitempty"`
	// Capture is set when TCP and DNS from clients that ignore the
	// proxy variables reach the proxy through the capture device
	// (network.capture; capture.go).
	Capture bool `json:"capture"`

	// names is the capture's address book for the run.
	names *capture.Names
	// captureFiles are resolv.conf, hosts and nsswitch.conf as the
	// command sees them under capture.
	captureFiles []captureFile

	proxy netproxy.Config
	// managed is the managed layer's network lists, which --control-fd
	// lines and --ask-fd answers cannot undo (supervisor only).
	managed *policy.ManagedNetwork
}

// TLSPlan is what the sandbox needs of TLS termination: the bundle of
// certificates the command trusts (the run's CA, the host's roots and the
// extra CAs; certificates only), written by init to BundlePath in the
// private /tmp. The CA's key stays in the supervisor.
type TLSPlan struct {
	BundlePath string   `json:"bundlePath"`
	CA         string   `json:"ca"` // the CA certificate's subject, for --dry-run
	Exclude    []string `json:"excludeDomains,omitempty"`
	Bundle     []byte   `json:"bundle,omitempty"`
}

// BundlePath is where the command finds the trust bundle under TLS
// termination (in the sandbox's private /tmp).
const BundlePath = "/tmp/.sbx/ca-bundle.pem"

// hostRootFiles are where Linux distributions keep the system's roots
// (crypto/x509's list); SSL_CERT_FILE comes first.
var hostRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// tlsTermination makes the run's CA (or loads the given one), the
// upstream roots and the command's bundle.
func tlsTermination(t *policy.TLSTerminate) (*netproxy.TLSTerminate, *TLSPlan, error) {
	var ca tls.Certificate
	var err error
	if t.CACertPath != "" {
		ca, err = netproxy.LoadCA(t.CACertPath, t.CAKeyPath)
	} else {
		ca, err = netproxy.NewCA()
	}
	if err != nil {
		return nil, nil, err
	}
	for _, d := range t.ExcludeDomains {
		if err := netproxy.ValidatePattern(d, true); err != nil {
			return nil, nil, fmt.Errorf("network.tlsTerminate.excludeDomains: %w", err)
		}
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	bundle := netproxy.CertPEM(ca)
	hostFile := os.Getenv("SSL_CERT_FILE")
	if hostFile == "" {
		for _, f := range hostRootFiles {
			if _, err := os.Stat(f); err == nil {
				hostFile = f
				break
			}
		}
	}
	if hostFile != "" {
		if b, err := policy.CACertificates(hostFile); err == nil {
			bundle = append(bundle, b...)
		}
	}
	for _, f := range t.ExtraCACertPaths {
		b, err := policy.CACertificates(f)
		if err != nil {
			return nil, nil, fmt.Errorf("network.tlsTerminate.extraCaCertPaths: %w", err)
		}
		bundle = append(bundle, b...)
		roots.AppendCertsFromPEM(b)
	}
	return &netproxy.TLSTerminate{CA: ca, Exclude: t.ExcludeDomains, Roots: roots},
		&TLSPlan{BundlePath: BundlePath, CA: ca.Leaf.Subject.String(), Exclude: t.ExcludeDomains, Bundle: bundle}, nil
}

// parentProxy is the upstream proxy: network.parentProxy when set, else
// the HTTP_PROXY / HTTPS_PROXY / NO_PROXY (or lowercase) of sbx's own
// environment; nil when neither names one.
func parentProxy(pp *policy.ParentProxy) (*netproxy.Parent, error) {
	key := "network.parentProxy"
	if pp == nil {
		env := func(names ...string) string {
			for _, n := range names {
				if v := os.Getenv(n); v != "" {
					return v
				}
			}
			return ""
		}
		pp = &policy.ParentProxy{HTTP: env("HTTP_PROXY", "http_proxy"), HTTPS: env("HTTPS_PROXY", "https_proxy")}
		if np := env("NO_PROXY", "no_proxy"); np != "" {
			pp.NoProxy = strings.Split(np, ",")
		}
		key = "sbx's environment"
	}
	if pp.HTTP == "" && pp.HTTPS == "" {
		return nil, nil
	}
	var out netproxy.Parent
	var err error
	if out.HTTP, err = netproxy.ParseParentURL(key+" http (HTTP_PROXY)", pp.HTTP); err != nil {
		return nil, err
	}
	if out.HTTPS, err = netproxy.ParseParentURL(key+" https (HTTPS_PROXY)", pp.HTTPS); err != nil {
		return nil, err
	}
	out.NoProxy = pp.NoProxy
	return &out, nil
}

func parentShown(p *netproxy.Parent) []string {
	var out []string
	if p.HTTP != nil {
		out = append(out, "http: "+policy.RedactURL(p.HTTP.String()))
	}
	if p.HTTPS != nil {
		out = append(out, "https: "+policy.RedactURL(p.HTTPS.String()))
	}
	if len(p.NoProxy) > 0 {
		out = append(out, "noProxy: "+strings.Join(p.NoProxy, ","))
	}
	return out
}

// Publish is one --publish [HOST_PORT:]PORT.
type Publish struct {
	HostPort uint16 `json:"hostPort"`
	Port     uint16 `json:"port"`
}

// parsePublish reads [HOST_PORT:]PORT.
func parsePublish(s string) (Publish, error) {
	port := func(v string) (uint16, error) {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("--publish %q: %q is not a port (1-65535); use --publish [HOST_PORT:]PORT", s, v)
		}
		return uint16(n), nil
	}
	h, in, ok := strings.Cut(s, ":")
	if !ok {
		in = h
	}
	p, err := port(in)
	if err != nil {
		return Publish{}, err
	}
	hp := p
	if ok {
		if hp, err = port(h); err != nil {
			return Publish{}, err
		}
	}
	return Publish{HostPort: hp, Port: p}, nil
}

// computeNet fills pl.Net from the policy and adds the proxy variables to
// the command's environment.
func computeNet(pl *Plan, p *policy.Policy) error {
	n := &pl.Net
	for _, s := range p.Network.Publish {
		pb, err := parsePublish(s)
		if err != nil {
			return err
		}
		if pl.HostNet {
			return fmt.Errorf("--publish %s: with --net host the command listens on the host already; drop --publish", s)
		}
		if pl.Weaker {
			return fmt.Errorf("--publish %s: needs the sandbox's own network namespace, which --weaker-nested does not have", s)
		}
		if p.Network.Mode == "filtered" && (pb.Port == ProxyHTTPPort || pb.Port == ProxySOCKSPort) {
			return fmt.Errorf("--publish %s: port %d is the proxy's inside the sandbox; have the command listen on another port", s, pb.Port)
		}
		for _, q := range n.Publish {
			if q.HostPort == pb.HostPort {
				return fmt.Errorf("--publish %s: host port %d is published twice", s, pb.HostPort)
			}
		}
		n.Publish = append(n.Publish, pb)
	}
	if p.Network.Mode != "filtered" {
		return nil
	}
	if pl.Weaker {
		return fmt.Errorf("domain filtering (--allow-domain / network.allowedDomains) needs the sandbox's own network namespace, which --weaker-nested does not have; use --net none or --net host")
	}
	for _, d := range p.Network.AllowedDomains {
		if err := netproxy.ValidatePattern(d, false); err != nil {
			return fmt.Errorf("network.allowedDomains / --allow-domain: %w", err)
		}
	}
	for _, d := range p.Network.DeniedDomains {
		if err := netproxy.ValidatePattern(d, true); err != nil {
			return fmt.Errorf("network.deniedDomains / --deny-domain: %w", err)
		}
	}
	n.managed = p.Network.Managed
	n.proxy = netproxy.Config{
		Allowed:        p.Network.AllowedDomains,
		Denied:         p.Network.DeniedDomains,
		DeniedReasons:  p.Network.DeniedDomainReasons,
		DeniedResolved: p.Network.DeniedResolvedAddresses,
	}
	// The reasons and CIDRs; the proxy itself is made in the supervisor.
	if err := n.proxy.Validate(); err != nil {
		return fmt.Errorf("network settings: %w", err)
	}
	parent, err := parentProxy(p.Network.ParentProxy)
	if err != nil {
		return err
	}
	n.proxy.Parent = parent
	if m := p.Network.MITMProxy; m != nil {
		for _, d := range m.Domains {
			if err := netproxy.ValidatePattern(d, false); err != nil {
				return fmt.Errorf("network.mitmProxy.domains: %w", err)
			}
		}
		n.proxy.MITM = &netproxy.MITMUpstream{SocketPath: m.SocketPath, Domains: m.Domains}
	}
	if parent != nil {
		n.Parent = parentShown(parent)
	}
	if t := p.Network.TLSTerminate; t != nil {
		var err error
		if n.proxy.TLS, n.TLS, err = tlsTermination(t); err != nil {
			return err
		}
	}
	n.Proxy = true
	n.HTTPPort, n.SOCKSPort = ProxyHTTPPort, ProxySOCKSPort
	n.Allowed, n.Denied = p.Network.AllowedDomains, p.Network.DeniedDomains
	n.ProxyLoopback = !p.Network.AllowLocalBinding
	client := netproxy.Client{HTTPPort: n.HTTPPort, SOCKSPort: n.SOCKSPort, Allowed: n.Allowed, ProxyLoopback: n.ProxyLoopback, Self: p.Process.Self}
	if n.TLS != nil {
		client.CABundle = n.TLS.BundlePath
	}
	pl.Env = netproxy.ClientEnv(pl.Env, client)
	return planCapture(pl, p)
}
