//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// askPeer is the other end of an --ask-fd socket (theirs, for the sbx
// process's descriptor 8): it answers each question with the JSON fields
// answer returns for its host ("" for no answer) and keeps the questions
// (HOST:PORT), which asked returns.
func askPeer(t *testing.T, answer func(host string) string) (theirs *os.File, asked func() []string) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours := os.NewFile(uintptr(fds[0]), "ask-ours")
	t.Cleanup(func() { ours.Close() })
	var mu sync.Mutex
	var qs []string
	go func() {
		sc := bufio.NewScanner(ours)
		for sc.Scan() {
			var q struct {
				ID, Host string
				Port     int
			}
			if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
				return
			}
			mu.Lock()
			qs = append(qs, fmt.Sprintf("%s:%d", q.Host, q.Port))
			mu.Unlock()
			if a := answer(q.Host); a != "" {
				fmt.Fprintf(ours, `{"id": %q, %s}`+"\n", q.ID, a)
			}
		}
	}()
	return os.NewFile(uintptr(fds[1]), "ask-theirs"), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), qs...)
	}
}

// TestAskFD: --ask-fd asks about hosts no rule allows or denies; the
// answer decides (remembered when asked to), a timeout is a no, an
// explicitly denied host is never asked, and the address guard still
// applies to an allowed one.
func TestAskFD(t *testing.T) {
	curl := needTool(t, "curl")
	theirs, asked := askPeer(t, func(host string) string {
		switch host {
		case "127.0.0.1":
			return `"allow": true, "remember": true`
		case "no.test":
			return `"allow": false`
		}
		return "" // silent.test: no answer (the timeout refuses it)
	})
	vio := filepath.Join(t.TempDir(), "v.jsonl")
	code := func(u string) string {
		return curl + ` --noproxy '' -s -o /dev/null -w '%{http_code} ' ` + u
	}
	script := code("http://127.0.0.1:9/a") + ";" + code("http://127.0.0.1:9/b") + ";" + code("http://no.test/") + ";" + code("http://silent.test/") + ";" + code("http://denied.test/")
	cmd := exec.Command(sbxBin, "--ask-fd", "8", "--ask-timeout", "1s", "--deny-domain", "denied.test", "--violations", vio, "--", "/bin/sh", "-c", script)
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, theirs}
	cmd.Env = hermeticEnv()
	start := time.Now()
	out, err := cmd.Output()
	theirs.Close()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "403 403 403 403 403" {
		t.Fatalf("statuses: %q", got)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	got := strings.Join(asked(), " ")
	// 127.0.0.1:9 asked once (remembered), denied.test never.
	if got != "127.0.0.1:9 no.test:80 silent.test:80" {
		t.Fatalf("asked %q", got)
	}
	recs, _ := os.ReadFile(vio)
	for _, want := range []string{"address-guard", "refused when asked"} {
		if !strings.Contains(string(recs), want) {
			t.Errorf("records lack %q:\n%s", want, recs)
		}
	}
	wantRefused(t, []string{"--ask-fd", "99"}, []string{"--ask-fd", "8", "--net", "none"})
}

// pyManyAsks opens 300 connections, ten to each of 30 unlisted names
// (argv[1] "connect": CONNECTs through the proxy; "capture": direct
// connections the capture takes), prints "done" after 2 s and exits
// without waiting for them. The padding makes each question's "command"
// field long, as a real command line can be, so the caller's socket
// fills.
const pyManyAsks = `import os, socket, sys, threading, time
h, p = os.environ["HTTPS_PROXY"].split("://", 1)[1].rstrip("/").rsplit(":", 1)
def one(i):
    try:
        t = "ask-%d.test" % (i % 30)
        if sys.argv[1] == "capture":
            s = socket.create_connection((t, 443), timeout=60)
        else:
            s = socket.create_connection((h, int(p)), timeout=60)
            s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (t, t)).encode())
        s.recv(100)
    except Exception:
        pass
for i in range(300):
    threading.Thread(target=one, args=(i,), daemon=True).start()
time.sleep(2)
print("done", flush=True)
os._exit(0)
# PAD`

// TestAskFDSlowCaller: a command that opens many connections to unlisted
// names while the --ask-fd caller reads slowly cannot hold sbx: sbx ends
// within the ask timeout of the command, the caller is asked about each
// host:port at most once (the connections to one name share a question),
// and questions about connections that have ended are never written.
func TestAskFDSlowCaller(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	t.Run("connect", func(t *testing.T) { askSlowCaller(t, py, "connect") })
	t.Run("capture", func(t *testing.T) {
		needCapture(t)
		askSlowCaller(t, py, "capture")
	})
}

func askSlowCaller(t *testing.T, py, mode string) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A small buffer: a caller that does not keep up blocks the writer
	// after a few questions.
	_ = syscall.SetsockoptInt(fds[1], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
	_ = syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	ours := os.NewFile(uintptr(fds[0]), "ask-ours")
	theirs := os.NewFile(uintptr(fds[1]), "ask-theirs")
	defer ours.Close()
	var mu sync.Mutex
	seen := map[string]int{}
	readerDone := make(chan struct{})
	go func() { // one line every 200 ms, each refused
		defer close(readerDone)
		br := bufio.NewReader(ours)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var q struct {
				ID, Host string
				Port     int
			}
			if json.Unmarshal(line, &q) == nil {
				mu.Lock()
				seen[fmt.Sprintf("%s:%d", q.Host, q.Port)]++
				mu.Unlock()
				fmt.Fprintf(ours, `{"id": %q, "allow": false}`+"\n", q.ID)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	const timeout = 3 * time.Second
	script := strings.Replace(pyManyAsks, "PAD", strings.Repeat("x", 2000), 1)
	cmd := exec.Command(sbxBin, "--ask-fd", "8", "--ask-timeout", timeout.String(), "--", py, "-c", script, mode)
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, theirs}
	cmd.Env = hermeticEnv()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	kill := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer kill.Stop()
	var doneAt time.Time
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "done" {
			doneAt = time.Now()
		}
	}
	err = cmd.Wait()
	exitAt := time.Now()
	if doneAt.IsZero() || err != nil {
		t.Fatalf("the command did not finish: %v\n%s", err, stderr.String())
	}
	if late := exitAt.Sub(doneAt); late > timeout+3*time.Second {
		t.Errorf("sbx outlived its command by %v (ask timeout %v)", late, timeout)
	}
	ours.Close()
	<-readerDone
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the caller was asked nothing")
	}
	for h, n := range seen {
		if n > 1 {
			t.Errorf("the caller was asked about %s %d times", h, n)
		}
	}
	t.Logf("sbx ended %v after its command; the caller saw %d questions", exitAt.Sub(doneAt), len(seen))
}
