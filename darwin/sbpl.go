package darwin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxStringLen is the longest string value (after decoding) the profile
// may hold. sandbox-exec refuses a string literal longer than about 1 KiB
// ("Error reading string"), and one bad string invalidates the whole
// profile, so sbx refuses to build it instead.
const maxStringLen = 1000

// errBadString is wrapped by every error about a value that cannot be
// written as an SBPL string.
var errBadString = errors.New("value cannot be written in a sandbox profile")

// quote returns s as an SBPL (TinyScheme) string literal. A backslash or a
// double quote is escaped, so s can never close the string early; \n, \t
// and \r use their named escapes and every other control byte is written
// as \xHH, so the literal holds no raw control character. Bytes from 0x80
// up are kept as they are (paths on macOS are UTF-8).
func quote(s string) (string, error) {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "", fmt.Errorf("%w: %q holds a NUL byte", errBadString, s)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("%w: %q is not valid UTF-8", errBadString, s)
	case len(s) > maxStringLen:
		return "", fmt.Errorf("%w: %d bytes is longer than the %d-byte limit", errBadString, len(s), maxStringLen)
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// writer accumulates profile text. It keeps the first error (a value that
// cannot be quoted) so the section builders can stay linear.
type writer struct {
	b   strings.Builder
	err error
	tag string // already validated; safe in comments and strings
}

// q quotes s, recording the first failure.
func (w *writer) q(s string) string {
	out, err := quote(s)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return `""`
	}
	return out
}

func (w *writer) line(s string) {
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}

func (w *writer) blank() { w.b.WriteByte('\n') }

// section starts a commented block. Comments only ever hold static text:
// nothing from the input (which could hold a newline) is written outside a
// string literal.
func (w *writer) section(lines ...string) {
	w.blank()
	for _, l := range lines {
		w.line(";; " + l)
	}
}

// rule writes (ACTION OPS FILTER... [(with message TAG)]) with one filter
// a line. Duplicate filters are dropped. A rule without filters is not
// written at all: in SBPL it would match every path.
func (w *writer) rule(action, ops string, filters []string) {
	filters = dedupe(filters)
	if len(filters) == 0 {
		return
	}
	w.line("(" + action + " " + ops)
	for i, f := range filters {
		end := ""
		if i == len(filters)-1 && action == "allow" {
			end = ")"
		}
		w.line("  " + f + end)
	}
	if action == "deny" {
		w.line("  " + w.message() + ")")
	}
}

// message is the (with message "TAG") modifier every deny carries, so its
// violations can be found in the unified log.
func (w *writer) message() string {
	return "(with message " + w.q(w.tag) + ")"
}

// Filters. Each quotes its argument through w.

func (w *writer) literal(p string) string { return "(literal " + w.q(p) + ")" }
func (w *writer) subpath(p string) string { return "(subpath " + w.q(p) + ")" }
func (w *writer) regex(re string) string  { return "(regex " + w.q(re) + ")" }

// filter matches e and everything beneath it.
func (w *writer) filter(e entry) string {
	if e.glob {
		return w.regex(e.subtreeRegex())
	}
	return w.subpath(e.path)
}

func notDirectory(f string) string {
	return "(require-all " + f + " (require-not (vnode-type DIRECTORY)))"
}

// dedupe drops repeated strings, keeping the first of each.
func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// sortedSet returns the distinct keys of m in order.
func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
