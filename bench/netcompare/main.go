//go:build linux

// Command netcompare measures sbx's filtering proxy against the same
// transfers without sbx (and against srt's proxy when srt is installed),
// in one interleaved run, and prints a Markdown table. Run it from the
// repository root:
//
//	go build -o bin/sbx ./cmd/sbx && go run ./bench/netcompare -sbx bin/sbx -n 5
//
// It starts its own loopback servers (an HTTP server streaming -size bytes
// of zeros with a Content-Length, and a TCP server that greets every new
// connection with "HELLO\n" and answers "PING i" with "PONG i"), builds
// bench/netclient into a temporary directory (given to the sandbox with
// --allow-read), and then, for each of -n rounds (row order rotated
// every round):
//
//   - downloads -size bytes directly (curl and netclient), through sbx's
//     CONNECT tunnel (curl -p, netclient), its plain HTTP proxy and its
//     SOCKS5 proxy, and the same through srt's proxy;
//   - opens -lat new connections one after another, directly and through
//     each proxy's CONNECT, timing dial start to the greeting's first byte;
//   - opens -conc connections at once through each path, all held open
//     together, each then doing one request/response;
//   - opens -stall connections at once (CONNECT and capture), each asking
//     for 4 MiB that it never reads, held for 3 s: the launcher's peak
//     RSS is what the supervisor holds for clients that do not read.
//
// The capture (for clients that ignore the proxy): sbx is also given --allow-domain NAME:PORT for
// both servers, where NAME (-name, sbx-capture.test by default) is a name
// the host's /etc/hosts maps to 127.0.0.1, and rows named "capture" run
// the same clients with the proxy ignored (curl --noproxy '*', netclient
// -via direct) to that name: inside the sandbox it resolves through sbx's
// resolver to a synthetic address and the connection goes through the
// TUN device to the supervisor's user-space stack. Those rows are
// compared with the CONNECT rows of the same client and launcher:
// throughput ≥ 0.5× CONNECT, new-connection latency ≤ +1 ms over a
// CONNECT to the same name. Two capture latency rows: a lookup before
// every dial (a client without a DNS cache: the query to sbx's resolver
// is in the sample) and one lookup, then the address dialled each time.
// What a lookup costs the client itself, without sbx, is the row "latency
// direct, lookup every dial": the same client sends its lookups (A and
// AAAA, both answered 127.0.0.1) through Go's own resolver to a loopback
// DNS server this program runs; its excess over "latency direct" is shown
// beside the capture row as the client's share of that row's overhead.
// Without the name on the host, the capture rows are dropped with a note.
//
// With -alt OTHER_SBX a second sbx binary is measured in the same rounds,
// in rows named sbx-alt: before/after numbers for a change.
//
// While an sbx run goes on, /proc/<pid>/status VmHWM of the sbx process
// (the supervisor, which serves the proxy; not its init child) is polled
// every 20 ms and the maximum kept; likewise for the srt launcher (its
// proxy runs in that Node process).
//
// For each download it also reports CPU seconds per GiB: of everything
// involved, and of the launcher process alone (the proxy's own cost),
// which varies far less than throughput on a shared machine.
//
// Throughput is bytes / the client's own transfer time (curl's
// time_total, netclient's dial-to-last-byte), so sandbox start-up is not
// in it. Ratios compare a proxied row with the direct row of the same
// client. All traffic stays on 127.0.0.1. srt's own NO_PROXY lists
// 127.0.0.1, so its rows pass curl --noproxy "" (netclient ignores
// NO_PROXY); srt is given allowedDomains ["127.0.0.1"].
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-sh/sbx/bench"
	"golang.org/x/net/dns/dnsmessage"
)

// ---- loopback servers ----

var zeros = make([]byte, 1<<20)

