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

// TestAskFD: --ask-fd asks about hosts no rule allows or denies; the
// answer decides (remembered when asked to), a timeout is a no, an
// explicitly denied host is never asked, and the address guard still
// applies to an allowed one.
func TestAskFD(t *testing.T) {
	curl := needTool(t, "curl")
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ask-ours"), os.NewFile(uintptr(fds[1]), "ask-theirs")
	defer ours.Close()
	var mu sync.Mutex
	var asked []string
	go func() {
		sc := bufio.NewScanner(ours)
		for sc.Scan() {
			var q struct {
				ID, Host, Command string
				Port              int
			}
			if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
				return
			}
			mu.Lock()
			asked = append(asked, fmt.Sprintf("%s:%d", q.Host, q.Port))
			mu.Unlock()
			switch q.Host {
			case "127.0.0.1":
				fmt.Fprintf(ours, `{"id": %q, "allow": true, "remember": true}`+"\n", q.ID)
			case "no.test":
				fmt.Fprintf(ours, `{"id": %q, "allow": false}`+"\n", q.ID)
			}
			// silent.test: no answer (the timeout refuses it)
		}
	}()
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
	mu.Lock()
	got := strings.Join(asked, " ")
	mu.Unlock()
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
