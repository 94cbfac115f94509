package check

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// alwaysAllowed are device files any command may name.
var alwaysAllowed = []string{
	"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
	"/dev/stdin", "/dev/stdout", "/dev/stderr",
}

var (
	assignPrefix = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*=`)
	varName      = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)
	windowsAbs   = lazyRegexp(`^([A-Za-z]:[\\/]|\\\\)`)
)

// maxSymlinks bounds symlink resolution, like the kernel's ELOOP limit.
const maxSymlinks = 40

// resolveRoot makes root absolute with its symlinks resolved; "" means
// the working directory.
func resolveRoot(root string) (string, error) {
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the working directory: %w", err)
		}
		root = wd
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("resolving root %q: %w", root, err)
	}
	return resolvePath(abs)
}

// resolvePath resolves every symlink in the absolute path p, component by
// component, like the kernel would. Components that do not exist are kept
// as written, and a dangling link is followed to its target's spelling, so
// that a link to a place not yet created cannot be used to escape.
func resolvePath(p string) (string, error) {
	resolved := "/"
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("resolving %q: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolving %q: %w", p, err)
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, nil
}

// within reports whether the resolved path p is root or below it.
func within(root, p string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// hasDotDot reports whether s has a ".." segment between "/" or "\".
func hasDotDot(s string) bool {
	return slices.Contains(strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }), "..")
}

// pathWord is what the paths rule knows about one word.
type pathWord struct {
	raw    string // as written
	val    string // after quote removal and $VAR expansion
	pos    int
	quoted bool // quoted and free of variables: a path only if it exists
}

// expandForPath computes the value of w for the paths rule: quotes
// removed and simple $VAR / ${VAR} expanded from this process's
// environment. ok is false for words whose value cannot be known (command
// substitution, complex parameter expansion); the structure rule refuses
// those.
func expandForPath(sw shellWord) (pathWord, bool) {
	pw := pathWord{raw: sw.raw, pos: sw.pos}
	var b strings.Builder
	quoted, hasVar := false, false
	for _, part := range sw.w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return pw, false
			}
			quoted = true
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return pw, false
			}
			quoted = true
			for _, inner := range p.Parts {
				switch ip := inner.(type) {
				case *syntax.Lit:
					b.WriteString(unescape(ip.Value, true))
				case *syntax.ParamExp:
					v, ok := simpleVar(ip)
					if !ok {
						return pw, false
					}
					hasVar = true
					b.WriteString(v)
				default:
					return pw, false
				}
			}
		case *syntax.ParamExp:
			v, ok := simpleVar(p)
			if !ok {
				return pw, false
			}
			hasVar = true
			b.WriteString(v)
		default:
			return pw, false
		}
	}
	pw.val = b.String()
	pw.quoted = quoted && !hasVar
	return pw, true
}

// simpleVar expands $NAME or ${NAME} from the environment.
func simpleVar(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || !varName().MatchString(p.Param.Value) ||
		p.Excl || p.Length || p.Width || p.IsSet || p.Flags != nil || p.NestedParam != nil ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset ||
		p.Index != nil || len(p.Modifiers) > 0 || p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	return os.Getenv(p.Param.Value), true
}

// fallbackWords splits an unparsable command on blanks, removing quote
// characters, so that the paths rule still runs on its own.
func fallbackWords(command string) []pathWord {
	var out []pathWord
	start := -1
	for i := 0; i <= len(command); i++ {
		if i < len(command) && command[i] != ' ' && command[i] != '\t' && command[i] != '\n' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			raw := command[start:i]
			val := strings.NewReplacer(`'`, "", `"`, "").Replace(raw)
			out = append(out, pathWord{raw: raw, val: val, pos: start, quoted: val != raw})
			start = -1
		}
	}
	return out
}

// checkPaths applies the paths rule to every word of the command.
func checkPaths(root string, s script) []Finding {
	rootDir, err := resolveRoot(root)
	if err != nil {
		return []Finding{{Rule: RulePaths, Pos: 0, Message: fmt.Sprintf("cannot check paths: %v", err)}}
	}
	var words []pathWord
	if s.file == nil {
		words = fallbackWords(s.src)
	} else {
		for _, sw := range s.words() {
			if sw.hdoc {
				continue
			}
			if pw, ok := expandForPath(sw); ok {
				words = append(words, pw)
			}
		}
	}
	var out []Finding
	for _, pw := range words {
		if msg := checkPathWord(rootDir, pw); msg != "" {
			out = append(out, Finding{Rule: RulePaths, Token: shorten(pw.raw), Pos: pw.pos, Message: msg})
		}
	}
	return out
}

