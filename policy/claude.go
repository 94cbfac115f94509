package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Claude Code permission rules.
//
// A Claude Code settings file may carry, next to "sandbox", a
// "permissions" object whose allow/deny/ask arrays hold rules such as
// "Edit(src/**)", "Read(./secret/**)" or "Bash(npm test)". sbx honours the
// ones that name files, the way Claude Code's sandbox merges them:
//
//   - Edit(path) in allow adds to allowWrite;
//   - Read(path) in deny adds to denyRead;
//   - Edit(path) in deny adds to denyWrite.
//
// Write, MultiEdit and NotebookEdit rules count as Edit rules (Claude Code
// folds them into Edit). Read or Edit in ask count as deny rules (sbx
// cannot ask; an unanswered question is a no), with a note. Every other
// rule and Read in allow produce a note and nothing else. A bare "Read" or "Edit" means
// every file ("/"); a bare Edit in allow is refused.
//
// Patterns (the text inside the parentheses) take four forms:
//
//	//abs/path   the absolute path /abs/path
//	~/x, ~       below the home directory
//	/x           below the settings file's project root
//	./x, x       below the working directory
//
// Globs follow gitignore: "*" and "?" stay within one path component,
// "[...]" is a class, "**" is zero or more whole directories, and a
// trailing "/**" is everything inside. A trailing "/" matches directories
// only (a symlink to a directory counts as one). A matched directory
// covers its subtree, so nothing below it is listed.
//
// Anchoring: a bare pattern with no "/" other than a trailing one (".env",
// "*.pem", "secrets/") matches at any depth below the working directory,
// as in gitignore. Every other pattern is anchored at its base, including
// the "./x" form: "./.env" is the one file in the working directory, since
// the user wrote an explicit relative path (gitignore anchors a leading
// "/" the same way). "//x", "~/x" and "/x" are anchored too.
//
// A pattern without glob characters is the literal path, whether or not it
// exists (an unanchored one also matches deeper, see above); so is one
// whose only glob is a trailing "/**" (the directory itself). Other
// patterns are expanded against the filesystem now, walking from their
// deepest glob-free directory without following symlinks to directories;
// a deny's unreadable directories are denied whole where writes go (see
// walk.go), and more than permMatchCap matches for one rule is an error. Paths come back absolute and cleaned, not
// resolved through symlinks (Build does that).

// permRules is what a settings file's "permissions" object says for the filesystem.
type permRules struct {
	allowWrite, denyRead, denyWrite []string // absolute paths, cleaned
	// blindRead and blindWrite are the directories the deny rules'
	// walks could not read (see walk.go): denied whole where writes
	// go, which Build knows later (pathEntry.blind).
	blindRead, blindWrite []string
	notes                 []string
	// fileRules counts the file rules applied, whether or not they
	// matched anything yet (a managed one makes the layer's filesystem
	// rules, which no other file's filesystem.disabled drops).
	fileRules int
}

// permMatchCap is the most paths one rule's glob may expand to. It is a
// variable so tests can lower it.
var permMatchCap = 4096

// permFileTools maps the tools whose rules name files to the rule kind
// they count as.
var permFileTools = map[string]string{
	"Read":         "Read",
	"Edit":         "Edit",
	"Write":        "Edit",
	"MultiEdit":    "Edit",
	"NotebookEdit": "Edit",
}

// errPermTooMany is returned by the walk when a rule exceeds permMatchCap.
var errPermTooMany = errors.New("too many matches")

