package credentials

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var sentinelRE = regexp.MustCompile(`^sbxsecret_[0-9a-f]{32}$`)
var sentinelAnyRE = regexp.MustCompile(`sbxsecret_[0-9a-f]{32}`)

// makeJWT builds a token from a header and payload JSON text and a signature
// of sigLen random-looking bytes.
func makeJWT(header, payload string, sigLen int) string {
	sig := make([]byte, sigLen)
	for i := range sig {
		sig[i] = byte(i*7 + 3)
	}
	e := base64.RawURLEncoding
	return e.EncodeToString([]byte(header)) + "." + e.EncodeToString([]byte(payload)) + "." + e.EncodeToString(sig)
}

type decodedJWT struct {
	headerSeg string
	header    string
	claims    map[string]any
	keys      []string // payload keys in order
	sigLen    int
	sigSeg    string
}

func decodeJWT(t *testing.T, tok string) decodedJWT {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("fake token has %d segments", len(parts))
	}
	e := base64.RawURLEncoding
	h, err := e.DecodeString(parts[0])
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	p, err := e.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("payload: %v", err)
	}
	s, err := e.DecodeString(parts[2])
	if err != nil {
		t.Fatalf("signature: %v", err)
	}
	d := decodedJWT{headerSeg: parts[0], header: string(h), sigLen: len(s), sigSeg: parts[2]}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if err := dec.Decode(&d.claims); err != nil {
		t.Fatalf("payload JSON %q: %v", p, err)
	}
	dec = json.NewDecoder(bytes.NewReader(p))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		d.keys = append(d.keys, k.(string))
		var v json.RawMessage
		dec.Decode(&v)
	}
	return d
}

const (
	jwtHeader  = `{"alg":"HS256","typ":"JWT"}`
	jwtPayload = `{"sub":"user-42","email":"a@b.example","exp":1900000000,"admin":true,"aud":["x","y"],"ctx":{"org":"acme"}}`
)

type maskResult struct {
	masked  string
	secrets []Secret
	removed bool
	note    string
	err     error
}

