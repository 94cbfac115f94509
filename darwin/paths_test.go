package darwin

import (
	"errors"
	"regexp"
	"slices"
	"testing"
)

func TestCanonicalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp":                     "/private/tmp",
		"/tmp/":                    "/private/tmp",
		"/tmp/x/../y":              "/private/tmp/y",
		"/var/folders/ab/T":        "/private/var/folders/ab/T",
		"/etc/hosts":               "/private/etc/hosts",
		"/etc":                     "/private/etc",
		"/private/tmp/x":           "/private/tmp/x",
		"/tmpfoo":                  "/tmpfoo",
		"/variable":                "/variable",
		"/Users/u/tmp":             "/Users/u/tmp",
		"//tmp//x/":                "/private/tmp/x",
		"/tmp/**/*.key":            "/private/tmp/**/*.key",
		"/t*":                      "/t*",
		"/":                        "/",
		"/Users/u/./proj/../proj/": "/Users/u/proj",
	} {
		if got := canonicalPath(in); got != want {
			t.Errorf("canonicalPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseEntry(t *testing.T) {
	for _, c := range []struct {
		in   string
		want entry
	}{
		{"/Users/u/proj", entry{"/Users/u/proj", false}},
		{"/tmp/x", entry{"/private/tmp/x", false}},
		{"/Users/*/.ssh", entry{"/Users/*/.ssh", true}},
		{"**/.env", entry{"/**/.env", true}},
		{"**", entry{"/**", true}},
		{"/a/[b]", entry{"/a/[b]", false}},
	} {
		got, err := parseEntry("test", c.in)
		if err != nil || got != c.want {
			t.Errorf("parseEntry(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "rel", "./x", "~/x", "*.txt", "/a\x00", "/\xff"} {
		if _, err := parseEntry("test", bad); !errors.Is(err, errBadPath) {
			t.Errorf("parseEntry(%q) err = %v, want errBadPath", bad, err)
		}
	}
}

func TestGlobToRegex(t *testing.T) {
	for _, c := range []struct {
		glob, re string
		match    []string
		miss     []string
	}{
		{"/a/*.txt", `^/a/[^/]*\.txt$`, []string{"/a/x.txt", "/a/.txt"}, []string{"/a/b/x.txt", "/a/xtxt"}},
		{"/a/**/b", `^/a/(.*/)?b$`, []string{"/a/b", "/a/x/b", "/a/x/y/b"}, []string{"/a/xb", "/ab"}},
		{"/a/**", `^/a/.*$`, []string{"/a/", "/a/x/y"}, []string{"/a", "/ab"}},
		{"/**/.env", `^/(.*/)?\.env$`, []string{"/.env", "/u/p/.env"}, []string{"/u/p/x.env", "/u/.env/x"}},
		{"/a/file?", `^/a/file[^/]$`, []string{"/a/file1"}, []string{"/a/file", "/a/file/", "/a/file12"}},
		{"/a/x**y", `^/a/x.*y$`, []string{"/a/xy", "/a/x/z/y"}, nil},
		{"/a/***", `^/a/.*[^/]*$`, []string{"/a/b/c"}, nil},
		{"/a.b/(c)[d]{e}|f+g^h$i\\j", `^/a\.b/\(c\)\[d\]\{e\}\|f\+g\^h\$i\\j$`,
			[]string{"/a.b/(c)[d]{e}|f+g^h$i\\j"}, []string{"/axb/(c)[d]{e}|f+g^h$i\\j"}},
		{"/ü/*", `^/ü/[^/]*$`, []string{"/ü/x"}, nil},
		{`/q"uote/*`, `^/q"uote/[^/]*$`, []string{`/q"uote/x`}, nil},
	} {
		got := globToRegex(c.glob)
		if got != c.re {
			t.Errorf("globToRegex(%q) = %q, want %q", c.glob, got, c.re)
			continue
		}
		re := regexp.MustCompile(got)
		for _, m := range c.match {
			if !re.MatchString(m) {
				t.Errorf("%s does not match %q", got, m)
			}
		}
		for _, m := range c.miss {
			if re.MatchString(m) {
				t.Errorf("%s matches %q", got, m)
			}
		}
	}
}

func TestSubtreeRegex(t *testing.T) {
	for _, c := range []struct {
		e    entry
		want string
	}{
		{entry{"/a.b", false}, `^/a\.b(/.*)?$`},
		{entry{"/", false}, `^/.*$`},
		{entry{"/a/*.pem", true}, `^/a/[^/]*\.pem(/.*)?$`},
	} {
		if got := c.e.subtreeRegex(); got != c.want {
			t.Errorf("%+v.subtreeRegex() = %q, want %q", c.e, got, c.want)
		}
	}
}

func TestEntryHelpers(t *testing.T) {
	g := entry{"/Users/u/**/*.md", true}
	if got := g.base(); got != "/Users/u" {
		t.Errorf("base = %q", got)
	}
	if got := g.sample(); got != "/Users/u/x.md" {
		t.Errorf("sample = %q", got)
	}
	if got := (entry{"/a*", true}).base(); got != "/" {
		t.Errorf("base of /a* = %q", got)
	}
	if !g.covers("/Users/u/a/b.md/c") || g.covers("/Users/u/a/b.txt") {
		t.Error("glob covers")
	}
	l := entry{"/Users/u", false}
	if !l.covers("/Users/u") || !l.covers("/Users/u/x") || l.covers("/Users/uv") {
		t.Error("literal covers")
	}
	if !(entry{"/", false}).covers("/x") {
		t.Error("/ covers everything")
	}
	if got := ancestors("/a/b/c"); !slices.Equal(got, []string{"/a/b", "/a", "/"}) {
		t.Errorf("ancestors = %q", got)
	}
	if got := ancestors("/"); len(got) != 0 {
		t.Errorf("ancestors(/) = %q", got)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:       `"plain"`,
		`a"b`:         `"a\"b"`,
		`a\b`:         `"a\\b"`,
		`\"`:          `"\\\""`,
		"a\nb\tc\rd":  `"a\nb\tc\rd"`,
		"bell\a\x1b":  `"bell\x07\x1b"`,
		"del\x7f":     `"del\x7f"`,
		"ünï日本":       `"ünï日本"`,
		`#| x |# ; y`: `"#| x |# ; y"`,
	} {
		got, err := quote(in)
		if err != nil || got != want {
			t.Errorf("quote(%q) = %s, %v; want %s", in, got, err, want)
			continue
		}
		doc, err := readSexp("(x " + got + ")")
		if err != nil || doc.forms[0].items[1].text != in {
			t.Errorf("quote(%q) does not read back: %v", in, err)
		}
	}
	for _, bad := range []string{"a\x00b", "\xff", string(make([]byte, maxStringLen+1))} {
		if _, err := quote(bad); !errors.Is(err, errBadString) {
			t.Errorf("quote(%q...) err = %v", bad[:1], err)
		}
	}
}
