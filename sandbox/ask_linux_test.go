package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// askPair is an asker on one end of a socketpair with small buffers, and
// the caller's end.
func askPair(t *testing.T, timeout time.Duration) (*asker, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
	_ = syscall.SetsockoptInt(fds[1], syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	a := newAsker(fds[0], timeout, "cmd "+string(make([]byte, 1500)), io.Discard)
	_ = syscall.SetNonblock(fds[1], true) // read deadlines
	peer := os.NewFile(uintptr(fds[1]), "peer")
	t.Cleanup(func() { peer.Close(); a.f.Close() })
	return a, peer
}

// TestAskerSilentCaller: a caller that never reads cannot hold an ask
// past its timeout, however many are asked (the queue refuses the
// overflow at once), and the questions of connections that ended before
// their turn are never written.
func TestAskerSilentCaller(t *testing.T) {
	const timeout = 500 * time.Millisecond
	a, peer := askPair(t, timeout)
	start := time.Now()
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := context.Background()
			if i%2 == 1 {
				c = ctx // these connections end early
			}
			if a.ask(c, fmt.Sprintf("h%d.test", i%100), 443) {
				t.Errorf("h%d: allowed without an answer", i)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-time.After(timeout + 10*time.Second):
		peer.Close() // lets a blocked writer go, so the test ends
		t.Fatalf("asks still waiting %v after they were asked (timeout %v)", time.Since(start), timeout)
	}
	if d := time.Since(start); d > timeout+time.Second {
		t.Fatalf("asks returned after %v, timeout %v", d, timeout)
	}
	// What the caller can now read: no more lines than the small buffer
	// took, each host once.
	_ = peer.SetReadDeadline(time.Now().Add(time.Second))
	seen := map[string]int{}
	br := bufio.NewReader(peer)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break
		}
		var q struct{ Host string }
		if json.Unmarshal(line, &q) == nil {
			seen[q.Host]++
		}
	}
	for h, n := range seen {
		if n > 1 {
			t.Errorf("%s asked %d times", h, n)
		}
	}
	if len(seen) > 20 {
		t.Errorf("%d questions written to a caller that never read", len(seen))
	}
	// Nothing queued is written once the peer reads again: every
	// question's deadline has passed.
	_ = peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := br.Read(make([]byte, 1)); n != 0 {
		t.Errorf("a stale question was written after the first %d", len(seen))
	}
}

// TestAskerCoalesces: the connections to one host:port share one
// question and its answer, also when the answer is not remembered.
func TestAskerCoalesces(t *testing.T) {
	a, peer := askPair(t, 5*time.Second)
	results := make(chan bool, 20)
	for i := 0; i < 20; i++ {
		go func() { results <- a.ask(context.Background(), "one.test", 443) }()
	}
	br := bufio.NewReader(peer)
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var q struct{ ID string }
	_ = json.Unmarshal(line, &q)
	time.Sleep(100 * time.Millisecond) // let every ask join the question
	fmt.Fprintf(peer, `{"id": %q, "allow": true}`+"\n", q.ID)
	for i := 0; i < 20; i++ {
		if !<-results {
			t.Fatal("an ask sharing the question was refused")
		}
	}
	_ = peer.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if more, _ := br.ReadBytes('\n'); len(more) > 0 {
		t.Errorf("asked again: %s", more)
	}
}
