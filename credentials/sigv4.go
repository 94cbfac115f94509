package credentials

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AWS Signature Version 4 re-signing.
//
// The sandbox sees sentinels in place of AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (and srt's other
// credentials.awsPairs[]). An AWS SDK or CLI inside signs its requests with
// the sentinel secret, so their signatures are wrong. ResignSigV4 recomputes
// the signature of such a request with the real keys, in the proxy, after TLS
// termination.
//
// ResignSigV4 does not check where the request goes: the caller must call it
// only for requests to hosts allowed to receive the pair's credentials (the
// same check the Injector makes) and that it terminated, since the re-signed
// request carries the real access key id and session token, and a valid
// signature made with the real secret.

// AWSPair is one masked AWS identity: the sentinels the sandbox sees and the
// real values.
//
// The real values are never printed: String, GoString and Format redact them
// for every fmt verb, and encoding/json skips them.
type AWSPair struct {
	AccessKeyIDSentinel string
	AccessKeyID         string `json:"-"` // real access key id
	// SecretSentinel is the secret the sandbox's SDK signed with; Secret is
	// the real secret access key.
	SecretSentinel string
	Secret         string `json:"-"`
	// SessionTokenSentinel and SessionToken are "" when the identity has no
	// session token.
	SessionTokenSentinel string
	SessionToken         string `json:"-"`
}

// redactIf stands for a real value when printing: "" stays "" (so a
// missing session token shows as missing), anything else is redacted.
func redactIf(v string) string {
	if v == "" {
		return ""
	}
	return redacted
}

// String describes p without its real values.
func (p AWSPair) String() string {
	return fmt.Sprintf("{AccessKeyIDSentinel:%s AccessKeyID:%s SecretSentinel:%s Secret:%s SessionTokenSentinel:%s SessionToken:%s}",
		p.AccessKeyIDSentinel, redactIf(p.AccessKeyID), p.SecretSentinel, redactIf(p.Secret),
		p.SessionTokenSentinel, redactIf(p.SessionToken))
}

// GoString describes p as Go syntax (for %#v) without its real values.
func (p AWSPair) GoString() string {
	return fmt.Sprintf("credentials.AWSPair{AccessKeyIDSentinel:%q, AccessKeyID:%q, SecretSentinel:%q, Secret:%q, SessionTokenSentinel:%q, SessionToken:%q}",
		p.AccessKeyIDSentinel, redactIf(p.AccessKeyID), p.SecretSentinel, redactIf(p.Secret),
		p.SessionTokenSentinel, redactIf(p.SessionToken))
}

// Format implements fmt.Formatter so that no verb or flag prints a real
// value: %#v prints GoString, %q a quoted String, every other verb String.
func (p AWSPair) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, p.GoString())
	case verb == 'q':
		io.WriteString(f, strconv.Quote(p.String()))
	default:
		io.WriteString(f, p.String())
	}
}

// SigV4Policy is srt's credentials.sigv4 settings for the requests
// ResignSigV4 cannot re-sign. Each field is "deny" or "passthrough"; empty
// means "deny", and so does any other value (Validate reports those).
type SigV4Policy struct {
	// Streaming: uploads whose chunks are signed one by one
	// (x-amz-content-sha256 STREAMING-AWS4-HMAC-SHA256-PAYLOAD and the
	// like), whose chunk signatures chain from the sentinel-made signature.
	Streaming string
	// Presigned: URLs whose query carries the signature (X-Amz-Signature,
	// X-Amz-Credential) made with a masked access key.
	Presigned string
	// SigV4A: asymmetric signatures (AWS4-ECDSA-P256-SHA256).
	SigV4A string
}

// SigV4 policy values.
const (
	SigV4Deny        = "deny"
	SigV4Passthrough = "passthrough"
)

// Validate reports a field that is neither "", "deny" nor "passthrough".
func (p SigV4Policy) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"streaming", p.Streaming}, {"presigned", p.Presigned}, {"sigv4a", p.SigV4A},
	} {
		switch f.v {
		case "", SigV4Deny, SigV4Passthrough:
		default:
			return fmt.Errorf("credentials: credentials.sigv4.%s: unknown value %q (want %q or %q)", f.name, f.v, SigV4Deny, SigV4Passthrough)
		}
	}
	return nil
}

// passes reports whether a policy value lets the request through unchanged.
func passes(v string) bool { return v == SigV4Passthrough }

