package netproxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// The plain-HTTP forwarder: one small GET (a new connection each, as
// every plain request is), and a large download with and without a
// Content-Length.
//
//	go test -run XXX -bench 'Plain' -benchtime 2s ./netproxy

func plainBenchEnv(b *testing.B) (*http.Client, string) {
	big := make([]byte, bigBody)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(bigBody))
			w.Write(big)
		case "/chunked":
			w.Write(big)
		default:
			io.WriteString(w, "ok")
		}
	}))
	b.Cleanup(srv.Close)
	e := startProxy(b, Config{Allowed: []string{"127.0.0.1"}}, nil)
	c := proxiedClient(e, http.DefaultTransport.(*http.Transport))
	b.Cleanup(c.CloseIdleConnections)
	return c, fmt.Sprintf("http://127.0.0.1:%d", serverPort(b, srv))
}

func benchPlainGet(b *testing.B, path string, size int64) {
	c, base := plainBenchEnv(b)
	if size > 0 {
		b.SetBytes(size)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if size > 0 && n != size {
			b.Fatalf("got %d bytes", n)
		}
	}
}

func BenchmarkPlainHTTPSmall(b *testing.B)           { benchPlainGet(b, "/small", 0) }
func BenchmarkPlainHTTPDownload(b *testing.B)        { benchPlainGet(b, "/big", bigBody) }
func BenchmarkPlainHTTPDownloadChunked(b *testing.B) { benchPlainGet(b, "/chunked", bigBody) }
