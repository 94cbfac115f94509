package netproxy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Large plain-HTTP bodies (copied with bulkPool buffers), with and without a
// Content-Length and more at once than there are large buffers, arrive
// intact.
func TestPlainHTTPBulkBodies(t *testing.T) {
	const size = 3<<20 + 12345
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	want := sha256.Sum256(data)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cl") == "1" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		_, _ = io.Copy(w, bytes.NewReader(data))
	}))
	defer srv.Close()
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := proxiedClient(e, http.DefaultTransport.(*http.Transport))
	defer c.CloseIdleConnections()
	get := func(i int) {
		resp, err := c.Get(fmt.Sprintf("http://allowed.test:%d/?cl=%d", serverPort(t, srv), i%2))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		if err != nil || n != size || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Errorf("request %d: %d bytes, %v, digest ok=%v", i, n, err, bytes.Equal(h.Sum(nil), want[:]))
		}
	}
	// Every large buffer taken: the copy falls back to the plain path.
	for i := 0; i < bulkBuffers; i++ {
		bulkSlots <- struct{}{}
	}
	get(0)
	get(1)
	for i := 0; i < bulkBuffers; i++ {
		<-bulkSlots
	}
	var wg sync.WaitGroup
	for i := 0; i < 2*bulkBuffers+2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			get(i)
		}(i)
	}
	wg.Wait()
}

// A streamed body is passed on as it arrives, not when a large buffer
// fills.
func TestPlainHTTPStreamNotHeldBack(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: two\n\n")
	}))
	defer srv.Close()
	defer close(release)
	e := startProxy(t, Config{Allowed: []string{"allowed.test", "127.0.0.1"}}, nil)
	c := proxiedClient(e, http.DefaultTransport.(*http.Transport))
	defer c.CloseIdleConnections()
	resp, err := c.Get(fmt.Sprintf("http://allowed.test:%d/", serverPort(t, srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if line != "data: one\n" {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not arrive while the stream stayed open")
	}
}
