package darwin

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// A small reader for the subset of SBPL (TinyScheme) the generator writes:
// lists, symbols, "strings" with the escapes \\ \" \n \t \r \xHH, and ;
// line comments. It is strict on purpose: anything the generator never
// writes (block comments #|...|#, #"regex" literals, quote syntax, other
// escapes, raw control characters in a string) is an error, so a path that
// leaks out of its string shows up as one.

type nodeKind int

const (
	listNode nodeKind = iota
	symbolNode
	stringNode
)

type node struct {
	kind  nodeKind
	text  string // symbol name, or decoded string value
	items []*node
}

type sexpDoc struct {
	forms    []*node
	comments []string
}

func readSexp(src string) (*sexpDoc, error) {
	r := &sexpReader{src: src}
	doc := &sexpDoc{}
	for {
		r.skipSpace()
		if r.pos >= len(r.src) {
			break
		}
		n, err := r.read(0)
		if err != nil {
			return nil, err
		}
		if n.kind != listNode {
			return nil, r.errorf("top-level %q is not a list", n.text)
		}
		doc.forms = append(doc.forms, n)
	}
	doc.comments = r.comments
	return doc, nil
}

var symbolRE = regexp.MustCompile(`^[A-Za-z0-9*_.-]+$`)

type sexpReader struct {
	src      string
	pos      int
	comments []string
}

func (r *sexpReader) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", r.pos, fmt.Sprintf(format, args...))
}

func (r *sexpReader) skipSpace() {
	for r.pos < len(r.src) {
		switch c := r.src[r.pos]; {
		case c == ' ' || c == '\n' || c == '\t':
			r.pos++
		case c == ';':
			end := strings.IndexByte(r.src[r.pos:], '\n')
			if end < 0 {
				end = len(r.src) - r.pos
			}
			r.comments = append(r.comments, r.src[r.pos:r.pos+end])
			r.pos += end
		default:
			return
		}
	}
}

func (r *sexpReader) read(depth int) (*node, error) {
	if depth > 50 {
		return nil, r.errorf("nested too deeply")
	}
	r.skipSpace()
	if r.pos >= len(r.src) {
		return nil, r.errorf("unexpected end of input")
	}
	switch c := r.src[r.pos]; c {
	case '(':
		r.pos++
		list := &node{kind: listNode}
		for {
			r.skipSpace()
			if r.pos >= len(r.src) {
				return nil, r.errorf("unbalanced: a list is never closed")
			}
			if r.src[r.pos] == ')' {
				r.pos++
				return list, nil
			}
			item, err := r.read(depth + 1)
			if err != nil {
				return nil, err
			}
			list.items = append(list.items, item)
		}
	case ')':
		return nil, r.errorf("unbalanced: unexpected )")
	case '"':
		return r.readString()
	case '#', '\'', '`', ',', '|':
		return nil, r.errorf("unexpected %q outside a string", c)
	}
	start := r.pos
	for r.pos < len(r.src) && !strings.ContainsRune(" \n\t();\"", rune(r.src[r.pos])) {
		r.pos++
	}
	sym := r.src[start:r.pos]
	if !symbolRE.MatchString(sym) {
		return nil, r.errorf("bad symbol %q", sym)
	}
	return &node{kind: symbolNode, text: sym}, nil
}

func (r *sexpReader) readString() (*node, error) {
	r.pos++ // opening quote
	var b strings.Builder
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		r.pos++
		switch {
		case c == '"':
			if !utf8.ValidString(b.String()) {
				return nil, r.errorf("string is not UTF-8")
			}
			return &node{kind: stringNode, text: b.String()}, nil
		case c < 0x20 || c == 0x7f:
			return nil, r.errorf("raw control byte %#x in a string", c)
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if r.pos >= len(r.src) {
			break
		}
		e := r.src[r.pos]
		r.pos++
		switch e {
		case '\\', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			if r.pos+2 > len(r.src) {
				return nil, r.errorf("short \\x escape")
			}
			v, err := strconv.ParseUint(r.src[r.pos:r.pos+2], 16, 8)
			if err != nil {
				return nil, r.errorf("bad \\x escape %q", r.src[r.pos:r.pos+2])
			}
			b.WriteByte(byte(v))
			r.pos += 2
		default:
			return nil, r.errorf("unknown escape \\%c", e)
		}
	}
	return nil, r.errorf("a string is never closed")
}

// walk calls fn for every node of the document.
func (d *sexpDoc) walk(fn func(n, parent *node)) {
	var rec func(n, parent *node)
	rec = func(n, parent *node) {
		fn(n, parent)
		for _, c := range n.items {
			rec(c, n)
		}
	}
	for _, f := range d.forms {
		rec(f, nil)
	}
}

