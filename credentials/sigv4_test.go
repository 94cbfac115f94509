package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// The credentials of AWS's SigV4 test suite (aws-sig-v4-test-suite, as kept
// in awslabs/aws-c-auth tests/aws-signing-test-suite/v4) and of the examples
// in the S3 API reference (sig-v4-header-based-auth, sigv4-streaming). Note
// the S3 examples' secret has "/bPxR" where the suite's has "+bPxR".
const (
	suiteKey    = "AKIDEXAMPLE"
	suiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	suiteDate   = "20150830T123600Z"
	s3DocKey    = "AKIAIOSFODNN7EXAMPLE"
	s3DocSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	s3DocDate   = "20130524T000000Z"
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

var suiteScope = sigv4Scope{date: "20150830", region: "us-east-1", service: "service"}

// parseSuiteRequest turns a test-suite request text into the *http.Request
// net/http's server would hand the proxy: Host in r.Host, header values
// trimmed, folded continuation lines joined with one space (as
// net/textproto does), and the request-target's path as sent (in
// URL.Opaque when net/url would escape it, so that a literal space or UTF-8
// is what the signer sees, as it would be on the wire).
func parseSuiteRequest(t *testing.T, text string) (*http.Request, string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	method, rest, ok := strings.Cut(lines[0], " ")
	if !ok || !strings.HasSuffix(rest, " HTTP/1.1") {
		t.Fatalf("bad request line %q", lines[0])
	}
	target := strings.TrimSuffix(rest, " HTTP/1.1")
	path, query, _ := strings.Cut(target, "?")
	h := http.Header{}
	host, last := "", ""
	i := 1
	for ; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			i++
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			vs := h[last]
			vs[len(vs)-1] += " " + strings.TrimSpace(l)
			continue
		}
		k, v, _ := strings.Cut(l, ":")
		k, v = http.CanonicalHeaderKey(k), strings.TrimSpace(v)
		if k == "Host" {
			host = v
			continue
		}
		h[k] = append(h[k], v)
		last = k
	}
	body := ""
	if i < len(lines) {
		body = strings.TrimRight(strings.Join(lines[i:], "\n"), "\n")
	}
	u := &url.URL{Path: path, RawQuery: query}
	if u.EscapedPath() != path {
		u = &url.URL{Opaque: path, RawQuery: query} // e.g. a literal space
	}
	r := &http.Request{
		Method: method,
		URL:    u,
		Host:   host,
		Header: h,
		Body:   http.NoBody,
	}
	if body != "" {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	return r, body
}

// authOf parses the request's AWS4-HMAC-SHA256 Authorization header.
func authOf(t *testing.T, r *http.Request) sigv4Auth {
	t.Helper()
	alg, params, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	a, ok := parseSigV4Auth(params)
	if alg != sigv4Algorithm || !ok {
		t.Fatalf("bad Authorization %q: %s", r.Header.Get("Authorization"), a.problem)
	}
	return a
}

// peekBody reads r's body and puts it back.
func peekBody(t *testing.T, r *http.Request) []byte {
	t.Helper()
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// signWith signs r (as an SDK would) with key and secret: SignedHeaders as
// given, the payload hash from x-amz-content-sha256 or the body, the
// canonicalisation o. It sets the Authorization header.
func signWith(t *testing.T, r *http.Request, key, secret, region, service, signedHeaders string, o canonOpts) {
	t.Helper()
	amzDate, ok := requestTime(r)
	if !ok {
		t.Fatal("no date")
	}
	ph := r.Header.Get(hdrContentSHA256)
	if ph == "" {
		ph = hexSHA256(peekBody(t, r))
	}
	sc := sigv4Scope{date: amzDate[:8], region: region, service: service}
	c := canonicalRequest(r, splitSignedHeaders(signedHeaders), ph, o)
	r.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		key, sc, signedHeaders, sigv4Signature(secret, sc, amzDate, c)))
}

// cloneReq deep-copies r, body included.
func cloneReq(t *testing.T, r *http.Request) *http.Request {
	t.Helper()
	b := peekBody(t, r)
	c := r.Clone(context.Background())
	if b != nil {
		c.Body = io.NopCloser(bytes.NewReader(b))
	}
	return c
}

// testPair makes a pair with fresh sentinels and the given real values.
func testPair(key, secret, token string) AWSPair {
	p := AWSPair{
		AccessKeyIDSentinel: newSentinel(), AccessKeyID: key,
		SecretSentinel: newSentinel(), Secret: secret,
	}
	if token != "" {
		p.SessionTokenSentinel, p.SessionToken = newSentinel(), token
	}
	return p
}

// noReal fails if s contains one of p's real values.
func noReal(t *testing.T, what, s string, p AWSPair) {
	t.Helper()
	for _, v := range []string{p.AccessKeyID, p.Secret, p.SessionToken} {
		if v != "" && strings.Contains(s, v) {
			t.Fatalf("%s contains a real value: %s", what, strings.ReplaceAll(s, v, "<<REAL>>"))
		}
	}
}

// Real values used by the end-to-end tests (made up, never AWS's).
const (
	realKey    = "AKIAREALKEYEXAMPLE99"
	realSecret = "rEaL/SeCrEt+KeY0123456789abcdefghijKLMN"
	realToken  = "FwoGZXIvYXdzEREAL//token+with/slashes=="
)

func TestSigV4SuiteCanonicalAndSignature(t *testing.T) {
	for _, v := range sigv4Suite {
		t.Run(v.name, func(t *testing.T) {
			r, body := parseSuiteRequest(t, v.request)
			a := authOf(t, r)
			r.Header.Del("Authorization")
			if a.accessKey != suiteKey || a.date+"/"+a.region+"/"+a.service != "20150830/us-east-1/service" {
				t.Fatalf("unexpected credential %+v", a)
			}
			ph := r.Header.Get(hdrContentSHA256)
			if ph == "" {
				ph = hexSHA256([]byte(body))
			}
			o := canonOpts{normalize: v.normalize, encode: true}
			c := canonicalRequest(r, splitSignedHeaders(a.signedHeaders), ph, o)
			if c != v.canonical {
				t.Fatalf("canonical request\n got: %q\nwant: %q", c, v.canonical)
			}
			amzDate, _ := requestTime(r)
			if got := sigv4Signature(suiteSecret, suiteScope, amzDate, c); got != a.signature {
				t.Fatalf("signature %s, want %s", got, a.signature)
			}
		})
	}
}

