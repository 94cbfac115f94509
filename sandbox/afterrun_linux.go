//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// The after-run check looks, once the command and its stubs are gone, at
// what the command left that the host would run or trip over by itself:
// at the places where the search for protected names starts (each
// writable root, the working directory and HOME when they lie in one),
// and below them at each entry the command made, as the supervisor noted
// it from the notified calls (mkdir, mknod, rename, link, symlink: see
// seccomp.Config.Notify and createdNotes).
//
//   - A repository layout that was not there before: a .git (directory or
//     file), or a HEAD + objects + refs triple (a bare repository, which
//     git finds in the directory itself and whose config it obeys:
//     core.fsmonitor, core.worktree, hooks). It is moved aside
//     (.git → .git.sbx-planted-N, HEAD → HEAD.sbx-planted-N), which makes
//     it inert and keeps it for review. Below the top level: a .git the
//     command made or renamed into place, a .git in a directory it made,
//     and the triple where it made objects or refs (or in a directory it
//     made).
//   - A FIFO, socket or device node that was not there before (a FIFO in
//     place of a Makefile hangs the host's make): removed; it holds no data,
//     and the process that listened on a socket is gone with the sandbox.
//     Below the top level: one the command made with mknod or moved into
//     place.
//
// Each is a violation record (source "after-run") that --fail-on-violation
// counts. Set-id bits need no check here: the filter refuses them at the
// system call (seccomp.SetIDMode), and file capabilities need CAP_SETFCAP,
// which the command never holds.
//
// The cost is one lstat per name and one directory read per place, before
// and after the run, and a few lstats per entry the command made, whatever
// the size of the tree below. Not seen below the top level: a .git file
// or a HEAD written by an open into a directory that was there before
// (only opens with --observe-files are notified; such a .git file points
// git at a git directory, which the check finds when the command made it),
// and a socket bound deep in the tree. The weaker mode has no supervisor
// listening: it checks the top level only.

// SourceAfterRun marks what the after-run check found and neutralised.
const SourceAfterRun = "after-run"

// afterRunState is what the check knew before the run: the places and
// the writable roots (what lies outside them is not the host's to fix).
type afterRunState struct {
	places []afterPlace
	roots  []string
}

// afterPlace is one place the check looks at, with what it held before.
type afterPlace struct {
	dir     string
	hadGit  bool
	hadBare bool
	special map[string]bool // FIFOs, sockets and devices there before
}

// afterRunBefore records the places' state before the view is built (and
// before any stub is made).
func afterRunBefore(pl *Plan) afterRunState {
	var roots []string
	for _, w := range pl.writable {
		if w != "/tmp" || pl.Weaker { // the full sandbox's /tmp is its own
			roots = append(roots, w)
		}
	}
	dirs := append([]string(nil), roots...)
	home := ""
	for _, kv := range pl.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	for _, d := range []string{pl.Dir, home} {
		if d != "" && policy.WithinAny(d, roots) {
			dirs = append(dirs, d)
		}
	}
	var out []afterPlace
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, afterPlace{dir: d, hadGit: exists(filepath.Join(d, ".git")), hadBare: bareLayout(d), special: specials(d)})
	}
	return afterRunState{places: out, roots: roots}
}

