package credentials

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBody is the largest textual request body an Injector rewrites
// when NewInjector is given 0.
const DefaultMaxBody = 1 << 20

// Injector puts real values back into outgoing requests in place of their
// sentinels. It is immutable after NewInjector and safe for concurrent use
// (provided its match function is). Printing it never shows a real value.
type Injector struct {
	secrets        []injSecret // longest sentinel first; sentinels unique and non-empty
	odd            []string    // sentinels lacking SentinelPrefix (short fake JWTs)
	defaultHosts   []string
	match          func(patterns []string, host string, port int) bool
	allowPlaintext bool
	maxBody        int64
}

// injSecret is a Secret as the Injector keeps it. The real value is behind a
// func, which fmt prints as an address even through reflection (an Injector
// in an unexported field, or a verb such as %d), so no way of printing an
// Injector shows it.
type injSecret struct {
	name     string
	sentinel string
	hosts    []string
	real     func() string
}

// Leak is a sentinel found in a request the Injector did not substitute: sent
// to a host not allowed to receive it, or over plain HTTP without
// AllowPlaintext. It names the secret, never its value.
type Leak struct {
	Name   string // the Secret's Name
	Host   string
	Port   int
	Where  string // "header X-Api-Key", "url" (path, query or userinfo) or "body"
	Reason string
}

// Leak reasons.
const (
	ReasonHost      = "host not allowed to receive this secret"
	ReasonPlaintext = "plain HTTP and allowPlaintextInject is off"
)

// NewInjector makes an Injector for secrets (as Mask returned them).
//
// defaultHosts apply to secrets with no Hosts (the caller passes its
// allowedDomains). match decides whether host:port matches a pattern list;
// the caller passes its own proxy's matcher, so the pattern syntax is the
// proxy's; a nil match allows no host. allowPlaintext is srt's
// credentials.allowPlaintextInject. maxBody bounds the textual request bodies
// Rewrite reads and rewrites (DefaultMaxBody when 0 or less).
//
// Secrets with an empty Sentinel are ignored; of secrets sharing a Sentinel
// the first wins. The slices are copied.
func NewInjector(secrets []Secret, defaultHosts []string, match func(patterns []string, host string, port int) bool, allowPlaintext bool, maxBody int64) *Injector {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	in := &Injector{
		defaultHosts:   append([]string(nil), defaultHosts...),
		match:          match,
		allowPlaintext: allowPlaintext,
		maxBody:        maxBody,
	}
	seen := map[string]bool{}
	for _, s := range secrets {
		if s.Sentinel == "" || seen[s.Sentinel] {
			continue
		}
		seen[s.Sentinel] = true
		real := s.Real
		in.secrets = append(in.secrets, injSecret{
			name:     s.Name,
			sentinel: s.Sentinel,
			hosts:    append([]string(nil), s.Hosts...),
			real:     func() string { return real },
		})
		if !strings.Contains(s.Sentinel, SentinelPrefix) {
			in.odd = append(in.odd, s.Sentinel)
		}
	}
	// Longest first, so that a sentinel inside another (never the case for
	// sentinels Mask makes) cannot break the longer one.
	sort.SliceStable(in.secrets, func(i, j int) bool { return len(in.secrets[i].sentinel) > len(in.secrets[j].sentinel) })
	return in
}

// Names returns the sorted, distinct Names of the Injector's secrets.
func (in *Injector) Names() []string {
	if in == nil {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range in.secrets {
		if !seen[s.name] {
			seen[s.name] = true
			names = append(names, s.name)
		}
	}
	sort.Strings(names)
	return names
}

// String describes the Injector without any real value. (String, GoString
// and Format have value receivers so that a copied Injector redacts too.)
func (in Injector) String() string {
	return fmt.Sprintf("credentials.Injector{secrets:%d names:%q defaultHosts:%q allowPlaintext:%t maxBody:%d}",
		len(in.secrets), in.Names(), in.defaultHosts, in.allowPlaintext, in.maxBody)
}

// GoString is String: an Injector has no Go syntax worth printing.
func (in Injector) GoString() string { return in.String() }

// Format implements fmt.Formatter so that no verb prints a real value.
func (in Injector) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		io.WriteString(f, strconv.Quote(in.String()))
		return
	}
	io.WriteString(f, in.String())
}

// present reports whether text may hold a sentinel.
func (in *Injector) present(text string) bool {
	if strings.Contains(text, SentinelPrefix) {
		return true
	}
	for _, o := range in.odd {
		if strings.Contains(text, o) {
			return true
		}
	}
	return false
}

