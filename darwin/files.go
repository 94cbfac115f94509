package darwin

import (
	"slices"
	"strings"
)

// Protected paths: never writable, wherever they are, even inside an
// allowWrite root. Each is matched at any depth.
var (
	protectedFiles = []string{
		".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc",
		".zprofile", ".profile", ".ripgreprc", ".mcp.json",
		".zshenv", ".zlogin", ".zlogout", ".bash_login", ".bash_logout",
		// What the host's tools run or load without asking (the Linux list,
		// policy.ProtectedNames; Seatbelt denies them at any depth, missing
		// ones too, as it has no stubs).
		".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", "lefthook.yaml",
		".lefthook.yaml", "lefthook-local.yml", ".lefthook-local.yml", "lefthook-local.yaml",
		".lefthook-local.yaml", ".envrc", "mise.toml", ".mise.toml", "mise.local.toml",
		".mise.local.toml", ".tool-versions", ".npmrc", ".yarnrc.yml", ".yarnrc",
		".pnpmfile.cjs", ".cargo/config.toml", ".cargo/config",
	}
	protectedDirs = []string{
		".vscode", ".idea", ".claude", ".git/hooks",
		".git/modules", ".git/worktrees",
		".husky", ".lefthook", ".lefthook-local", ".zed", ".cursor", ".gemini",
	}
	gitConfig = ".git/config" // protected unless AllowGitConfig
	// protectedParents are the directories between a writable directory and
	// a protected name: they may be created as directories but not as a
	// file or symlink (which would redirect what lies below them), and
	// cannot be renamed or removed. ".git" as a file is itself a pointer
	// to another git directory, hooks included.
	protectedParents = []string{".claude", ".git"}
)

// anyDepth is the regex for name at any depth of the filesystem, and
// everything beneath it. It is anchored at "/" rather than at the writable
// roots (srt #432 anchored its globs to the working directory): outside the
// roots nothing is writable anyway, and a name straddling a root (an
// allowWrite of .../.git) is still caught.
func anyDepth(name string) string { return "^/(.*/)?" + escapeRegex(name) + "(/.*)?$" }

// namedAnyDepth is the regex for a path whose last name is name.
func namedAnyDepth(name string) string { return "^/(.*/)?" + escapeRegex(name) + "$" }

// fsPlan is the normalised filesystem part of an Input.
type fsPlan struct {
	readDeny, readAllow   []entry
	writeRoots, writeDeny []entry
	allowGitConfig        bool
	// allowProtected are protected names the user lets be written
	// (policy's allowProtected): their rules are left out.
	allowProtected []string
	allowPty       bool
}

// files writes the filesystem rules. Every allow comes before every deny
// (in SBPL the last matching rule wins), except the one narrow re-allow of
// directory metadata that must follow the read denies.
func (w *writer) files(p fsPlan) {
	w.section("Files: allows first, then denies (the last matching rule wins)")
	w.line("(allow file-read*)")
	roots := make([]string, 0, len(p.writeRoots))
	for _, e := range p.writeRoots {
		roots = append(roots, w.filter(e))
	}
	w.rule("allow", "file-write*", roots)
	w.devices(p.allowPty)

	readDeny, meta := w.readDenies(p)
	if len(readDeny) > 0 {
		w.section("denyRead, minus the allowRead paths inside it")
		w.rule("deny", "file-read*", readDeny)
	}
	if len(meta) > 0 {
		w.section("Directory metadata on the way to each allowRead path, so realpath works")
		w.rule("allow", "file-read-metadata", meta)
	}
	w.writeDenies(p, readDeny)
}

func (w *writer) devices(pty bool) {
	w.section("Devices")
	w.line("(allow file-ioctl")
	for _, d := range []string{"/dev/dtracehelper", "/dev/null", "/dev/random", "/dev/tty", "/dev/urandom"} {
		w.line("  " + w.literal(d))
	}
	w.line("  " + w.literal("/dev/zero") + ")")
	w.line("(allow file-write-data")
	w.line("  " + w.literal("/dev/dtracehelper"))
	w.line("  (require-all " + w.literal("/dev/null") + " (vnode-type CHARACTER-DEVICE))")
	w.line("  " + w.literal("/dev/tty"))
	w.line("  " + w.regex("^/dev/fd/[0-9]+$") + ")")
	if pty {
		w.section("allowPty: allocate and use pseudo-terminals")
		w.line("(allow pseudo-tty)")
		w.line("(allow file-read* file-write* file-ioctl")
		w.line("  " + w.literal("/dev/ptmx"))
		w.line("  " + w.regex("^/dev/ttys[0-9]+$") + ")")
	}
}