// ResignResult says what ResignSigV4 did.
type ResignResult struct {
	// Resigned: the request carried an Authorization AWS4-HMAC-SHA256
	// header with a masked access key and was re-signed.
	Resigned bool
	// Unverified, with Resigned: the sandbox's own signature could not be
	// reproduced with the sentinel secret under any canonicalisation tried,
	// so the request was re-signed by AWS's rules for its service and AWS
	// may still reject it. For logging.
	Unverified bool
	// Denied, when not empty: the request must be refused (403) with this
	// one-line reason. It never contains a real value.
	Denied string
}

// Header and algorithm names.
const (
	sigv4Algorithm  = "AWS4-HMAC-SHA256"
	sigv4aAlgorithm = "AWS4-ECDSA-P256-SHA256"
	sigv4Terminator = "aws4_request"
	amzDateFormat   = "20060102T150405Z"

	hdrContentSHA256 = "X-Amz-Content-Sha256"
	hdrSecurityToken = "X-Amz-Security-Token"
	hdrAmzDate       = "X-Amz-Date"

	unsignedPayload          = "UNSIGNED-PAYLOAD"
	streamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

// ResignSigV4 re-signs r in place when its Authorization header is
// header-based SigV4 (AWS4-HMAC-SHA256) whose Credential's access key is the
// AccessKeyIDSentinel of one of pairs.
//
// The access key id in the Credential becomes the real one, an
// X-Amz-Security-Token equal to the pair's session token sentinel becomes the
// real token, and the Signature is recomputed with the real secret over the
// same SignedHeaders, date (X-Amz-Date, or Date), region and service. The
// payload hash is the x-amz-content-sha256 header when there is one
// (UNSIGNED-PAYLOAD, a hex SHA-256, STREAMING-UNSIGNED-PAYLOAD-TRAILER); when
// it is absent the body is read (at most maxBody bytes, DefaultMaxBody when
// maxBody <= 0) and hashed, and r.Body, r.GetBody and r.ContentLength are
// restored to the same bytes; a larger body is Denied (and left readable in
// full).
//
// The canonical request follows AWS: the path URI-encoded (for every service
// but S3 the path as sent is normalised and encoded once more, the "double
// encoding"; for S3 it is used as sent), the query sorted by encoded name and
// value with RFC 3986 encoding, the signed headers lowercased, trimmed, with
// sequential spaces collapsed and repeated headers joined by commas, the host
// from r.Host (or r.URL.Host). Before re-signing, the sandbox's signature is
// checked against the same canonical request under the sentinel secret; if
// it does not match, the other path and '+' rules are tried, and the first
// that reproduces the sandbox's signature is used (so the real signature
// covers exactly what the SDK signed). If none does, the service's rule is
// used and Unverified is set.
//
// Requests that cannot be re-signed follow pol: uploads with signed chunks
// (x-amz-content-sha256 STREAMING-… other than
// STREAMING-UNSIGNED-PAYLOAD-TRAILER), presigned URLs (X-Amz-Credential or
// X-Amz-Signature in the query, with a masked access key or session token in
// the query) and SigV4A (AWS4-ECDSA-P256-SHA256) with a masked access key:
// "deny" (or anything but "passthrough") → Denied; "passthrough" → r is left
// unchanged. So is a request whose access key is not a sentinel of pairs, or
// that is not SigV4 at all.
//
// A header-signed request with a masked access key that is malformed (no
// usable Credential, SignedHeaders or date) is Denied: it cannot be re-signed.
// So is one dated more than MaxSigV4Skew from now, or whose credential
// scope's date is not the day of its date: sbx signs only for the present,
// so nothing it signs can be replayed later.
//
// The error is only for a failure reading the body; it, like Denied, never
// contains a real value. r.Body then yields what was read and the error.
func ResignSigV4(r *http.Request, pairs []AWSPair, pol SigV4Policy, maxBody int64) (ResignResult, error) {
	if r == nil || len(pairs) == 0 {
		return ResignResult{}, nil
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	alg, params, _ := strings.Cut(auth, " ")
	switch alg {
	case sigv4Algorithm:
		a, ok := parseSigV4Auth(params)
		pair := findPair(pairs, a.accessKey)
		if pair == nil {
			return ResignResult{}, nil
		}
		if !ok {
			return ResignResult{Denied: "malformed SigV4 Authorization header with a masked AWS access key: " + a.problem}, nil
		}
		return resign(r, pair, a, pol, maxBody)
	case sigv4aAlgorithm:
		a, _ := parseSigV4Auth(params)
		if findPair(pairs, a.accessKey) == nil {
			return ResignResult{}, nil
		}
		if passes(pol.SigV4A) {
			return ResignResult{}, nil
		}
		return ResignResult{Denied: "SigV4A request (" + sigv4aAlgorithm + ") with a masked AWS access key is denied by credentials.sigv4.sigv4a"}, nil
	}
	if presignedWithSentinel(r, pairs) {
		q := queryParam(r, "X-Amz-Algorithm")
		if q == sigv4aAlgorithm {
			if passes(pol.Presigned) && passes(pol.SigV4A) {
				return ResignResult{}, nil
			}
			return ResignResult{Denied: "presigned SigV4A URL with a masked AWS access key is denied by credentials.sigv4.presigned/credentials.sigv4.sigv4a"}, nil
		}
		if passes(pol.Presigned) {
			return ResignResult{}, nil
		}
		return ResignResult{Denied: "presigned SigV4 URL (X-Amz-Credential/X-Amz-Signature in the query) with a masked AWS credential is denied by credentials.sigv4.presigned"}, nil
	}
	return ResignResult{}, nil
}

// findPair returns the pair whose access key sentinel is key, or nil.
func findPair(pairs []AWSPair, key string) *AWSPair {
	if key == "" {
		return nil
	}
	for i := range pairs {
		if pairs[i].AccessKeyIDSentinel != "" && pairs[i].AccessKeyIDSentinel == key {
			return &pairs[i]
		}
	}
	return nil
}

// sigv4Auth is a parsed SigV4 Authorization header.
type sigv4Auth struct {
	accessKey, date, region, service string // from Credential
	signedHeaders                    string // as sent
	signature                        string
	problem                          string // why it is malformed (no values)
}

// parseSigV4Auth parses the parameters of an Authorization header after the
// algorithm: "Credential=…, SignedHeaders=…, Signature=…". accessKey is set
// whenever the Credential has one, even when ok is false.
func parseSigV4Auth(params string) (a sigv4Auth, ok bool) {
	var cred string
	var haveCred, haveSH, haveSig bool
	for _, part := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Credential":
			cred, haveCred = v, true
		case "SignedHeaders":
			a.signedHeaders, haveSH = v, true
		case "Signature":
			a.signature, haveSig = v, true
		}
	}
	if !haveCred {
		a.problem = "no Credential"
		return a, false
	}
	f := strings.Split(cred, "/")
	a.accessKey = f[0]
	switch {
	case len(f) == 5 && f[4] == sigv4Terminator && f[1] != "" && f[2] != "" && f[3] != "":
		a.date, a.region, a.service = f[1], f[2], f[3]
	case len(f) == 4 && f[3] == sigv4Terminator: // SigV4A: no region in the scope
		a.date, a.service = f[1], f[2]
		a.problem = "Credential scope has no region"
		return a, false
	default:
		a.problem = "Credential is not key/date/region/service/aws4_request"
		return a, false
	}
	if !haveSH || a.signedHeaders == "" {
		a.problem = "no SignedHeaders"
		return a, false
	}
	if !haveSig {
		a.problem = "no Signature"
		return a, false
	}
	return a, true
}

