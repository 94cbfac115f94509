package credentials

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// exactOrSuffix matches a host against patterns: exact, or "*.example.com"
// (any subdomain). The port is ignored.
func exactOrSuffix(patterns []string, host string, port int) bool {
	for _, p := range patterns {
		if p == host || strings.HasPrefix(p, "*.") && strings.HasSuffix(host, p[1:]) {
			return true
		}
	}
	return false
}

// mustSecret masks real whole and returns its secret.
func mustSecret(t *testing.T, name, real string, hosts ...string) Secret {
	t.Helper()
	_, s, _, _, err := Mask(real, Spec{Name: name, Hosts: hosts})
	if err != nil || len(s) != 1 {
		t.Fatalf("Mask: %v", err)
	}
	return s[0]
}

func newReq(t *testing.T, method, rawURL, ctype, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	if body != "" {
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return r
}

func readBody(t *testing.T, r *http.Request) string {
	t.Helper()
	if r.Body == nil {
		return ""
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRewrite(t *testing.T) {
	key := mustSecret(t, "API_KEY", "key-123")
	odd := mustSecret(t, "ODD", `p/w+d&"<x>" =`)
	scoped := mustSecret(t, "SCOPED", "scoped-9", "only.example.net")
	jwt := makeJWT(jwtHeader, jwtPayload, 32)
	fake, jsecs, _, _, err := Mask(jwt, Spec{Name: "JWT", DecodeJWT: true})
	if err != nil {
		t.Fatal(err)
	}
	secrets := append([]Secret{key, odd, scoped}, jsecs...)
	defaults := []string{"api.example.com", "*.example.org"}

	K, O, S := key.Sentinel, odd.Sentinel, scoped.Sentinel
	cases := []struct {
		name       string
		req        func(t *testing.T) *http.Request
		host       string
		terminated bool
		plaintext  bool
		maxBody    int64
		leaks      []Leak // Host and Port are filled in
		check      func(t *testing.T, r *http.Request)
	}{
		{
			name: "header, allowed host, terminated",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://api.example.com/", "", "")
				r.Header.Set("X-Api-Key", K)
				r.Header.Set("Authorization", "Bearer "+K)
				r.Header.Add("Cookie", "a=1; k="+K)
				return r
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Api-Key") != "key-123" || r.Header.Get("Authorization") != "Bearer key-123" || r.Header.Get("Cookie") != "a=1; k=key-123" {
					t.Fatalf("headers %v", r.Header)
				}
			},
		},
		{
			name: "suffix pattern allows a subdomain",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://x.example.org/", "", "")
				r.Header.Set("X-Api-Key", K)
				return r
			},
			host: "x.example.org", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Api-Key") != "key-123" {
					t.Fatalf("headers %v", r.Header)
				}
			},
		},
		{
			name: "Proxy-Authorization is left alone",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://api.example.com/", "", "")
				r.Header.Set("Proxy-Authorization", "Bearer "+K)
				return r
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("Proxy-Authorization") != "Bearer "+K {
					t.Fatalf("Proxy-Authorization changed")
				}
			},
		},
		{
			name: "Basic authorization is decoded",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://api.example.com/", "", "")
				r.SetBasicAuth("user", K)
				return r
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "key-123" {
					t.Fatalf("basic auth %q %v", u, ok)
				}
			},
		},
		{
			name: "url path, query and userinfo",
			req: func(t *testing.T) *http.Request {
				return newReq(t, "GET", "https://u:"+K+"@api.example.com/v1/"+K+"/x?k="+K+"&o="+O, "", "")
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if r.URL.Path != "/v1/key-123/x" || r.URL.EscapedPath() != "/v1/key-123/x" {
					t.Fatalf("path %q", r.URL.Path)
				}
				q := r.URL.Query()
				if q.Get("k") != "key-123" || q.Get("o") != `p/w+d&"<x>" =` || len(q) != 2 {
					t.Fatalf("query %q", r.URL.RawQuery)
				}
				if p, _ := r.URL.User.Password(); p != "key-123" {
					t.Fatal("userinfo not substituted")
				}
			},
		},
		{
			name: "path escaping of a real value",
			req: func(t *testing.T) *http.Request {
				return newReq(t, "GET", "https://api.example.com/a/"+O, "", "")
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if r.URL.Path != `/a/p/w+d&"<x>" =` || r.URL.EscapedPath() != "/a/"+url.PathEscape(`p/w+d&"<x>" =`) {
					t.Fatalf("path %q escaped %q", r.URL.Path, r.URL.EscapedPath())
				}
			},
		},
		{
			name: "JSON body, Content-Length fixed",
			req: func(t *testing.T) *http.Request {
				return newReq(t, "POST", "https://api.example.com/", "application/json; charset=utf-8", `{"k":"`+K+`","o":"`+O+`"}`)
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				want := `{"k":"key-123","o":"p/w+d\u0026\"<x>\" ="}`
				want = strings.Replace(want, `\u0026`, "&", 1)
				if got := readBody(t, r); got != want {
					t.Fatalf("body %s, want %s", got, want)
				}
				if r.ContentLength != int64(len(want)) || r.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
					t.Fatalf("ContentLength %d header %q, want %d", r.ContentLength, r.Header.Get("Content-Length"), len(want))
				}
				rc, err := r.GetBody()
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := io.ReadAll(rc); string(b) != want {
					t.Fatalf("GetBody %s", b)
				}
			},
		},
		{
			name: "form body",
			req: func(t *testing.T) *http.Request {
				return newReq(t, "POST", "https://api.example.com/", "application/x-www-form-urlencoded", "a=1&k="+K+"&o="+O)
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				body := readBody(t, r)
				v, err := url.ParseQuery(body)
				if err != nil || v.Get("k") != "key-123" || v.Get("o") != `p/w+d&"<x>" =` || v.Get("a") != "1" || len(v) != 3 {
					t.Fatalf("form %q %v", body, err)
				}
				if r.ContentLength != int64(len(body)) || r.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
					t.Fatalf("ContentLength %d", r.ContentLength)
				}
			},
		},
		{
			name: "fake JWT is replaced by the real token",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://api.example.com/", "", "")
				r.Header.Set("Authorization", "Bearer "+fake)
				return r
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+jwt {
					t.Fatal("fake JWT not replaced")
				}
			},
		},
		{
			name: "plain HTTP without allowPlaintext",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "POST", "http://api.example.com/?k="+K, "text/plain", "k="+K)
				r.Header.Set("X-Api-Key", K)
				return r
			},
			host: "api.example.com", terminated: false,
			leaks: []Leak{
				{Name: "API_KEY", Where: "header X-Api-Key", Reason: ReasonPlaintext},
				{Name: "API_KEY", Where: "url", Reason: ReasonPlaintext},
				{Name: "API_KEY", Where: "body", Reason: ReasonPlaintext},
			},
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Api-Key") != K || r.URL.Query().Get("k") != K || readBody(t, r) != "k="+K {
					t.Fatal("substituted over plain HTTP")
				}
			},
		},
		{
			name: "plain HTTP with allowPlaintext",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "http://api.example.com/", "", "")
				r.Header.Set("X-Api-Key", K)
				return r
			},
			host: "api.example.com", terminated: false, plaintext: true,
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Api-Key") != "key-123" {
					t.Fatal("not substituted")
				}
			},
		},
		{
			name: "host not allowed",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "POST", "https://evil.example.com/", "application/json", `{"k":"`+K+`"}`)
				r.Header.Set("X-Api-Key", K)
				return r
			},
			host: "evil.example.com", terminated: true,
			leaks: []Leak{
				{Name: "API_KEY", Where: "header X-Api-Key", Reason: ReasonHost},
				{Name: "API_KEY", Where: "body", Reason: ReasonHost},
			},
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Api-Key") != K || readBody(t, r) != `{"k":"`+K+`"}` {
					t.Fatal("substituted towards a host not allowed")
				}
			},
		},
		{
			name: "per-secret hosts override the defaults (default host)",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://api.example.com/", "", "")
				r.Header.Set("X-Scoped", S)
				return r
			},
			host: "api.example.com", terminated: true,
			leaks: []Leak{{Name: "SCOPED", Where: "header X-Scoped", Reason: ReasonHost}},
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Scoped") != S {
					t.Fatal("scoped secret sent to a default host")
				}
			},
		},
		{
			name: "per-secret hosts override the defaults (own host)",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://only.example.net/", "", "")
				r.Header.Set("X-Scoped", S)
				r.Header.Set("X-Api-Key", K)
				return r
			},
			host: "only.example.net", terminated: true,
			leaks: []Leak{{Name: "API_KEY", Where: "header X-Api-Key", Reason: ReasonHost}},
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Scoped") != "scoped-9" || r.Header.Get("X-Api-Key") != K {
					t.Fatalf("headers %v", r.Header)
				}
			},
		},
		{
			name: "body over maxBody passes unchanged and whole",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "POST", "https://api.example.com/", "text/plain", "")
				body := strings.Repeat(K+"\n", 500)
				r.Body = io.NopCloser(strings.NewReader(body)) // unknown length: read up to maxBody+1
				r.ContentLength = -1
				return r
			},
			host: "api.example.com", terminated: true, maxBody: 100,
			check: func(t *testing.T, r *http.Request) {
				if got := readBody(t, r); got != strings.Repeat(K+"\n", 500) {
					t.Fatalf("body changed: %d bytes", len(got))
				}
				if r.ContentLength != -1 {
					t.Fatalf("ContentLength %d", r.ContentLength)
				}
			},
		},
		{
			name: "body with a known length over maxBody is not read",
			req: func(t *testing.T) *http.Request {
				return newReq(t, "POST", "https://api.example.com/", "text/plain", strings.Repeat(K, 10))
			},
			host: "api.example.com", terminated: true, maxBody: 100,
			check: func(t *testing.T, r *http.Request) {
				if got := readBody(t, r); got != strings.Repeat(K, 10) {
					t.Fatal("body changed")
				}
			},
		},
		{
			name: "binary content type is unchanged",
			req: func(t *testing.T) *http.Request {
				return newReq(t, "POST", "https://api.example.com/", "application/octet-stream", "\x00\x01"+K)
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if readBody(t, r) != "\x00\x01"+K || r.ContentLength != int64(len(K)+2) {
					t.Fatal("binary body changed")
				}
			},
		},
		{
			name: "encoded body is unchanged",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "POST", "https://api.example.com/", "application/json", `"`+K+`"`)
				r.Header.Set("Content-Encoding", "gzip")
				return r
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if readBody(t, r) != `"`+K+`"` {
					t.Fatal("encoded body changed")
				}
			},
		},
		{
			name: "no sentinel: nothing changes",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "POST", "https://api.example.com/p?q=1", "application/json", `{"a":"sbxsecre"}`)
				r.Header.Set("X-Other", "v")
				return r
			},
			host: "api.example.com", terminated: true,
			check: func(t *testing.T, r *http.Request) {
				if readBody(t, r) != `{"a":"sbxsecre"}` || r.URL.String() != "https://api.example.com/p?q=1" || r.Header.Get("X-Other") != "v" {
					t.Fatal("request changed")
				}
			},
		},
		{
			name: "unknown sentinel is ignored",
			req: func(t *testing.T) *http.Request {
				r := newReq(t, "GET", "https://evil.example.com/", "", "")
				r.Header.Set("X-Other", newSentinel())
				return r
			},
			host: "evil.example.com", terminated: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := NewInjector(secrets, defaults, exactOrSuffix, c.plaintext, c.maxBody)
			r := c.req(t)
			leaks := in.Rewrite(r, c.host, 443, c.terminated)
			for i := range c.leaks {
				c.leaks[i].Host, c.leaks[i].Port = c.host, 443
			}
			if len(leaks) != len(c.leaks) {
				t.Fatalf("leaks %+v, want %+v", leaks, c.leaks)
			}
			for _, want := range c.leaks {
				found := false
				for _, l := range leaks {
					found = found || l == want
				}
				if !found {
					t.Fatalf("leaks %+v, want %+v", leaks, c.leaks)
				}
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

func TestRewriteLeakNamesNoValue(t *testing.T) {
	s := mustSecret(t, "TOKEN", "the-real-token")
	in := NewInjector([]Secret{s}, []string{"ok.example"}, exactOrSuffix, false, 0)
	r := newReq(t, "GET", "https://bad.example/", "", "")
	r.Header.Set("X-Token", s.Sentinel)
	leaks := in.Rewrite(r, "bad.example", 443, true)
	if len(leaks) != 1 || leaks[0].Name != "TOKEN" || leaks[0].Where != "header X-Token" || leaks[0].Host != "bad.example" {
		t.Fatalf("leaks %+v", leaks)
	}
	for _, f := range []string{leaks[0].Name, leaks[0].Where, leaks[0].Reason, leaks[0].Host} {
		if strings.Contains(f, "the-real-token") {
			t.Fatal("leak contains the value")
		}
	}
}

func TestRewriteNilMatchAllowsNothing(t *testing.T) {
	s := mustSecret(t, "TOKEN", "v")
	in := NewInjector([]Secret{s}, []string{"ok.example"}, nil, true, 0)
	r := newReq(t, "GET", "https://ok.example/", "", "")
	r.Header.Set("X", s.Sentinel)
	if leaks := in.Rewrite(r, "ok.example", 443, true); len(leaks) != 1 || r.Header.Get("X") != s.Sentinel {
		t.Fatalf("leaks %+v", leaks)
	}
}

func TestNames(t *testing.T) {
	in := NewInjector([]Secret{mustSecret(t, "B", "1"), mustSecret(t, "A", "2"), mustSecret(t, "B", "3"), {Name: "EMPTY"}}, nil, exactOrSuffix, false, 0)
	if got := strings.Join(in.Names(), ","); got != "A,B" {
		t.Fatalf("Names %q", got)
	}
}

func TestRewriteConcurrent(t *testing.T) {
	s := mustSecret(t, "TOKEN", "real")
	in := NewInjector([]Secret{s}, []string{"ok.example"}, exactOrSuffix, false, 0)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				r, _ := http.NewRequest("POST", "https://ok.example/", bytes.NewReader([]byte(`{"t":"`+s.Sentinel+`"}`)))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+s.Sentinel)))
				if leaks := in.Rewrite(r, "ok.example", 443, true); leaks != nil {
					t.Errorf("leaks %+v", leaks)
					return
				}
				if b, _ := io.ReadAll(r.Body); string(b) != `{"t":"real"}` {
					t.Errorf("body %s", b)
					return
				}
			}
		}()
	}
	wg.Wait()
}
