// Command netclient is the client side of bench/netcompare: it runs inside
// a sandbox (and directly, for the baseline) and reports what it measured
// as one line of JSON on stdout. Standard library only.
//
//	netclient get [-via auto|direct|http|connect|socks] [-buf BYTES] URL
//	netclient latency [-warm N] [-via auto|direct|connect] [-once] [-dns ADDR] N HOST:PORT
//	netclient concurrent [-via auto|direct|connect] N HOST:PORT
//	netclient stalled [-via auto|direct|connect] [-hold DURATION] N URL
//
// get downloads URL (http:// only) and reports bytes and seconds. -via
// picks the path: direct; http, a plain absolute-form request to
// $HTTP_PROXY; connect, a CONNECT tunnel through $HTTPS_PROXY carrying an
// ordinary request; socks, a SOCKS5 tunnel through $ALL_PROXY. auto (the
// default) is http when $HTTP_PROXY is set, direct otherwise.
//
// latency opens N new TCP connections to HOST:PORT one after another and
// times each from the start of the dial until the first byte of the
// server's greeting; with $HTTPS_PROXY set the connection is a CONNECT
// tunnel through it (the dial, the CONNECT exchange and the greeting are
// all inside the sample), otherwise a direct dial (-via direct or connect
// picks one whatever the environment says). A direct dial to a name looks
// it up every time, as a client without a cache does; -once looks it up
// before the first connection and dials the address. -dns ADDR sends the
// lookups to the DNS server at ADDR (UDP host:port) through Go's own
// resolver, as with that server alone in /etc/resolv.conf: the cost of a
// client's lookup without sbx. -warm connections (1 by default) go first
// and are not recorded.
//
// concurrent opens N connections at once (same path rule as latency),
// waits until every one has either read the greeting or failed, so that
// all are open at the same time, then has each do one request/response
// ("PING i" / "PONG i") and counts those that completed.
//
// stalled opens N connections at once (same path rule as latency), sends
// each an HTTP GET for URL and never reads the answer; it holds them for
// -hold (3 s), so that whatever carries them fills up, then reports how
// many it opened. The launcher's peak memory is the measurement.
//
// Proxy URLs may carry user:password (sent as Basic proxy credentials, as
// srt's proxy requires). NO_PROXY is deliberately ignored: the point is to
// go through the proxy even to a loopback server.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const ioTimeout = 60 * time.Second

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "get":
		err = cmdGet(os.Args[2:])
	case "latency":
		err = cmdLatency(os.Args[2:])
	case "concurrent":
		err = cmdConcurrent(os.Args[2:])
	case "stalled":
		err = cmdStalled(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netclient:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: netclient get [-via auto|direct|http|connect|socks] [-buf BYTES] URL\n       netclient latency [-warm N] [-via auto|direct|connect] [-once] [-dns ADDR] N HOST:PORT\n       netclient concurrent [-via auto|direct|connect] N HOST:PORT\n       netclient stalled [-via auto|direct|connect] [-hold DURATION] N URL")
	os.Exit(2)
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// proxyEnv returns the first set variable among names, parsed.
func proxyEnv(names ...string) (*url.URL, error) {
	for _, n := range names {
		for _, k := range []string{n, strings.ToLower(n)} {
			if v := os.Getenv(k); v != "" {
				u, err := url.Parse(v)
				if err != nil {
					return nil, fmt.Errorf("$%s: %w", k, err)
				}
				return u, nil
			}
		}
	}
	return nil, nil
}

func proxyAddr(u *url.URL, defPort string) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), defPort)
}

func basicAuth(u *url.URL) string {
	if u == nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)) + "\r\n"
}

// dialVia connects to target (host:port) by the given path. The returned
// reader may already hold bytes the server sent after the proxy's answer.
func dialVia(via string, proxy *url.URL, target string) (net.Conn, *bufio.Reader, error) {
	switch via {
	case "direct":
		c, err := directDialer.Dial("tcp", target)
		if err != nil {
			return nil, nil, err
		}
		return c, bufio.NewReaderSize(c, 64<<10), nil
	case "connect":
		return dialConnect(proxy, target)
	case "socks":
		return dialSOCKS(proxy, target)
	}
	return nil, nil, fmt.Errorf("unknown path %q", via)
}