// resign re-signs r, whose Authorization a has pair's access key sentinel.
func resign(r *http.Request, pair *AWSPair, a sigv4Auth, pol SigV4Policy, maxBody int64) (ResignResult, error) {
	payloadHash := strings.TrimSpace(r.Header.Get(hdrContentSHA256))
	if strings.HasPrefix(payloadHash, "STREAMING-") && payloadHash != streamingUnsignedTrailer {
		if passes(pol.Streaming) {
			return ResignResult{}, nil
		}
		return ResignResult{Denied: "streaming SigV4 upload (" + safeToken(payloadHash) + ") is denied by credentials.sigv4.streaming"}, nil
	}

	amzDate, ok := requestTime(r)
	if !ok {
		return ResignResult{Denied: "malformed SigV4 request with a masked AWS access key: no valid X-Amz-Date or Date header"}, nil
	}
	if denied := checkSigV4Date(amzDate, a.date, sigv4Now()); denied != "" {
		return ResignResult{Denied: denied}, nil
	}

	if payloadHash == "" {
		h, denied, err := hashBody(r, maxBody)
		if err != nil || denied != "" {
			return ResignResult{Denied: denied}, err
		}
		payloadHash = h
	}

	signed := splitSignedHeaders(a.signedHeaders)
	sc := sigv4Scope{date: a.date, region: a.region, service: a.service}

	// Which canonicalisation did the sandbox's SDK use? The one under which
	// its signature verifies with the sentinel secret.
	variants := canonVariants(sc.service, r.URL)
	chosen, verified := variants[0], false
	if pair.SecretSentinel != "" {
		for _, o := range variants {
			c := canonicalRequest(r, signed, payloadHash, o)
			got := sigv4Signature(pair.SecretSentinel, sc, amzDate, c)
			if hmac.Equal([]byte(got), []byte(strings.ToLower(a.signature))) {
				chosen, verified = o, true
				break
			}
		}
	}

	// Swap the session token, then sign what will be sent.
	if pair.SessionTokenSentinel != "" {
		if vs, has := r.Header[hdrSecurityToken]; has {
			for i, v := range vs {
				vs[i] = strings.ReplaceAll(v, pair.SessionTokenSentinel, pair.SessionToken)
			}
		}
	}
	c := canonicalRequest(r, signed, payloadHash, chosen)
	sig := sigv4Signature(pair.Secret, sc, amzDate, c)
	r.Header.Set("Authorization", sigv4Algorithm+" Credential="+pair.AccessKeyID+"/"+sc.String()+
		", SignedHeaders="+a.signedHeaders+", Signature="+sig)
	return ResignResult{Resigned: true, Unverified: !verified}, nil
}

