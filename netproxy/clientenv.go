package netproxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Client is what ClientEnv points a sandboxed command's clients at.
type Client struct {
	// HTTPPort and SOCKSPort are the proxy's ports on 127.0.0.1.
	HTTPPort, SOCKSPort uint16
	// Allowed is the allow list at start: a loopback host it names
	// exactly is reached through the proxy.
	Allowed []string
	// ProxyLoopback sends the loopback names to the proxy too.
	ProxyLoopback bool
	// CABundle, under TLS termination, is the trust bundle's path.
	CABundle string
	// Self is sbx's path as the command sees it ("": no
	// GIT_SSH_COMMAND through `sbx connect`).
	Self string
}

// caBundleVars point the usual clients at the bundle.
var caBundleVars = []string{
	"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "PIP_CERT", "CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "npm_config_cafile",
}

// ClientEnv sets the variables that point clients at the proxy,
// replacing whatever the caller had (the caller's proxies are not
// reachable from the sandbox). NO_PROXY is empty with ProxyLoopback:
// every name, loopback ones included, goes to the proxy, which decides
// with the lists of the moment. Otherwise (allowLocalBinding; macOS,
// where the command shares the host's loopback) it names the loopback
// the command reaches directly, except a loopback host an allow entry
// names at start: then "localhost" means the host's, through the proxy.
func ClientEnv(env []string, n Client) []string {
	httpURL := fmt.Sprintf("http://127.0.0.1:%d", n.HTTPPort)
	socksURL := fmt.Sprintf("socks5h://127.0.0.1:%d", n.SOCKSPort)
	var noProxy []string
	loopback := map[string]bool{}
	for _, a := range n.Allowed {
		if h, ok := ExactHost(a); ok {
			loopback[h] = true
		}
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		if !loopback[h] && !n.ProxyLoopback {
			noProxy = append(noProxy, h)
		}
	}
	set := map[string]string{
		"HTTP_PROXY":  httpURL,
		"HTTPS_PROXY": httpURL,
		"ALL_PROXY":   socksURL,
		"GRPC_PROXY":  httpURL,
		"NO_PROXY":    strings.Join(noProxy, ","),
	}
	for k, v := range set {
		set[strings.ToLower(k)] = v
	}
	// Node's own fetch (undici) honours the variables only when told to
	// (Node 22.21+ and 24+; older ones ignore it).
	set["NODE_USE_ENV_PROXY"] = "1"
	if n.CABundle != "" {
		for _, k := range caBundleVars {
			set[k] = n.CABundle
		}
	}
	if n.Self != "" {
		set["GIT_SSH_COMMAND"] = "ssh -o ProxyCommand=" + shellQuote(shellQuote(n.Self)+" connect %h %p")
		set["SBX_PROXY"] = httpURL
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
