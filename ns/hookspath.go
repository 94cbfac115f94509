package ns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Git runs the hooks of the directory core.hooksPath names instead of
// .git/hooks (husky's `git config core.hooksPath .husky`, a team's
// `.githooks`, a global ~/.githooks). That directory is protected as
// .git/hooks is: read-only when it lies in a place that takes writes, and
// pinned by a stub when it is missing, with its ancestors below the
// writable root pinned.
//
// The value is read where the host's git reads it: the system file
// (/etc/gitconfig), the user's ($GIT_CONFIG_GLOBAL, or
// $XDG_CONFIG_HOME/git/config — ~/.config/git/config — and ~/.gitconfig),
// and each repository's .git/config, following include.path and every
// includeIf.*.path (their conditions are not evaluated: every value any of
// them could set is protected, a superset of the one git uses). A relative
// value is taken, as git takes it, from the root of each repository's
// working tree; "~/" is the user's home.

// gitConfigMax bounds how much of one git config file is read: a writable
// place may hold a huge or endless one.
const gitConfigMax = 1 << 20

// hooksPathValues returns every core.hooksPath value set in the config file
// path and the files it includes (depth-bounded), in order; missing or
// unreadable files contribute nothing. home expands "~/".
func hooksPathValues(path, home string, depth int) []string {
	if depth > 8 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil // a FIFO or device would block or never end
	}
	var out []string
	section := ""
	sc := bufio.NewScanner(io.LimitReader(f, gitConfigMax))
	sc.Buffer(make([]byte, 0, 4096), gitConfigMax)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			if i := strings.IndexAny(section, " \t"); i >= 0 {
				// [includeIf "gitdir:~/x/"]: the subsection's kind only.
				section = section[:i] + " sub"
			}
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = gitValue(val)
		switch {
		case section == "core" && key == "hookspath":
			out = append(out, expandHome(val, home))
		case (section == "include" || section == "includeif sub") && key == "path":
			inc := expandHome(val, home)
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			out = append(out, hooksPathValues(inc, home, depth+1)...)
		}
	}
	return out
}

// gitValue is a git config value without its comment and quotes.
func gitValue(v string) string {
	var b strings.Builder
	quoted := false
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

func expandHome(v, home string) string {
	if home != "" && (v == "~" || strings.HasPrefix(v, "~/")) {
		return filepath.Join(home, strings.TrimPrefix(v, "~"))
	}
	return v
}

// globalHooksPaths are the core.hooksPath values of the system and the
// user's git configuration.
func globalHooksPaths(home string) []string {
	var files []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		files = append(files, "/etc/gitconfig")
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	var out []string
	for _, f := range files {
		out = append(out, hooksPathValues(f, home, 0)...)
	}
	return out
}

// hooksPathOps protects the hooks directories that core.hooksPath names
// for the repositories the protected-name search found (repos: working
// tree roots whose .git is a directory), where they lie in a place that
// takes writes. readOnly are the paths bound read-only already.
func hooksPathOps(repos []string, home string, takesWrites, readOnly []string) ([]Op, error) {
	if len(takesWrites) == 0 {
		// Every target lies outside a writable place (deepestRoot):
		// nothing to protect, and no git configuration to read.
		return nil, nil
	}
	global := globalHooksPaths(home)
	var targets []string
	add := func(base, v string) {
		if v == "" {
			return
		}
		if !filepath.IsAbs(v) {
			if base == "" {
				return
			}
			v = filepath.Join(base, v)
		}
		targets = append(targets, filepath.Clean(v))
	}
	for _, v := range global {
		add("", v)
	}
	for _, r := range repos {
		for _, v := range global {
			add(r, v)
		}
		for _, v := range hooksPathValues(filepath.Join(r, ".git", "config"), home, 0) {
			add(r, v)
		}
	}
	var ops []Op
	seen := map[string]bool{}
	ro := policy.NewPathSet(readOnly)
	for _, t := range targets {
		if seen[t] {
			continue
		}
		seen[t] = true
		root := deepestRoot(t, takesWrites)
		if root == "" || insideOther(t, root, ro) {
			continue
		}
		why := "core.hooksPath " + t
		if root == t {
			// A whole writable root as the hooks directory: nothing in it
			// could be kept from the command.
			return nil, fmt.Errorf("core.hooksPath %s is a writable place: git would run what the command writes there; do not make it writable, or unset core.hooksPath", t)
		}
		at, dir, isDir, err := firstMissingNoLink(root, t)
		switch {
		case err != nil:
			return nil, err
		case at == "" && isDir == nil:
			continue // a file on the way: nothing can be made below it
		case at == "":
			at = t
			ops = append(ops, Op{Kind: OpRO, Path: t, Dir: *isDir, Why: "protected " + why, Protected: true})
		default:
			if at != t {
				why += " (missing from here)"
			} else {
				why += " (missing)"
				dir = true
			}
			ops = append(ops, Op{Kind: OpStub, Path: at, Dir: dir, Why: "protected " + why, Protected: true})
		}
		for p := filepath.Dir(at); p != root && policy.Within(p, root); p = filepath.Dir(p) {
			ops = append(ops, Op{Kind: OpPin, Path: p, Dir: true, Why: "ancestor of " + why})
		}
	}
	return ops, nil
}

// firstMissingNoLink is firstMissing that refuses a symbolic link on the
// way from root to p: inside a writable place the command could point it
// anywhere. When p exists, isDir says whether it is a directory; when a
// component on the way is not a directory, at is "" and isDir nil.
func firstMissingNoLink(root, p string) (at string, dir bool, isDir *bool, err error) {
	rest := strings.TrimPrefix(p, root+"/")
	if root == "/" {
		rest = strings.TrimPrefix(p, "/")
	}
	cur := root
	comps := strings.Split(rest, "/")
	for i, c := range comps {
		cur = filepath.Join(cur, c)
		st, lerr := os.Lstat(cur)
		last := i == len(comps)-1
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			return cur, !last, nil, nil
		case lerr != nil:
			return "", false, nil, fmt.Errorf("core.hooksPath %s: %w; make it readable or do not make %s writable", p, lerr, root)
		case st.Mode()&os.ModeSymlink != 0:
			return "", false, nil, fmt.Errorf("core.hooksPath %s: %s is a symlink inside a writable place; remove it or do not make %s writable", p, cur, root)
		case last:
			d := st.IsDir()
			return "", false, &d, nil
		case !st.IsDir():
			return "", false, nil, nil
		}
	}
	return "", false, nil, nil
}
