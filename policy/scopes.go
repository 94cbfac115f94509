package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// ManagedDir is where Claude Code keeps managed settings on Linux:
// managed-settings.json, then managed-settings.d/*.json in name order.
const ManagedDir = "/etc/claude-code"

// ClaudeScopes lists the Claude Code settings files that exist for a
// project whose directories are dirs (see ClaudeProject: the working
// directory first, the project root last), lowest precedence first:
// user ($CLAUDE_CONFIG_DIR or ~/.claude, settings.json), then for each
// directory in dirs its project (.claude/settings.json) and local
// (.claude/settings.local.json) scope. The project root's come last, so
// its scalars win over a subdirectory's; arrays merge. The managed scope
// is read apart (managedScope): its scalars win over all. A file that
// exists but cannot be read is an error; a missing one is skipped, and
// so is a user file in a home the caller cannot search (HOME=/root for
// another user), with a note. scope maps each project file to the
// directory whose .claude holds it.
func ClaudeScopes(dirs []string, home string, environ []string) (files, notes []string, scope map[string]string, err error) {
	scope = map[string]string{}
	if user := claudeUserScope(home, environ); user != "" {
		got, err := existing([]string{user})
		if err != nil && errors.Is(err, fs.ErrPermission) {
			notes = append(notes, fmt.Sprintf("Claude Code user settings %s skipped: %v", user, err))
		} else if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, got...)
	}
	for _, dir := range dirs {
		got, err := existing(projectFiles(dir))
		if err != nil {
			return nil, nil, nil, err
		}
		for _, f := range got {
			scope[f] = dir
		}
		files = append(files, got...)
	}
	return files, notes, scope, nil
}

// projectFiles are the project and local scope files of dir.
func projectFiles(dir string) []string {
	return []string{filepath.Join(dir, ".claude", "settings.json"), filepath.Join(dir, ".claude", "settings.local.json")}
}

// ClaudeProject finds the project --claude-settings reads for start (the
// DIR given, or the working directory). An agent starts in the project's
// root, and its shell then cds below it; the project's rules must follow.
//
// The root is the checkout that holds start, as the trust boundary draws
// it (the outermost git work tree below HOME, see gitTop): a
// subdirectory may hold a .claude/ of its own, and it must not shadow the
// root's. Outside a checkout, the root is the outermost directory at or
// above start, below HOME, whose .claude/ holds a settings file; the walk
// up stops at a directory that another user owns or that others may
// write (/tmp), whose files are not the caller's project. Failing both,
// start is the root.
//
// dirs are the directories whose scopes are read: start, each directory
// above it, and the root last (root == start: just start). Every one of
// them counts: a monorepo package's .claude/ below the root keeps its
// denies when the command runs there. Arrays merge, the root's scalars
// win, and a directory's grants may not re-open what another
// directory's file denies unless the files are trusted (see
// untrustedReopen). found reports whether any dir holds a scope file.
func ClaudeProject(start, home string) (root string, dirs []string, found bool) {
	start = filepath.Clean(start)
	rstart := resolvedOr(start)
	rhome := ""
	if home != "" {
		rhome = resolvedOr(filepath.Clean(home))
	}
	root = rstart
	if top := gitTop(rstart, rhome); top != "" {
		root = top
	} else {
		uid := os.Getuid()
		for d := rstart; ; d = filepath.Dir(d) {
			if rhome != "" && Within(rhome, d) {
				break
			}
			if d != rstart && !ownDir(d, uid) {
				break
			}
			if hasScope(d) {
				root = d
			}
			if d == "/" {
				break
			}
		}
	}
	for d := rstart; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		found = found || hasScope(d)
		if d == root || d == "/" {
			break
		}
	}
	return root, dirs, found
}

// hasScope reports whether dir/.claude holds a project or local scope
// file (an entry that cannot be stat'ed for another reason than absence
// counts: reading it then fails loudly).
func hasScope(dir string) bool {
	for _, f := range projectFiles(dir) {
		if _, err := os.Lstat(f); err == nil || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscallENOTDIR) {
			return true
		}
	}
	return false
}

// ownDir reports whether dir is owned by uid (or root) and writable by
// no one else: a directory whose .claude/ the caller put there.
func ownDir(dir string, uid int) bool {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && (int(sys.Uid) == uid || sys.Uid == 0)
}

// claudeUserScope is the path of Claude Code's user settings file
// ($CLAUDE_CONFIG_DIR or ~/.claude, settings.json), or "".
func claudeUserScope(home string, environ []string) string {
	userDir := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok && filepath.IsAbs(v) {
			userDir = v
		}
	}
	if userDir == "" && home != "" {
		userDir = filepath.Join(home, ".claude")
	}
	if userDir == "" {
		return ""
	}
	return filepath.Join(userDir, "settings.json")
}

// managedScope lists the managed settings files: path is --managed-settings
// (a file, or a directory in Claude Code's layout); with claude set and no
// path, Claude Code's own ManagedDir.
func managedScope(path string, claude bool) ([]string, error) {
	if path == "" {
		if !claude {
			return nil, nil
		}
		path = ManagedDir
	}
	st, err := os.Stat(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist) && path == ManagedDir:
		return nil, nil // no managed settings on this machine
	case err != nil:
		return nil, &SettingsError{File: path, Problem: fmt.Sprintf("cannot read: %v; check the path and permissions", unwrapPathErr(err))}
	case !st.IsDir():
		return []string{path}, nil
	}
	files, err := existing([]string{filepath.Join(path, "managed-settings.json")})
	if err != nil {
		return nil, err
	}
	d := filepath.Join(path, "managed-settings.d")
	entries, err := os.ReadDir(d)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &SettingsError{File: d, Problem: fmt.Sprintf("cannot read: %v; check the permissions", unwrapPathErr(err))}
	}
	var drop []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			drop = append(drop, filepath.Join(d, e.Name()))
		}
	}
	sort.Strings(drop)
	return append(files, drop...), nil
}

// existing keeps the files of cands that exist.
func existing(cands []string) ([]string, error) {
	var out []string
	for _, c := range cands {
		if _, err := os.Stat(c); err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
				continue
			}
			return nil, &readError{&SettingsError{File: c, Problem: fmt.Sprintf("cannot read: %v; check the permissions", unwrapPathErr(err))}, err}
		}
		out = append(out, c)
	}
	return out, nil
}

// readError is a SettingsError that unwraps to the file system's error.
type readError struct {
	*SettingsError
	err error
}

func (e *readError) Unwrap() error { return e.err }
