//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pyStalled opens argv[3] connections to argv[1]:argv[2] (through the
// capture: no proxy variables), sends one line on each and never reads;
// it prints "held" once all are open, then waits for its stdin to close.
const pyStalled = `import socket, sys
h, p, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = []
for i in range(n):
    s = socket.create_connection((h, p), timeout=20)
    s.sendall(b"go\n")
    conns.append(s)
print("held", len(conns), flush=True)
sys.stdin.read()
`

// vmRSS is the resident set of pid in bytes, from /proc/PID/status.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestCaptureStalledClientsMemory: 600 captured connections whose
// clients never read, to a server that sends each of them 4 MiB, cost the
// supervisor (the sbx process, which runs the capture's TCP stack) tens
// of megabytes, not a megabyte or two each: the bytes wait in the
// kernel's sockets, as they do on the CONNECT path, not in sbx's buffers.
func TestCaptureStalledClientsMemory(t *testing.T) {
	needCapture(t)
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	const conns = 600
	const limit = 100 << 20
	// The server: each connection gets up to 4 MiB, written until the
	// kernel's buffers are full (then the writer waits until cleanup).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var open []net.Conn
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			go func() {
				for sent := 0; sent < 4<<20; sent += len(chunk) {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	port := l.Addr().(*net.TCPAddr).Port
	name := fmt.Sprintf("stall-%d.localhost", port)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(allowFlags(name, port), "--", py, "-c", pyStalled, name, strconv.Itoa(port), strconv.Itoa(conns))
	cmd := exec.CommandContext(ctx, sbxBin, args...)
	cmd.Env = hermeticEnv()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "held") {
		t.Fatalf("the client did not open its connections: %q %v\n%s", line, err, stderr.String())
	}
	// Let the servers fill whatever will take their bytes, then take the
	// supervisor's largest resident set over a second.
	var peak int64
	for i := 0; i < 30; i++ {
		time.Sleep(100 * time.Millisecond)
		rss, err := vmRSS(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, rss)
	}
	t.Logf("supervisor resident set with %d stalled captured connections: %d MB", conns, peak>>20)
	if peak > limit {
		t.Errorf("the supervisor holds %d MB for %d stalled captured connections; want at most %d MB", peak>>20, conns, limit>>20)
	}
}