// parsePermissions converts a Claude Code "permissions" object. file names
// the settings file in errors and notes; root is its project root (for
// "/x" patterns), cwd and home the caller's.
//
// Keys other than allow, deny, ask and additionalDirectories are Claude
// Code's and produce a note each. additionalDirectories entries are plain
// directory paths (as for Claude Code's --add-dir): absolute, "~/…", or
// relative to cwd; they are added to allowWrite, with a note, because
// Claude Code lets sandboxed commands write there.
func parsePermissions(file string, raw json.RawMessage, root, cwd, home string) (permRules, error) {
	var pr permRules
	obj, err := object(file, "permissions", raw)
	if err != nil {
		return permRules{}, err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		shown := "permissions." + k
		switch k {
		case "allow", "deny", "ask":
			rules, err := permStrings(file, shown, obj[k], "a rule string such as \"Edit(src/**)\"")
			if err != nil {
				return permRules{}, err
			}
			for _, rule := range rules {
				if err := pr.rule(file, k, rule, root, cwd, home); err != nil {
					return permRules{}, err
				}
			}
		case "additionalDirectories":
			dirs, err := permStrings(file, shown, obj[k], "a directory path")
			if err != nil {
				return permRules{}, err
			}
			for _, d := range dirs {
				p, err := permDir(d, cwd, home)
				if err != nil {
					return permRules{}, &SettingsError{File: file, Key: shown, Problem: fmt.Sprintf("entry %q: %v", d, err)}
				}
				if p == "/" {
					return permRules{}, &SettingsError{File: file, Key: shown, Problem: fmt.Sprintf("entry %q would make the whole filesystem writable; list directories in sandbox.filesystem.allowWrite instead", d)}
				}
				pr.allowWrite = append(pr.allowWrite, p)
				pr.notes = append(pr.notes, fmt.Sprintf("%s: %q entry %q: Claude Code lets sandboxed commands write there: added to allowWrite as %s", file, shown, d, p))
			}
		default:
			pr.notes = append(pr.notes, fmt.Sprintf("%s: %q is Claude Code's, not sbx's: ignored", file, shown))
		}
	}
	pr.allowWrite = dedupe(pr.allowWrite)
	pr.denyRead = dedupe(pr.denyRead)
	pr.denyWrite = dedupe(pr.denyWrite)
	return pr, nil
}

// permStrings decodes an array of non-empty strings; want describes one
// entry in the error.
func permStrings(file, shown string, raw json.RawMessage, want string) ([]string, error) {
	bad := &SettingsError{File: file, Key: shown, Problem: "must be an array of strings, each " + want}
	var items []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		return nil, bad
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, bad
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			return nil, &SettingsError{File: file, Key: shown, Problem: fmt.Sprintf("entry %d (%s) is not a string; each entry must be %s", i+1, it, want)}
		}
		if strings.TrimSpace(s) == "" || strings.ContainsRune(s, 0) {
			return nil, &SettingsError{File: file, Key: shown, Problem: fmt.Sprintf("entry %d %q is empty or contains a NUL byte; each entry must be %s", i+1, s, want)}
		}
		out = append(out, s)
	}
	return out, nil
}

