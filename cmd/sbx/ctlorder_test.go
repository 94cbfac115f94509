//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/violations"
)

// TestControlMessagesEveryCombination: PID 1 and the command hand the
// supervisor their descriptors (the discard overlays' layers, the capture
// device, the proxy's listeners, the seccomp listener) on one socket, in
// an order that depends on the plan: the capture device comes before the
// overlays when PID 1 makes it (domains from a settings file), and not at
// all when the early process did (--allow-domain). A receiver that
// expected the overlays first failed such runs with exit 125. Every
// combination of overlays (none, one, and 65, which take two messages),
// network (none, proxy without capture, capture made by PID 1, capture
// made early), published ports and --control-fd (which needs the proxy)
// runs, and each message
// is checked for its effect: the discard records, a request through the
// proxy, one through the capture, and a connection to the published port.
func TestControlMessagesEveryCombination(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 (the capture's client)")
	}
	s, seen := httpServer(t, false)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	name := "ctl.localhost"
	domains := []string{name + ":" + strconv.Itoa(port), "127.0.0.1:" + strconv.Itoa(port)}
	settings := filepath.Join(t.TempDir(), "net.json")
	b, _ := json.Marshal(map[string]any{"network": map[string]any{"allowedDomains": domains}, "filesystem": map[string]any{}})
	writeFile(t, settings, string(b))
	base := hostTempDir(t)
	var discardDirs []string
	for i := range 65 {
		d := filepath.Join(base, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		discardDirs = append(discardDirs, d)
	}
	type netMode struct {
		name           string
		flags          []string
		proxy, capture bool
	}
	nets := []netMode{
		{"none", []string{"--net", "none"}, false, false},
		{"proxy", append(allowFlags(name, port), "--capture", "off"), true, false},
		{"capture-pid1", []string{"--settings", settings}, true, true},
		{"capture-early", allowFlags(name, port), true, true},
	}
	for _, overlays := range []int{0, 1, 65} {
		for _, nm := range nets {
			for _, publish := range []bool{false, true} {
				for _, control := range []bool{false, true} {
					if control && !nm.proxy {
						continue // --control-fd changes the proxy's lists: refused without one
					}
					label := fmt.Sprintf("overlays=%d/net=%s/publish=%v/control=%v", overlays, nm.name, publish, control)
					t.Run(label, func(t *testing.T) {
						vf := filepath.Join(t.TempDir(), "v.jsonl")
						args := append([]string{"--violations", vf}, probeDir()...)
						args = append(args, nm.flags...)
						var script strings.Builder
						for _, d := range discardDirs[:overlays] {
							args = append(args, "--discard-writes", d)
							fmt.Fprintf(&script, "echo x > %s/new || echo WRITE-FAILED\n", d)
						}
						path := "/" + strings.NewReplacer("/", "-", "=", "-").Replace(label)
						if nm.proxy {
							fmt.Fprintf(&script, "%s get http://%s:%d%s-proxy\n", q(attackBin), name, port, path)
						}
						if nm.capture {
							fmt.Fprintf(&script, "%s /usr/bin/python3 -c %s %s %d %s-capture >/dev/null\n",
								strings.Join(quoteAll(noProxy()), " "), q(pyGet), name, port, path)
						}
						var hostPort int
						if publish {
							l, err := net.Listen("tcp4", "127.0.0.1:0")
							if err != nil {
								t.Fatal(err)
							}
							hostPort = l.Addr().(*net.TCPAddr).Port
							l.Close()
							args = append(args, "--publish", fmt.Sprintf("%d:8080", hostPort))
							fmt.Fprintf(&script, "exec %s serve tcp4 127.0.0.1:8080\n", q(attackBin))
						}
						var extra []*os.File
						if control {
							r, w, err := os.Pipe()
							if err != nil {
								t.Fatal(err)
							}
							defer r.Close()
							defer w.Close()
							extra = []*os.File{r}
							args = append(args, "--control-fd", "3")
						}
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						cmd := exec.CommandContext(ctx, sbxBin, append(args, "--", "/bin/sh", "-c", script.String())...)
						cmd.Dir = t.TempDir()
						cmd.Env = hermeticEnv()
						cmd.ExtraFiles = extra
						var stderr strings.Builder
						cmd.Stderr = &stderr
						stdout, err := cmd.StdoutPipe()
						if err != nil {
							t.Fatal(err)
						}
						if err := cmd.Start(); err != nil {
							t.Fatal(err)
						}
						br := bufio.NewReader(stdout)
						var out strings.Builder
						if publish {
							for {
								line, err := br.ReadString('\n')
								out.WriteString(line)
								if strings.TrimSpace(line) == "listening" || err != nil {
									break
								}
							}
							if c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(hostPort), 5*time.Second); err != nil {
								t.Errorf("dialing the published port: %v", err)
							} else {
								_ = c.SetDeadline(time.Now().Add(5 * time.Second))
								got, _ := io.ReadAll(c)
								c.Close()
								if strings.TrimSpace(string(got)) != "hello from inside" {
									t.Errorf("the published port answered %q", got)
								}
							}
						}
						rest, _ := io.ReadAll(br)
						out.Write(rest)
						code := exitCode(t, cmd, cmd.Wait())
						r := result{code, out.String(), stderr.String()}
						if code != 0 || strings.Contains(r.stdout, "FAILED") {
							t.Fatalf("the run failed: %s", r)
						}
						if nm.proxy && !seen.saw("GET "+path+"-proxy") {
							t.Errorf("the request through the proxy did not arrive: %s", r)
						}
						if nm.capture && !seen.saw("GET "+path+"-capture") {
							t.Errorf("the request through the capture did not arrive: %s", r)
						}
						n := 0
						for _, rec := range readRecords(t, vf) {
							if rec.Kind == violations.KindFileWrite && strings.HasPrefix(rec.Path, base) {
								n++
							}
						}
						if n != overlays {
							t.Errorf("%d discard records for %d overlays: %s", n, overlays, r)
						}
					})
				}
			}
		}
	}
	for _, d := range discardDirs {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("a discarded write reached the host: %s", d)
		}
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = q(v)
	}
	return out
}