func TestSigV4SuiteStringToSign(t *testing.T) {
	// get-vanilla's header-string-to-sign.txt.
	c := "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" + emptySHA256
	want := "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
	if got := stringToSign(suiteScope, suiteDate, c); got != want {
		t.Fatalf("string to sign\n got: %q\nwant: %q", got, want)
	}
	if got := sigv4Signature(suiteSecret, suiteScope, suiteDate, c); got != "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" {
		t.Fatalf("get-vanilla signature %s", got)
	}
}

// Every suite request, presented as if signed by the sandbox (access key id
// replaced by a sentinel), comes out of ResignSigV4 with the suite's own
// Authorization header. The pair's sentinel secret is the suite's secret, so
// the sandbox's signature verifies — through the canonicalisation variants
// for the "unnormalized" cases, whose service ("service") would normalise.
func TestSigV4SuiteThroughResign(t *testing.T) {
	for _, v := range sigv4Suite {
		t.Run(v.name, func(t *testing.T) {
			r, body := parseSuiteRequest(t, v.request)
			want := r.Header.Get("Authorization")
			p := AWSPair{AccessKeyIDSentinel: newSentinel(), AccessKeyID: suiteKey, SecretSentinel: suiteSecret, Secret: suiteSecret}
			r.Header.Set("Authorization", strings.Replace(want, "Credential="+suiteKey+"/", "Credential="+p.AccessKeyIDSentinel+"/", 1))
			tokenSigned := false
			if v.token != "" {
				p.SessionTokenSentinel, p.SessionToken = newSentinel(), v.token
				r.Header.Set(hdrSecurityToken, p.SessionTokenSentinel)
				tokenSigned = strings.Contains(want, "x-amz-security-token")
			}
			res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
			if err != nil || !res.Resigned || res.Denied != "" {
				t.Fatalf("ResignSigV4 = %+v, %v", res, err)
			}
			// A signed sentinel token cannot verify: the suite signed the real one.
			if res.Unverified != tokenSigned {
				t.Fatalf("Unverified = %v, want %v", res.Unverified, tokenSigned)
			}
			if got := r.Header.Get("Authorization"); got != want {
				t.Fatalf("Authorization\n got: %s\nwant: %s", got, want)
			}
			if v.token != "" && r.Header.Get(hdrSecurityToken) != v.token {
				t.Fatal("session token not swapped")
			}
			if got := string(peekBody(t, r)); got != body {
				t.Fatalf("body %q, want %q", got, body)
			}
		})
	}
}