// rule applies one rule from list ("allow", "deny" or "ask").
func (pr *permRules) rule(file, list, rule, root, cwd, home string) error {
	shown := "permissions." + list
	fail := func(format string, a ...any) error {
		return &SettingsError{File: file, Key: shown, Problem: fmt.Sprintf("rule %q: ", rule) + fmt.Sprintf(format, a...)}
	}
	note := func(format string, a ...any) {
		pr.notes = append(pr.notes, fmt.Sprintf("%s: %s %q: ", file, shown, rule)+fmt.Sprintf(format, a...))
	}
	tool, spec, hasSpec, err := splitPermRule(rule)
	if err != nil {
		return fail("%v", err)
	}
	kind, isFile := permFileTools[tool]
	if !isFile {
		if d, ok := strings.CutPrefix(spec, "domain:"); ok && list == "allow" && tool == "WebFetch" {
			note("not a filesystem rule; not sbx's: it does NOT open the network for the sandboxed command; list %s in sandbox.network.allowedDomains or pass --allow-domain %s", d, d)
			return nil
		}
		note("not a filesystem rule; not sbx's")
		return nil
	}
	if hasSpec && !balancedParens(spec) {
		return fail("unbalanced parentheses in the pattern; write %s(path), e.g. %s(./secret/**)", tool, tool)
	}
	switch {
	case list == "ask":
		// sbx cannot ask, and a question unanswered is a no: fail closed.
		note("sbx cannot ask: applied as a deny rule")
		list = "deny"
	case list == "allow" && kind == "Read":
		note("reads are allowed by default; a Read allow rule does not widen the sandbox (use sandbox.filesystem.allowRead to re-open a denied path)")
		return nil
	}
	paths := []string{"/"}
	var bs blindSpots
	if hasSpec {
		if paths, err = expandPermSpec(spec, root, cwd, home, list == "deny", &bs); err != nil {
			if errors.Is(err, errPermTooMany) {
				return fail("matches more than %d paths; name a directory instead, e.g. %s(./dir/**)", permMatchCap, tool)
			}
			return fail("%v", err)
		}
	}
	pr.fileRules++
	switch {
	case list == "allow": // an Edit rule
		for _, p := range paths {
			if p == "/" {
				return fail("would make the whole filesystem writable; list directories in sandbox.filesystem.allowWrite instead")
			}
		}
		pr.allowWrite = append(pr.allowWrite, paths...)
	case kind == "Read":
		pr.denyRead = append(pr.denyRead, paths...)
		pr.blindRead = append(pr.blindRead, bs.unreadable...)
	default:
		pr.denyWrite = append(pr.denyWrite, paths...)
		pr.blindWrite = append(pr.blindWrite, bs.unreadable...)
	}
	for _, d := range bs.deep {
		note("%s holds paths longer than a mount can name (%d bytes): denied whole for the run", d, MaxPlanPath)
	}
	if len(paths) == 0 && list == "deny" {
		if base, rest, _, err := permBase(spec, root, cwd, home); err == nil {
			if lit, ok := globLiteralTrap(base, rest); ok {
				return fail("the glob matches nothing, but %s exists; to name that file escape the glob characters: %s(%s)", lit, tool, globEscape(spec))
			}
		}
		note("matches nothing now; files created later are not covered")
	}
	return nil
}

// splitPermRule splits "Tool" or "Tool(specifier)". Only the outer shape
// is checked here: the specifier of a tool that is not sbx's (a Bash
// command, say) may hold anything.
func splitPermRule(rule string) (tool, spec string, hasSpec bool, err error) {
	const how = "write Tool or Tool(pattern), e.g. Read(./secret/**)"
	open := strings.IndexByte(rule, '(')
	if open < 0 {
		if strings.ContainsRune(rule, ')') {
			return "", "", false, fmt.Errorf("unbalanced parentheses; %s", how)
		}
		tool = rule
	} else {
		if !strings.HasSuffix(rule, ")") {
			return "", "", false, fmt.Errorf("unbalanced parentheses (it must end with \")\"); %s", how)
		}
		tool, spec, hasSpec = rule[:open], rule[open+1:len(rule)-1], true
	}
	switch {
	case tool == "":
		return "", "", false, fmt.Errorf("no tool name; %s", how)
	case strings.ContainsAny(tool, " \t\n)"):
		return "", "", false, fmt.Errorf("tool name %q is malformed; %s", tool, how)
	case hasSpec && spec == "":
		return "", "", false, fmt.Errorf("empty pattern; write %s(pattern), or a bare %s for every use", tool, tool)
	}
	return tool, spec, hasSpec, nil
}