// afterRunCheck neutralises and records what the command left in the
// places, and where it made entries below them (created, in path order;
// overflow: some were not noted). See the top of this file.
func afterRunCheck(st afterRunState, created []createdEntry, overflow bool, col *violations.Collector, stderr io.Writer) {
	stamp := fmt.Sprint(time.Now().Unix())
	rec := func(path, detail string) {
		fmt.Fprintf(stderr, "sbx: after the run: %s: %s\n", path, detail)
		if col != nil {
			col.Add(violations.Record{Kind: violations.KindFileWrite, Source: SourceAfterRun, Path: path, Detail: detail, Rule: "after-run check"})
		}
	}
	aside := func(dir, name, what string) {
		from := filepath.Join(dir, name)
		to := name + ".sbx-planted-" + stamp
		if err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, filepath.Join(dir, to), unix.RENAME_NOREPLACE); err != nil {
			rec(from, what+" the command made; moving it aside failed ("+err.Error()+"): remove it before git runs there")
			return
		}
		rec(from, what+" the command made (git would run its config and hooks); moved to "+to)
	}
	remove := func(path, kind string) {
		if err := unix.Unlinkat(unix.AT_FDCWD, path, 0); err != nil {
			rec(path, "a "+kind+" the command made; removing it failed: "+err.Error())
			return
		}
		rec(path, "a "+kind+" the command made (the host's tools would block on it or trip over it); removed")
	}
	const bare = "a bare repository layout (HEAD, objects, refs)"
	for _, p := range st.places {
		// Another run's stub .git, still held, is no repository.
		if g := filepath.Join(p.dir, ".git"); !p.hadGit && exists(g) && !ns.HeldStub(g) {
			aside(p.dir, ".git", "a repository")
		}
		if !p.hadBare && bareLayout(p.dir) {
			aside(p.dir, "HEAD", bare)
		}
		for name, kind := range specialKinds(p.dir) {
			if !p.special[name] {
				remove(filepath.Join(p.dir, name), kind)
			}
		}
	}
	// Below the top level: each entry the command made, parents first
	// (what a moved-aside repository held is gone from its path).
	for _, e := range created {
		// The noted path is the command's, as it spelled it: its parent
		// is followed through links here, and must stay inside a
		// writable root, so that no link the command made points the
		// check at what is not the run's (nor at the sandbox's /tmp).
		parent, err := filepath.EvalSymlinks(filepath.Dir(e.path))
		if err != nil {
			continue
		}
		e.path = filepath.Join(parent, filepath.Base(e.path))
		if !policy.WithinAny(e.path, st.roots) {
			continue
		}
		var fst unix.Stat_t
		if unix.Lstat(e.path, &fst) != nil {
			continue
		}
		dir, name := filepath.Dir(e.path), filepath.Base(e.path)
		if kind := specialKind(fst.Mode); kind != "" {
			remove(e.path, kind)
			continue
		}
		switch {
		case name == ".git":
			if !ns.HeldStub(e.path) {
				aside(dir, ".git", "a repository")
			}
			continue
		case (name == "objects" || name == "refs") && bareLayout(dir):
			aside(dir, "HEAD", bare)
		}
		if e.dir && fst.Mode&unix.S_IFMT == unix.S_IFDIR {
			// A directory the command made: all it holds is new.
			if g := filepath.Join(e.path, ".git"); exists(g) && !ns.HeldStub(g) {
				aside(e.path, ".git", "a repository")
			}
			if bareLayout(e.path) {
				aside(e.path, "HEAD", bare)
			}
		}
	}
	if overflow {
		rec(strings.Join(st.roots, ", "), fmt.Sprintf("the command made more than %d directory entries: the after-run check followed the first ones only; review the tree (git status, find -type p) before the host's tools run there", createdMax))
	}
}

// specialKind names a FIFO, socket or device node by its st_mode.
func specialKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device node"
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// bareLayout reports whether dir holds what git takes for a bare
// repository: HEAD, and objects and refs directories.
func bareLayout(dir string) bool {
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(dir, "HEAD"), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	for _, d := range []string{"objects", "refs"} {
		if unix.Lstat(filepath.Join(dir, d), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
	}
	return true
}

// specialKinds are dir's FIFOs, sockets and device nodes, by name.
func specialKinds(dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out map[string]string
	for _, e := range entries {
		kind := ""
		switch t := e.Type(); {
		case t&os.ModeNamedPipe != 0:
			kind = "FIFO"
		case t&os.ModeSocket != 0:
			kind = "socket"
		case t&os.ModeDevice != 0:
			kind = "device node"
		}
		if kind != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[e.Name()] = kind
		}
	}
	return out
}

func specials(dir string) map[string]bool {
	out := map[string]bool{}
	for n := range specialKinds(dir) {
		out[n] = true
	}
	return out
}