// s3DocRequests are the examples of the S3 API reference (header-based
// SigV4: GET Object, PUT Object, GET Bucket Lifecycle, GET Bucket (List
// Objects); and the seed signature of the chunked-upload example).
func s3DocRequests(t *testing.T) []struct {
	name, signedHeaders, signature string
	r                              *http.Request
} {
	newReq := func(method, u, body string, hdr ...string) *http.Request {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, err := http.NewRequest(method, u, rd)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(hdrAmzDate, s3DocDate)
		for i := 0; i < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
	putBody := "Welcome to Amazon S3."
	return []struct {
		name, signedHeaders, signature string
		r                              *http.Request
	}{
		{"GET Object", "host;range;x-amz-content-sha256;x-amz-date",
			"f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
			newReq("GET", "https://examplebucket.s3.amazonaws.com/test.txt", "",
				"Range", "bytes=0-9", hdrContentSHA256, emptySHA256)},
		{"PUT Object", "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
			"98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
			newReq("PUT", "https://examplebucket.s3.amazonaws.com/test%24file.text", putBody,
				"Date", "Fri, 24 May 2013 00:00:00 GMT", "X-Amz-Storage-Class", "REDUCED_REDUNDANCY",
				hdrContentSHA256, hexSHA256([]byte(putBody)))},
		{"GET Bucket Lifecycle", "host;x-amz-content-sha256;x-amz-date",
			"fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
			newReq("GET", "https://examplebucket.s3.amazonaws.com/?lifecycle", "", hdrContentSHA256, emptySHA256)},
		{"GET Bucket", "host;x-amz-content-sha256;x-amz-date",
			"34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
			newReq("GET", "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J", "", hdrContentSHA256, emptySHA256)},
		{"chunked upload seed", "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class",
			"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
			newReq("PUT", "https://s3.amazonaws.com/examplebucket/chunkObject.txt", "",
				"Content-Encoding", "aws-chunked", "Content-Length", "66824",
				hdrContentSHA256, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
				"X-Amz-Decoded-Content-Length", "66560", "X-Amz-Storage-Class", "REDUCED_REDUNDANCY")},
	}
}

func TestSigV4S3DocExamples(t *testing.T) {
	if got := hexSHA256([]byte("Welcome to Amazon S3.")); got != "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072" {
		t.Fatalf("sha256 %s", got)
	}
	sc := sigv4Scope{date: "20130524", region: "us-east-1", service: "s3"}
	for _, v := range s3DocRequests(t) {
		t.Run(v.name, func(t *testing.T) {
			c := canonicalRequest(v.r, splitSignedHeaders(v.signedHeaders), v.r.Header.Get(hdrContentSHA256), canonOpts{})
			if got := sigv4Signature(s3DocSecret, sc, s3DocDate, c); got != v.signature {
				t.Fatalf("signature %s, want %s\ncanonical:\n%s", got, v.signature, c)
			}
			if v.name == "PUT Object" && !strings.HasPrefix(c, "PUT\n/test%24file.text\n\n") {
				t.Fatalf("canonical path: %q", c)
			}
		})
	}
}

// The S3 examples, signed by the sandbox with a sentinel secret, come out
// of ResignSigV4 exactly as AWS's examples (the chunked one is denied).
func TestSigV4S3DocExamplesThroughResign(t *testing.T) {
	atSigV4Time(t, s3DocDate)
	for _, v := range s3DocRequests(t) {
		t.Run(v.name, func(t *testing.T) {
			p := testPair(s3DocKey, s3DocSecret, "")
			signWith(t, v.r, p.AccessKeyIDSentinel, p.SecretSentinel, "us-east-1", "s3", v.signedHeaders, canonOpts{})
			before := v.r.Header.Get("Authorization")
			res, err := ResignSigV4(v.r, []AWSPair{p}, SigV4Policy{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(v.r.Header.Get(hdrContentSHA256), "STREAMING-AWS4") {
				if res.Resigned || !strings.Contains(res.Denied, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") || v.r.Header.Get("Authorization") != before {
					t.Fatalf("streaming: %+v", res)
				}
				return
			}
			want := "AWS4-HMAC-SHA256 Credential=" + s3DocKey + "/20130524/us-east-1/s3/aws4_request, SignedHeaders=" +
				v.signedHeaders + ", Signature=" + v.signature
			if !res.Resigned || res.Unverified || res.Denied != "" || v.r.Header.Get("Authorization") != want {
				t.Fatalf("%+v\n got: %s\nwant: %s", res, v.r.Header.Get("Authorization"), want)
			}
		})
	}
}

func TestSigV4Encoding(t *testing.T) {
	for _, c := range []struct {
		in          string
		encodeSlash bool
		want        string
	}{
		{"a b", false, "a%20b"},
		{"a+b", true, "a%2Bb"},
		{"100%", false, "100%25"},
		{"/a/b", false, "/a/b"},
		{"/a/b", true, "%2Fa%2Fb"},
		{"-._~AZaz09", true, "-._~AZaz09"},
		{"ü", false, "%C3%BC"},
		{"=&?#*!'()$", true, "%3D%26%3F%23%2A%21%27%28%29%24"},
	} {
		if got := uriEncode(c.in, c.encodeSlash); got != c.want {
			t.Errorf("uriEncode(%q, %v) = %q, want %q", c.in, c.encodeSlash, got, c.want)
		}
	}
	for _, c := range []struct {
		raw       string
		plusSpace bool
		want      string
	}{
		{"", false, ""},
		{"b=2&a=1", false, "a=1&b=2"},
		{"a=2&a=1&a=10", false, "a=1&a=10&a=2"},
		{"a=x+y", false, "a=x%2By"},
		{"a=x+y", true, "a=x%20y"},
		{"a=x%20y&a=%2b", false, "a=%2B&a=x%20y"},
		{"acl&b=&&c", false, "acl=&b=&c="},
		{"prefix=a/b&delimiter=/", false, "delimiter=%2F&prefix=a%2Fb"},
		{"k=%zz", false, "k=%25zz"}, // invalid escape kept as sent, then encoded
		{"Param-3=Value3&Param=Value2&%E1%88%B4=Value1", false, "%E1%88%B4=Value1&Param=Value2&Param-3=Value3"},
	} {
		if got := canonicalQuery(c.raw, c.plusSpace); got != c.want {
			t.Errorf("canonicalQuery(%q, %v) = %q, want %q", c.raw, c.plusSpace, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"/", "/"}, {"//", "/"}, {"/a/./b/../c/", "/a/c/"}, {"/a/b/..", "/a"}, {"/..", "/"}, {"//a//b", "/a/b"},
	} {
		if got := normalizePath(c.in); got != c.want {
			t.Errorf("normalizePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// S3 signs the path as sent; other services encode it once more.
	sent := "/bucket/my%20file%20%C3%BC.txt"
	if got := canonicalURI(sent, canonOpts{}); got != sent {
		t.Errorf("S3 canonical path %q", got)
	}
	if got := canonicalURI(sent, canonOpts{normalize: true, encode: true}); got != "/bucket/my%2520file%2520%25C3%25BC.txt" {
		t.Errorf("double-encoded canonical path %q", got)
	}
	if got := trimAll("  a   b \t c  "); got != "a b \t c" {
		t.Errorf("trimAll = %q", got)
	}
}

// An STS call signed by the sandbox with sentinels (access key, secret,
// session token), body hashed (no x-amz-content-sha256): re-signed exactly
// as signing with the real keys would, token swapped, body intact.
func TestResignSigV4EndToEnd(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	p := testPair(realKey, realSecret, realToken)
	body := "Action=GetCallerIdentity&Version=2011-06-15"
	r, err := http.NewRequest("POST", "https://sts.us-east-1.amazonaws.com/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	r.Header.Set(hdrAmzDate, "20240102T030405Z")
	r.Header.Set(hdrSecurityToken, p.SessionTokenSentinel)
	const sh = "content-length;content-type;host;x-amz-date;x-amz-security-token"
	signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "us-east-1", "sts", sh, canonOpts{normalize: true, encode: true})

	want := cloneReq(t, r)
	want.Header.Set(hdrSecurityToken, realToken)
	signWith(t, want, realKey, realSecret, "us-east-1", "sts", sh, canonOpts{normalize: true, encode: true})

	res, err := ResignSigV4(r, []AWSPair{testPair("AKIAOTHER", "other", ""), p}, SigV4Policy{}, 0)
	if err != nil || !res.Resigned || res.Unverified || res.Denied != "" {
		t.Fatalf("ResignSigV4 = %+v, %v", res, err)
	}
	got := r.Header.Get("Authorization")
	if got != want.Header.Get("Authorization") {
		t.Fatalf("Authorization\n got: %s\nwant: %s", got, want.Header.Get("Authorization"))
	}
	if !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential="+realKey+"/20240102/us-east-1/sts/aws4_request, SignedHeaders="+sh+", Signature=") {
		t.Fatalf("Authorization %s", got)
	}
	if strings.Contains(got, p.AccessKeyIDSentinel) || r.Header.Get(hdrSecurityToken) != realToken {
		t.Fatal("access key id or session token not swapped")
	}
	if b := string(peekBody(t, r)); b != body || r.ContentLength != int64(len(body)) {
		t.Fatalf("body %q (ContentLength %d)", b, r.ContentLength)
	}
	if r.GetBody != nil {
		rc, _ := r.GetBody()
		if b, _ := io.ReadAll(rc); string(b) != body {
			t.Fatalf("GetBody %q", b)
		}
	}
	// And the new signature is what AWS computes over the final request.
	a := authOf(t, r)
	c := canonicalRequest(r, splitSignedHeaders(sh), hexSHA256([]byte(body)), canonOpts{normalize: true, encode: true})
	if sigv4Signature(realSecret, sigv4Scope{"20240102", "us-east-1", "sts"}, "20240102T030405Z", c) != a.signature {
		t.Fatal("signature does not verify with the real secret")
	}
}

// An S3 object key with spaces, '+', '$' and non-ASCII letters, encoded once
// by the SDK: S3 signs that path as sent, not double-encoded.
func TestResignSigV4S3Path(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	p := testPair(realKey, realSecret, "")
	key := "photos/my file ü+é$.txt"
	path := "/bucket/" + uriEncode(key, false)
	if path != "/bucket/photos/my%20file%20%C3%BC%2B%C3%A9%24.txt" {
		t.Fatalf("path %s", path)
	}
	body := "hello"
	r, err := http.NewRequest("PUT", "https://s3.eu-west-1.amazonaws.com"+path+"?x-id=PutObject", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.URL.EscapedPath() != path {
		t.Fatalf("EscapedPath %s", r.URL.EscapedPath())
	}
	r.Header.Set(hdrAmzDate, "20240102T030405Z")
	r.Header.Set(hdrContentSHA256, hexSHA256([]byte(body)))
	const sh = "host;x-amz-content-sha256;x-amz-date"
	signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "eu-west-1", "s3", sh, canonOpts{})
	if c := canonicalRequest(r, splitSignedHeaders(sh), hexSHA256([]byte(body)), canonOpts{}); !strings.HasPrefix(c, "PUT\n"+path+"\nx-id=PutObject\n") {
		t.Fatalf("canonical request %q", c)
	}
	want := cloneReq(t, r)
	signWith(t, want, realKey, realSecret, "eu-west-1", "s3", sh, canonOpts{})

	res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
	if err != nil || !res.Resigned || res.Unverified {
		t.Fatalf("ResignSigV4 = %+v, %v", res, err)
	}
	if r.Header.Get("Authorization") != want.Header.Get("Authorization") {
		t.Fatalf("Authorization\n got: %s\nwant: %s", r.Header.Get("Authorization"), want.Header.Get("Authorization"))
	}
	if r.URL.EscapedPath() != path || string(peekBody(t, r)) != body {
		t.Fatal("path or body changed")
	}
}

// The same path to a service that double-encodes; and a request whose SDK
// used the other rule: ResignSigV4 finds the rule the sandbox used.
func TestResignSigV4CanonicalVariants(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	for _, c := range []struct {
		name, service string
		o             canonOpts
	}{
		{"execute-api default rule", "execute-api", canonOpts{normalize: true, encode: true}},
		{"execute-api signed as sent", "execute-api", canonOpts{}},
		{"s3 default rule", "s3", canonOpts{}},
		{"s3 signed double-encoded", "s3", canonOpts{normalize: true, encode: true}},
		{"plus as space", "execute-api", canonOpts{normalize: true, encode: true, plusSpace: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPair(realKey, realSecret, "")
			r, err := http.NewRequest("GET", "https://abc.example.com/stage/a%20b//./c%C3%BC?q=x+y&z=%2B", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set(hdrAmzDate, "20240102T030405Z")
			signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "eu-west-1", c.service, "host;x-amz-date", c.o)
			want := cloneReq(t, r)
			signWith(t, want, realKey, realSecret, "eu-west-1", c.service, "host;x-amz-date", c.o)
			res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
			if err != nil || !res.Resigned || res.Unverified {
				t.Fatalf("ResignSigV4 = %+v, %v", res, err)
			}
			if r.Header.Get("Authorization") != want.Header.Get("Authorization") {
				t.Fatalf("Authorization\n got: %s\nwant: %s", r.Header.Get("Authorization"), want.Header.Get("Authorization"))
			}
		})
	}
	// A signature made with some other secret verifies under no rule: still
	// re-signed by the service's rule, and flagged.
	p := testPair(realKey, realSecret, "")
	r, _ := http.NewRequest("GET", "https://abc.example.com/x%20y", nil)
	r.Header.Set(hdrAmzDate, "20240102T030405Z")
	signWith(t, r, p.AccessKeyIDSentinel, "not-the-sentinel-secret", "eu-west-1", "execute-api", "host;x-amz-date", canonOpts{})
	want := cloneReq(t, r)
	signWith(t, want, realKey, realSecret, "eu-west-1", "execute-api", "host;x-amz-date", canonOpts{normalize: true, encode: true})
	res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
	if err != nil || !res.Resigned || !res.Unverified || r.Header.Get("Authorization") != want.Header.Get("Authorization") {
		t.Fatalf("unverifiable: %+v, %v, %s", res, err, r.Header.Get("Authorization"))
	}
}

// countingBody records reads.
type countingBody struct {
	r     io.Reader
	reads int
}

func (c *countingBody) Read(p []byte) (int, error) { c.reads++; return c.r.Read(p) }
func (c *countingBody) Close() error               { return nil }

// UNSIGNED-PAYLOAD and STREAMING-UNSIGNED-PAYLOAD-TRAILER (whose chunks and
// trailer carry no signature) are re-signed from the headers alone; the
// body is not read.
func TestResignSigV4UnsignedPayload(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	for _, ph := range []string{unsignedPayload, streamingUnsignedTrailer} {
		t.Run(ph, func(t *testing.T) {
			p := testPair(realKey, realSecret, realToken)
			r, _ := http.NewRequest("PUT", "https://bucket.s3.us-east-2.amazonaws.com/big.bin", nil)
			body := &countingBody{r: strings.NewReader("chunked or large data")}
			r.Body, r.ContentLength = body, -1
			r.Header.Set(hdrAmzDate, "20240102T030405Z")
			r.Header.Set(hdrContentSHA256, ph)
			r.Header.Set(hdrSecurityToken, p.SessionTokenSentinel)
			const sh = "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
			signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "us-east-2", "s3", sh, canonOpts{})
			want := r.Clone(context.Background())
			want.Header.Set(hdrSecurityToken, realToken)
			signWith(t, want, realKey, realSecret, "us-east-2", "s3", sh, canonOpts{})

			res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 10)
			if err != nil || !res.Resigned || res.Unverified {
				t.Fatalf("ResignSigV4 = %+v, %v", res, err)
			}
			if r.Header.Get("Authorization") != want.Header.Get("Authorization") {
				t.Fatal("wrong signature")
			}
			if body.reads != 0 || r.Body != io.ReadCloser(body) || r.ContentLength != -1 {
				t.Fatal("body touched")
			}
		})
	}
}

func TestResignSigV4BodyLimits(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	p := testPair(realKey, realSecret, "")
	mk := func(body string, knownLength bool) (*http.Request, *countingBody) {
		r, _ := http.NewRequest("POST", "https://dynamodb.us-east-1.amazonaws.com/", nil)
		cb := &countingBody{r: strings.NewReader(body)}
		r.Body, r.ContentLength = cb, -1
		if knownLength {
			r.ContentLength = int64(len(body))
		}
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		r.Header.Set(hdrAmzDate, "20240102T030405Z")
		signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "us-east-1", "dynamodb", "content-type;host;x-amz-date", canonOpts{normalize: true, encode: true})
		r.Body = cb // signWith buffered it; start over
		cb.r, cb.reads = strings.NewReader(body), 0
		return r, cb
	}
	body := strings.Repeat("x", 100)

	// Within the limit (unknown length): hashed, restored, re-signed.
	r, _ := mk(body, false)
	res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 100)
	if err != nil || !res.Resigned || res.Unverified {
		t.Fatalf("ResignSigV4 = %+v, %v", res, err)
	}
	if string(peekBody(t, r)) != body || r.ContentLength != 100 {
		t.Fatal("body not restored")
	}

	// Larger than maxBody: denied, body left readable in full.
	r, _ = mk(body, false)
	before := r.Header.Get("Authorization")
	res, err = ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 99)
	if err != nil || res.Resigned || !strings.Contains(res.Denied, "larger than 99 bytes") {
		t.Fatalf("ResignSigV4 = %+v, %v", res, err)
	}
	if string(peekBody(t, r)) != body || r.Header.Get("Authorization") != before {
		t.Fatal("request changed")
	}

	// Known to be too large: denied without reading.
	r, cb := mk(body, true)
	res, _ = ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 50)
	if res.Denied == "" || cb.reads != 0 {
		t.Fatalf("%+v, %d reads", res, cb.reads)
	}

	// A failing body: an error without values, the body yields what was read.
	r, _ = mk(body, false)
	boom := errors.New("connection reset")
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader("part"), errReader{boom}))
	res, err = ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
	if !errors.Is(err, boom) || res.Resigned {
		t.Fatalf("%+v, %v", res, err)
	}
	noReal(t, "error", err.Error(), p)
	if b, err := io.ReadAll(r.Body); string(b) != "part" || !errors.Is(err, boom) {
		t.Fatalf("body after error: %q, %v", b, err)
	}
}