func TestMask(t *testing.T) {
	realJWT := makeJWT(jwtHeader, jwtPayload, 32)
	tokenRE := regexp.MustCompile(`token=([a-z0-9]+)`)
	cases := []struct {
		name  string
		value string
		spec  Spec
		check func(t *testing.T, value string, r maskResult)
	}{
		{
			name:  "whole value",
			value: "s3cr3t-VALUE",
			spec:  Spec{Name: "API_KEY", Hosts: []string{"api.example.com"}},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || r.note != "" {
					t.Fatalf("err=%v removed=%v note=%q", r.err, r.removed, r.note)
				}
				if !sentinelRE.MatchString(r.masked) {
					t.Fatalf("masked %q is not a sentinel", r.masked)
				}
				if len(r.secrets) != 1 {
					t.Fatalf("%d secrets", len(r.secrets))
				}
				s := r.secrets[0]
				if s.Name != "API_KEY" || s.Sentinel != r.masked || s.Real != value || len(s.Hosts) != 1 || s.Hosts[0] != "api.example.com" {
					t.Fatalf("secret %+v", s)
				}
			},
		},
		{
			name:  "empty value is left alone",
			value: "",
			spec:  Spec{Name: "EMPTY"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || r.masked != "" || r.secrets != nil || r.note == "" {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "extract one capture group",
			value: "https://host.example/cb?token=abc123&x=1",
			spec:  Spec{Name: "CB_URL", Extract: tokenRE},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || len(r.secrets) != 1 {
					t.Fatalf("err=%v removed=%v secrets=%d", r.err, r.removed, len(r.secrets))
				}
				s := r.secrets[0]
				if s.Real != "abc123" || !sentinelRE.MatchString(s.Sentinel) {
					t.Fatalf("secret %+v real ok=%v", s, s.Real == "abc123")
				}
				if want := "https://host.example/cb?token=" + s.Sentinel + "&x=1"; r.masked != want {
					t.Fatalf("masked %q, want %q", r.masked, want)
				}
			},
		},
		{
			name:  "extract several matches",
			value: "token=aaa1 token=bbb2 token=aaa1",
			spec:  Spec{Name: "MULTI", Extract: tokenRE},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || len(r.secrets) != 2 {
					t.Fatalf("err=%v secrets=%d", r.err, len(r.secrets))
				}
				a, b := r.secrets[0], r.secrets[1]
				if a.Real != "aaa1" || b.Real != "bbb2" || a.Sentinel == b.Sentinel {
					t.Fatalf("secrets wrong (reals ok: %v %v)", a.Real == "aaa1", b.Real == "bbb2")
				}
				if want := "token=" + a.Sentinel + " token=" + b.Sentinel + " token=" + a.Sentinel; r.masked != want {
					t.Fatalf("masked %q, want %q", r.masked, want)
				}
			},
		},
		{
			name:  "extract without a capture group is an error",
			value: "token=abc",
			spec:  Spec{Name: "NOGROUP", Extract: regexp.MustCompile(`token=[a-z]+`)},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err == nil {
					t.Fatal("no error")
				}
			},
		},
		{
			name:  "no match, warn",
			value: "nothing here",
			spec:  Spec{Name: "W", Extract: tokenRE, OnExtractNoMatch: "warn"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || r.masked != value || r.secrets != nil || !strings.Contains(r.note, "W:") {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "no match, default is warn",
			value: "nothing here",
			spec:  Spec{Name: "W", Extract: tokenRE},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || r.masked != value || r.secrets != nil || r.note == "" {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "no match, deny",
			value: "nothing here",
			spec:  Spec{Name: "D", Extract: tokenRE, OnExtractNoMatch: "deny"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || !r.removed || r.masked != "" || r.secrets != nil {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "no match, error",
			value: "nothing here",
			spec:  Spec{Name: "E", Extract: tokenRE, OnExtractNoMatch: "error"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err == nil || r.removed || r.secrets != nil || !strings.Contains(r.err.Error(), "E") {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "unknown onExtractNoMatch",
			value: "some-value",
			spec:  Spec{Name: "U", OnExtractNoMatch: "ignore"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err == nil {
					t.Fatal("no error")
				}
			},
		},
		{
			name:  "JWT whole token",
			value: realJWT,
			spec:  Spec{Name: "JWT", DecodeJWT: true},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || len(r.secrets) != 1 {
					t.Fatalf("err=%v removed=%v secrets=%d", r.err, r.removed, len(r.secrets))
				}
				if s := r.secrets[0]; s.Sentinel != r.masked || s.Real != value {
					t.Fatalf("secret does not map the fake token to the real one")
				}
				d := decodeJWT(t, r.masked)
				if d.header != jwtHeader || d.headerSeg != strings.Split(value, ".")[0] {
					t.Fatalf("header %q not kept", d.header)
				}
				if d.sigLen != 32 || !strings.HasPrefix(d.sigSeg, SentinelPrefix) || d.sigSeg == strings.Split(value, ".")[2] {
					t.Fatalf("signature len %d seg %q", d.sigLen, d.sigSeg)
				}
				for _, k := range []string{"sub", "email"} {
					if v, _ := d.claims[k].(string); !sentinelRE.MatchString(v) {
						t.Fatalf("claim %s = %v, want a sentinel", k, d.claims[k])
					}
				}
				if d.claims["exp"] != json.Number("1900000000") || d.claims["admin"] != true {
					t.Fatalf("non-string claims not kept: %v %v", d.claims["exp"], d.claims["admin"])
				}
				aud, _ := d.claims["aud"].([]any)
				if len(aud) != 2 || !sentinelRE.MatchString(fmt.Sprint(aud[0])) || !sentinelRE.MatchString(fmt.Sprint(aud[1])) {
					t.Fatalf("aud %v", d.claims["aud"])
				}
				ctx, _ := d.claims["ctx"].(map[string]any)
				if org, _ := ctx["org"].(string); !sentinelRE.MatchString(org) {
					t.Fatalf("ctx %v", d.claims["ctx"])
				}
				if strings.Join(d.keys, ",") != "sub,email,exp,admin,aud,ctx" {
					t.Fatalf("claim order %v", d.keys)
				}
			},
		},
		{
			name:  "JWT maskClaims",
			value: realJWT,
			spec:  Spec{Name: "JWT", DecodeJWT: true, MaskClaims: []string{"sub", "missing"}},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || len(r.secrets) != 1 || r.secrets[0].Sentinel != r.masked || r.secrets[0].Real != value {
					t.Fatalf("err=%v secrets=%d", r.err, len(r.secrets))
				}
				d := decodeJWT(t, r.masked)
				if d.header != jwtHeader {
					t.Fatalf("header %q", d.header)
				}
				if v, _ := d.claims["sub"].(string); !sentinelRE.MatchString(v) {
					t.Fatalf("sub = %v, want a sentinel", d.claims["sub"])
				}
				if d.claims["email"] != "a@b.example" || d.claims["exp"] != json.Number("1900000000") {
					t.Fatalf("unmasked claims changed: %v", d.claims)
				}
				if ctx, _ := d.claims["ctx"].(map[string]any); ctx["org"] != "acme" {
					t.Fatalf("ctx changed: %v", d.claims["ctx"])
				}
				if d.sigLen != 32 || d.sigSeg == strings.Split(value, ".")[2] {
					t.Fatalf("signature len %d", d.sigLen)
				}
				if _, ok := d.claims["missing"]; ok {
					t.Fatal("absent claim added")
				}
			},
		},
		{
			name:  "JWT maskClaims on a non-string claim masks the whole token",
			value: realJWT,
			spec:  Spec{Name: "JWT", DecodeJWT: true, MaskClaims: []string{"ctx"}},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || len(r.secrets) != 1 || r.note == "" {
					t.Fatalf("err=%v secrets=%d note=%q", r.err, len(r.secrets), r.note)
				}
				d := decodeJWT(t, r.masked)
				if v, _ := d.claims["email"].(string); !sentinelRE.MatchString(v) {
					t.Fatalf("email = %v, want a sentinel", d.claims["email"])
				}
			},
		},
		{
			name:  "JWT maskClaims none present replaces the signature",
			value: realJWT,
			spec:  Spec{Name: "JWT", DecodeJWT: true, MaskClaims: []string{"nope"}},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || len(r.secrets) != 1 || r.note == "" || r.masked == value {
					t.Fatalf("err=%v secrets=%d note=%q", r.err, len(r.secrets), r.note)
				}
				d := decodeJWT(t, r.masked)
				if d.claims["sub"] != "user-42" || d.sigLen != 32 {
					t.Fatalf("claims %v sig %d", d.claims, d.sigLen)
				}
			},
		},
		{
			name:  "JWT short signature",
			value: makeJWT(jwtHeader, `{"sub":"x"}`, 4),
			spec:  Spec{Name: "JWT", DecodeJWT: true},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || len(r.secrets) != 1 {
					t.Fatalf("err=%v secrets=%d", r.err, len(r.secrets))
				}
				if d := decodeJWT(t, r.masked); d.sigLen != 4 {
					t.Fatalf("sig len %d", d.sigLen)
				}
			},
		},
		{
			name:  "not a JWT, warn",
			value: "plain-token-value",
			spec:  Spec{Name: "NJ", DecodeJWT: true},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || r.removed || r.masked != value || r.secrets != nil || r.note == "" {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "three segments but not JSON, deny",
			value: "aaaa.bbbb.cccc",
			spec:  Spec{Name: "NJ", DecodeJWT: true, OnExtractNoMatch: "deny"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || !r.removed || r.secrets != nil {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "header without alg, error",
			value: makeJWT(`{"typ":"JWT"}`, `{"sub":"x"}`, 32),
			spec:  Spec{Name: "NJ", DecodeJWT: true, OnExtractNoMatch: "error"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err == nil || r.secrets != nil {
					t.Fatalf("%+v", r)
				}
			},
		},
		{
			name:  "extract and JWT",
			value: "oauth_token: " + realJWT + "\nuser: me\n",
			spec:  Spec{Name: "hosts.yml", Extract: regexp.MustCompile(`oauth_token:\s*(\S+)`), DecodeJWT: true, MaskClaims: []string{"sub"}},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || len(r.secrets) != 1 {
					t.Fatalf("err=%v secrets=%d", r.err, len(r.secrets))
				}
				if want := "oauth_token: " + r.secrets[0].Sentinel + "\nuser: me\n"; r.masked != want {
					t.Fatalf("masked %q, want %q", r.masked, want)
				}
				decodeJWT(t, r.secrets[0].Sentinel)
			},
		},
		{
			name:  "extract and JWT, span not a JWT",
			value: "oauth_token: notajwt\n",
			spec:  Spec{Name: "hosts.yml", Extract: regexp.MustCompile(`oauth_token:\s*(\S+)`), DecodeJWT: true, OnExtractNoMatch: "deny"},
			check: func(t *testing.T, value string, r maskResult) {
				if r.err != nil || !r.removed {
					t.Fatalf("%+v", r)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r maskResult
			r.masked, r.secrets, r.removed, r.note, r.err = Mask(c.value, c.spec)
			c.check(t, c.value, r)
			if c.value != "" {
				if r.err != nil && strings.Contains(r.err.Error(), c.value) {
					t.Errorf("error contains the value")
				}
				if strings.Contains(r.note, c.value) {
					t.Errorf("note contains the value")
				}
				for _, s := range r.secrets {
					if s.Real != "" && strings.Contains(r.masked, s.Real) {
						t.Errorf("masked value still contains a real value")
					}
				}
			}
		})
	}
}

func TestSentinelsUniqueAndWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		m, s, _, _, err := Mask("same-value", Spec{Name: "X"})
		if err != nil || len(s) != 1 {
			t.Fatalf("err=%v", err)
		}
		if !sentinelRE.MatchString(m) || !IsSentinel(m) {
			t.Fatalf("bad sentinel %q", m)
		}
		if seen[m] {
			t.Fatalf("sentinel %q repeated", m)
		}
		seen[m] = true
	}
	for _, bad := range []string{"", "sbxsecret_", "sbxsecret_0123456789ABCDEF0123456789abcdef", "xbxsecret_0123456789abcdef0123456789abcdef", "sbxsecret_0123456789abcdef0123456789abcde"} {
		if IsSentinel(bad) {
			t.Errorf("IsSentinel(%q) = true", bad)
		}
	}
	a, _, _, _, _ := Mask(makeJWT(jwtHeader, jwtPayload, 32), Spec{Name: "J", DecodeJWT: true})
	b, _, _, _, _ := Mask(makeJWT(jwtHeader, jwtPayload, 32), Spec{Name: "J", DecodeJWT: true})
	if a == b {
		t.Fatal("two fakes of one JWT are equal")
	}
}

func TestMaskFile(t *testing.T) {
	cases := []struct {
		name    string
		content string
		spec    Spec
		want    func(secrets []Secret) string // "" with removed
		removed bool
		real    []string
	}{
		{
			name:    "whole file keeps its trailing newline",
			content: "tok-123\n",
			spec:    Spec{Name: "/home/u/.token"},
			want:    func(s []Secret) string { return s[0].Sentinel + "\n" },
			real:    []string{"tok-123"},
		},
		{
			name:    "extract in a file",
			content: "host: github.com\noauth_token: gho_abc\nuser: me\n",
			spec:    Spec{Name: "hosts.yml", Extract: regexp.MustCompile(`oauth_token:\s*(\S+)`)},
			want:    func(s []Secret) string { return "host: github.com\noauth_token: " + s[0].Sentinel + "\nuser: me\n" },
			real:    []string{"gho_abc"},
		},
		{
			name:    "deny removes the file",
			content: "nothing\n",
			spec:    Spec{Name: "f", Extract: regexp.MustCompile(`token=(\S+)`), OnExtractNoMatch: "deny"},
			removed: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, secrets, removed, _, err := MaskFile([]byte(c.content), c.spec)
			if err != nil || removed != c.removed {
				t.Fatalf("err=%v removed=%v", err, removed)
			}
			if c.removed {
				if m != nil || secrets != nil {
					t.Fatal("removed file still has content or secrets")
				}
				return
			}
			if len(secrets) != len(c.real) {
				t.Fatalf("%d secrets", len(secrets))
			}
			for i, r := range c.real {
				if secrets[i].Real != r {
					t.Fatalf("secret %d has the wrong real value", i)
				}
			}
			if want := c.want(secrets); string(m) != want {
				t.Fatalf("masked %q, want %q", m, want)
			}
		})
	}
}

