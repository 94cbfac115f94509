package credentials

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// SentinelPrefix begins every sentinel Mask makes for a plain value (and the
// signature of every fake JWT long enough to hold it), so a request without it
// can be let through quickly.
const SentinelPrefix = "sbxsecret_"

// sentinelBytes is the number of random bytes in a sentinel (128 bits).
const sentinelBytes = 16

// newSentinel returns SentinelPrefix followed by 32 lowercase hex digits from
// crypto/rand. Only [a-z0-9_] are used, so a sentinel needs no escaping in a
// shell word, a URL, a JSON string or a header value.
func newSentinel() string {
	var b [sentinelBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return SentinelPrefix + hex.EncodeToString(b[:])
}

// IsSentinel reports whether s has the form of a plain sentinel made by Mask
// (SentinelPrefix and 32 lowercase hex digits). Fake JWTs are not plain
// sentinels.
func IsSentinel(s string) bool {
	if len(s) != len(SentinelPrefix)+2*sentinelBytes || !strings.HasPrefix(s, SentinelPrefix) {
		return false
	}
	for _, c := range s[len(SentinelPrefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Secret is one real value and the sentinel that stands for it in the sandbox.
//
// The real value is never printed: String, GoString and Format redact it for
// every fmt verb (%v, %+v, %#v, %s, %q, …) and encoding/json skips it.
type Secret struct {
	// Name is the environment variable (or file path) the value came from,
	// for records; never the value.
	Name string
	// Sentinel is what the sandbox sees in place of Real: a plain sentinel
	// ("sbxsecret_" and 32 lowercase hex digits) or, for decode "jwt", a
	// whole fake token.
	Sentinel string
	// Real is the secret value. It is put back only by an Injector.
	Real string `json:"-"`
	// Hosts are srt's injectHosts patterns, in the syntax of the matcher
	// given to NewInjector. Empty means the Injector's default hosts.
	Hosts []string
}

// redacted stands for a real value wherever a Secret is printed.
const redacted = "<redacted>"

// String describes s without its real value.
func (s Secret) String() string {
	return fmt.Sprintf("{Name:%s Sentinel:%s Real:%s Hosts:%v}", s.Name, s.Sentinel, redacted, s.Hosts)
}

// GoString describes s as Go syntax (for %#v) without its real value.
func (s Secret) GoString() string {
	return fmt.Sprintf("credentials.Secret{Name:%q, Sentinel:%q, Real:%q, Hosts:%#v}", s.Name, s.Sentinel, redacted, s.Hosts)
}

// Format implements fmt.Formatter so that no verb or flag prints the real
// value: %#v prints GoString, %q a quoted String, every other verb String.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, s.GoString())
	case verb == 'q':
		io.WriteString(f, strconv.Quote(s.String()))
	default:
		io.WriteString(f, s.String())
	}
}

// Spec is how to mask one value: srt's credentials.envVars[] or
// credentials.files[] entry with mode "mask", already validated by the caller.
type Spec struct {
	// Name is the environment variable or file path, copied into every
	// Secret and note for records.
	Name string
	// Extract, when set, masks only capture group 1 of each match (srt's
	// extract). It must have at least one capture group. Nil masks the whole
	// value.
	Extract *regexp.Regexp
	// OnExtractNoMatch is what happens when Extract matches nothing, or when
	// DecodeJWT finds that the value, or any one captured span, is not a
	// JWT: "warn" (or empty: mask what can be masked, keep the rest as is
	// and say so in the note), "deny" (remove the value entirely) or
	// "error".
	OnExtractNoMatch string
	// DecodeJWT says the value (or each captured span) is a JWT: it is
	// replaced by a structurally valid fake JWT (srt's decode: "jwt").
	DecodeJWT bool
	// MaskClaims, with DecodeJWT, lists the top-level payload claims to mask;
	// the other claims are kept as they are. Empty masks the whole token.
	MaskClaims []string
	// Hosts are srt's injectHosts, copied into every Secret.
	Hosts []string
}

// Mask masks value as s says and returns the masked value and the secrets it
// made (to give to NewInjector).
//
// Sentinels are unique per call and unguessable (128 bits from crypto/rand)
// and look like "sbxsecret_<32 lowercase hex>", so they survive shells, URLs,
// JSON and headers unescaped.
//
// Without Extract the whole value is masked (an empty value is left as is,
// with a note). With Extract, only capture group 1 of each match is replaced;
// spans that are equal share one sentinel, and empty or non-participating
// groups are skipped. If nothing is masked, s.OnExtractNoMatch decides: "warn"
// → (value unchanged, nil secrets, a note), "deny" → (removed=true),
// "error" → an error.
//
// With DecodeJWT the value (or each captured span) must be a JWT: three
// base64url segments header.payload.signature whose header is a JSON object
// with "alg" and whose payload is a JSON object. The fake token keeps the
// header segment as it is, keeps unmasked claims (and their order), replaces
// masked claims' values with sentinels, and replaces the signature with
// random bytes of the same length (whose encoding begins with SentinelPrefix
// when the signature has at least 9 bytes). With MaskClaims only the listed
// claims present in the payload are masked, and they must be strings: a
// listed claim with any other JSON type masks the whole token instead (with a
// note); if no listed claim is present only the signature is replaced (with a
// note). Masking the whole token replaces every string in the payload, at any
// depth, and keeps numbers, booleans and null (so exp, iat and nbf still
// work).
//
// For a JWT exactly one Secret is made: its Sentinel is the whole fake token
// and its Real the real token, so a request carrying the fake token gets the
// real one. The claim sentinels inside the fake payload are NOT secrets of
// their own and are never injected: a command that decodes the fake token
// and sends a claim on its own sends the sentinel. A value, or any one
// captured span, that is not a JWT makes OnExtractNoMatch decide as above,
// even when other spans are JWTs: "deny" removes the whole value (no
// secrets), "error" refuses, and "warn" returns the value with the JWT spans
// masked (and their secrets) and the others as they are, with a note.
//
// Neither the error nor the note ever contains the real value.
func Mask(value string, s Spec) (masked string, secrets []Secret, removed bool, note string, err error) {
	switch s.OnExtractNoMatch {
	case "", "warn", "deny", "error":
	default:
		return "", nil, false, "", fmt.Errorf("credentials: %s: unknown onExtractNoMatch %q", s.Name, s.OnExtractNoMatch)
	}
	m := &masker{spec: s}
	if s.Extract != nil {
		if s.Extract.NumSubexp() < 1 {
			return "", nil, false, "", fmt.Errorf("credentials: %s: extract pattern has no capture group", s.Name)
		}
		return m.extract(value)
	}
	if value == "" {
		return value, nil, false, s.Name + ": empty value; nothing to mask", nil
	}
	repl, ok := m.one(value)
	if !ok {
		return m.noMatch(value, "value is not a maskable JWT")
	}
	return repl, m.secrets, false, m.noteText(), nil
}

// MaskFile is Mask applied to a file's contents (srt's credentials.files[]):
// the same rules, on the whole text. Without Extract, trailing line breaks are
// not part of the secret: they stay in the masked file after the sentinel (so
// a token file "abc\n" becomes "sbxsecret_…\n" and the proxy injects "abc").
// When removed is true, masked is nil and the caller should deny the file.
func MaskFile(content []byte, s Spec) (masked []byte, secrets []Secret, removed bool, note string, err error) {
	text, tail := string(content), ""
	if s.Extract == nil {
		body := strings.TrimRight(text, "\r\n")
		text, tail = body, text[len(body):]
	}
	out, secrets, removed, note, err := Mask(text, s)
	if err != nil || removed {
		return nil, nil, removed, note, err
	}
	return []byte(out + tail), secrets, false, note, nil
}

// masker collects the secrets and notes of one Mask call.
type masker struct {
	spec    Spec
	secrets []Secret
	notes   []string
}

func (m *masker) note(format string, args ...any) {
	m.notes = append(m.notes, m.spec.Name+": "+fmt.Sprintf(format, args...))
}

func (m *masker) noteText() string { return strings.Join(m.notes, "; ") }

// add records a secret; the Hosts slice is copied so callers cannot alias it.
func (m *masker) add(sentinel, real string) {
	var hosts []string
	if len(m.spec.Hosts) > 0 {
		hosts = append([]string(nil), m.spec.Hosts...)
	}
	m.secrets = append(m.secrets, Secret{Name: m.spec.Name, Sentinel: sentinel, Real: real, Hosts: hosts})
}

// one masks one whole value (or captured span): a plain sentinel, or with
// DecodeJWT a fake JWT. ok is false when DecodeJWT is set and v is not a JWT
// (or the JWT has nothing that could be masked).
func (m *masker) one(v string) (string, bool) {
	if !m.spec.DecodeJWT {
		sent := newSentinel()
		m.add(sent, v)
		return sent, true
	}
	fake, notes, ok := fakeJWT(v, m.spec.MaskClaims)
	if !ok {
		return "", false
	}
	for _, n := range notes {
		m.note("%s", n)
	}
	m.add(fake, v)
	return fake, true
}

// extract masks capture group 1 of every match of m.spec.Extract.
func (m *masker) extract(value string) (string, []Secret, bool, string, error) {
	var b strings.Builder
	last, n, notJWT := 0, 0, 0
	seen := map[string]string{} // captured span → its replacement ("" = not a JWT)
	for _, loc := range m.spec.Extract.FindAllStringSubmatchIndex(value, -1) {
		st, en := loc[2], loc[3]
		if st < 0 || st == en {
			continue
		}
		span := value[st:en]
		repl, done := seen[span]
		if !done {
			var ok bool
			repl, ok = m.one(span)
			if !ok {
				repl = ""
			}
			seen[span] = repl
		}
		if repl == "" {
			notJWT++
			continue
		}
		b.WriteString(value[last:st])
		b.WriteString(repl)
		last = en
		n++
	}
	b.WriteString(value[last:])
	switch {
	case notJWT > 0 && n == 0:
		return m.noMatch(value, "no captured span is a maskable JWT")
	case notJWT > 0:
		// Every capture that cannot be masked counts, not only the case
		// where none can: an OAuth cache holds a JWT access token next
		// to an opaque refresh token, and the refresh token must not
		// slip in because its neighbour was masked.
		return m.noMatch(b.String(), fmt.Sprintf("%d of %d captured spans are not maskable JWTs", notJWT, n+notJWT))
	case n == 0:
		return m.noMatch(value, "extract pattern matched nothing")
	}
	return b.String(), m.secrets, false, m.noteText(), nil
}

// noMatch applies OnExtractNoMatch when some or all of the value could
// not be masked: "deny" removes the whole value (and drops the secrets
// made so far), "error" refuses, "warn" returns partial — the value with
// whatever could be masked masked — and the secrets made for it. why
// never contains the value.
func (m *masker) noMatch(partial, why string) (string, []Secret, bool, string, error) {
	switch m.spec.OnExtractNoMatch {
	case "deny":
		return "", nil, true, m.spec.Name + ": " + why + "; value removed", nil
	case "error":
		return "", nil, false, "", fmt.Errorf("credentials: %s: %s", m.spec.Name, why)
	default: // "warn", ""
		m.note("%s; left unmasked", why)
		return partial, m.secrets, false, m.noteText(), nil
	}
}