// balancedParens reports whether s's parentheses pair up.
func balancedParens(s string) bool {
	depth := 0
	for _, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// permDir resolves an additionalDirectories entry: absolute, "~/…" or
// relative to cwd; no globs.
func permDir(d, cwd, home string) (string, error) {
	switch {
	case d == "~":
		return filepath.Clean(home), nil
	case strings.HasPrefix(d, "~/"):
		return filepath.Join(home, d[2:]), nil
	case strings.HasPrefix(d, "~"):
		return "", errors.New("~user paths are not supported; write the absolute path")
	case filepath.IsAbs(d):
		return filepath.Clean(d), nil
	}
	return filepath.Join(cwd, d), nil
}

// expandPermPattern turns one Read/Edit pattern into absolute, cleaned,
// sorted, deduplicated paths (see the comment at the top of this file).
// A deny's walk records what it could not see in bs (see walk.go).
func expandPermPattern(spec, root, cwd, home string, deny bool, bs *blindSpots) ([]string, error) {
	base, rest, anchored, err := permBase(spec, root, cwd, home)
	if err != nil {
		return nil, err
	}
	paths, _, err := expandGlob(base, rest, anchored, deny, bs)
	return paths, err
}

// expandPermSpec is expandPermPattern, with a deny's brace groups
// expanded first (see braceAlternatives): each alternative's matches,
// and the text's own where it names a path.
func expandPermSpec(spec, root, cwd, home string, deny bool, bs *blindSpots) ([]string, error) {
	alts := braceAlternatives(spec)
	if !deny || len(alts) < 2 {
		return expandPermPattern(spec, root, cwd, home, deny, bs)
	}
	var out []string
	for _, a := range alts {
		ps, err := expandPermPattern(a, root, cwd, home, deny, bs)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	if ps, err := expandPermPattern(spec, root, cwd, home, deny, &blindSpots{}); err == nil {
		for _, p := range ps {
			if _, err := os.Lstat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return sortedPaths(out), nil
}

// permBase splits a pattern into the directory it is anchored at and the
// rest (see the comment at the top of this file).
func permBase(spec, root, cwd, home string) (base, rest string, anchored bool, err error) {
	anchored = true
	switch {
	case strings.HasPrefix(spec, "//"):
		base, rest = "/", spec[2:]
	case spec == "~":
		base = home
	case strings.HasPrefix(spec, "~/"):
		base, rest = home, spec[2:]
	case strings.HasPrefix(spec, "~"):
		return "", "", false, errors.New("~user paths are not supported; write //absolute/path")
	case strings.HasPrefix(spec, "/"):
		base, rest = root, spec[1:]
	case strings.HasPrefix(spec, "./"):
		base, rest = cwd, spec[2:]
	default:
		base, rest = cwd, spec
		anchored = false
	}
	return base, rest, anchored, nil
}

// globMatch reports whether the path components name match pat, whose
// "**" components match zero or more components.
func globMatch(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		return globMatch(pat[1:], name) || (len(name) > 0 && globMatch(pat, name[1:]))
	}
	if len(name) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], name[0])
	return ok && globMatch(pat[1:], name[1:])
}

// globCouldExtend reports whether some path below name (name plus one or
// more components) could match pat.
func globCouldExtend(pat, name []string) bool {
	if len(name) == 0 {
		return len(pat) > 0
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		return globCouldExtend(pat[1:], name) || globCouldExtend(pat, name[1:])
	}
	ok, _ := path.Match(pat[0], name[0])
	return ok && globCouldExtend(pat[1:], name[1:])
}

// sortedPaths cleans, sorts and deduplicates ps.
func sortedPaths(ps []string) []string {
	for i, p := range ps {
		ps[i] = filepath.Clean(p)
	}
	sort.Strings(ps)
	return dedupe(ps)
}

// claudeProjectRoot returns the project root of a Claude Code settings file:
// the directory holding the ".claude" directory for a file inside one
// (…/proj/.claude/settings.json → …/proj), else the file's own directory.
// It is lexical: a relative file gives a relative root.
func claudeProjectRoot(file string) string {
	dir := filepath.Dir(filepath.Clean(file))
	if filepath.Base(dir) == ".claude" {
		return filepath.Dir(dir)
	}
	return dir
}