// Rewrite substitutes sentinels with real values in r, which is about to be
// sent to host:port (terminated: over TLS the proxy terminated; false: plain
// HTTP). It returns the sentinels it left in place.
//
// It looks at:
//   - every header value except Proxy-Authorization (which is the proxy's own
//     and left alone); in "Authorization: Basic …" the credentials are
//     base64-decoded, substituted and re-encoded;
//   - the URL path, raw query and userinfo (the real value is path- or
//     query-escaped there, so it keeps its meaning); r.RequestURI is not
//     touched: forward requests by r.URL, as net/http clients do;
//   - the body, when the Content-Type is textual (text/*, application/json,
//     *+json, application/xml, *+xml, application/x-www-form-urlencoded,
//     application/javascript, application/graphql), there is no
//     Content-Encoding but identity, and the body is at most maxBody bytes.
//     The real value is escaped for the body's syntax (JSON string, XML text,
//     form encoding; raw otherwise). When the body changes, r.Body,
//     r.GetBody, r.ContentLength and any Content-Length header are set to
//     match and r.TransferEncoding is cleared. A larger, encoded or
//     non-textual body is passed on unchanged and streamed: at most
//     maxBody+1 bytes are buffered, and none when r.ContentLength already
//     exceeds maxBody. Such bodies are not scanned, so sentinels in them are
//     neither substituted nor reported.
//
// A sentinel is substituted only when host:port matches the secret's Hosts
// (or the default hosts) AND (terminated || allowPlaintext); otherwise it
// stays and a Leak is returned, one per secret and place. Sentinels that
// belong to no secret of the Injector (e.g. claim sentinels decoded from a
// fake JWT) are ignored. When no sentinel prefix occurs in the headers or URL
// and the body is not a textual one to scan, Rewrite returns quickly,
// changing nothing.
//
// Rewrite is safe for concurrent use on different requests.
func (in *Injector) Rewrite(r *http.Request, host string, port int, terminated bool) []Leak {
	if in == nil || len(in.secrets) == 0 || r == nil {
		return nil
	}
	rw := rewriter{in: in, host: host, port: port, terminated: terminated}

	var keys []string
	for k, vs := range r.Header {
		if http.CanonicalHeaderKey(k) == "Proxy-Authorization" {
			continue
		}
		for _, v := range vs {
			if in.present(v) || isBasic(k, v) {
				keys = append(keys, k)
				break
			}
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		where := "header " + http.CanonicalHeaderKey(k)
		vs := r.Header[k]
		for i, v := range vs {
			if isBasic(k, v) {
				vs[i] = rw.basic(v, where)
			} else if in.present(v) {
				vs[i] = rw.sub(v, where, identity)
			}
		}
	}

	if u := r.URL; u != nil {
		if p := u.EscapedPath(); in.present(p) {
			if np := rw.sub(p, "url", url.PathEscape); np != p {
				if dp, err := url.PathUnescape(np); err == nil {
					u.Path, u.RawPath = dp, np
				}
			}
		}
		if in.present(u.RawQuery) {
			u.RawQuery = rw.sub(u.RawQuery, "url", url.QueryEscape)
		}
		if u.User != nil {
			name := u.User.Username()
			pass, hasPass := u.User.Password()
			if in.present(name) || in.present(pass) {
				name = rw.sub(name, "url", identity)
				if hasPass {
					u.User = url.UserPassword(name, rw.sub(pass, "url", identity))
				} else {
					u.User = url.User(name)
				}
			}
		}
	}

	rw.body(r)
	return rw.leaks
}

// rewriter is the state of one Rewrite call.
type rewriter struct {
	in         *Injector
	host       string
	port       int
	terminated bool
	verdict    map[int]string // secret index → "" (allowed) or the Leak reason
	leaks      []Leak
	leaked     map[leakKey]bool
}

// leakKey identifies one reported Leak: a secret (by index) in one place.
type leakKey struct {
	secret int
	where  string
}

// allowed decides once per request whether secret i may go to the host.
func (rw *rewriter) allowed(i int) (bool, string) {
	if reason, ok := rw.verdict[i]; ok {
		return reason == "", reason
	}
	if rw.verdict == nil {
		rw.verdict = map[int]string{}
	}
	hosts := rw.in.secrets[i].hosts
	if len(hosts) == 0 {
		hosts = rw.in.defaultHosts
	}
	reason := ""
	switch {
	case rw.in.match == nil || !rw.in.match(hosts, rw.host, rw.port):
		reason = ReasonHost
	case !rw.terminated && !rw.in.allowPlaintext:
		reason = ReasonPlaintext
	}
	rw.verdict[i] = reason
	return reason == "", reason
}

// sub substitutes, in text, the sentinel of every secret allowed to the
// host with esc(real), and records a Leak for every other sentinel in it.
func (rw *rewriter) sub(text, where string, esc func(string) string) string {
	if !rw.in.present(text) {
		return text
	}
	for i := range rw.in.secrets {
		s := &rw.in.secrets[i]
		if !strings.Contains(text, s.sentinel) {
			continue
		}
		ok, reason := rw.allowed(i)
		if ok {
			text = strings.ReplaceAll(text, s.sentinel, esc(s.real()))
			continue
		}
		key := leakKey{i, where}
		if !rw.leaked[key] {
			if rw.leaked == nil {
				rw.leaked = map[leakKey]bool{}
			}
			rw.leaked[key] = true
			rw.leaks = append(rw.leaks, Leak{Name: s.name, Host: rw.host, Port: rw.port, Where: where, Reason: reason})
		}
	}
	return text
}

func identity(s string) string { return s }

// isBasic reports whether header k: v is HTTP Basic authorization.
func isBasic(k, v string) bool {
	return http.CanonicalHeaderKey(k) == "Authorization" && len(v) > 6 && strings.EqualFold(v[:6], "basic ")
}

// basic substitutes inside the base64 credentials of a Basic authorization
// value (and in the value itself, should a sentinel be there literally).
func (rw *rewriter) basic(v, where string) string {
	enc := strings.TrimSpace(v[6:])
	dec, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || !rw.in.present(string(dec)) {
		return rw.sub(v, where, identity)
	}
	nd := rw.sub(string(dec), where, identity)
	if nd == string(dec) {
		return v
	}
	return v[:6] + base64.StdEncoding.EncodeToString([]byte(nd))
}

// readCloser joins a reader with the Closer of the body it replaces.
type readCloser struct {
	io.Reader
	io.Closer
}

// errReader returns err once the buffered part of a body is consumed.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// body scans and rewrites a textual body of at most maxBody bytes.
func (rw *rewriter) body(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	esc, ok := bodyEscaper(r.Header.Get("Content-Type"))
	if !ok {
		return
	}
	if ce := strings.TrimSpace(r.Header.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		return
	}
	max := rw.in.maxBody
	if r.ContentLength > max {
		return
	}
	orig := r.Body
	buf, err := io.ReadAll(io.LimitReader(orig, max+1))
	switch {
	case err != nil:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), errReader{err}), orig}
		return
	case int64(len(buf)) > max:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), orig), orig}
		return
	}
	text := string(buf)
	nt := rw.sub(text, "body", esc)
	if nt == text {
		r.Body = readCloser{bytes.NewReader(buf), orig}
		return
	}
	orig.Close()
	nb := []byte(nt)
	r.Body = io.NopCloser(bytes.NewReader(nb))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(nb)), nil }
	r.ContentLength = int64(len(nb))
	r.TransferEncoding = nil
	if _, has := r.Header["Content-Length"]; has {
		r.Header.Set("Content-Length", strconv.Itoa(len(nb)))
	}
}

