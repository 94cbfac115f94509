package ns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

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
// and each repository's .git/config (or, for a .git file, the config of
// the git directory its gitdir: names and of that one's commondir, as a
// worktree or submodule has), following include.path and every
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
// tree roots holding a .git directory or a .git file), where they lie in
// a place that takes writes. readOnly are the paths bound read-only
// already.
//
// A .git file (a worktree's, a submodule's, `git init
// --separate-git-dir`) sends git to the git directory its gitdir: line
// names, and from there to the commondir that directory names: their
// config files are read as .git/config is, and where either directory
// lies in a place that takes writes, its hooks and config are protected
// as .git/hooks and .git/config are (stubbed when missing: a dangling
// gitdir the command could create is pinned). One that cannot be read
// (not ENOENT) fails closed.
func hooksPathOps(repos []string, home string, takesWrites, readOnly []string, names []policy.Protected) ([]Op, error) {
	if len(takesWrites) == 0 {
		// Every target lies outside a writable place (deepestRoot):
		// nothing to protect, and no git configuration to read.
		return nil, nil
	}
	global := globalHooksPaths(home)
	// A git directory's pieces follow the switches of .git's own: what
	// the user allows in .git (allowGitConfig, allowProtected) is
	// allowed there too.
	protects := func(name string) bool {
		return slices.ContainsFunc(names, func(pn policy.Protected) bool { return pn.Name == name })
	}
	type target struct {
		path, why string
		dir       bool
	}
	var targets []target
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
		targets = append(targets, target{filepath.Clean(v), "core.hooksPath " + filepath.Clean(v), true})
	}
	for _, v := range global {
		add("", v)
	}
	for _, r := range repos {
		for _, v := range global {
			add(r, v)
		}
		gd, err := gitDirsOf(r)
		if err != nil {
			return nil, err
		}
		for _, c := range gd.configs {
			for _, v := range hooksPathValues(c, home, 0) {
				add(r, v)
			}
		}
		for _, d := range gd.dirs {
			why := "git directory " + d + " (of " + r + ")"
			if protects(".git/hooks") {
				targets = append(targets, target{filepath.Join(d, "hooks"), "hooks of the " + why, true})
			}
			if protects(".git/config") {
				targets = append(targets, target{filepath.Join(d, "config"), "config of the " + why, false},
					target{filepath.Join(d, "config.worktree"), "config.worktree of the " + why, false})
			}
		}
	}
	var ops []Op
	seen := map[string]bool{}
	ro := policy.NewPathSet(readOnly)
	for _, tg := range targets {
		t, why := tg.path, tg.why
		if seen[t] {
			continue
		}
		seen[t] = true
		root := deepestRoot(t, takesWrites)
		if root == "" || insideOther(t, root, ro) {
			continue
		}
		if root == t {
			// A whole writable root as the hooks directory: nothing in it
			// could be kept from the command.
			return nil, fmt.Errorf("%s is a writable place: git would run what the command writes there; do not make it writable, or unset core.hooksPath", why)
		}
		at, dir, isDir, err := firstMissingNoLink(root, t, why)
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
				dir = tg.dir
			}
			ops = append(ops, Op{Kind: OpStub, Path: at, Dir: dir, Why: "protected " + why, Protected: true})
		}
		for p := filepath.Dir(at); p != root && policy.Within(p, root); p = filepath.Dir(p) {
			ops = append(ops, Op{Kind: OpPin, Path: p, Dir: true, Why: "ancestor of " + why})
		}
	}
	return ops, nil
}

// gitDirs are where git looks for a working tree's configuration: the
// config files to read, and the git directories other than r/.git
// (a .git file's gitdir, and its commondir).
type gitDirs struct {
	configs, dirs []string
}

// gitFileMax bounds what is read of a .git file or a commondir file.
const gitFileMax = 4096

// gitDirsOf reads where the working tree r keeps its repository: r/.git
// itself when it is a directory, or the gitdir: a .git file names
// (relative to r) and the commondir that directory names (relative to
// it). A .git file that is not one git accepts contributes nothing: git
// refuses the repository too. One that cannot be read, or a git
// directory or config that is neither missing nor readable as a regular
// file, is an error: what git would run from it cannot be known.
func gitDirsOf(r string) (gitDirs, error) {
	var g gitDirs
	dotGit := filepath.Join(r, ".git")
	st, err := os.Lstat(dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return g, nil
	case err != nil:
		return g, fmt.Errorf("%s: %w; make it readable or do not make %s writable", dotGit, err, r)
	case st.IsDir():
		g.configs = []string{filepath.Join(dotGit, "config")}
		return g, nil
	}
	line, err := readSmall(dotGit)
	if err != nil {
		return g, fmt.Errorf("%s (a .git file): %w; make it a readable regular file or remove it", dotGit, err)
	}
	gd, ok := strings.CutPrefix(line, "gitdir:")
	gd = strings.TrimSpace(gd)
	if !ok || gd == "" {
		return g, nil
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(r, gd)
	}
	gd = filepath.Clean(gd)
	dirs := []string{gd}
	if c, err := readSmall(filepath.Join(gd, "commondir")); err == nil && c != "" {
		if !filepath.IsAbs(c) {
			c = filepath.Join(gd, c)
		}
		dirs = append(dirs, filepath.Clean(c))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return g, fmt.Errorf("%s/commondir (the git directory of %s): %w; make it readable or remove %s", gd, r, err, dotGit)
	}
	for _, d := range dirs {
		for _, name := range []string{"config", "config.worktree"} {
			c := filepath.Join(d, name)
			st, err := os.Stat(c)
			switch {
			case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
				continue
			case err == nil && !st.Mode().IsRegular():
				return g, fmt.Errorf("%s (the git directory of %s) is not a regular file; git would block or fail on it: remove it or %s", c, r, dotGit)
			case err != nil:
				return g, fmt.Errorf("%s (the git directory of %s): %w; make it readable or remove %s", c, r, err, dotGit)
			}
			f, err := os.Open(c)
			if err != nil {
				return g, fmt.Errorf("%s (the git directory of %s): %w; make it readable or remove %s", c, r, err, dotGit)
			}
			f.Close()
			g.configs = append(g.configs, c)
		}
	}
	g.dirs = dirs
	return g, nil
}

// readSmall is the first line of a small regular file, opened without
// following a final symbolic link and without blocking.
func readSmall(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	b := make([]byte, gitFileMax)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	return strings.TrimSpace(line), nil
}

// firstMissingNoLink is firstMissing that refuses a symbolic link on the
// way from root to p: inside a writable place the command could point it
// anywhere. When p exists, isDir says whether it is a directory; when a
// component on the way is not a directory, at is "" and isDir nil.
func firstMissingNoLink(root, p, why string) (at string, dir bool, isDir *bool, err error) {
	steps := stepsBelow(root, p)
	for i, cur := range steps {
		st, lerr := os.Lstat(cur)
		last := i == len(steps)-1
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			return cur, !last, nil, nil
		case lerr != nil:
			return "", false, nil, fmt.Errorf("%s: %w; make it readable or do not make %s writable", why, lerr, root)
		case st.Mode()&os.ModeSymlink != 0:
			return "", false, nil, fmt.Errorf("%s: %s is a symlink inside a writable place; remove it or do not make %s writable", why, cur, root)
		case last:
			d := st.IsDir()
			return "", false, &d, nil
		case !st.IsDir():
			return "", false, nil, nil
		}
	}
	return "", false, nil, nil
}