func TestSecretNeverPrintsReal(t *testing.T) {
	const real = "REAL-VALUE-DO-NOT-PRINT"
	_, secrets, _, _, err := Mask(real, Spec{Name: "API_KEY", Hosts: []string{"a.example"}})
	if err != nil {
		t.Fatal(err)
	}
	s := secrets[0]
	type holder struct {
		S  Secret
		P  *Secret
		SS []Secret
	}
	type hidden struct {
		inj Injector
		p   *Injector
	}
	inj := NewInjector(secrets, []string{"a.example"}, exactOrSuffix, false, 0)
	var outs []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		outs = append(outs,
			fmt.Sprintf(f, s), fmt.Sprintf(f, &s), fmt.Sprintf(f, secrets),
			fmt.Sprintf(f, holder{s, &s, secrets}), fmt.Sprintf(f, inj), fmt.Sprintf(f, *inj),
			fmt.Sprintf(f, hidden{*inj, inj}), fmt.Sprintf(f, []any{inj, *inj}))
	}
	outs = append(outs, s.String(), s.GoString(), inj.String(), fmt.Sprint(s), fmt.Sprintln(secrets))
	for _, v := range []any{s, &s, secrets, holder{s, &s, secrets}, inj} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(b))
	}
	for _, o := range outs {
		if strings.Contains(o, real) {
			t.Fatalf("real value printed: %s", strings.ReplaceAll(o, real, "<<REAL>>"))
		}
	}
	if !strings.Contains(fmt.Sprintf("%+v", s), s.Sentinel) || !strings.Contains(fmt.Sprintf("%v", s), "API_KEY") {
		t.Fatal("redacted form lost the name or sentinel")
	}
	if !strings.Contains(fmt.Sprintf("%#v", s), "credentials.Secret{") {
		t.Fatalf("%%#v = %#v", s)
	}
}