func (d *sexpDoc) strings() map[string]bool {
	out := map[string]bool{}
	d.walk(func(n, _ *node) {
		if n.kind == stringNode {
			out[n.text] = true
		}
	})
	return out
}

// checkProfile proves a profile well-formed: it reads, it starts with
// (version 1) and (deny default ...), every other form is an allow or a
// deny, and no string is longer than sandbox-exec accepts.
func checkProfile(src string) (*sexpDoc, error) {
	doc, err := readSexp(src)
	if err != nil {
		return nil, err
	}
	if len(doc.forms) < 2 {
		return nil, errors.New("too few forms")
	}
	if head := render(doc.forms[0]); head != "(version 1)" {
		return nil, fmt.Errorf("first form is %s", head)
	}
	if head := doc.forms[1].items; len(head) < 2 || head[0].text != "deny" || head[1].text != "default" {
		return nil, fmt.Errorf("second form is %s, want (deny default ...)", render(doc.forms[1]))
	}
	for _, f := range doc.forms[1:] {
		if len(f.items) < 2 || f.items[0].kind != symbolNode || (f.items[0].text != "allow" && f.items[0].text != "deny") {
			return nil, fmt.Errorf("form %s is neither allow nor deny", render(f))
		}
	}
	var long error
	doc.walk(func(n, _ *node) {
		if n.kind == stringNode && len(n.text) > maxStringLen && long == nil {
			long = fmt.Errorf("string of %d bytes", len(n.text))
		}
	})
	return doc, long
}

// render prints a node back (strings with Go quoting), for messages.
func render(n *node) string {
	switch n.kind {
	case symbolNode:
		return n.text
	case stringNode:
		return strconv.Quote(n.text)
	}
	parts := make([]string, len(n.items))
	for i, c := range n.items {
		parts[i] = render(c)
	}
	return "(" + strings.Join(parts, " ") + ")"
}

func TestSexpReaderRejects(t *testing.T) {
	for _, src := range []string{
		`(version 1`,
		`(version 1))`,
		`(allow "open)`,
		"(allow \"a\nb\")",
		`(allow "\q")`,
		`(allow "\x4")`,
		`(allow #"^/")`,
		`(allow #| comment |# x)`,
		`(allow 'x)`,
		`(allow a/b)`,
		`x`,
	} {
		if _, err := readSexp(src); err == nil {
			t.Errorf("readSexp(%q) accepted", src)
		}
	}
	doc, err := readSexp("(a \"x\\\\\\\"\\n\\x01\" b) ; c\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.forms[0].items[1].text; got != "x\\\"\n\x01" {
		t.Errorf("decoded %q", got)
	}
	if len(doc.comments) != 1 || doc.comments[0] != "; c" {
		t.Errorf("comments %q", doc.comments)
	}
}

// richInput turns every feature on, with benign values. Its profile gives
// the vocabulary (symbols and comments) every other profile must stay in.
func richInput() Input {
	return Input{
		AllowRead:              []string{"/Users/u/proj", "/Users/u/**/*.md"},
		DenyRead:               []string{"/Users/u", "/Users/*/.ssh"},
		AllowWrite:             []string{"/Users/u/proj", "/Users/u/out/*"},
		DenyWrite:              []string{"/Users/u/proj/a/b", "/Users/u/proj/**/*.pem"},
		TempDirs:               []string{"/tmp"},
		ProxyPorts:             []int{3128},
		AllowLocalBinding:      true,
		AllowUnixSockets:       []string{"/var/run/docker.sock", "/tmp/*.sock"},
		AllowPty:               true,
		AllowMachLookup:        []string{"com.example.a", "com.example.b*"},
		WeakerNetworkIsolation: true,
		AllowAppleEvents:       true,
		Tag:                    "fuzz",
	}
}

func vocabulary(t testing.TB, docs ...*sexpDoc) (symbols, comments map[string]bool) {
	t.Helper()
	symbols, comments = map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		d.walk(func(n, _ *node) {
			if n.kind == symbolNode {
				symbols[n.text] = true
			}
		})
		for _, c := range d.comments {
			comments[c] = true
		}
	}
	return symbols, comments
}

