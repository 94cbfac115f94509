package policy

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// One glob matcher serves every source of paths: CLI flags, srt and
// Claude Code settings files, and Claude Code permission rules. It
// follows gitignore: "*" and "?" stay within one path component, "[...]"
// is a class, "\x" is x itself, "**" is zero or more whole directories,
// and a trailing "/**" is everything inside. Components are matched by
// path.Match, whole paths by globMatch (see claude.go), and trees are
// walked by permWalker (walk.go), with descriptors, never following a
// symlink to a directory and never skipping what it cannot see.

// globMeta reports whether the path component c holds a glob character
// that is not escaped.
func globMeta(c string) bool {
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// globUnescape is the literal name a component without glob characters
// stands for: its escapes removed.
func globUnescape(c string) string {
	if !strings.Contains(c, `\`) {
		return c
	}
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		if c[i] == '\\' && i+1 < len(c) {
			i++
		}
		b.WriteByte(c[i])
	}
	return b.String()
}

// needsGlob reports whether a CLI or srt path must go through the glob
// matcher: it holds a glob character or an escape.
func needsGlob(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// errGlobTooMany is returned when a pattern expands to more than
// permMatchCap paths.
var errGlobTooMany = errPermTooMany

// expandGlob expands rest, a slash-separated pattern relative to the
// absolute directory base, into absolute, cleaned, sorted, deduplicated
// paths. An anchored pattern matches from base only; an unanchored one
// (a single component, gitignore's bare name) at any depth below base.
// A trailing "/" matches directories only. A pattern without glob
// characters is its literal path (escapes removed), whether or not it
// exists; so is one whose only glob is a trailing "/**". A malformed
// component (an unbalanced bracket, a trailing backslash) and ".." after
// a glob are errors.
//
// pattern reports whether the tree was searched (the result is what
// matched), as opposed to a literal path given back. A deny walk records
// in bs what it could not see (see walk.go); bs may be nil only when
// deny is false, or to make an unreadable directory an error.
func expandGlob(base, rest string, anchored, deny bool, bs *blindSpots) (paths []string, pattern bool, err error) {
	base = filepath.Clean(base)
	dirOnly := strings.HasSuffix(rest, "/")
	rest = strings.TrimRight(rest, "/")
	if !anchored && (strings.Contains(rest, "/") || rest == "." || rest == ".." || rest == "**") {
		anchored = true
	}
	// Split into components, dropping "." and resolving ".." lexically
	// inside the glob-free part.
	var comps []string
	for _, c := range strings.Split(rest, "/") {
		switch {
		case c == "" || c == ".":
		case c == "..":
			switch {
			case len(comps) == 0:
				base = filepath.Dir(base)
			case globMeta(comps[len(comps)-1]) || comps[len(comps)-1] == "**":
				return nil, false, errors.New("\"..\" after a glob is not supported; remove it")
			default:
				comps = comps[:len(comps)-1]
			}
		case c == "**" && len(comps) > 0 && comps[len(comps)-1] == "**":
		default:
			if _, err := path.Match(c, ""); err != nil {
				return nil, false, fmt.Errorf("malformed glob %q; fix the brackets or escape them with \\", c)
			}
			comps = append(comps, c)
		}
	}
	if len(comps) == 0 {
		return []string{base}, false, nil
	}
	if !anchored {
		name := comps[0]
		var out []string
		if !globMeta(name) {
			lit := filepath.Join(base, globUnescape(name))
			if _, err := os.Lstat(lit); err != nil {
				out = append(out, lit) // not there yet: keep the literal
			}
		}
		w := permWalker{pat: []string{"**", name}, dirOnly: dirOnly, deny: deny, blind: bs}
		if err := w.walkFrom(base); err != nil {
			return nil, true, err
		}
		return sortedPaths(append(out, w.out...)), true, nil
	}
	inside := comps[len(comps)-1] == "**"
	if inside {
		comps = comps[:len(comps)-1]
	}
	k := 0
	for k < len(comps) && !globMeta(comps[k]) && comps[k] != "**" {
		k++
	}
	lit := make([]string, 0, k+1)
	lit = append(lit, base)
	for _, c := range comps[:k] {
		lit = append(lit, globUnescape(c))
	}
	prefix := filepath.Join(lit...)
	if k == len(comps) {
		if dirOnly && !inside {
			if st, err := os.Stat(prefix); err == nil && !st.IsDir() {
				return nil, false, nil
			}
		}
		return []string{prefix}, false, nil
	}
	w := permWalker{pat: comps[k:], dirOnly: dirOnly || inside, deny: deny, blind: bs}
	if err := w.walkFrom(prefix); err != nil {
		return nil, true, err
	}
	return sortedPaths(w.out), true, nil
}

// globLiteralTrap reports whether a pattern that matched nothing names,
// read as literal text, a path that exists, and returns that path: the
// user almost certainly meant it ("./secrets[prod]" beside a file named
// "secrets[prod]"), and a deny that silently hides nothing fails open.
func globLiteralTrap(base, rest string) (string, bool) {
	lit := filepath.Join(base, rest)
	_, err := os.Lstat(lit)
	return lit, err == nil
}

// globEscape escapes p's glob characters, so that it names itself.
func globEscape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, `*`, `\*`, `?`, `\?`).Replace(p)
}

// globSplit splits a CLI or srt path into the directory it is anchored
// at (absolute: "/", the home directory, or the working directory) and
// the pattern relative to it, without cleaning the pattern (".." after a
// glob must stay visible to expandGlob).
func (r resolver) globSplit(p string) (base, rest string, err error) {
	switch {
	case (p == "~" || strings.HasPrefix(p, "~/")) && r.home == "":
		return "", "", errors.New("HOME is not set and the caller has no home in /etc/passwd; write the absolute path")
	case p == "~":
		return r.home, "", nil
	case strings.HasPrefix(p, "~/"):
		return r.home, p[2:], nil
	case strings.HasPrefix(p, "~"):
		return "", "", errors.New("~user paths are not supported; write the absolute path")
	case strings.HasPrefix(p, "/"):
		return "/", p[1:], nil
	}
	return r.cwd, p, nil
}

// glob expands a CLI or srt path that needsGlob. isGlob is false when
// the path holds no glob after all (only escapes): paths is then its one
// literal path.
func (r resolver) glob(key string, e pathEntry) (paths []string, isGlob bool, err error) {
	base, rest, err := r.globSplit(e.path)
	if err != nil {
		return nil, false, fmt.Errorf("%s %q: %w", key, e.path, err)
	}
	var bs blindSpots
	paths, isGlob, err = expandGlob(base, rest, true, strings.HasPrefix(key, "deny"), &bs)
	if errors.Is(err, errGlobTooMany) {
		return nil, false, fmt.Errorf("%s %q: matches more than %d paths; name a directory instead", key, e.path, permMatchCap)
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s %q: %w", key, e.path, err)
	}
	if !isGlob {
		if len(paths) == 0 {
			// A trailing "/" on a file: nothing matches.
			return nil, true, nil
		}
		return paths, false, nil
	}
	if len(paths) == 0 && !strings.HasPrefix(key, "deny") {
		if lit, ok := globLiteralTrap(base, rest); ok {
			r.note(fmt.Sprintf("%s %q: the glob matches nothing, but %s exists; to name it escape the glob characters: %s", key, e.path, lit, globEscape(e.path)))
		}
	}
	if len(paths) == 0 && strings.HasPrefix(key, "deny") {
		if lit, ok := globLiteralTrap(base, rest); ok {
			return nil, false, fmt.Errorf("%s %q: the glob matches nothing, but %s exists; to name that file write it literally, {\"path\": %q, \"literal\": true} in a settings file, or escape the glob characters: %s", key, e.path, lit, lit, globEscape(e.path))
		}
	}
	paths = append(paths, r.blind(key, e.path, &bs)...)
	return paths, true, nil
}

// blind notes what a deny walk could not see (see walk.go) and returns
// the directories to deny whole: the unreadable ones where writes go.
// The deep ones are among the matches already.
func (r resolver) blind(key, pattern string, bs *blindSpots) []string {
	for _, d := range bs.deep {
		r.note(fmt.Sprintf("%s %q: %s holds paths longer than a mount can name (%d bytes): denied whole for the run", key, pattern, d, MaxPlanPath))
	}
	in := blindIn(bs, r.takesWrites)
	for _, d := range in {
		r.note(fmt.Sprintf("%s %q: %s cannot be read, and lies where the command may write (it could make it readable again): denied whole for the run; make it readable (chmod u+rx %s) to deny only what matches", key, pattern, d, d))
	}
	return in
}