// TestMaskExtractJWTEveryCapture: with extract and decode "jwt", every
// captured span that is not a JWT follows onExtractNoMatch, not just the
// case where no span is one. The realistic shape is an OAuth cache with a
// JWT access token next to an opaque refresh token.
func TestMaskExtractJWTEveryCapture(t *testing.T) {
	access := makeJWT(jwtHeader, jwtPayload, 32)
	const refresh = "opaqueREFRESHtoken0123456789"
	value := `{"access_token":"` + access + `","refresh_token":"` + refresh + `"}`
	re := regexp.MustCompile(`"(?:access|refresh)_token":"([^"]+)"`)
	mask := func(mode string) maskResult {
		var r maskResult
		r.masked, r.secrets, r.removed, r.note, r.err = Mask(value, Spec{Name: "oauth.json", Extract: re, DecodeJWT: true, OnExtractNoMatch: mode})
		if r.err != nil && (strings.Contains(r.err.Error(), refresh) || strings.Contains(r.err.Error(), access)) {
			t.Errorf("%s: the error contains a real value", mode)
		}
		if strings.Contains(r.note, refresh) || strings.Contains(r.note, access) {
			t.Errorf("%s: the note contains a real value", mode)
		}
		return r
	}
	// deny (sbx's default): the whole value stays out, as when nothing
	// matches at all.
	if r := mask("deny"); r.err != nil || !r.removed || r.masked != "" || r.secrets != nil || !strings.Contains(r.note, "1 of 2") {
		t.Fatalf("deny: %+v", r)
	}
	// error: refused, nothing returned.
	if r := mask("error"); r.err == nil || r.masked != "" || r.secrets != nil {
		t.Fatalf("error: %+v", r)
	}
	// warn: the JWT is masked, the opaque token passes, and the note says so.
	r := mask("warn")
	if r.err != nil || r.removed || len(r.secrets) != 1 || r.secrets[0].Real != access || !strings.Contains(r.note, "left unmasked") {
		t.Fatalf("warn: %+v", r)
	}
	if want := `{"access_token":"` + r.secrets[0].Sentinel + `","refresh_token":"` + refresh + `"}`; r.masked != want {
		t.Fatalf("warn: masked %q, want %q", r.masked, want)
	}
	// The same through MaskFile (credentials.files).
	m, sec, removed, _, err := MaskFile([]byte(value+"\n"), Spec{Name: "oauth.json", Extract: re, DecodeJWT: true, OnExtractNoMatch: "deny"})
	if err != nil || !removed || m != nil || sec != nil {
		t.Fatalf("MaskFile deny: removed=%v masked=%q secrets=%d err=%v", removed, m, len(sec), err)
	}
}