// Only a Date header (no X-Amz-Date): the string to sign uses it in ISO 8601
// basic format.
func TestResignSigV4DateHeader(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	p := testPair(realKey, realSecret, "")
	r, _ := http.NewRequest("GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", nil)
	r.Header.Set("Date", "Tue, 02 Jan 2024 03:04:05 GMT")
	if d, ok := requestTime(r); !ok || d != "20240102T030405Z" {
		t.Fatalf("requestTime = %q", d)
	}
	signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "us-east-1", "iam", "date;host", canonOpts{normalize: true, encode: true})
	want := cloneReq(t, r)
	signWith(t, want, realKey, realSecret, "us-east-1", "iam", "date;host", canonOpts{normalize: true, encode: true})
	res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
	if err != nil || !res.Resigned || res.Unverified || r.Header.Get("Authorization") != want.Header.Get("Authorization") {
		t.Fatalf("%+v, %v", res, err)
	}
}

// snapshot is what must stay the same when a request is left alone.
func snapshot(r *http.Request) string {
	return r.URL.String() + "\n" + fmt.Sprint(r.Header)
}

func TestResignSigV4Policies(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	p := testPair(realKey, realSecret, realToken)
	other := newSentinel() // a sentinel, but of no pair
	streaming := func(key string) *http.Request {
		r, _ := http.NewRequest("PUT", "https://bucket.s3.amazonaws.com/k", strings.NewReader("0;chunk-signature=00\r\n\r\n"))
		r.Header.Set(hdrAmzDate, "20240102T030405Z")
		r.Header.Set(hdrContentSHA256, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
		r.Header.Set("Content-Encoding", "aws-chunked")
		signWith(t, r, key, p.SecretSentinel, "us-east-1", "s3", "content-encoding;host;x-amz-content-sha256;x-amz-date", canonOpts{})
		return r
	}
	presigned := func(key string) *http.Request {
		q := url.Values{
			"X-Amz-Algorithm":     {"AWS4-HMAC-SHA256"},
			"X-Amz-Credential":    {key + "/20240102/us-east-1/s3/aws4_request"},
			"X-Amz-Date":          {"20240102T030405Z"},
			"X-Amz-Expires":       {"900"},
			"X-Amz-SignedHeaders": {"host"},
			"X-Amz-Signature":     {strings.Repeat("ab", 32)},
		}
		r, _ := http.NewRequest("GET", "https://bucket.s3.amazonaws.com/k?"+q.Encode(), nil)
		return r
	}
	presignedToken := func(token string) *http.Request {
		r, _ := http.NewRequest("GET", "https://bucket.s3.amazonaws.com/k?X-Amz-Credential=AKIAOTHER%2F20240102%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Security-Token="+token+"&X-Amz-Signature=00", nil)
		return r
	}
	sigv4a := func(key string) *http.Request {
		r, _ := http.NewRequest("GET", "https://mrap.accesspoint.s3-global.amazonaws.com/k", nil)
		r.Header.Set(hdrAmzDate, "20240102T030405Z")
		r.Header.Set("X-Amz-Region-Set", "*")
		r.Header.Set("Authorization", "AWS4-ECDSA-P256-SHA256 Credential="+key+"/20240102/s3/aws4_request, SignedHeaders=host;x-amz-date;x-amz-region-set, Signature=3045022100ab")
		return r
	}
	for _, c := range []struct {
		name   string
		mk     func() *http.Request
		pol    SigV4Policy
		denied string // substring; "" = left alone
	}{
		{"streaming default", func() *http.Request { return streaming(p.AccessKeyIDSentinel) }, SigV4Policy{}, "streaming SigV4 upload (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) is denied by credentials.sigv4.streaming"},
		{"streaming deny", func() *http.Request { return streaming(p.AccessKeyIDSentinel) }, SigV4Policy{Streaming: "deny", Presigned: "passthrough", SigV4A: "passthrough"}, "credentials.sigv4.streaming"},
		{"streaming unknown value", func() *http.Request { return streaming(p.AccessKeyIDSentinel) }, SigV4Policy{Streaming: "allow"}, "credentials.sigv4.streaming"},
		{"streaming passthrough", func() *http.Request { return streaming(p.AccessKeyIDSentinel) }, SigV4Policy{Streaming: "passthrough"}, ""},
		{"streaming real key", func() *http.Request { return streaming("AKIAOTHER") }, SigV4Policy{}, ""},
		{"presigned default", func() *http.Request { return presigned(p.AccessKeyIDSentinel) }, SigV4Policy{}, "presigned SigV4 URL"},
		{"presigned deny", func() *http.Request { return presigned(p.AccessKeyIDSentinel) }, SigV4Policy{Presigned: "deny", Streaming: "passthrough"}, "credentials.sigv4.presigned"},
		{"presigned passthrough", func() *http.Request { return presigned(p.AccessKeyIDSentinel) }, SigV4Policy{Presigned: "passthrough"}, ""},
		{"presigned token sentinel", func() *http.Request { return presignedToken(p.SessionTokenSentinel) }, SigV4Policy{}, "credentials.sigv4.presigned"},
		{"presigned real key", func() *http.Request { return presigned("AKIAOTHER") }, SigV4Policy{}, ""},
		{"presigned foreign sentinel", func() *http.Request { return presigned(other) }, SigV4Policy{}, ""},
		{"sigv4a default", func() *http.Request { return sigv4a(p.AccessKeyIDSentinel) }, SigV4Policy{}, "SigV4A request (AWS4-ECDSA-P256-SHA256) with a masked AWS access key is denied by credentials.sigv4.sigv4a"},
		{"sigv4a deny", func() *http.Request { return sigv4a(p.AccessKeyIDSentinel) }, SigV4Policy{SigV4A: "deny", Streaming: "passthrough", Presigned: "passthrough"}, "credentials.sigv4.sigv4a"},
		{"sigv4a passthrough", func() *http.Request { return sigv4a(p.AccessKeyIDSentinel) }, SigV4Policy{SigV4A: "passthrough"}, ""},
		{"sigv4a real key", func() *http.Request { return sigv4a("AKIAOTHER") }, SigV4Policy{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.mk()
			before := snapshot(r)
			res, err := ResignSigV4(r, []AWSPair{p}, c.pol, 0)
			if err != nil || res.Resigned {
				t.Fatalf("%+v, %v", res, err)
			}
			if c.denied == "" && res.Denied != "" || !strings.Contains(res.Denied, c.denied) {
				t.Fatalf("Denied = %q, want %q", res.Denied, c.denied)
			}
			if strings.ContainsAny(res.Denied, "\r\n") {
				t.Fatal("Denied is not one line")
			}
			noReal(t, "Denied", res.Denied, p)
			if snapshot(r) != before {
				t.Fatalf("request changed:\n%s\n%s", before, snapshot(r))
			}
		})
	}
	if err := (SigV4Policy{Streaming: "allow"}).Validate(); err == nil {
		t.Fatal("Validate accepted an unknown value")
	}
	if err := (SigV4Policy{Streaming: "deny", Presigned: "passthrough"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// Requests that are not SigV4 with a masked key are left alone; a masked
// key in a malformed header is denied.
func TestResignSigV4LeftAloneAndMalformed(t *testing.T) {
	atSigV4Time(t, "20240102T030405Z")
	p := testPair(realKey, realSecret, realToken)
	mk := func(auth string) *http.Request {
		r, _ := http.NewRequest("GET", "https://sqs.us-east-1.amazonaws.com/?Action=ListQueues", nil)
		r.Header.Set(hdrAmzDate, "20240102T030405Z")
		r.Header.Set(hdrSecurityToken, p.SessionTokenSentinel)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return r
	}
	realSigned := mk("")
	signWith(t, realSigned, "AKIAUNMASKED", "unmasked-secret", "us-east-1", "sqs", "host;x-amz-date", canonOpts{normalize: true, encode: true})
	foreign := mk("")
	signWith(t, foreign, newSentinel(), p.SecretSentinel, "us-east-1", "sqs", "host;x-amz-date", canonOpts{normalize: true, encode: true})
	for _, c := range []struct {
		name   string
		r      *http.Request
		pairs  []AWSPair
		denied string
	}{
		{"no Authorization", mk(""), []AWSPair{p}, ""},
		{"Basic", mk("Basic dXNlcjpwYXNz"), []AWSPair{p}, ""},
		{"Bearer sentinel", mk("Bearer " + p.AccessKeyIDSentinel), []AWSPair{p}, ""},
		{"unmasked key", realSigned, []AWSPair{p}, ""},
		{"sentinel of no pair", foreign, []AWSPair{p}, ""},
		{"no pairs", mk("AWS4-HMAC-SHA256 Credential=" + p.AccessKeyIDSentinel + "/20240102/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=00"), nil, ""},
		{"bad scope", mk("AWS4-HMAC-SHA256 Credential=" + p.AccessKeyIDSentinel + "/20240102/us-east-1, SignedHeaders=host, Signature=00"), []AWSPair{p}, "malformed SigV4 Authorization header"},
		{"no SignedHeaders", mk("AWS4-HMAC-SHA256 Credential=" + p.AccessKeyIDSentinel + "/20240102/us-east-1/sqs/aws4_request, Signature=00"), []AWSPair{p}, "no SignedHeaders"},
		{"no Signature", mk("AWS4-HMAC-SHA256 Credential=" + p.AccessKeyIDSentinel + "/20240102/us-east-1/sqs/aws4_request, SignedHeaders=host"), []AWSPair{p}, "no Signature"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(c.r)
			res, err := ResignSigV4(c.r, c.pairs, SigV4Policy{Streaming: "passthrough", Presigned: "passthrough", SigV4A: "passthrough"}, 0)
			if err != nil || res.Resigned || !strings.Contains(res.Denied, c.denied) || c.denied == "" && res.Denied != "" {
				t.Fatalf("%+v, %v", res, err)
			}
			noReal(t, "Denied", res.Denied, p)
			if snapshot(c.r) != before {
				t.Fatal("request changed")
			}
		})
	}
	// No date at all.
	r := mk("AWS4-HMAC-SHA256 Credential=" + p.AccessKeyIDSentinel + "/20240102/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=00")
	r.Header.Del(hdrAmzDate)
	if res, _ := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0); !strings.Contains(res.Denied, "X-Amz-Date") {
		t.Fatalf("%+v", res)
	}
	if res, err := ResignSigV4(nil, []AWSPair{p}, SigV4Policy{}, 0); err != nil || res != (ResignResult{}) {
		t.Fatal("nil request")
	}
}

func TestAWSPairRedacted(t *testing.T) {
	p := testPair(realKey, realSecret, realToken)
	noToken := testPair(realKey, realSecret, "")
	type holder struct {
		P  AWSPair
		PP *AWSPair
		PS []AWSPair
	}
	var outs []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		outs = append(outs,
			fmt.Sprintf(f, p), fmt.Sprintf(f, &p), fmt.Sprintf(f, []AWSPair{p, noToken}),
			fmt.Sprintf(f, holder{p, &p, []AWSPair{p}}), fmt.Sprintf(f, []any{p, &p}))
	}
	outs = append(outs, p.String(), p.GoString(), fmt.Sprint(p), fmt.Sprintln([]AWSPair{p}), fmt.Sprintf("%v", map[string]AWSPair{"k": p}))
	for _, v := range []any{p, &p, []AWSPair{p}, holder{p, &p, []AWSPair{p}}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(b))
	}
	for _, o := range outs {
		noReal(t, "printed pair", o, p)
	}
	if s := fmt.Sprintf("%+v", p); !strings.Contains(s, p.AccessKeyIDSentinel) || !strings.Contains(s, p.SecretSentinel) ||
		!strings.Contains(s, p.SessionTokenSentinel) || !strings.Contains(s, redacted) {
		t.Fatalf("redacted form lost the sentinels: %s", s)
	}
	if s := fmt.Sprintf("%#v", p); !strings.HasPrefix(s, "credentials.AWSPair{") {
		t.Fatalf("%%#v = %s", s)
	}
	if s := fmt.Sprintf("%v", noToken); !strings.Contains(s, "SessionToken:}") {
		t.Fatalf("empty token shown as %s", s)
	}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), p.SecretSentinel) {
		t.Fatalf("json lost the sentinels: %s", b)
	}
}

