package darwin

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// errBadPath is wrapped by every error about a path in the Input.
var errBadPath = errors.New("bad path")

// aliases are the macOS top-level symlinks into /private. Seatbelt matches
// the path the kernel resolved, so a rule spelled /tmp/x would never match
// anything (srt #596); sbx rewrites the prefix instead.
var aliases = [...]struct{ from, to string }{
	{"/etc", "/private/etc"},
	{"/tmp", "/private/tmp"},
	{"/var", "/private/var"},
}

// canonicalPath cleans p lexically and rewrites a /tmp, /var or /etc prefix
// to its /private spelling. It does not touch the filesystem: resolving
// other symlinks (a home directory on another volume, say) is the caller's
// job.
func canonicalPath(p string) string {
	p = path.Clean(p)
	for _, a := range aliases {
		if p == a.from || strings.HasPrefix(p, a.from+"/") {
			return a.to + p[len(a.from):]
		}
	}
	return p
}

// isGlob reports whether p uses glob syntax. Only * and ? are glob
// characters; [ and { are literal.
func isGlob(p string) bool { return strings.ContainsAny(p, "*?") }

// entry is one normalised path rule: a literal path, matched with subpath
// (the path and everything beneath it), or a glob, matched with an anchored
// regex that likewise covers everything beneath each match.
type entry struct {
	path string // canonical absolute path, or canonical glob
	glob bool
}

// parseEntry validates and normalises one path or glob of list.
func parseEntry(list, raw string) (entry, error) {
	switch {
	case raw == "":
		return entry{}, fmt.Errorf("%w in %s: empty", errBadPath, list)
	case strings.IndexByte(raw, 0) >= 0:
		return entry{}, fmt.Errorf("%w in %s: %q holds a NUL byte", errBadPath, list, raw)
	case !utf8.ValidString(raw):
		return entry{}, fmt.Errorf("%w in %s: %q is not valid UTF-8", errBadPath, list, raw)
	}
	p, glob := raw, isGlob(raw)
	if glob && (p == "**" || strings.HasPrefix(p, "**/")) {
		p = "/" + p // a location-independent glob matches anywhere
	}
	if !strings.HasPrefix(p, "/") {
		return entry{}, fmt.Errorf("%w in %s: %q is not absolute", errBadPath, list, raw)
	}
	return entry{path: canonicalPath(p), glob: glob}, nil
}

// parseEntries normalises a list, sorted and without duplicates.
func parseEntries(list string, raws []string) ([]entry, error) {
	out := make([]entry, 0, len(raws))
	for _, r := range raws {
		e, err := parseEntry(list, r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, compareEntries)
	return slices.Compact(out), nil
}

// compareEntries orders by path (glob follows from the path's text).
func compareEntries(a, b entry) int { return strings.Compare(a.path, b.path) }

// regexMeta are the characters escaped when a literal goes into a regex.
const regexMeta = `\.^$*+?()[]{}|`

// escapeRegex escapes every regex metacharacter in s.
func escapeRegex(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(regexMeta, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globBody translates a glob into an unanchored regex: "**/" matches any
// number of directories (or none), "**" anything, "*" anything within one
// name, "?" one character of a name; everything else is literal.
func globBody(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); {
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 3
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i += 2
		case glob[i] == '*':
			b.WriteString("[^/]*")
			i++
		case glob[i] == '?':
			b.WriteString("[^/]")
			i++
		default:
			_, n := utf8.DecodeRuneInString(glob[i:])
			b.WriteString(escapeRegex(glob[i : i+n]))
			i += n
		}
	}
	return b.String()
}

// globToRegex is the anchored regex matching exactly the paths glob names.
func globToRegex(glob string) string { return "^" + globBody(glob) + "$" }

// subtreeRegex matches what e names and everything beneath it.
func (e entry) subtreeRegex() string {
	if !e.glob {
		if e.path == "/" {
			return "^/.*$"
		}
		return "^" + escapeRegex(e.path) + "(/.*)?$"
	}
	return "^" + globBody(e.path) + "(/.*)?$"
}

// covers reports whether the concrete path p is e or lies beneath it.
func (e entry) covers(p string) bool {
	if e.glob {
		re, err := regexp.Compile(e.subtreeRegex())
		return err == nil && re.MatchString(p)
	}
	return within(p, e.path)
}

// within reports whether p is dir or lies beneath it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// strictlyWithin reports whether p lies beneath dir (and is not dir).
func strictlyWithin(p, dir string) bool { return p != dir && within(p, dir) }

// sample is a concrete path shaped like the ones e matches (each glob token
// replaced by a plain name), used to decide whether e lies inside another
// entry.
func (e entry) sample() string {
	if !e.glob {
		return e.path
	}
	r := strings.NewReplacer("**/", "", "**", "x", "*", "x", "?", "x")
	return path.Clean(r.Replace(e.path))
}

// base is the directory that bounds where e can match: the path itself for
// a literal, the longest glob-free directory prefix for a glob.
func (e entry) base() string {
	if !e.glob {
		return e.path
	}
	prefix := e.path[:strings.IndexAny(e.path, "*?")]
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		return prefix[:i]
	}
	return "/"
}

// ancestors lists the directories above p, nearest first, ending with "/".
func ancestors(p string) []string {
	var out []string
	for p != "/" {
		p = path.Dir(p)
		out = append(out, p)
	}
	return out
}