func startServers() (httpAddr, greetAddr string) {
	hl, err := net.Listen("tcp4", "127.0.0.1:0")
	check(err)
	mux := http.NewServeMux()
	mux.HandleFunc("/zero", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "n?", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		for n > 0 {
			k := min(n, int64(len(zeros)))
			if _, err := w.Write(zeros[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	go func() { _ = http.Serve(hl, mux) }()

	gl, err := net.Listen("tcp4", "127.0.0.1:0")
	check(err)
	go func() {
		for {
			c, err := gl.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
				if _, err := c.Write([]byte("HELLO\n")); err != nil {
					return
				}
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				if rest, ok := strings.CutPrefix(line, "PING "); ok {
					_, _ = c.Write([]byte("PONG " + rest))
				}
			}(c)
		}
	}()
	return hl.Addr().String(), gl.Addr().String()
}

// startDNS runs a loopback DNS server answering every A query 127.0.0.1
// and every AAAA query ::ffff:127.0.0.1 (so a client gets two answers to
// sort, as from sbx's resolver, and dials only 127.0.0.1), other types
// with no records.
func startDNS() string {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	check(err)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := dnsAnswer(buf[:n]); out != nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

func dnsAnswer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	switch q.Type {
	case dnsmessage.TypeA:
		_ = b.AResource(rh, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
	case dnsmessage.TypeAAAA:
		_ = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: [16]byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}})
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// ---- running a measured command ----

// result is what one run of a command produced.
type result struct {
	out     []byte
	peakKiB int64   // highest VmHWM of the started process (when polled)
	cpu     float64 // CPU seconds: the whole process tree plus this program (the servers)
	ownCPU  float64 // CPU seconds of the started process itself (when polled)
}

// run runs argv with env. When poll is set it reads /proc/<pid>/status
// VmHWM and /proc/<pid>/stat CPU times of the started process every
// 20 ms and keeps the highest.
func run(argv, env []string, dir string, poll bool, timeout time.Duration) (result, error) {
	var res result
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	selfBefore := selfCPU()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if poll {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				if kb := bench.VmHWM(cmd.Process.Pid); kb > res.peakKiB {
					res.peakKiB = kb
				}
				if c := procCPU(stat); c > res.ownCPU {
					res.ownCPU = c
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
	}
	timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	close(stop)
	wg.Wait()
	res.out = out.Bytes()
	if err != nil {
		return res, fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	res.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds() + selfCPU() - selfBefore
	return res, nil
}

// selfCPU is this process's CPU time in seconds (the loopback servers
// run here).
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// procCPU reads utime+stime (all threads) from /proc/<pid>/stat.
func procCPU(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // USER_HZ
}

// ---- rows ----

type kind int

const (
	kThroughput kind = iota
	kLatency
	kConcurrent
	kStalled
)

type launcher struct {
	name   string // "", "sbx", "srt"
	prefix []string
	poll   bool
	// CPU seconds of starting the launcher around /bin/true (median of
	// three), taken off every throughput run's CPU figures.
	startCPU, startOwn float64
}

// calibrate measures the launcher's own start-up CPU cost.
func (l *launcher) calibrate(env []string, dir string) {
	if l.name == "" {
		return
	}
	var all, own []float64
	for i := 0; i < 3; i++ {
		res, err := run(append(append([]string(nil), l.prefix...), "/bin/true"), env, dir, l.poll, time.Minute)
		if err != nil {
			return
		}
		all, own = append(all, res.cpu), append(own, res.ownCPU)
	}
	l.startCPU, l.startOwn = bench.Median(all), bench.Median(own)
}

type row struct {
	name   string
	kind   kind
	l      *launcher
	argv   []string // the client command (inside the launcher)
	client string   // "curl" or "netclient": the direct row to compare with
	peer   bool     // srt: informational, no verdict
	// capture: the row dials -name, without the proxy; base,
	// when set, is the row it is judged against instead of direct.
	capture bool
	base    *row
	// ownLookup: the direct row whose lookups go to a loopback DNS
	// server; its excess over latency direct is the client's own lookup.
	ownLookup *row
	note      string // why the row was dropped
	skip      bool

	vals    []float64 // throughput MB/s, or concurrent completed
	samples []float64 // latency ms, pooled over rounds
	walls   []float64 // concurrent wall seconds
	cpuAll  []float64 // throughput: CPU s per GiB of every process involved
	cpuOwn  []float64 // throughput: CPU s per GiB of the launcher process
	errs    []string
	peakKiB int64
}

func (r *row) fullArgv(size int64) []string {
	a := append(append([]string(nil), r.l.prefix...), r.argv...)
	for i, s := range a {
		a[i] = strings.ReplaceAll(s, "{SIZE}", strconv.FormatInt(size, 10))
	}
	return a
}

// measure runs the row once and records its result.
func (r *row) measure(env []string, dir string, size int64, record bool) error {
	timeout := 5 * time.Minute
	res, err := run(r.fullArgv(size), env, dir, r.l.poll, timeout)
	if err != nil {
		return err
	}
	out, peak := res.out, res.peakKiB
	var v float64
	switch r.kind {
	case kThroughput:
		if r.client == "curl" {
			// "%{http_code} %{size_download} %{time_total}"
			f := strings.Fields(string(out))
			if len(f) != 3 || f[0] != "200" {
				return fmt.Errorf("curl: %q", out)
			}
			got, _ := strconv.ParseFloat(f[1], 64)
			secs, _ := strconv.ParseFloat(f[2], 64)
			if int64(got) != size || secs <= 0 {
				return fmt.Errorf("curl: %q, want %d bytes", out, size)
			}
			v = got / secs / 1e6
		} else {
			var g struct {
				Bytes   int64
				Seconds float64
			}
			if err := json.Unmarshal(out, &g); err != nil || g.Bytes != size || g.Seconds <= 0 {
				return fmt.Errorf("netclient: %q (%v)", out, err)
			}
			v = float64(g.Bytes) / g.Seconds / 1e6
		}
		if record {
			r.vals = append(r.vals, v)
			gib := float64(size) / (1 << 30)
			r.cpuAll = append(r.cpuAll, (res.cpu-r.l.startCPU)/gib)
			if r.l.poll {
				r.cpuOwn = append(r.cpuOwn, (res.ownCPU-r.l.startOwn)/gib)
			}
		}
	case kLatency:
		var l struct {
			Samples []int64 `json:"samples_ns"`
			Errors  int
			First   []string `json:"first_errors"`
		}
		if err := json.Unmarshal(out, &l); err != nil {
			return fmt.Errorf("netclient: %q (%v)", out, err)
		}
		if l.Errors > 0 {
			return fmt.Errorf("latency: %d errors, first: %s", l.Errors, firstOr(l.First))
		}
		if record {
			for _, s := range l.Samples {
				r.samples = append(r.samples, float64(s)/1e6)
			}
		}
	case kConcurrent:
		var c struct {
			N         int
			Completed int
			Open      int `json:"open_at_once"`
			Seconds   float64
			First     []string `json:"first_errors"`
		}
		if err := json.Unmarshal(out, &c); err != nil {
			return fmt.Errorf("netclient: %q (%v)", out, err)
		}
		if record {
			r.vals = append(r.vals, float64(c.Completed))
			r.walls = append(r.walls, c.Seconds)
			if c.Completed != c.N {
				r.errs = append(r.errs, fmt.Sprintf("%d/%d completed, %d open at once, first error: %s", c.Completed, c.N, c.Open, firstOr(c.First)))
			}
		}
	case kStalled:
		var st struct {
			N      int
			Opened int
			First  []string `json:"first_errors"`
		}
		if err := json.Unmarshal(out, &st); err != nil {
			return fmt.Errorf("netclient: %q (%v)", out, err)
		}
		if record {
			r.vals = append(r.vals, float64(st.Opened))
			if st.Opened != st.N {
				r.errs = append(r.errs, fmt.Sprintf("%d/%d opened, first error: %s", st.Opened, st.N, firstOr(st.First)))
			}
		}
	}
	if record && peak > r.peakKiB {
		r.peakKiB = peak
	}
	return nil
}

func main() {
	sbxPath := flag.String("sbx", "bin/sbx", "sbx binary")
	n := flag.Int("n", 5, "rounds")
	srt := flag.String("srt", "/opt/sbx-peers/srt/node_modules/.bin/srt", "srt launcher (skipped when absent)")
	size := flag.Int64("size", 1<<30, "bytes per download")
	lat := flag.Int("lat", 100, "sequential connections per latency run")
	conc := flag.Int("conc", 200, "simultaneous connections per concurrency run")
	stall := flag.Int("stall", 600, "connections per stalled-clients run")
	only := flag.String("rows", "", "only rows whose name matches this regexp")
	alt := flag.String("alt", "", "a second sbx binary measured alongside, in rows named sbx-alt (before/after a change)")
	capName := flag.String("name", "sbx-capture.test", "a name the host resolves to 127.0.0.1, dialled by the capture rows")
	flag.Parse()
	sbx, err := filepath.Abs(*sbxPath)
	check(err)

	work, err := os.MkdirTemp("", "sbx-netcompare-")
	check(err)
	defer os.RemoveAll(work)
	netclient := filepath.Join(work, "netclient")
	build := exec.Command("go", "build", "-o", netclient, "github.com/sbx-sh/sbx/bench/netclient")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	check(build.Run())

	httpAddr, greetAddr := startServers()
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	_, greetPort, _ := net.SplitHostPort(greetAddr)
	url := "http://" + httpAddr + "/zero?n={SIZE}"
	capHTTP, capGreet := net.JoinHostPort(*capName, httpPort), net.JoinHostPort(*capName, greetPort)
	capURL := "http://" + capHTTP + "/zero?n={SIZE}"
	capNote := ""
	if addrs, err := net.LookupHost(*capName); err != nil || len(addrs) == 0 || addrs[0] != "127.0.0.1" {
		capNote = fmt.Sprintf("%s does not resolve to 127.0.0.1 on the host (%v %v): add it to /etc/hosts", *capName, addrs, err)
	}
	curlW := []string{"-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}"}
	curl, err := exec.LookPath("curl")
	if err != nil {
		curl = ""
	}

	env := proxyFreeEnv()

	direct := &launcher{name: ""}
	sbxL := func(name, bin string) *launcher {
		return &launcher{name: name, poll: true, prefix: []string{bin,
			"--allow-domain", httpAddr, "--allow-domain", greetAddr,
			"--allow-domain", capHTTP, "--allow-domain", capGreet, "--allow-read", work, "--"}}
	}
	sbxs := []*launcher{sbxL("sbx", sbx)}
	if *alt != "" {
		a, err := filepath.Abs(*alt)
		check(err)
		sbxs = append(sbxs, sbxL("sbx-alt", a))
	}
	var srtL *launcher
	if _, err := os.Stat(*srt); err == nil {
		settings := filepath.Join(work, "srt.json")
		b, _ := json.Marshal(map[string]any{
			"network":    map[string]any{"allowedDomains": []string{"127.0.0.1"}, "deniedDomains": []string{}},
			"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
		})
		check(os.WriteFile(settings, b, 0o644))
		srtL = &launcher{name: "srt", poll: true, prefix: []string{*srt, "--settings", settings, "--"}}
	}

	nc := func(args ...string) []string { return append([]string{netclient}, args...) }
	cuTo := func(u string, args ...string) []string {
		return append(append(append([]string{curl}, curlW...), args...), u)
	}
	cu := func(args ...string) []string { return cuTo(url, args...) }
	var rows []*row
	add := func(r *row) {
		if curl == "" && r.client == "curl" {
			return
		}
		if r.capture && capNote != "" {
			r.skip, r.note = true, capNote
		}
		rows = append(rows, r)
	}
	add(&row{name: "direct · curl", kind: kThroughput, l: direct, client: "curl", argv: cu("--noproxy", "*")})
	add(&row{name: "direct · netclient", kind: kThroughput, l: direct, client: "netclient", argv: nc("get", "-via", "direct", url)})
	for _, sb := range sbxs {
		n := sb.name
		cc := &row{name: n + " CONNECT · curl -p", kind: kThroughput, l: sb, client: "curl", argv: cu("--noproxy", "", "-p")}
		cn := &row{name: n + " CONNECT · netclient", kind: kThroughput, l: sb, client: "netclient", argv: nc("get", "-via", "connect", url)}
		add(cc)
		add(cn)
		add(&row{name: n + " capture · curl", kind: kThroughput, l: sb, client: "curl", capture: true, base: cc, argv: cuTo(capURL, "--noproxy", "*")})
		// curl tries the name's IPv6 address first (happy eyeballs);
		// this row is its IPv4 path alone.
		add(&row{name: n + " capture · curl -4", kind: kThroughput, l: sb, client: "curl", capture: true, base: cc, argv: cuTo(capURL, "--noproxy", "*", "-4")})
		add(&row{name: n + " capture · netclient", kind: kThroughput, l: sb, client: "netclient", capture: true, base: cn, argv: nc("get", "-via", "direct", capURL)})
		add(&row{name: n + " plain HTTP proxy · curl", kind: kThroughput, l: sb, client: "curl", argv: cu("--noproxy", "")})
		add(&row{name: n + " plain HTTP proxy · netclient", kind: kThroughput, l: sb, client: "netclient", argv: nc("get", "-via", "http", url)})
		add(&row{name: n + " SOCKS5 · curl", kind: kThroughput, l: sb, client: "curl",
			argv: []string{"/bin/sh", "-c", `exec "$@" -x "$ALL_PROXY" "$0"`, url, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}", "--noproxy", ""}})
		add(&row{name: n + " SOCKS5 · netclient", kind: kThroughput, l: sb, client: "netclient", argv: nc("get", "-via", "socks", url)})
	}
	if srtL != nil {
		add(&row{name: "srt CONNECT · curl -p", kind: kThroughput, l: srtL, client: "curl", peer: true, argv: cu("--noproxy", "", "-p")})
		add(&row{name: "srt CONNECT · netclient", kind: kThroughput, l: srtL, client: "netclient", peer: true, argv: nc("get", "-via", "connect", url)})
		add(&row{name: "srt plain HTTP proxy · curl", kind: kThroughput, l: srtL, client: "curl", peer: true, argv: cu("--noproxy", "")})
	}
	latArgs := nc("latency", strconv.Itoa(*lat), greetAddr)
	add(&row{name: "latency direct", kind: kLatency, l: direct, argv: latArgs})
	ownLookup := &row{name: "latency direct, lookup every dial (loopback DNS server)", kind: kLatency, l: direct,
		argv: nc("latency", "-via", "direct", "-dns", startDNS(), strconv.Itoa(*lat), net.JoinHostPort("lookup.sbx-bench.test", greetPort))}
	add(ownLookup)
	for _, sb := range sbxs {
		add(&row{name: "latency " + sb.name + " CONNECT", kind: kLatency, l: sb, argv: latArgs})
		cn := &row{name: "latency " + sb.name + " CONNECT to the name", kind: kLatency, l: sb, capture: true, argv: nc("latency", "-via", "connect", strconv.Itoa(*lat), capGreet)}
		add(cn)
		add(&row{name: "latency " + sb.name + " capture, lookup every dial", kind: kLatency, l: sb, capture: true, base: cn, ownLookup: ownLookup, argv: nc("latency", "-via", "direct", strconv.Itoa(*lat), capGreet)})
		add(&row{name: "latency " + sb.name + " capture, one lookup", kind: kLatency, l: sb, capture: true, base: cn, argv: nc("latency", "-via", "direct", "-once", strconv.Itoa(*lat), capGreet)})
	}
	if srtL != nil {
		add(&row{name: "latency srt CONNECT", kind: kLatency, l: srtL, peer: true, argv: latArgs})
	}
	concArgs := nc("concurrent", strconv.Itoa(*conc), greetAddr)
	add(&row{name: fmt.Sprintf("%d concurrent direct", *conc), kind: kConcurrent, l: direct, argv: concArgs})
	for _, sb := range sbxs {
		add(&row{name: fmt.Sprintf("%d concurrent %s CONNECT", *conc, sb.name), kind: kConcurrent, l: sb, argv: concArgs})
		add(&row{name: fmt.Sprintf("%d concurrent %s capture", *conc, sb.name), kind: kConcurrent, l: sb, capture: true, argv: nc("concurrent", "-via", "direct", strconv.Itoa(*conc), capGreet)})
	}
	if srtL != nil {
		add(&row{name: fmt.Sprintf("%d concurrent srt CONNECT", *conc), kind: kConcurrent, l: srtL, peer: true, argv: concArgs})
	}
	// Clients that never read what they asked for (4 MiB each): what the
	// supervisor holds for them is the launcher's peak RSS.
	stallURL := func(addr string) string { return "http://" + addr + "/zero?n=4194304" }
	for _, sb := range sbxs {
		add(&row{name: fmt.Sprintf("%d stalled clients %s CONNECT", *stall, sb.name), kind: kStalled, l: sb, argv: nc("stalled", "-via", "connect", strconv.Itoa(*stall), stallURL(httpAddr))})
		add(&row{name: fmt.Sprintf("%d stalled clients %s capture", *stall, sb.name), kind: kStalled, l: sb, capture: true, argv: nc("stalled", "-via", "direct", strconv.Itoa(*stall), stallURL(capHTTP))})
	}
	if *only != "" {
		re := regexp.MustCompile(*only)
		var keep []*row
		for _, r := range rows {
			if re.MatchString(r.name) {
				keep = append(keep, r)
			}
		}
		rows = keep
	}

	runRounds(rows, append(sbxs, srtL), env, work, *n, *size)
	report(rows, *n, *size, *lat, *conc, *stall, httpPort)
}

// proxyFreeEnv is the environment without any proxy settings of the
// caller.
func proxyFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "GRPC_PROXY", "FTP_PROXY":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runRounds calibrates the launchers (nil ones skipped), warms every row
// up and runs n rounds, the row order rotated every round.
func runRounds(rows []*row, launchers []*launcher, env []string, work string, n int, size int64) {
	for _, l := range launchers {
		if l != nil {
			l.calibrate(env, work)
		}
	}
	// Warm-up with a small download: also drops a row that cannot work
	// here, with the reason, instead of aborting the run.
	for _, r := range rows {
		if err := r.measure(env, work, 1<<20, false); err != nil {
			r.skip = true
			r.note = firstLine(err.Error())
			fmt.Fprintf(os.Stderr, "dropping %q: %v\n", r.name, err)
		}
	}
	for round := 0; round < n; round++ {
		fmt.Fprintf(os.Stderr, "round %d/%d\n", round+1, n)
		for i := range rows {
			r := rows[(i+round)%len(rows)]
			if r.skip {
				continue
			}
			if err := r.measure(env, work, size, true); err != nil {
				r.errs = append(r.errs, firstLine(err.Error()))
				fmt.Fprintf(os.Stderr, "%s: %v\n", r.name, err)
			}
		}
	}
}

func report(rows []*row, n int, size int64, lat, conc, stall int, httpPort string) {
	directOf := map[string]float64{}
	var latDirect *row
	for _, r := range rows {
		if r.kind == kThroughput && r.l.name == "" && len(r.vals) > 0 {
			directOf[r.client] = bench.Median(r.vals)
		}
		if r.kind == kLatency && r.l.name == "" && latDirect == nil && len(r.samples) > 0 {
			latDirect = r
		}
	}
	fmt.Printf("%d rounds, interleaved; %d MiB per download; %d sequential connections per latency run; %d at once per concurrency run; CPUs allowed: %d\n\n",
		n, size>>20, lat, conc, numCPU())
	fmt.Printf("| row | median | spread | vs direct | target | verdict | CPU s/GiB: all (launcher) | launcher peak RSS |\n|---|---|---|---|---|---|---|---|\n")
	sbxPeak, capPeak := map[string]int64{}, map[string]int64{}
	var sbxNames []string
	for _, r := range rows {
		rss := "–"
		if r.peakKiB > 0 {
			rss = fmt.Sprintf("%.1f MB", float64(r.peakKiB)*1024/1e6)
			if strings.HasPrefix(r.l.name, "sbx") && r.kind != kLatency && r.kind != kStalled {
				if _, ok := sbxPeak[r.l.name]; !ok {
					sbxNames = append(sbxNames, r.l.name)
				}
				sbxPeak[r.l.name] = max(sbxPeak[r.l.name], r.peakKiB)
				if r.capture {
					capPeak[r.l.name] = max(capPeak[r.l.name], r.peakKiB)
				}
			}
		}
		if r.skip {
			fmt.Printf("| %s | n/a (%s) | | | | | | |\n", r.name, mdEscape(r.note))
			continue
		}
		target, verdict, med, spread, vs, cpu := "", "", "", "", "", ""
		switch r.kind {
		case kThroughput:
			if len(r.vals) == 0 {
				med = "n/a (" + mdEscape(firstOr(r.errs)) + ")"
				break
			}
			m := bench.Median(r.vals)
			med = fmt.Sprintf("%.0f MB/s", m)
			if len(r.cpuAll) > 0 {
				cpu = fmt.Sprintf("%.2f", bench.Median(r.cpuAll))
				if len(r.cpuOwn) > 0 {
					cpu += fmt.Sprintf(" (%.2f)", bench.Median(r.cpuOwn))
				}
			}
			spread = fmt.Sprintf("%.0f–%.0f", minOf(r.vals), maxOf(r.vals))
			if r.l.name != "" {
				if d := directOf[r.client]; d > 0 {
					ratio := m / d
					vs = fmt.Sprintf("%.2f×", ratio)
					target = "≥ 0.80×"
					verdict = passFail(ratio >= 0.8)
				}
				if r.base != nil && len(r.base.vals) > 0 {
					ratio := m / bench.Median(r.base.vals)
					vs += fmt.Sprintf(" direct, %.2f× CONNECT", ratio)
					target = "≥ 0.50× CONNECT"
					verdict = passFail(ratio >= 0.5)
				}
			}
		case kLatency:
			if len(r.samples) == 0 {
				med = "n/a (" + mdEscape(firstOr(r.errs)) + ")"
				break
			}
			m, p99 := bench.Median(r.samples), bench.Pct(r.samples, 99)
			med = fmt.Sprintf("%.3f ms", m)
			spread = fmt.Sprintf("p99 %.3f ms", p99)
			if r.l.name != "" && latDirect != nil {
				dm, dp := bench.Median(latDirect.samples), bench.Pct(latDirect.samples, 99)
				vs = fmt.Sprintf("%+.3f ms median, %+.3f ms p99", m-dm, p99-dp)
				target = "≤ +1 ms median"
				verdict = passFail(m-dm <= 1)
			}
			if r.base != nil && len(r.base.samples) > 0 {
				bm, bp := bench.Median(r.base.samples), bench.Pct(r.base.samples, 99)
				vs = fmt.Sprintf("%+.3f ms median, %+.3f ms p99 over CONNECT to the name", m-bm, p99-bp)
				target = "≤ +1 ms median over CONNECT"
				verdict = passFail(m-bm <= 1)
			}
			if o := r.ownLookup; o != nil && len(o.samples) > 0 && latDirect != nil && r.base != nil && len(r.base.samples) > 0 {
				own := bench.Median(o.samples) - bench.Median(latDirect.samples)
				vs += fmt.Sprintf("; of which the client's own lookup %+.3f ms, the rest %+.3f ms", own, m-bench.Median(r.base.samples)-own)
			}
			if r.l.name == "" && r != latDirect && latDirect != nil {
				vs = fmt.Sprintf("%+.3f ms median over latency direct: the client's own lookup", m-bench.Median(latDirect.samples))
			}
		case kConcurrent:
			if len(r.vals) == 0 {
				med = "n/a (" + mdEscape(firstOr(r.errs)) + ")"
				break
			}
			all := 0
			for _, v := range r.vals {
				if int(v) == conc {
					all++
				}
			}
			med = fmt.Sprintf("%d/%d runs all %d completed", all, len(r.vals), conc)
			spread = fmt.Sprintf("wall %.0f ms median", bench.Median(r.walls)*1000)
			if r.l.name != "" {
				target = "all complete"
				verdict = passFail(all == len(r.vals) && len(r.errs) == 0)
			}
			if len(r.errs) > 0 {
				verdict += " (" + mdEscape(r.errs[0]) + ")"
			}
		case kStalled:
			if len(r.vals) == 0 {
				med = "n/a (" + mdEscape(firstOr(r.errs)) + ")"
				break
			}
			med = fmt.Sprintf("%.0f of %d open, unread", minOf(r.vals), stall)
			if r.capture && r.peakKiB > 0 {
				mb := float64(r.peakKiB) * 1024 / 1e6
				target = "peak RSS ≤ 100 MB"
				verdict = passFail(mb <= 100 && len(r.errs) == 0)
			}
		}
		if r.peer && verdict != "" {
			verdict = "(peer) " + verdict
		}
		if len(r.errs) > 0 && r.kind != kConcurrent && len(r.vals)+len(r.samples) > 0 {
			verdict += fmt.Sprintf(" (%d failed runs: %s)", len(r.errs), mdEscape(r.errs[0]))
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, med, spread, vs, target, verdict, cpu, rss)
	}
	for _, name := range sbxNames {
		mb := float64(sbxPeak[name]) * 1024 / 1e6
		fmt.Printf("| %s supervisor peak RSS (VmHWM, download + concurrent runs) | %.1f MB | | | ≤ 30 MB | %s | | |\n", name, mb, passFail(mb <= 30))
		if kb, ok := capPeak[name]; ok {
			mb := float64(kb) * 1024 / 1e6
			fmt.Printf("| %s supervisor peak RSS, capture rows only | %.1f MB | | | ≤ 30 MB | %s | | |\n", name, mb, passFail(mb <= 30))
		}
	}
	fmt.Printf("\nThroughput: bytes / the client's own transfer time, median (min–max) over rounds; × direct compares with the direct row of the same client. CPU s/GiB: median user+system seconds per GiB moved, of every process involved (the test servers in this process, the client, and for a sandbox everything the launcher waited for), less the launcher's own start-up cost around /bin/true, and in parentheses of the launcher process alone (sbx: the supervisor, which runs the proxy; srt: its Node process; /proc/<pid>/stat, 10 ms ticks). Latency: dial start to the first greeting byte, pooled samples. RSS: VmHWM of the launcher process (sbx supervisor; srt's Node process), MB = 10^6 bytes. The test server's HTTP port was %s.\n", httpPort)
}

func passFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "**FAIL**"
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return "no result"
	}
	return s[0]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func numCPU() int {
	var set []byte
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				set = []byte(strings.TrimSpace(v))
			}
		}
	}
	n := 0
	for _, part := range strings.Split(string(set), ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		bb := a
		var err2 error
		if ok {
			bb, err2 = strconv.Atoi(hi)
		}
		if err1 == nil && err2 == nil {
			n += bb - a + 1
		}
	}
	return n
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "netcompare:", err)
		os.Exit(1)
	}
}