// sigv4Suite is AWS's SigV4 test suite (aws-sig-v4-test-suite, 2015-08-30,
// as kept in awslabs/aws-c-auth tests/aws-signing-test-suite/v4): each
// case's header-signed-request.txt and header-canonical-request.txt. Region
// us-east-1, service "service", key AKIDEXAMPLE, secret
// wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY. "normalize" false cases keep the
// path's dot segments and repeated slashes (as S3 does) but still encode it.
var sigv4Suite = []struct {
	name      string
	normalize bool
	token     string
	request   string
	canonical string
}{
	{
		name:      "get-header-key-duplicate",
		normalize: true,
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value2
My-Header1:value2
My-Header1:value1
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea

`,
		canonical: `GET
/

host:example.amazonaws.com
my-header1:value2,value2,value1
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-header-value-multiline",
		normalize: true,
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value1
  value2
     value3
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb65a51a73575eefd

`,
		canonical: `GET
/

host:example.amazonaws.com
my-header1:value1 value2 value3
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-header-value-order",
		normalize: true,
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value4
My-Header1:value1
My-Header1:value3
My-Header1:value2
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01

`,
		canonical: `GET
/

host:example.amazonaws.com
my-header1:value4,value1,value3,value2
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-header-value-trim",
		normalize: true,
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1: value1
My-Header2: "a   b   c"
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;my-header2;x-amz-date, Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736

`,
		canonical: `GET
/

host:example.amazonaws.com
my-header1:value1
my-header2:"a b c"
x-amz-date:20150830T123600Z

host;my-header1;my-header2;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-relative-normalized",
		normalize: true,
		request: `GET /example/.. HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-relative-relative-normalized",
		normalize: true,
		request: `GET /example1/example2/../.. HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-relative-relative-unnormalized",
		normalize: false,
		request: `GET /example1/example2/../.. HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=dc33e0856fd4baca4d7aa2146c38958283844764f38c74252a333df5e613003b

`,
		canonical: `GET
/example1/example2/../..

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-relative-unnormalized",
		normalize: false,
		request: `GET /example/.. HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282

`,
		canonical: `GET
/example/..

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slash-dot-slash-normalized",
		normalize: true,
		request: `GET /./ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slash-dot-slash-unnormalized",
		normalize: false,
		request: `GET /./ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df51898d8a134695145

`,
		canonical: `GET
/./

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slash-normalized",
		normalize: true,
		request: `GET // HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slash-pointless-dot-normalized",
		normalize: true,
		request: `GET /./example HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5

`,
		canonical: `GET
/example

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slash-pointless-dot-unnormalized",
		normalize: false,
		request: `GET /./example HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf07aa8b119e14cff

`,
		canonical: `GET
/./example

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slash-unnormalized",
		normalize: false,
		request: `GET // HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcfcb439fd5e5b76e

`,
		canonical: `GET
//

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slashes-normalized",
		normalize: true,
		request: `GET //example// HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84

`,
		canonical: `GET
/example/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-slashes-unnormalized",
		normalize: false,
		request: `GET //example// HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5

`,
		canonical: `GET
//example//

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-space-normalized",
		normalize: true,
		request: `GET /example space/ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741

`,
		canonical: `GET
/example%20space/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-space-unnormalized",
		normalize: false,
		request: `GET /example space/ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741

`,
		canonical: `GET
/example%20space/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-unreserved",
		normalize: true,
		request: `GET /-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f

`,
		canonical: `GET
/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-utf8",
		normalize: true,
		request: `GET /ሴ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85

`,
		canonical: `GET
/%E1%88%B4

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-empty-query-key",
		normalize: true,
		request: `GET /?Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb

`,
		canonical: `GET
/
Param1=value1
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-query-order-encoded",
		normalize: true,
		request: `GET /?Param-3=Value3&Param=Value2&%E1%88%B4=Value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac

`,
		canonical: `GET
/
%E1%88%B4=Value1&Param=Value2&Param-3=Value3
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-query-order-key-case",
		normalize: true,
		request: `GET /?Param2=value2&Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500

`,
		canonical: `GET
/
Param1=value1&Param2=value2
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-query-unreserved",
		normalize: true,
		request: `GET /?-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197

`,
		canonical: `GET
/
-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-query",
		normalize: true,
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-utf8-query",
		normalize: true,
		request: `GET /?ሴ=bar HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04

`,
		canonical: `GET
/
%E1%88%B4=bar
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla-with-session-token",
		normalize: true,
		token:     "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267",
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Security-Token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z
x-amz-security-token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267

host;x-amz-date;x-amz-security-token
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "get-vanilla",
		normalize: true,
		request: `GET / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

`,
		canonical: `GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-header-key-case",
		normalize: true,
		request: `POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b

`,
		canonical: `POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-header-key-sort",
		normalize: true,
		request: `POST / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value1
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c

`,
		canonical: `POST
/

host:example.amazonaws.com
my-header1:value1
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-header-value-case",
		normalize: true,
		request: `POST / HTTP/1.1
Host:example.amazonaws.com
My-Header1:VALUE1
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d

`,
		canonical: `POST
/

host:example.amazonaws.com
my-header1:VALUE1
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-sts-header-after",
		normalize: true,
		token:     "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
		request: `POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Security-Token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b

`,
		canonical: `POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-sts-header-before",
		normalize: true,
		token:     "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
		request: `POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Security-Token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead

`,
		canonical: `POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z
x-amz-security-token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==

host;x-amz-date;x-amz-security-token
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-vanilla-empty-query-value",
		normalize: true,
		request: `POST /?Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11

`,
		canonical: `POST
/
Param1=value1
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-vanilla-query",
		normalize: true,
		request: `POST /?Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11

`,
		canonical: `POST
/
Param1=value1
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-vanilla",
		normalize: true,
		request: `POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b

`,
		canonical: `POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
	},
	{
		name:      "post-x-www-form-urlencoded-parameters",
		normalize: true,
		request: `POST / HTTP/1.1
Content-Type:application/x-www-form-urlencoded; charset=utf-8
Host:example.amazonaws.com
Content-Length:13
X-Amz-Date:20150830T123600Z
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422

Param1=value1`,
		canonical: `POST
/

content-length:13
content-type:application/x-www-form-urlencoded; charset=utf-8
host:example.amazonaws.com
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
x-amz-date:20150830T123600Z

content-length;content-type;host;x-amz-content-sha256;x-amz-date
9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e`,
	},
	{
		name:      "post-x-www-form-urlencoded",
		normalize: true,
		request: `POST / HTTP/1.1
Content-Type:application/x-www-form-urlencoded
Host:example.amazonaws.com
Content-Length:13
X-Amz-Date:20150830T123600Z
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b

Param1=value1`,
		canonical: `POST
/

content-length:13
content-type:application/x-www-form-urlencoded
host:example.amazonaws.com
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
x-amz-date:20150830T123600Z

content-length;content-type;host;x-amz-content-sha256;x-amz-date
9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e`,
	},
}

