package credentials

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// fakeJWT returns a structurally valid fake of token (see Mask) and notes
// about it. ok is false when token is not a JWT, or when the fake would equal
// the token (an unsigned token with nothing to mask). Notes never contain
// claim values.
func fakeJWT(token string, maskClaims []string) (fake string, notes []string, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", nil, false
	}
	header, _, err := decodeSegment(parts[0])
	if err != nil || !isJSONObject(header) {
		return "", nil, false
	}
	var h map[string]json.RawMessage
	if json.Unmarshal(header, &h) != nil {
		return "", nil, false
	}
	if alg, found := h["alg"]; !found || len(alg) == 0 || alg[0] != '"' {
		return "", nil, false
	}
	payload, payloadPad, err := decodeSegment(parts[1])
	if err != nil || !isJSONObject(payload) {
		return "", nil, false
	}
	sig, sigPad, err := decodeSegment(parts[2])
	if err != nil {
		return "", nil, false
	}

	var newPayload []byte
	if len(maskClaims) == 0 {
		newPayload, err = maskAllStrings(payload)
	} else {
		want := make(map[string]bool, len(maskClaims))
		for _, c := range maskClaims {
			want[c] = true
		}
		hit, nonString := 0, ""
		newPayload, err = walkObject(payload, func(key string, v json.RawMessage) (json.RawMessage, error) {
			if !want[key] {
				return v, nil
			}
			hit++
			if v[0] != '"' {
				if nonString == "" {
					nonString = key
				}
				return v, nil
			}
			return jsonString(newSentinel()), nil
		})
		switch {
		case err != nil:
		case nonString != "":
			notes = append(notes, "claim "+quoteName(nonString)+" is not a string; the whole token was masked")
			newPayload, err = maskAllStrings(payload)
		case hit == 0:
			notes = append(notes, "none of maskClaims is in the token; only its signature was replaced")
		}
	}
	if err != nil {
		return "", nil, false
	}
	fake = parts[0] + "." + encodeSegment(newPayload, payloadPad) + "." + encodeSegment(fakeSignature(len(sig)), sigPad)
	if fake == token {
		return "", nil, false
	}
	return fake, notes, true
}

// quoteName quotes a claim name for a note, shortened so that a hostile
// payload cannot flood the log.
func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return string(jsonString(s))
}

// decodeSegment decodes one base64url JWT segment. Padding is not part of
// JWTs but is tolerated; its length is returned so the fake keeps it.
func decodeSegment(seg string) ([]byte, int, error) {
	trimmed := strings.TrimRight(seg, "=")
	b, err := base64.RawURLEncoding.DecodeString(trimmed)
	return b, len(seg) - len(trimmed), err
}

func encodeSegment(b []byte, pad int) string {
	return base64.RawURLEncoding.EncodeToString(b) + strings.Repeat("=", pad)
}

// fakeSignature returns n bytes, random except that, when n >= 9, the first
// nine encode to SentinelPrefix and two random characters, so the fake token
// carries the prefix the Injector looks for.
func fakeSignature(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	if n >= 9 {
		var r [2]byte
		rand.Read(r[:])
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		head, err := base64.RawURLEncoding.DecodeString(SentinelPrefix + string(alphabet[r[0]&63]) + string(alphabet[r[1]&63]))
		if err == nil && len(head) == 9 {
			copy(b, head)
		}
	}
	return b
}

func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// maskAllStrings replaces every string value in the JSON value v, at any
// depth, with a fresh sentinel; object keys, numbers, booleans and null stay.
func maskAllStrings(v json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimLeft(v, " \t\r\n")
	if len(t) == 0 {
		return nil, errors.New("empty JSON value")
	}
	switch t[0] {
	case '"':
		return jsonString(newSentinel()), nil
	case '{':
		return walkObject(t, func(_ string, e json.RawMessage) (json.RawMessage, error) { return maskAllStrings(e) })
	case '[':
		return walkArray(t, maskAllStrings)
	default:
		return v, nil
	}
}

// walkObject rebuilds the JSON object raw, keeping key order and duplicates,
// with each value replaced by f's result. Values handed to f are never empty.
func walkObject(raw []byte, f func(key string, v json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("bad JSON object key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		v = bytes.TrimSpace(v)
		if len(v) == 0 {
			return nil, errors.New("empty JSON value")
		}
		nv, err := f(key, v)
		if err != nil {
			return nil, err
		}
		if !first {
			out.WriteByte(',')
		}
		out.Write(jsonString(key))
		out.WriteByte(':')
		out.Write(nv)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("unterminated JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON object")
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// walkArray rebuilds the JSON array raw with each element replaced by f's
// result.
func walkArray(raw []byte, f func(v json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("not a JSON array")
	}
	var out bytes.Buffer
	out.WriteByte('[')
	for first := true; dec.More(); first = false {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		nv, err := f(bytes.TrimSpace(v))
		if err != nil {
			return nil, err
		}
		if !first {
			out.WriteByte(',')
		}
		out.Write(nv)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, errors.New("unterminated JSON array")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON array")
	}
	out.WriteByte(']')
	return out.Bytes(), nil
}
