package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// cmdConnect is `sbx connect HOST PORT`: an HTTP CONNECT client on stdin
// and stdout, for ssh's ProxyCommand inside the sandbox (GIT_SSH_COMMAND
// uses it). The proxy is $SBX_PROXY, else $HTTPS_PROXY / $https_proxy,
// else http://127.0.0.1:3128.
func cmdConnect(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		return fail(stderr, "usage: sbx connect HOST PORT")
	}
	host, portStr := args[0], args[1]
	if port, err := strconv.Atoi(portStr); err != nil || port < 1 || port > 65535 {
		return fail(stderr, "connect: %q is not a port (1-65535)", portStr)
	}
	if host == "" || strings.ContainsAny(host, " \t\r\n/@") {
		return fail(stderr, "connect: %q is not a host name", host)
	}
	proxy := "http://127.0.0.1:3128"
	for _, k := range []string{"SBX_PROXY", "HTTPS_PROXY", "https_proxy"} {
		if v := os.Getenv(k); v != "" {
			proxy = v
			break
		}
	}
	u, err := url.Parse(proxy)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fail(stderr, "connect: proxy %q is not an http://HOST:PORT URL", proxy)
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return fail(stderr, "connect: cannot reach the proxy at %s: %v", u.Host, err)
	}
	defer c.Close()
	target := net.JoinHostPort(strings.Trim(host, "[]"), portStr)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fail(stderr, "connect: reading the proxy's answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		msg := strings.TrimPrefix(strings.TrimSpace(string(body)), "sbx: ")
		if msg == "" {
			msg = resp.Status
		}
		fmt.Fprintf(stderr, "sbx: connect %s: %s\n", target, msg)
		return 1
	}
	go func() {
		_, _ = io.Copy(c, stdin)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	// Bytes the proxy sent after its answer are in br already.
	_, _ = io.Copy(stdout, br)
	return 0
}