// safeToken returns s when it is a short token of [A-Za-z0-9-], for quoting
// in a reason; otherwise a placeholder.
func safeToken(s string) string {
	if len(s) == 0 || len(s) > 64 {
		return "x-amz-content-sha256 STREAMING-…"
	}
	for _, c := range s {
		if !(c == '-' || '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return "x-amz-content-sha256 STREAMING-…"
		}
	}
	return s
}

// MaxSigV4Skew is how far a request's date may be from now for sbx to
// re-sign it: AWS's own limit. A signature for another time would be
// replayable long after the run (a request dated years ahead, signed with
// the real key, and reflected back into the sandbox by the inject host).
const MaxSigV4Skew = 15 * time.Minute

// sigv4Now is the clock the date check reads (tests set it).
var sigv4Now = time.Now

// checkSigV4Date returns why a request dated amzDate (ISO 8601 basic),
// whose credential scope names the day scopeDate (YYYYMMDD), may not be
// re-signed at now, or "". The date must parse, be within MaxSigV4Skew
// of now, and be on the scope's day.
func checkSigV4Date(amzDate, scopeDate string, now time.Time) string {
	t, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return "SigV4 request with a masked AWS access key: its date is not YYYYMMDDTHHMMSSZ; not re-signed"
	}
	if d := t.Sub(now); d > MaxSigV4Skew || d < -MaxSigV4Skew {
		return fmt.Sprintf("SigV4 request with a masked AWS access key dated %s, more than %v from now (%s); not re-signed (check the sandbox's clock)",
			t.Format(time.RFC3339), MaxSigV4Skew, now.UTC().Format(time.RFC3339))
	}
	if day := t.Format("20060102"); scopeDate != day {
		return "SigV4 request with a masked AWS access key: its credential scope's date is not the day of its X-Amz-Date (" + day + "); not re-signed"
	}
	return ""
}

// requestTime returns the request's timestamp in ISO 8601 basic format:
// X-Amz-Date as sent, or the Date header converted.
func requestTime(r *http.Request) (string, bool) {
	if d := strings.TrimSpace(r.Header.Get(hdrAmzDate)); d != "" {
		return d, true
	}
	if d := strings.TrimSpace(r.Header.Get("Date")); d != "" {
		if t, err := http.ParseTime(d); err == nil {
			return t.UTC().Format(amzDateFormat), true
		}
	}
	return "", false
}

