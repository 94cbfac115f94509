//go:build linux

// Command tlscompare measures TLS termination against an opaque CONNECT
// tunnel, for sbx and, when it is installed, for srt, side by side in one
// interleaved run, and prints a Markdown table. From the repository root:
//
//	go build -o bin/sbx ./cmd/sbx && go run ./bench/tlscompare -sbx bin/sbx -n 5
//
// It starts an HTTPS server on 127.0.0.1 with a CA of its own (the
// launchers trust it through SSL_CERT_FILE and NODE_EXTRA_CA_CERTS, as a
// host trusts its roots). Each row is one sandbox run in which curl makes
// -k requests for a small body, each on a new connection, then downloads
// -size bytes once; curl's own -w timings give the per-connection time
// (median of the run's requests) and the download rate, so sandbox
// start-up is not in them. Rows: the tunnel (curl trusts the server's CA
// only) and terminated (curl trusts the launcher's bundle), for each
// launcher. Rounds rotate the row order.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/bench"
)

func main() {
	sbx := flag.String("sbx", "bin/sbx", "sbx binary")
	srt := flag.String("srt", "/opt/sbx-peers/srt/node_modules/.bin/srt", "srt launcher (skipped when absent)")
	n := flag.Int("n", 5, "rounds")
	k := flag.Int("k", 20, "new connections per row and round")
	size := flag.Int("size", 64<<20, "download size in bytes")
	flag.Parse()
	work, err := os.MkdirTemp("", "tlscompare-")
	check(err)
	defer os.RemoveAll(work)
	os.Chmod(work, 0o755)
	caPEM, cert, err := bench.LocalhostCA("tlscompare CA", 24*time.Hour)
	check(err)
	caFile := filepath.Join(work, "ca.pem")
	check(os.WriteFile(caFile, caPEM, 0o644))
	big := make([]byte, *size)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Write(big)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // srt's probes end handshakes early
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	base := fmt.Sprintf("https://localhost:%d", port)
	curl, err := exec.LookPath("curl")
	check(err)
	script := func(trust string) string {
		return fmt.Sprintf(`for i in $(seq %d); do %s --noproxy '' -s -o /dev/null %s -w '%%{time_total}\n' %s/small; done; %s --noproxy '' -s -o /dev/null %s -w 'rate %%{speed_download}\n' %s/big`,
			*k, curl, trust, base, curl, trust, base)
	}
	type row struct {
		name   string
		argv   []string
		conn   []float64 // ms per new connection (pooled medians)
		rate   []float64 // MB/s
		failed int
	}
	var rows []*row
	env := append(os.Environ(), "SSL_CERT_FILE="+caFile, "NODE_EXTRA_CA_CERTS="+caFile)
	allow := fmt.Sprintf("localhost:%d", port)
	rows = append(rows,
		&row{name: "sbx tunnel", argv: []string{*sbx, "--allow-domain", allow, "--allow-read", work, "--", "/bin/sh", "-c", script("--cacert " + caFile)}},
		&row{name: "sbx terminated", argv: []string{*sbx, "--tls-terminate", "--allow-domain", allow, "--", "/bin/sh", "-c", script("")}},
	)
	if _, err := os.Stat(*srt); err == nil {
		for _, term := range []bool{false, true} {
			net := map[string]any{"allowedDomains": []string{"localhost"}, "deniedDomains": []string{}}
			if term {
				net["tlsTerminate"] = map[string]any{}
			}
			b, _ := json.Marshal(map[string]any{"network": net,
				"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}}})
			settings := filepath.Join(work, fmt.Sprintf("srt-%v.json", term))
			check(os.WriteFile(settings, b, 0o644))
			name, trust := "srt tunnel", "--cacert "+caFile
			if term {
				name, trust = "srt terminated", ""
			}
			rows = append(rows, &row{name: name, argv: []string{*srt, "--settings", settings, "--", "/bin/sh", "-c", script(trust)}})
		}
	}
	for round := 0; round < *n; round++ {
		for i := range rows {
			r := rows[(i+round)%len(rows)]
			cmd := exec.Command(r.argv[0], r.argv[1:]...)
			cmd.Env = env
			out, err := cmd.Output()
			var times []float64
			ok := false
			for _, line := range strings.Split(string(out), "\n") {
				if v, found := strings.CutPrefix(line, "rate "); found {
					if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
						r.rate = append(r.rate, f/1e6)
						ok = true
					}
				} else if f, err := strconv.ParseFloat(line, 64); err == nil && f > 0 {
					times = append(times, f*1000)
				}
			}
			if err != nil || !ok || len(times) < *k {
				r.failed++
				fmt.Fprintf(os.Stderr, "%s round %d: %v (%d timings)\n", r.name, round, err, len(times))
				continue
			}
			r.conn = append(r.conn, bench.Median(times))
		}
	}
	fmt.Printf("| row | new HTTPS connection, ms (median of rounds; min–max) | download MB/s (median; min–max) | failed runs |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %.2f (%.2f–%.2f) | %.0f (%.0f–%.0f) | %d |\n", r.name, bench.Median(r.conn), bench.Pct(r.conn, 0), bench.Pct(r.conn, 100),
			bench.Median(r.rate), bench.Pct(r.rate, 0), bench.Pct(r.rate, 100), r.failed)
	}
	for _, who := range []string{"sbx", "srt"} {
		var t, m *row
		for _, r := range rows {
			if r.name == who+" tunnel" {
				t = r
			}
			if r.name == who+" terminated" {
				m = r
			}
		}
		if t != nil && m != nil && len(t.conn) > 0 && len(m.conn) > 0 {
			fmt.Printf("\n%s: termination adds %.2f ms per new connection and keeps %.2f× the tunnel's download rate.", who,
				bench.Median(m.conn)-bench.Median(t.conn), bench.Median(m.rate)/bench.Median(t.rate))
		}
	}
	fmt.Printf("\n\n%d rounds, %d new connections per row and round, %d-byte download, %s.\n", *n, *k, *size, time.Now().UTC().Format("2006-01-02"))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlscompare:", err)
		os.Exit(1)
	}
}