var hostileSeeds = []string{
	`a"b`, `a\b`, `a\"b`, `x")) (allow default) ("`, `x) (allow file-write* (subpath "/")`,
	"new\nline", "cr\rret", "tab\tx", "bell\a", "del\x7f", "esc\x1b[0m", `#|`, `|#`, `x #| y`,
	`; comment`, `a;b`, `(`, `)`, `'quote`, "`back", `,comma`, `#"re"`, `\x41`, `\n`,
	"ünïcødé", "日本語", "emoji\U0001F600", "\u202ertl", "\u2028ls", `[a-z]`, `{1,2}`, `a|b`,
	`^$`, `a.b+c`, `*`, `**`, `**/x`, `a?b`, `a/**`, `..`, `../..`, `./x`, "a//b", `x/`, "",
	"nul\x00byte", "bad\xffutf8", strings.Repeat("long/", 300),
}

// FuzzProfile feeds hostile path text into every list and proves the
// profile is still well-formed, that nothing from the path reaches a
// symbol or a comment, and that the path comes back exactly from its
// string literal (or, for a glob, from a regex that matches it).
func FuzzProfile(f *testing.F) {
	for _, s := range hostileSeeds {
		f.Add(s)
	}
	rich, err := Profile(richInput())
	if err != nil {
		f.Fatal(err)
	}
	richDoc, err := checkProfile(rich)
	if err != nil {
		f.Fatal(err)
	}
	symbols, comments := vocabulary(f, richDoc)

	f.Fuzz(func(t *testing.T, s string) {
		hostile := "/Users/u/" + s
		in := richInput()
		in.AllowRead = append(in.AllowRead, hostile+"/in")
		in.DenyRead = append(in.DenyRead, hostile)
		in.AllowWrite = append(in.AllowWrite, hostile)
		in.DenyWrite = append(in.DenyWrite, hostile+"/d")
		in.AllowUnixSockets = append(in.AllowUnixSockets, hostile+".sock")
		in.TempDirs = append(in.TempDirs, "/tmp/"+s)
		if m := strings.ReplaceAll(s, "*", ""); m != "" {
			in.AllowMachLookup = append(in.AllowMachLookup, "com.x."+m)
		}
		prof, err := Profile(in)
		if err != nil {
			if !errors.Is(err, ErrInput) || !(errors.Is(err, errBadPath) || errors.Is(err, errBadString)) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && len(hostile) < maxStringLen/3 {
				t.Fatalf("refused a short, valid path %q: %v", s, err)
			}
			return
		}
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			t.Fatalf("accepted %q", s)
		}
		doc, err := checkProfile(prof)
		if err != nil {
			t.Fatalf("malformed profile for %q: %v\n%s", s, err, prof)
		}
		syms, comms := vocabulary(t, doc)
		for sym := range syms {
			if !symbols[sym] {
				t.Fatalf("symbol %q outside the vocabulary (path %q leaked?)", sym, s)
			}
		}
		for c := range comms {
			if !comments[c] {
				t.Fatalf("comment %q outside the vocabulary (path %q leaked?)", c, s)
			}
		}
		e, err := parseEntry("denyRead", hostile)
		if err != nil {
			t.Fatal(err)
		}
		checkEntryInProfile(t, doc, e)
	})
}

// checkEntryInProfile proves e survives quoting: a literal path is one of
// the decoded strings; a glob's regex is, compiles, and matches a path
// shaped like the glob.
func checkEntryInProfile(t *testing.T, doc *sexpDoc, e entry) {
	t.Helper()
	strs := doc.strings()
	if !e.glob {
		if !strs[e.path] {
			t.Fatalf("path %q not found as a string", e.path)
		}
		return
	}
	re := e.subtreeRegex()
	if !strs[re] {
		t.Fatalf("regex %q not found as a string", re)
	}
	c, err := regexp.Compile(re)
	if err != nil {
		t.Fatalf("regex %q: %v", re, err)
	}
	if !c.MatchString(e.sample()) {
		t.Fatalf("regex %q does not match %q", re, e.sample())
	}
}

func TestHostilePaths(t *testing.T) {
	// The seeds again as a plain test, so `go test` covers them without -fuzz.
	rich, err := Profile(richInput())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkProfile(rich); err != nil {
		t.Fatal(err)
	}
	for _, s := range hostileSeeds {
		in := Input{Tag: "t", DenyRead: []string{"/Users/u/" + s}, AllowWrite: []string{"/Users/u/" + s}}
		prof, err := Profile(in)
		bad := strings.ContainsRune(s, 0) || !utf8.ValidString(s) || len(s) > maxStringLen
		if bad != (err != nil) {
			t.Errorf("%q: err = %v", s, err)
			continue
		}
		if err != nil {
			continue
		}
		doc, err := checkProfile(prof)
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		e, _ := parseEntry("denyRead", "/Users/u/"+s)
		checkEntryInProfile(t, doc, e)
	}
}
