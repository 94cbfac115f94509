package credentials

import (
	"encoding/xml"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestXMLEscapeAsEncodingXML: xmlEscape writes what encoding/xml's
// EscapeText writes, on its edge cases (markup, whitespace, runes XML
// cannot carry, invalid and truncated UTF-8, a literal U+FFFD) and on
// random byte strings.
func TestXMLEscapeAsEncodingXML(t *testing.T) {
	cases := []string{
		"", "plain", `<a href="x">'&'</a>`, "tab\tnl\ncr\r", "\x00\x01\x1f\x7f",
		"\uFFFD", "\uFFFE\uFFFF", "\xed\xa0\x80", "\xff\xfe", "é\xc3", "\U0001F600", "\U0010FFFF",
		"a&b<c>d\"e'f", strings.Repeat("&", 100),
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab<>&\"'\t\n\r\x00\x1f\xc3\xa9\xed\xa0\x80\xef\xbf\xbd\xbe\xf0\x9f\x98\x80\xff")
	for i := 0; i < 5000; i++ {
		b := make([]byte, rng.IntN(24))
		for j := range b {
			if rng.IntN(3) == 0 {
				b[j] = byte(rng.IntN(256))
			} else {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		var want strings.Builder
		if err := xml.EscapeText(&want, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got := xmlEscape(s); got != want.String() {
			t.Fatalf("xmlEscape(%q) = %q, encoding/xml %q", s, got, want.String())
		}
	}
}