// hashBody reads r's body (at most maxBody bytes), puts the same bytes back
// and returns their hex SHA-256. A larger body is Denied and left readable in
// full; on a read error r.Body yields what was read and then the error.
func hashBody(r *http.Request, maxBody int64) (hash, denied string, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return hexSHA256(nil), "", nil
	}
	tooBig := fmt.Sprintf("request body larger than %d bytes cannot be hashed to re-sign SigV4 with the real AWS key (no x-amz-content-sha256 header)", maxBody)
	if r.ContentLength > maxBody {
		return "", tooBig, nil
	}
	orig := r.Body
	buf, err := io.ReadAll(io.LimitReader(orig, maxBody+1))
	switch {
	case err != nil:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), errReader{err}), orig}
		return "", "", fmt.Errorf("credentials: reading the request body to re-sign SigV4: %w", err)
	case int64(len(buf)) > maxBody:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), orig), orig}
		return "", tooBig, nil
	}
	r.Body = readCloser{bytes.NewReader(buf), orig}
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	r.ContentLength = int64(len(buf))
	return hexSHA256(buf), "", nil
}

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// presignedWithSentinel reports whether r's query is a presigned SigV4 URL
// (X-Amz-Credential or X-Amz-Signature) that carries a masked access key or
// session token.
func presignedWithSentinel(r *http.Request, pairs []AWSPair) bool {
	if r.URL == nil || r.URL.RawQuery == "" {
		return false
	}
	q, _ := url.ParseQuery(r.URL.RawQuery) // keeps what parses
	presigned := false
	for k := range q {
		if strings.EqualFold(k, "X-Amz-Credential") || strings.EqualFold(k, "X-Amz-Signature") {
			presigned = true
		}
	}
	if !presigned {
		return false
	}
	for _, vs := range q {
		for _, v := range vs {
			for _, p := range pairs {
				if p.AccessKeyIDSentinel != "" && strings.Contains(v, p.AccessKeyIDSentinel) ||
					p.SessionTokenSentinel != "" && strings.Contains(v, p.SessionTokenSentinel) {
					return true
				}
			}
		}
	}
	return false
}

// queryParam returns the first value of the query parameter named k
// (case-insensitively).
func queryParam(r *http.Request, k string) string {
	if r.URL == nil {
		return ""
	}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	for name, vs := range q {
		if strings.EqualFold(name, k) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// sigv4Scope is a credential scope: date/region/service/aws4_request.
type sigv4Scope struct{ date, region, service string }

func (s sigv4Scope) String() string {
	return s.date + "/" + s.region + "/" + s.service + "/" + sigv4Terminator
}

// signingKey derives the SigV4 signing key from a secret access key.
func signingKey(secret string, s sigv4Scope) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), s.date)
	k = hmacSHA256(k, s.region)
	k = hmacSHA256(k, s.service)
	return hmacSHA256(k, sigv4Terminator)
}

// stringToSign is the SigV4 string to sign for a canonical request.
func stringToSign(s sigv4Scope, amzDate, canonical string) string {
	return sigv4Algorithm + "\n" + amzDate + "\n" + s.String() + "\n" + hexSHA256([]byte(canonical))
}

// sigv4Signature is the hex signature of a canonical request.
func sigv4Signature(secret string, s sigv4Scope, amzDate, canonical string) string {
	return hex.EncodeToString(hmacSHA256(signingKey(secret, s), stringToSign(s, amzDate, canonical)))
}

// canonOpts are the rules that differ between services (and SDKs).
type canonOpts struct {
	// normalize removes "." and ".." segments and empty segments from the
	// path (every service but S3).
	normalize bool
	// encode URI-encodes the path as sent once more (every service but S3,
	// whose canonical path is the path as sent).
	encode bool
	// plusSpace decodes '+' in the query as a space (as url.ParseQuery
	// does) instead of a literal '+'.
	plusSpace bool
}

// isS3Service reports whether service signs its path as sent (S3 and its
// relatives).
func isS3Service(service string) bool {
	return service == "s3" || strings.HasPrefix(service, "s3-") || service == "s3express"
}

// canonVariants returns the canonicalisations to try, the service's own
// first.
func canonVariants(service string, u *url.URL) []canonOpts {
	def := canonOpts{normalize: true, encode: true}
	if isS3Service(service) {
		def = canonOpts{}
	}
	out := []canonOpts{def}
	plus := []bool{false}
	if u != nil && strings.Contains(u.RawQuery, "+") {
		plus = append(plus, true)
	}
	for _, ps := range plus {
		for _, o := range []canonOpts{{}, {normalize: true, encode: true}, {encode: true}, {normalize: true}} {
			o.plusSpace = ps
			if o != def {
				out = append(out, o)
			}
		}
	}
	return out
}