// TestMain sets the date check's clock to the test suite's date.
func TestMain(m *testing.M) {
	sigv4Now = func() time.Time { return mustAmzTime(suiteDate) }
	os.Exit(m.Run())
}

func mustAmzTime(s string) time.Time {
	t, err := time.Parse(amzDateFormat, s)
	if err != nil {
		panic(err)
	}
	return t
}

// atSigV4Time sets the date check's clock to amzDate for one test.
func atSigV4Time(t *testing.T, amzDate string) {
	t.Helper()
	old := sigv4Now
	sigv4Now = func() time.Time { return mustAmzTime(amzDate) }
	t.Cleanup(func() { sigv4Now = old })
}

// TestResignSigV4DateWindow: sbx signs only for the present. A request
// dated more than 15 minutes from now (2030, or last year), or whose
// credential scope names another day than its date, is refused and left
// as it was, even when its own signature is right; within the window, at
// either edge, it is re-signed.
func TestResignSigV4DateWindow(t *testing.T) {
	const now = "20240102T030405Z"
	atSigV4Time(t, now)
	p := testPair(realKey, realSecret, "")
	req := func(date, scopeDay string) *http.Request {
		r, _ := http.NewRequest("GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", nil)
		r.Header.Set(hdrAmzDate, date)
		signWith(t, r, p.AccessKeyIDSentinel, p.SecretSentinel, "us-east-1", "iam", "host;x-amz-date", canonOpts{normalize: true, encode: true})
		if scopeDay != "" { // the sandbox signs with a scope of another day
			auth := r.Header.Get("Authorization")
			r.Header.Set("Authorization", strings.Replace(auth, "/"+date[:8]+"/", "/"+scopeDay+"/", 1))
		}
		return r
	}
	for _, tt := range []struct {
		name, date, scopeDay string
		ok                   bool
	}{
		{"now", now, "", true},
		{"15 minutes ahead", "20240102T031905Z", "", true},
		{"15 minutes behind", "20240102T024905Z", "", true},
		{"16 minutes ahead", "20240102T032005Z", "", false},
		{"16 minutes behind", "20240102T024805Z", "", false},
		{"2030", "20300101T000000Z", "", false},
		{"a year ago", "20230102T030405Z", "", false},
		{"scope of another day", now, "20300101", false},
		{"scope a day early", now, "20240101", false},
		{"not a date", "2024-01-02T03:04:05Z", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := req(tt.date, tt.scopeDay)
			before := snapshot(r)
			res, err := ResignSigV4(r, []AWSPair{p}, SigV4Policy{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.ok {
				if !res.Resigned || res.Denied != "" || !strings.Contains(r.Header.Get("Authorization"), realKey) {
					t.Fatalf("want re-signed: %+v", res)
				}
				return
			}
			if res.Resigned || res.Denied == "" || snapshot(r) != before {
				t.Fatalf("want refused and untouched: %+v\n%s", res, r.Header.Get("Authorization"))
			}
			if strings.Contains(res.Denied, realKey) || strings.Contains(res.Denied, realSecret) {
				t.Fatalf("the reason names a real value: %s", res.Denied)
			}
		})
	}
}