// readDenies returns the denyRead filters, each narrowed by the allowRead
// entries that lie inside it, and the metadata filters for the directories
// between each denied region and the allowRead paths inside it.
//
// An allowRead entry re-allows inside a denyRead entry when the deny covers
// it (the allow is the more specific rule); a denyRead inside an allowRead
// is not carved and so wins there. An allow of exactly the denied path
// cancels the deny (allow beats deny for reads).
func (w *writer) readDenies(p fsPlan) (deny, meta []string) {
	metaSet := map[string]bool{}
	for _, d := range p.readDeny {
		if containsEntry(p.readAllow, d) {
			continue
		}
		f := w.filter(d)
		var carves []string
		for _, a := range p.readAllow {
			if !d.covers(a.sample()) {
				continue
			}
			carves = append(carves, "(require-not "+w.filter(a)+")")
			b := a.base()
			if a.glob && d.covers(b) {
				metaSet["(require-all "+w.subpath(b)+" (vnode-type DIRECTORY))"] = true
			}
			for _, anc := range ancestors(b) {
				if d.covers(anc) {
					metaSet[w.literal(anc)] = true
				}
			}
		}
		if len(carves) > 0 {
			f = "(require-all " + f + " " + strings.Join(carves, " ") + ")"
		}
		deny = append(deny, f)
	}
	return deny, sortedSet(metaSet)
}

// writeDenies writes denyWrite and the protected names, then keeps the
// directories above them (and every read-denied path) from being renamed,
// removed or replaced by a symlink, so moving a parent cannot defeat a deny.
func (w *writer) writeDenies(p fsPlan, readDeny []string) {
	w.section("denyWrite and the protected names, at any depth (beats allowWrite)")
	var deny []string
	for _, e := range p.writeDeny {
		deny = append(deny, w.filter(e))
	}
	for _, n := range p.protected(protectedFiles) {
		deny = append(deny, w.regex(anyDepth(n)))
	}
	for _, n := range p.protected(protectedDirs) {
		deny = append(deny, w.regex(anyDepth(n)))
	}
	if !p.allowGitConfig && !slices.Contains(p.allowProtected, gitConfig) {
		deny = append(deny, w.regex(anyDepth(gitConfig)))
	}
	w.rule("deny", "file-write*", deny)

	// Directories above a literal denyWrite path or a glob's base, inside a
	// writable root (above the roots nothing is writable anyway).
	var parents []string
	for _, e := range p.writeDeny {
		parents = append(parents, p.writableParents(e)...)
	}
	var readParents []string
	for _, e := range p.readDeny {
		readParents = append(readParents, p.writableParents(e)...)
	}

	w.section(".git, .claude and the directories above each denyWrite path: never a file or symlink",
		"(a .git file, or a symlink in their place, points what lies below them elsewhere)")
	var notDir []string
	for _, n := range p.protected(protectedParents) {
		notDir = append(notDir, notDirectory(w.regex(namedAnyDepth(n))))
	}
	for _, d := range parents {
		notDir = append(notDir, notDirectory(w.literal(d)))
	}
	w.rule("deny", "file-write*", notDir)

	w.section("The same directories, every read-denied path, and the writable directories above one:",
		"no rename or removal (rename checks file-write-unlink on its source)")
	var unlink []string
	for _, n := range p.protected(protectedParents) {
		unlink = append(unlink, w.regex(namedAnyDepth(n)))
	}
	for _, d := range parents {
		unlink = append(unlink, w.literal(d))
	}
	unlink = append(unlink, readDeny...)
	for _, d := range readParents {
		unlink = append(unlink, w.literal(d))
	}
	w.rule("deny", "file-write-unlink", unlink)
}

// writableParents lists, farthest first, the directories above e (for a
// glob: its base directory and those above it) that lie strictly inside a
// writable root.
func (p fsPlan) writableParents(e entry) []string {
	dirs := ancestors(e.base())
	if e.glob {
		dirs = append([]string{e.base()}, dirs...)
	}
	var out []string
	for i := len(dirs) - 1; i >= 0; i-- {
		if p.insideRoot(dirs[i]) {
			out = append(out, dirs[i])
		}
	}
	return out
}

// insideRoot reports whether dir lies strictly inside a writable root.
func (p fsPlan) insideRoot(dir string) bool {
	for _, r := range p.writeRoots {
		if r.glob && r.covers(dir) || !r.glob && strictlyWithin(dir, r.path) {
			return true
		}
	}
	return false
}

func containsEntry(list []entry, e entry) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// protected is names without the ones the user allowed.
func (p fsPlan) protected(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(p.allowProtected, n) {
			out = append(out, n)
		}
	}
	return out
}
