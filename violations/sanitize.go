package violations

import (
	"unicode"
	"unicode/utf8"
)

// Field limits, in bytes of UTF-8, ellipsis included.
const (
	MaxField   = 4096 // any string field of a Record
	MaxCommand = 256  // Record.Command
)

// Ellipsis ends a truncated field.
const Ellipsis = "…"

// Sanitize returns s as Add stores it: every character that could change
// how the surrounding text is displayed or parsed becomes U+FFFD — C0 and C1
// control characters and DEL, Unicode format characters (category Cf, which
// includes the bidi controls U+202A–U+202E, U+2066–U+2069, U+200E, U+200F
// and U+061C, zero-width characters, the BOM and tag characters), the line
// and paragraph separators U+2028 and U+2029, and every byte that is not
// valid UTF-8 — and the result is cut on a rune boundary to at most max
// bytes, ending in Ellipsis when cut. A max below len(Ellipsis) is taken as
// len(Ellipsis). The work done is bounded by max, not by len(s). Sanitize is
// idempotent, and allocation-free for printable ASCII that fits.
func Sanitize(s string, max int) string {
	if max < len(Ellipsis) {
		max = len(Ellipsis)
	}
	if len(s) <= max && printableASCII(s) {
		return s
	}
	n := len(s)
	if n > max {
		n = max
	}
	out := make([]byte, 0, n)
	cut := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unsafeRune(r) {
			r = utf8.RuneError // also what an invalid byte decoded to
		}
		if len(out)+utf8.RuneLen(r) > max {
			cut = true
			break
		}
		out = utf8.AppendRune(out, r)
	}
	if cut {
		n := max - len(Ellipsis)
		for n > 0 && n < len(out) && !utf8.RuneStart(out[n]) {
			n--
		}
		out = append(out[:min(n, len(out))], Ellipsis...)
	}
	return string(out)
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// unsafeRune reports whether r must not appear in a record.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	case r < 0x80:
		return false
	case r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// sanitize cleans every string field except Command in place.
func (r *Record) sanitize() {
	r.Kind = Sanitize(r.Kind, MaxField)
	r.Action = Sanitize(r.Action, MaxField)
	r.Source = Sanitize(r.Source, MaxField)
	r.Exe = Sanitize(r.Exe, MaxField)
	r.Path = Sanitize(r.Path, MaxField)
	r.Resolved = Sanitize(r.Resolved, MaxField)
	r.Host = Sanitize(r.Host, MaxField)
	r.Syscall = Sanitize(r.Syscall, MaxField)
	r.Detail = Sanitize(r.Detail, MaxField)
	r.Rule = Sanitize(r.Rule, MaxField)
}

// Sanitized returns r with every string field passed through Sanitize
// (Command with MaxCommand, the others with MaxField). The sinks apply it
// again, so a Record written to a Sink directly is as inert as one that went
// through Add.
func (r Record) Sanitized() Record {
	r.sanitize()
	r.Command = Sanitize(r.Command, MaxCommand)
	return r
}

// stringBytes is the heap a queued record may hold beyond its fixed size.
func (r *Record) stringBytes() int64 {
	return int64(len(r.Kind) + len(r.Action) + len(r.Source) + len(r.Exe) +
		len(r.Path) + len(r.Resolved) + len(r.Host) + len(r.Syscall) +
		len(r.Detail) + len(r.Rule))
}
