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
