package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines bounds the README: it is the page a newcomer walks (what
// sbx is, install, quick start, recipes, flags, security model, links);
// everything else belongs in docs/.
const readmeMaxLines = 320

// TestReadmeShort fails when the README grows past readmeMaxLines.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail into a file under docs/ and link to it", n, readmeMaxLines)
	}
}

// TestDocLinks: every relative link in README.md, CONTRIBUTING.md and
// docs/*.md points at a file or directory that exists, and every #anchor
// into a markdown file (or into the page itself) names one of its
// headings, by GitHub's rules.
func TestDocLinks(t *testing.T) {
	root := "../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}, pages...)
	if len(pages) < 2 {
		t.Fatalf("no docs/*.md found beside the README")
	}
	anchors := map[string]map[string]bool{} // cleaned path -> anchors
	anchorsOf := func(p string) (map[string]bool, error) {
		if a, ok := anchors[p]; ok {
			return a, nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[p] = a
		return a, nil
	}
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, l := range markdownLinks(string(b)) {
			checked++
			file, anchor, _ := strings.Cut(l.target, "#")
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link %q: %v", name, l.line, l.target, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(filepath.Clean(target))
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", name, l.line, l.target, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s:%d: link %q: no heading with anchor #%s in %s", name, l.line, l.target, anchor, filepath.Base(target))
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found: is the parser blind?", checked)
	}
}

// trackerRef matches what names the project's internal history instead of
// the thing itself: a tracker's issue number, a work session, a helper or
// a milestone. The words are split so that this file does not match
// itself.
var trackerRef = regexp.MustCompile(`(?i)session [0-9]|issue [0-9]|read-only ` + `helper|way` + `point`)

// TestNoTrackerReferences: the README, CONTRIBUTING.md, docs/*.md and the
// Go sources (comments and test names included) say what a thing is and
// why, never which issue, session or review produced it; those names mean
// nothing to a reader outside the project.
func TestNoTrackerReferences(t *testing.T) {
	root := "../.."
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checked++
		name, _ := filepath.Rel(root, f)
		for i, line := range strings.Split(string(b), "\n") {
			if m := trackerRef.FindString(line); m != "" {
				t.Errorf("%s:%d: %q names the project's history; say what the thing is and why", name, i+1, m)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d files checked: is the walk blind?", checked)
	}
}

type mdLink struct {
	target string
	line   int
}

var (
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	schemeRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownLinks returns the relative link targets of a page: inline links
// outside fenced code blocks and code spans, without a scheme (https:,
// mailto:).
func markdownLinks(page string) []mdLink {
	var out []mdLink
	fenced := false
	for i, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpanRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			if !schemeRE.MatchString(m[1]) {
				out = append(out, mdLink{m[1], i + 1})
			}
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a page's ATX headings
// (outside fenced code blocks): see githubAnchor; a repeated anchor gets
// -1, -2, … as on GitHub.
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if text != "" && text[0] != ' ' {
			continue // "#hashtag", not a heading
		}
		a := githubAnchor(text)
		if out[a] {
			for n := 1; ; n++ {
				if s := a + "-" + strconv.Itoa(n); !out[s] {
					a = s
					break
				}
			}
		}
		out[a] = true
	}
	return out
}

// githubAnchor is GitHub's anchor for a heading's text: lowercase, every
// character but letters, digits, spaces, '-' and '_' dropped (backticks,
// parentheses, dots, slashes…), then each space turned into '-'.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestGithubAnchor pins the anchor rules on headings these docs have.
func TestGithubAnchor(t *testing.T) {
	for h, want := range map[string]string{
		" Writes that do not fail (`--discard-writes DIR`)":            "writes-that-do-not-fail---discard-writes-dir",
		" Exit status (env(1)/timeout(1) convention)":                  "exit-status-env1timeout1-convention",
		" Refused file reads and writes: what is and is not seen":      "refused-file-reads-and-writes-what-is-and-is-not-seen",
		" TLS termination (`--tls-terminate`, `network.tlsTerminate`)": "tls-termination---tls-terminate-networktlsterminate",
		" Claude Code's permission rules":                              "claude-codes-permission-rules",
		" sbx check and sbx profile":                                   "sbx-check-and-sbx-profile",
		" Credentials: secrets that never enter the sandbox":           "credentials-secrets-that-never-enter-the-sandbox",
		" snake_case and UPPER":                                        "snake_case-and-upper",
	} {
		if got := githubAnchor(h); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", h, got, want)
		}
	}
	a := headingAnchors("# A\n```\n# not a heading\n```\n## A\n#tag\n")
	for _, want := range []string{"a", "a-1"} {
		if !a[want] {
			t.Errorf("headingAnchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] || a["tag"] {
		t.Errorf("headingAnchors took a fenced line or a #tag for a heading: %v", a)
	}
}
