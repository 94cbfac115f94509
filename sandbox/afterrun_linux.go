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
// the places where the search for protected names starts (each writable
// root, the working directory and HOME when they lie in one): what the
// command left there that the host would run or trip over by itself.
//
//   - A repository layout that was not there before: a .git (directory or
//     file), or a HEAD + objects + refs triple (a bare repository, which
//     git finds in the directory itself and whose config it obeys:
//     core.fsmonitor, core.worktree, hooks). It is moved aside
//     (.git → .git.sbx-planted-N, HEAD → HEAD.sbx-planted-N), which makes
//     it inert and keeps it for review.
//   - A FIFO, socket or device node that was not there before (a FIFO in
//     place of a Makefile hangs the host's make): removed; it holds no data,
//     and the process that listened on a socket is gone with the sandbox.
//
// Each is a violation record (source "after-run") that --fail-on-violation
// counts. Set-id bits need no check here: the filter refuses them at the
// system call (seccomp.SetIDMode), and file capabilities need CAP_SETFCAP,
// which the command never holds.
//
// The cost is one lstat per name and one directory read per place, before
// and after the run, whatever the size of the tree below. What the command
// makes deeper (git init sub) is not seen: that would need a list of
// what changed, which only the discard overlays keep. The weaker mode
// runs the same check over its writable roots.

// SourceAfterRun marks what the after-run check found and neutralised.
const SourceAfterRun = "after-run"

// afterPlace is one place the check looks at, with what it held before.
type afterPlace struct {
	dir     string
	hadGit  bool
	hadBare bool
	special map[string]bool // FIFOs, sockets and devices there before
}

// afterRunBefore records the places' state before the view is built (and
// before any stub is made).
func afterRunBefore(pl *Plan) []afterPlace {
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
	return out
}

// afterRunCheck neutralises and records what the command left in the
// places (see the top of this file).
func afterRunCheck(places []afterPlace, col *violations.Collector, stderr io.Writer) {
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
	for _, p := range places {
		// Another run's stub .git, still held, is no repository.
		if g := filepath.Join(p.dir, ".git"); !p.hadGit && exists(g) && !ns.HeldStub(g) {
			aside(p.dir, ".git", "a repository")
		}
		if !p.hadBare && bareLayout(p.dir) {
			aside(p.dir, "HEAD", "a bare repository layout (HEAD, objects, refs)")
		}
		for name, kind := range specialKinds(p.dir) {
			if p.special[name] {
				continue
			}
			path := filepath.Join(p.dir, name)
			if err := unix.Unlinkat(unix.AT_FDCWD, path, 0); err != nil {
				rec(path, "a "+kind+" the command made; removing it failed: "+err.Error())
				continue
			}
			rec(path, "a "+kind+" the command made (the host's tools would block on it or trip over it); removed")
		}
	}
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