// checkPathWord returns why the word names a path outside root, or "".
func checkPathWord(root string, pw pathWord) string {
	v, raw := pw.val, pw.raw
	switch {
	case strings.HasPrefix(v, "-"):
		// A flag is not a path, but the value of --flag=value may be.
		_, after, ok := strings.Cut(v, "=")
		if !ok {
			return ""
		}
		v = after
		_, raw, _ = strings.Cut(raw, "=")
	case assignPrefix().MatchString(v):
		v = v[strings.IndexByte(v, '=')+1:]
		_, raw, _ = strings.Cut(raw, "=")
	}
	if v == "" {
		return ""
	}
	if pw.quoted {
		// Quoting turns off tilde expansion, and a quoted word is a path
		// only if it exists.
		p := joinRoot(root, v)
		if _, err := os.Lstat(p); err != nil {
			return ""
		}
		return checkResolved(root, v, p)
	}
	for _, s := range []string{v, raw} {
		if hasDotDot(s) {
			return fmt.Sprintf("%q has a \"..\" segment; name paths inside the root without \"..\"", s)
		}
		if windowsAbs().MatchString(s) {
			return fmt.Sprintf("%q is a Windows absolute path, outside the root", s)
		}
	}
	p, err := absPath(root, v)
	if err != nil {
		return err.Error()
	}
	if !strings.ContainsAny(v, `/\`) && !strings.HasPrefix(v, "~") {
		// A simple name is a path only if it exists in the root.
		if _, err := os.Lstat(p); err != nil {
			return ""
		}
	}
	return checkResolved(root, v, p)
}

// checkResolved checks the absolute, uncleaned path p written as v.
func checkResolved(root, v, p string) string {
	if hasDotDot(v) {
		return fmt.Sprintf("%q has a \"..\" segment; name paths inside the root without \"..\"", v)
	}
	if slices.Contains(alwaysAllowed, filepath.Clean(p)) {
		return ""
	}
	resolved, err := resolvePath(p)
	if err != nil {
		return err.Error()
	}
	if within(root, resolved) {
		return ""
	}
	if resolved != filepath.Clean(p) {
		return fmt.Sprintf("%q resolves to %s, outside the root %s", v, resolved, root)
	}
	return fmt.Sprintf("%q is outside the root %s", v, root)
}

// joinRoot makes v absolute without cleaning it, so that the kernel and
// resolvePath see ".." after symlinks, as a command would.
func joinRoot(root, v string) string {
	if filepath.IsAbs(v) {
		return v
	}
	return root + "/" + v
}

// absPath makes v absolute: "~" and "~/..." name the home directory,
// absolute paths stay, anything else is relative to root.
func absPath(root, v string) (string, error) {
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%q names the home directory, which cannot be resolved: %w", v, err)
		}
		return home + v[1:], nil
	case strings.HasPrefix(v, "~"):
		return "", fmt.Errorf("%q names another user's home directory, outside the root", v)
	}
	return joinRoot(root, v), nil
}

// CheckCwd checks a task's working directory: relative to root or
// absolute, it must resolve, symlinks included, to root or a directory
// below it. ".." segments, "~" and "$" are refused outright: the runner
// does not expand them, and ".." is ambiguous across symlinks. An empty
// cwd means root and is accepted. An empty root means the working
// directory.
func CheckCwd(root, cwd string) []Finding {
	bad := func(msg string) []Finding {
		return []Finding{{Rule: RuleCwd, Token: shorten(cwd), Pos: -1, Message: msg}}
	}
	if cwd == "" {
		return nil
	}
	rootDir, err := resolveRoot(root)
	if err != nil {
		return bad(fmt.Sprintf("cannot check cwd: %v", err))
	}
	switch {
	case strings.ContainsRune(cwd, 0):
		return bad("cwd contains a NUL byte")
	case hasDotDot(cwd):
		return bad(fmt.Sprintf("cwd %q has a \"..\" segment; name a directory inside the root without \"..\"", cwd))
	case strings.HasPrefix(cwd, "~") || strings.Contains(cwd, "$"):
		return bad(fmt.Sprintf("cwd %q would need shell expansion; give a path relative to the root or absolute", cwd))
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(rootDir, p)
	}
	resolved, err := resolvePath(filepath.Clean(p))
	if err != nil {
		return bad(fmt.Sprintf("cwd %q: %v", cwd, err))
	}
	if !within(rootDir, resolved) {
		return bad(fmt.Sprintf("cwd %q resolves to %s, outside the root %s", cwd, resolved, rootDir))
	}
	return nil
}

// errNotDir is returned by checkRootDir for roots that are not directories.
var errNotDir = errors.New("not a directory")

// checkRootDir makes sure root names an existing directory.
func checkRootDir(root string) error {
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w", root, errNotDir)
	}
	return nil
}