// directDialer makes the direct connections; latency -dns gives it a
// resolver of its own.
var directDialer net.Dialer

// resolverAt is Go's own resolver sending every query to the DNS server
// at addr.
func resolverAt(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

func dialConnect(proxy *url.URL, target string) (net.Conn, *bufio.Reader, error) {
	if proxy == nil {
		return nil, nil, errors.New("CONNECT: no proxy ($HTTPS_PROXY) set")
	}
	c, err := net.Dial("tcp", proxyAddr(proxy, "80"))
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + basicAuth(proxy) + "\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(c, 64<<10)
	tp := textproto.NewReader(br)
	status, err := tp.ReadLine()
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT: %w", err)
	}
	if _, err := tp.ReadMIMEHeader(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT: %w", err)
	}
	if f := strings.Fields(status); len(f) < 2 || f[1] != "200" {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT %s: %q", target, status)
	}
	_ = c.SetDeadline(time.Time{})
	return c, br, nil
}

func dialSOCKS(proxy *url.URL, target string) (net.Conn, *bufio.Reader, error) {
	if proxy == nil || !strings.HasPrefix(proxy.Scheme, "socks5") {
		return nil, nil, errors.New("SOCKS5: no socks5:// or socks5h:// proxy ($ALL_PROXY) set")
	}
	host, ps, err := net.SplitHostPort(target)
	if err != nil {
		return nil, nil, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, nil, err
	}
	c, err := net.Dial("tcp", proxyAddr(proxy, "1080"))
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	fail := func(err error) (net.Conn, *bufio.Reader, error) {
		c.Close()
		return nil, nil, fmt.Errorf("SOCKS5: %w", err)
	}
	greet := []byte{5, 1, 0}
	if proxy.User != nil {
		greet = []byte{5, 2, 0, 2}
	}
	if _, err := c.Write(greet); err != nil {
		return fail(err)
	}
	var b [262]byte
	if _, err := io.ReadFull(c, b[:2]); err != nil {
		return fail(err)
	}
	switch b[1] {
	case 0:
	case 2:
		pw, _ := proxy.User.Password()
		u := proxy.User.Username()
		msg := append([]byte{1, byte(len(u))}, u...)
		msg = append(append(msg, byte(len(pw))), pw...)
		if _, err := c.Write(msg); err != nil {
			return fail(err)
		}
		if _, err := io.ReadFull(c, b[:2]); err != nil {
			return fail(err)
		}
		if b[1] != 0 {
			return fail(errors.New("authentication refused"))
		}
	default:
		return fail(fmt.Errorf("no acceptable method (%d)", b[1]))
	}
	req := []byte{5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		req = append(append(req, 1), a.AsSlice()...)
	} else if err == nil {
		req = append(append(req, 4), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		return fail(err)
	}
	if _, err := io.ReadFull(c, b[:4]); err != nil {
		return fail(err)
	}
	if b[1] != 0 {
		return fail(fmt.Errorf("reply code %d", b[1]))
	}
	n := 0
	switch b[3] {
	case 1:
		n = 4
	case 4:
		n = 16
	case 3:
		if _, err := io.ReadFull(c, b[:1]); err != nil {
			return fail(err)
		}
		n = int(b[0])
	}
	if _, err := io.ReadFull(c, b[:n+2]); err != nil {
		return fail(err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, bufio.NewReaderSize(c, 64<<10), nil
}

type getResult struct {
	Mode    string  `json:"mode"`
	Via     string  `json:"via"`
	Status  int     `json:"status"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	TTFB    float64 `json:"ttfb_seconds"`
	MBps    float64 `json:"mb_per_s"`
	Reads   int     `json:"body_reads"` // Read calls on the body; bytes/reads is the mean read size
}

func cmdGet(args []string) error {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	via := fs.String("via", "auto", "auto|direct|http|connect|socks")
	bufSize := fs.Int("buf", 256<<10, "read buffer size")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		usage()
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return fmt.Errorf("only http:// URLs (got %q)", u.Scheme)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "80")
	}
	var proxy *url.URL
	switch *via {
	case "auto", "http":
		if proxy, err = proxyEnv("HTTP_PROXY"); err != nil {
			return err
		}
		if proxy == nil {
			if *via == "http" {
				return errors.New("-via http: $HTTP_PROXY is not set")
			}
			*via = "direct"
		} else {
			*via = "http"
		}
	case "connect":
		proxy, err = proxyEnv("HTTPS_PROXY")
	case "socks":
		proxy, err = proxyEnv("ALL_PROXY")
	}
	if err != nil {
		return err
	}
	start := time.Now()
	var c net.Conn
	var br *bufio.Reader
	path := u.RequestURI()
	auth := ""
	if *via == "http" {
		c, err = net.Dial("tcp", proxyAddr(proxy, "80"))
		if err == nil {
			br = bufio.NewReaderSize(c, 64<<10)
		}
		path = u.String()
		auth = basicAuth(proxy)
	} else {
		c, br, err = dialVia(*via, proxy, target)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" + auth + "User-Agent: netclient\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ttfb := time.Since(start)
	buf := make([]byte, *bufSize)
	var n int64
	reads := 0
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		reads++
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("after %d bytes: %w", n, err)
		}
	}
	d := time.Since(start).Seconds()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	emit(getResult{Mode: "get", Via: *via, Status: resp.StatusCode, Bytes: n, Seconds: d, TTFB: ttfb.Seconds(), MBps: float64(n) / d / 1e6, Reads: reads})
	return nil
}

// connPath is the path latency and concurrent use: with via "auto",
// CONNECT through $HTTPS_PROXY when set, direct otherwise.
func connPath(via string) (string, *url.URL, error) {
	switch via {
	case "direct":
		return "direct", nil, nil
	case "auto", "connect":
	default:
		return "", nil, fmt.Errorf("-via %q: auto, direct or connect", via)
	}
	p, err := proxyEnv("HTTPS_PROXY")
	if err != nil {
		return "", nil, err
	}
	if p == nil {
		if via == "connect" {
			return "", nil, errors.New("-via connect: $HTTPS_PROXY is not set")
		}
		return "direct", nil, nil
	}
	return "connect", p, nil
}

type latencyResult struct {
	Mode    string   `json:"mode"`
	Via     string   `json:"via"`
	Target  string   `json:"target"`
	Samples []int64  `json:"samples_ns"`
	Errors  int      `json:"errors"`
	First   []string `json:"first_errors,omitempty"`
}

func cmdLatency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	warm := fs.Int("warm", 1, "unrecorded connections first")
	viaFlag := fs.String("via", "auto", "auto|direct|connect")
	once := fs.Bool("once", false, "direct: look the name up once, then dial the address")
	dns := fs.String("dns", "", "direct: send lookups to the DNS server at this UDP host:port")
	_ = fs.Parse(args)
	if fs.NArg() != 2 {
		usage()
	}
	n, err := strconv.Atoi(fs.Arg(0))
	if err != nil || n < 1 {
		return fmt.Errorf("N: %q", fs.Arg(0))
	}
	target := fs.Arg(1)
	via, proxy, err := connPath(*viaFlag)
	if err != nil {
		return err
	}
	resolver := net.DefaultResolver
	if *dns != "" {
		resolver = resolverAt(*dns)
		directDialer.Resolver = resolver
	}
	if *once && via == "direct" {
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			return err
		}
		addrs, err := resolver.LookupHost(context.Background(), host)
		if err != nil {
			return err
		}
		target = net.JoinHostPort(addrs[0], port)
	}
	res := latencyResult{Mode: "latency", Via: via, Target: target, Samples: make([]int64, 0, n)}
	for i := 0; i < *warm+n; i++ {
		start := time.Now()
		c, br, err := dialVia(via, proxy, target)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(ioTimeout))
			_, err = br.ReadByte()
		}
		d := time.Since(start)
		if c != nil {
			c.Close()
		}
		if i < *warm {
			continue
		}
		if err != nil {
			res.Errors++
			if len(res.First) < 5 {
				res.First = append(res.First, err.Error())
			}
			continue
		}
		res.Samples = append(res.Samples, d.Nanoseconds())
	}
	emit(res)
	return nil
}

type concurrentResult struct {
	Mode      string   `json:"mode"`
	Via       string   `json:"via"`
	Target    string   `json:"target"`
	N         int      `json:"n"`
	OpenAtMax int      `json:"open_at_once"`
	Completed int      `json:"completed"`
	Seconds   float64  `json:"seconds"`
	First     []string `json:"first_errors,omitempty"`
}

func cmdStalled(args []string) error {
	fs := flag.NewFlagSet("stalled", flag.ExitOnError)
	viaFlag := fs.String("via", "auto", "auto|direct|connect")
	hold := fs.Duration("hold", 3*time.Second, "how long the connections stay open, unread")
	_ = fs.Parse(args)
	if fs.NArg() != 2 {
		usage()
	}
	n, err := strconv.Atoi(fs.Arg(0))
	if err != nil || n < 1 {
		return fmt.Errorf("N: %q", fs.Arg(0))
	}
	u, err := url.Parse(fs.Arg(1))
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		return fmt.Errorf("URL: %q (http://HOST:PORT/PATH)", fs.Arg(1))
	}
	via, proxy, err := connPath(*viaFlag)
	if err != nil {
		return err
	}
	var (
		mu     sync.Mutex
		first  []string
		conns  []net.Conn
		opened sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		opened.Add(1)
		go func() {
			defer opened.Done()
			c, _, err := dialVia(via, proxy, u.Host)
			if err == nil {
				_, err = io.WriteString(c, "GET "+u.RequestURI()+" HTTP/1.1\r\nHost: "+u.Host+"\r\n\r\n")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if len(first) < 5 {
					first = append(first, err.Error())
				}
				return
			}
			conns = append(conns, c)
		}()
	}
	opened.Wait()
	time.Sleep(*hold)
	for _, c := range conns {
		_ = c.Close()
	}
	emit(struct {
		Mode   string   `json:"mode"`
		N      int      `json:"n"`
		Opened int      `json:"opened"`
		First  []string `json:"first_errors"`
	}{"stalled", n, len(conns), first})
	return nil
}

func cmdConcurrent(args []string) error {
	fs := flag.NewFlagSet("concurrent", flag.ExitOnError)
	viaFlag := fs.String("via", "auto", "auto|direct|connect")
	_ = fs.Parse(args)
	if fs.NArg() != 2 {
		usage()
	}
	n, err := strconv.Atoi(fs.Arg(0))
	if err != nil || n < 1 {
		return fmt.Errorf("N: %q", fs.Arg(0))
	}
	target := fs.Arg(1)
	via, proxy, err := connPath(*viaFlag)
	if err != nil {
		return err
	}
	var (
		open, completed atomic.Int64
		mu              sync.Mutex
		first           []string
		phase1, all     sync.WaitGroup
		release         = make(chan struct{})
	)
	note := func(err error) {
		mu.Lock()
		if len(first) < 5 {
			first = append(first, err.Error())
		}
		mu.Unlock()
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		phase1.Add(1)
		all.Add(1)
		go func(i int) {
			defer all.Done()
			done1 := sync.OnceFunc(phase1.Done)
			defer done1()
			c, br, err := dialVia(via, proxy, target)
			if err != nil {
				note(err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(ioTimeout))
			if _, err := br.ReadString('\n'); err != nil { // greeting
				note(fmt.Errorf("greeting: %w", err))
				return
			}
			open.Add(1)
			done1()
			<-release // every connection is open (or failed) now
			if _, err := fmt.Fprintf(c, "PING %d\n", i); err != nil {
				note(err)
				return
			}
			line, err := br.ReadString('\n')
			if err != nil || line != fmt.Sprintf("PONG %d\n", i) {
				note(fmt.Errorf("reply %q: %v", line, err))
				return
			}
			completed.Add(1)
		}(i)
	}
	phase1.Wait()
	openAtMax := int(open.Load())
	close(release)
	all.Wait()
	mu.Lock()
	defer mu.Unlock()
	emit(concurrentResult{Mode: "concurrent", Via: via, Target: target, N: n, OpenAtMax: openAtMax,
		Completed: int(completed.Load()), Seconds: time.Since(start).Seconds(), First: first})
	return nil
}