// bodyEscaper returns how to escape a real value in a body of content type
// ct, and false when ct is not textual.
func bodyEscaper(ct string) (func(string) string, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return jsonEscape, true
	case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml"):
		return xmlEscape, true
	case mt == "application/x-www-form-urlencoded":
		return url.QueryEscape, true
	case strings.HasPrefix(mt, "text/"), mt == "application/javascript", mt == "application/graphql":
		return identity, true
	}
	return nil, false
}

// jsonEscape escapes s for the inside of a JSON string.
func jsonEscape(s string) string {
	q := jsonString(s)
	return string(q[1 : len(q)-1])
}

// xmlEscape escapes s for XML text or an attribute value, as
// encoding/xml's EscapeText does (TestXMLEscapeAsEncodingXML): the five
// markup characters, tab, newline and carriage return as character
// references, and every rune XML cannot carry (invalid UTF-8 included) as
// U+FFFD. encoding/xml itself is not linked for this one function: its
// package initialisation is paid by every start (docs/benchmarks.md).
func xmlEscape(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
			}
		}
		i += width
		if esc == "" {
			continue
		}
		b.WriteString(s[last : i-width])
		b.WriteString(esc)
		last = i
	}
	b.WriteString(s[last:])
	return b.String()
}

// xmlChar reports whether r is in XML 1.0's Char production.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