// splitSignedHeaders splits a SignedHeaders value into lowercase names.
func splitSignedHeaders(sh string) []string {
	var names []string
	for _, n := range strings.Split(sh, ";") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// canonicalRequest builds the SigV4 canonical request of r as it stands.
// signed are the lowercase signed header names, in the order of the
// request's SignedHeaders.
func canonicalRequest(r *http.Request, signed []string, payloadHash string, o canonOpts) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(requestPath(r.URL), o))
	b.WriteByte('\n')
	rawQuery := ""
	if r.URL != nil {
		rawQuery = r.URL.RawQuery
	}
	b.WriteString(canonicalQuery(rawQuery, o.plusSpace))
	b.WriteByte('\n')
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(canonicalHeaderValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// requestPath returns the path of u as it is sent on the wire (as
// URL.RequestURI writes it): the escaped path, or an opaque path.
func requestPath(u *url.URL) string {
	if u == nil {
		return "/"
	}
	if p := u.Opaque; p != "" {
		if strings.HasPrefix(p, "//") { // "//host/path"
			if i := strings.IndexByte(p[2:], '/'); i >= 0 {
				return p[2+i:]
			}
			return "/"
		}
		return p
	}
	return u.EscapedPath()
}

// canonicalURI is the canonical path: the path as sent, normalised and
// encoded as o says.
func canonicalURI(path string, o canonOpts) string {
	if path == "" {
		return "/"
	}
	if o.normalize {
		path = normalizePath(path)
	}
	if o.encode {
		path = uriEncode(path, false)
	}
	return path
}

// normalizePath removes empty, "." and ".." segments, keeping a trailing
// slash (RFC 3986 dot-segment removal, plus the collapse of repeated slashes
// AWS does for services other than S3).
func normalizePath(p string) string {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if len(segs) > 0 && strings.HasSuffix(p, "/") {
		out += "/"
	}
	return out
}

// uriEncode percent-encodes s as SigV4 does: every byte but the RFC 3986
// unreserved characters (A-Z a-z 0-9 - . _ ~) as %XX in upper case; '/' too
// when encodeSlash.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '/' && !encodeSlash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// canonicalQuery is the canonical query string of a raw query: each name and
// value decoded and re-encoded (RFC 3986), sorted by name then value, a
// missing value as "".
func canonicalQuery(raw string, plusSpace bool) string {
	if raw == "" {
		return ""
	}
	type kv struct{ k, v string }
	var pairs []kv
	for _, p := range strings.Split(raw, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		pairs = append(pairs, kv{uriEncode(queryDecode(k, plusSpace), true), uriEncode(queryDecode(v, plusSpace), true)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// queryDecode percent-decodes a query component; an invalid one is kept as
// is.
func queryDecode(s string, plusSpace bool) string {
	var d string
	var err error
	if plusSpace {
		d, err = url.QueryUnescape(s)
	} else {
		d, err = url.PathUnescape(s)
	}
	if err != nil {
		return s
	}
	return d
}

// canonicalHeaderValue is the canonical value of the signed header name
// (lowercase) in r: its values trimmed, inner runs of spaces collapsed, and
// joined with commas. Host, Content-Length and Transfer-Encoding, which
// net/http keeps outside r.Header, are taken from r.
func canonicalHeaderValue(r *http.Request, name string) string {
	var vs []string
	switch name {
	case "host":
		h := r.Host
		if h == "" && r.URL != nil {
			h = r.URL.Host
		}
		vs = []string{h}
	case "content-length":
		vs = r.Header.Values("Content-Length")
		if len(vs) == 0 && r.ContentLength >= 0 {
			vs = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		vs = r.Header.Values("Transfer-Encoding")
		if len(vs) == 0 {
			vs = r.TransferEncoding
		}
	default:
		vs = r.Header.Values(name)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = trimAll(v)
	}
	return strings.Join(out, ",")
}

// trimAll trims a header value and collapses its runs of spaces (and any
// line folding) into single spaces.
func trimAll(v string) string {
	v = strings.Trim(v, " \t\r\n")
	if !strings.ContainsAny(v, "\r\n") && !strings.Contains(v, "  ") {
		return v
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' || c == '\r' || c == '\n' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(c)
	}
	return b.String()
}
