package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// writeHint is the one stderr line sbx adds when the command failed and a
// refused write may be why (a tool's EROFS stack trace names no flag).
// With --observe-files writes (or all) it names the refused paths it saw
// and what would allow each; without it, it says where writes were
// allowed and how to see what was refused. It returns "" when no write
// can have been refused: the command succeeded, died of sbx's timeout,
// or the filesystem rules are off.
func writeHint(p *policy.Policy, code int, sum violations.Summary) string {
	if code == 0 || code >= 124 && code <= 127 || p.Filesystem.Disabled {
		return ""
	}
	observing := p.ObserveFiles == "writes" || p.ObserveFiles == "all"
	if !observing {
		where := []string{"/tmp (private to the run)"}
		for _, w := range p.Filesystem.AllowWrite {
			where = append(where, tilde(w, p.Process.Home))
		}
		if len(where) > 6 {
			where = append(where[:6], fmt.Sprintf("%d more", len(where)-6))
		}
		reads := ""
		if slices.Contains(p.Filesystem.DenyRead, "/") {
			reads = "; reads were limited to the declared paths (--dry-run lists them; anything else is absent)"
		}
		return fmt.Sprintf("sbx: the command exited %d; writes were allowed only in %s; if it failed on a read-only file system, rerun with --observe-files writes to see the refused paths (toolchain caches: --preset %s)%s",
			code, strings.Join(where, ", "), strings.Join(policy.PresetNames, "|"), reads)
	}
	refused := map[string]bool{}
	for _, r := range sum.First {
		if r.Kind == "file-write" {
			path := r.Resolved
			if path == "" {
				path = r.Path
			}
			refused[path] = true
		}
	}
	n := sum.ByKind["file-write"]
	if n == 0 {
		return ""
	}
	paths := make([]string, 0, len(refused))
	for path := range refused {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	parts := make([]string, 0, len(paths))
	for _, path := range paths {
		parts = append(parts, fmt.Sprintf("%s (%s)", tilde(path, p.Process.Home), allowFor(path, p)))
	}
	more := ""
	if n > len(paths) {
		more = fmt.Sprintf(" and %d more (see --violations)", n-len(paths))
	}
	return fmt.Sprintf("sbx: the command exited %d after %d refused %s: %s%s",
		code, n, plural(n, "write", "writes"), strings.Join(parts, ", "), more)
}

// allowFor names the flag that would let a write to path through: the
// preset whose cache holds it, else --allow-write of its directory.
func allowFor(path string, p *policy.Policy) string {
	for _, name := range policy.PresetNames {
		dirs, _ := policy.PresetDirs(name, p.Process.Env, p.Process.Home)
		for _, d := range dirs {
			if policy.Within(path, d.Path) {
				return "--preset " + name
			}
		}
	}
	for _, pn := range policy.ProtectedNames(false) {
		if filepath.Base(path) == filepath.Base(pn.Name) {
			return "a protected name: sbx never makes it writable"
		}
	}
	dir := path
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	return "--allow-write " + tilde(dir, p.Process.Home)
}

// tilde writes path under home as ~/….
func tilde(path, home string) string {
	if home != "" && home != "/" && policy.Within(path, home) {
		return "~" + strings.TrimPrefix(path, home)
	}
	return path
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
