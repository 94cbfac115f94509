package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ManagedDir is where Claude Code keeps managed settings on Linux:
// managed-settings.json, then managed-settings.d/*.json in name order.
const ManagedDir = "/etc/claude-code"

// ClaudeScopes lists the Claude Code settings files that exist for a
// project in dir, lowest precedence first: user ($CLAUDE_CONFIG_DIR or
// ~/.claude, settings.json), project (dir/.claude/settings.json), local
// (dir/.claude/settings.local.json). The managed scope is read apart
// (managedScope): its scalars win over all three. A file that exists but
// cannot be read is an error; a missing one is skipped, and so is a user
// file in a home the caller cannot search (HOME=/root for another user),
// with a note.
func ClaudeScopes(dir, home string, environ []string) (files, notes []string, err error) {
	if user := claudeUserScope(home, environ); user != "" {
		got, err := existing([]string{user})
		if err != nil && errors.Is(err, fs.ErrPermission) {
			notes = append(notes, fmt.Sprintf("Claude Code user settings %s skipped: %v", user, err))
		} else if err != nil {
			return nil, nil, err
		}
		files = append(files, got...)
	}
	got, err := existing([]string{
		filepath.Join(dir, ".claude", "settings.json"),
		filepath.Join(dir, ".claude", "settings.local.json")})
	if err != nil {
		return nil, nil, err
	}
	return append(files, got...), notes, nil
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
