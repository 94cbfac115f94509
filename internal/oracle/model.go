// Package oracle is sbx's policy oracle: a small reference model of the
// documented policy semantics (README "Policy semantics", "Strict reads",
// "Claude Code settings", and docs/policy-oracle.md "What the model says"), a seeded
// generator of layered policies over a generated tree (with what an
// earlier run leaves there: unreadable directories, paths longer than a
// mount can name, a previous run's changes), a shrinker, and
// (in the tests) one sbx run per case whose probe results are compared
// with the model.
//
// The model is written from the documentation, not from sbx's code: it
// never calls package policy. It reads the generated tree (lstat,
// readlink) to resolve symlinks and expand globs, as the documented
// semantics say sbx does at start-up.
package oracle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// Source says where a layer comes from.
type Source string

// The sources a layer can come from.
const (
	SrcFlags   Source = "flags"   // command-line flags
	SrcSrt     Source = "srt"     // --settings FILE in srt's shape
	SrcClaude  Source = "claude"  // --settings FILE in Claude Code's shape
	SrcUser    Source = "user"    // ~/.claude/settings.json (with --claude-settings)
	SrcProject Source = "project" // DIR/.claude/settings.json
	SrcLocal   Source = "local"   // DIR/.claude/settings.local.json
	SrcManaged Source = "managed" // --managed-settings FILE (Claude Code's shape)
)

// Layer is one source of policy. Path texts are as a user writes them;
// "@T" stands for the generated tree's root (an absolute path).
type Layer struct {
	Source Source `json:"source"`
	// InTree: a --settings file kept in the working directory (the
	// repository's, not the user's: the trust boundary).
	InTree bool `json:"inTree,omitempty"`

	// srt filesystem / sandbox.filesystem / flags lists.
	AllowRead  []string `json:"allowRead,omitempty"`
	DenyRead   []string `json:"denyRead,omitempty"`
	AllowWrite []string `json:"allowWrite,omitempty"`
	DenyWrite  []string `json:"denyWrite,omitempty"`

	// Claude Code permission rules: the pattern inside Read(…) / Edit(…),
	// and additionalDirectories.
	ReadDeny  []string `json:"readDeny,omitempty"`
	EditDeny  []string `json:"editDeny,omitempty"`
	EditAllow []string `json:"editAllow,omitempty"`
	AddDirs   []string `json:"addDirs,omitempty"`

	Disabled         bool     `json:"disabled,omitempty"`         // filesystem.disabled: true
	IgnoreViolations bool     `json:"ignoreViolations,omitempty"` // ignoreViolations: {"*": ["/"]}
	ManagedReadOnly  bool     `json:"managedReadOnly,omitempty"`  // allowManagedReadPathsOnly (managed only)
	Presets          []string `json:"presets,omitempty"`          // --preset (flags only)
	ReadsDeclared    bool     `json:"readsDeclared,omitempty"`    // --reads declared (flags only)

	// Raw, when set, is a malformed layer: the file's whole text (for
	// flags: one extra argument list, space-separated), which must make
	// sbx exit 125 with one line.
	Raw string `json:"raw,omitempty"`
}

// Case is one oracle case: extra tree nodes over the base tree, the
// layers, and how sbx is called.
type Case struct {
	Name   string  `json:"name,omitempty"`
	Seed   int64   `json:"seed"`
	Extra  []Node  `json:"extra,omitempty"`
	Layers []Layer `json:"layers"`
	// Cwd is the working directory, relative to the tree: "work"
	// (default), "work/src" (below the project's root: --claude-settings
	// must find the root itself) or "outside" (then --claude-settings
	// names ../work).
	Cwd string `json:"cwd,omitempty"`
	// Claude: pass --claude-settings (DIR = the "work" directory).
	Claude bool `json:"claude,omitempty"`
	// Probes, when set, replaces the generated probe list (relative to
	// the tree root).
	Probes []Probe `json:"probes,omitempty"`
	// Prep, when set, is a previous run: a shell script run under sbx
	// with the same arguments, from the working directory, before the
	// probe's run ("@T" is the tree's root). Whatever it leaves (a
	// directory made unreadable, a file moved) is the tree the probe's
	// run plans from; the model reads the tree after it.
	Prep string `json:"prep,omitempty"`
}

// Node is one entry of the generated tree, relative to its root.
type Node struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // "dir", "file" or "link"
	// Target is a link's text (relative, or "@T/…" for absolute).
	Target string `json:"target,omitempty"`
	// Mode, for a "dir", is its mode when the tree is ready ("000",
	// "311"; "" is 0755): a directory an earlier run left unreadable.
	Mode string `json:"mode,omitempty"`
	// Levels, for a "deep" node, is how many directories of
	// DeepName the chain below Path has (made with openat, so it can
	// be longer than PATH_MAX); a key.pem lies at its bottom.
	Levels int `json:"levels,omitempty"`
}

// DeepName is each directory's name in a "deep" node's chain: 250
// bytes, so that 17 of them are longer than a mount can name.
var DeepName = strings.Repeat("d", 250)

// maxPlanPath is the longest path the mount view can name
// (docs/settings.md "Paths and globs": 4000 bytes): a deny walk that
// would go deeper denies the deepest directory it can name, whole.
const maxPlanPath = 4000

// Probe is one access the probe binary tries.
type Probe struct {
	Op   string `json:"op"` // read, write, create, list, chmod (a directory to 0755)
	Path string `json:"path"`
}

// Expect is the model's answer for one case.
type Expect struct {
	// Refuse is non-empty when sbx must exit 125 with one line and run
	// nothing; it says why.
	Refuse string
	// OK maps each probe (absolute path) to whether it must succeed;
	// a probe missing here is not checked (the model has no answer).
	OK map[Probe]bool
	// Why explains each answer (for mismatch reports).
	Why map[Probe]string
	// Notes are the model's own notes (entries dropped and why).
	Notes []string
}

// Env is where a materialized case lives.
type Env struct {
	T    string // the tree's root (real, absolute)
	Home string // HOME (T/home)
	Cwd  string // the working directory
	Dir  string // the --claude-settings DIR (T/work)
	// Files maps a layer index to its settings file (absolute).
	Files map[int]string
}

// BuiltinMasks are the documented "~/" credential locations
// (README "Policy semantics", policy.DefaultDenyRead), copied here as the
// documentation states them.
var BuiltinMasks = []string{
	".ssh", ".aws", ".gnupg", ".config/gcloud", ".azure", ".kube",
	".docker/config.json", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
	".config/gh", ".config/hub", ".cargo/credentials", ".cargo/credentials.toml",
	".gem/credentials", ".terraform.d/credentials.tfrc.json", ".vault-token",
	".password-store", ".local/share/keyrings", ".config/op", ".claude/.credentials.json",
}

// protName is a protected name: read-only inside writable places.
type protName struct {
	comps      []string
	onlyIfFile bool
	// stub is where a missing one is pinned (docs/settings.md's last
	// column): H HOME, R a repository root (holding .git), C the working
	// directory, L beside a lefthook configuration; "" nowhere.
	stub string
}

// protectedNames as docs/settings.md lists them; .git/config unless
// allowGitConfig (never set by the generator).
var protectedNames = func() []protName {
	var out []protName
	for _, n := range [][2]string{
		{".bashrc", "H"}, {".bash_profile", "H"}, {".bash_login", "H"}, {".bash_logout", "H"},
		{".profile", "H"}, {".zshrc", "H"}, {".zprofile", "H"}, {".zshenv", "H"}, {".zlogin", "H"},
		{".zlogout", "H"}, {".gitconfig", "H"}, {".ripgreprc", "H"},
		{".git/hooks", "HRC"}, {".git/modules", "HRC"}, {".git/worktrees", "HRC"}, {".git/config", "HRC"},
		{".gitmodules", ""}, {".husky", ""}, {".pre-commit-config.yaml", ""},
		{"lefthook.yml", ""}, {".lefthook.yml", ""}, {"lefthook.yaml", ""}, {".lefthook.yaml", ""},
		{"lefthook-local.yml", "L"}, {".lefthook-local.yml", "L"}, {"lefthook-local.yaml", "L"}, {".lefthook-local.yaml", "L"},
		{".lefthook", "L"}, {".lefthook-local", "L"},
		{".vscode", "HRC"}, {".idea", "RC"}, {".zed", "RC"}, {".claude", "HRC"}, {".mcp.json", "RC"},
		{".cursor", ""}, {".gemini", ""}, {".envrc", ""},
		{"mise.toml", ""}, {".mise.toml", ""}, {"mise.local.toml", ""}, {".mise.local.toml", ""}, {".tool-versions", ""},
		{".npmrc", ""}, {".yarnrc.yml", ""}, {".yarnrc", ""}, {".pnpmfile.cjs", ""},
		{".cargo/config.toml", ""}, {".cargo/config", ""},
	} {
		out = append(out, protName{comps: strings.Split(n[0], "/"), stub: n[1]})
	}
	return append(out, protName{comps: []string{".git"}, onlyIfFile: true})
}()

// stubbedIn reports whether a missing pn is pinned in the directory dir,
// where the search starts (a writable root, or the working directory).
func (m *model) stubbedIn(pn protName, dir string) bool {
	for _, c := range pn.stub {
		switch {
		case c == 'H' && dir == m.env.Home,
			c == 'C' && dir == m.env.Cwd,
			c == 'R' && exists(filepath.Join(dir, ".git")):
			return true
		case c == 'L':
			for _, l := range []string{"lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml"} {
				if exists(filepath.Join(dir, l)) {
					return true
				}
			}
		}
	}
	return false
}

// searchDepth is mandatoryDenySearchDepth's default.
const searchDepth = 3

// grant is one allow entry after anchoring and glob expansion.
type grant struct {
	lit, real string
	exists    bool
	soft      bool // from a Claude permission rule or a glob: skipped (noted) instead of refused
	managed   bool
	untrusted bool // from a layer in the working tree (the trust boundary)
	created   bool // missing, made by sbx for the run (--allow-write's)
	what      string
}

// model holds one case's resolved policy.
type model struct {
	env      Env
	notes    []string
	refuse   string
	disabled bool
	declared bool
	reads    []grant  // allowRead kept
	writes   []grant  // writable roots kept
	denyR    []string // existing denyRead paths (real), built-in masks included
	denyW    []string // denyWrite paths (real)
	pinW     []string // first missing component of each missing denyWrite
	// fuzzyList are directories whose listing the model does not judge.
	fuzzyList []string
	lastReach string // why the last reach failed
	fileRoot  string // the directory of the layer being read
	claude    bool   // --claude-settings: the managed layer anchors at DIR too
	// trustedDenyR are the denyRead paths (real) of layers outside the
	// working tree: a tree's allowRead may not re-open them.
	trustedDenyR []string
	// denyWLits are the literal paths of the denyWrite entries (and
	// their matches): one named through a symlink in a writable root is
	// refused (the command could replace the link).
	denyWLits []string
	// closed are the directories left with an owner mode short of rwx
	// (mode 000, 0311), and their modes; blindR and blindW the ones a
	// deny-read or deny-write walk could not list (the caller's
	// permissions: root's walk lists them all).
	closed         map[string]os.FileMode
	blindR, blindW []string
	restored       map[string]bool // closed directories the probe's chmod opens
}

func (m *model) refuseIf(cond bool, format string, a ...any) {
	if cond && m.refuse == "" {
		m.refuse = fmt.Sprintf(format, a...)
	}
}

// Model computes what sbx must allow for c, materialized in env, for each
// of probes.
//
// The tree is as the previous run (Case.Prep) left it, closed
// directories closed: the plan's walks see what sbx's do. The answers
// are computed with them open (the caller's own tree), then closed again.
func Model(c *Case, env Env, probes []Probe) Expect {
	m := &model{env: env, closed: ClosedDirs(env.T)}
	m.build(c)
	e := Expect{Refuse: m.refuse, OK: map[Probe]bool{}, Why: map[Probe]string{}, Notes: m.notes}
	if m.refuse != "" {
		return e
	}
	reclose := OpenDirs(m.closed)
	defer reclose()
	m.restored = map[string]bool{}
	for d := range m.closed {
		// The command restores what it can (the chmod probes come
		// first): a directory it may write.
		m.restored[d], _, _ = m.access(Probe{Op: "chmod", Path: d})
	}
	for _, p := range probes {
		ok, why, known := m.access(p)
		if known {
			e.OK[p], e.Why[p] = ok, why
		}
	}
	return e
}

// build resolves the layers into the model's lists.
func (m *model) build(c *Case) {
	m.claude = c.Claude
	managedFS, managedReadOnly := managedKeys(c)
	inManagedDeny := m.managedDeny(c)
	rawReads, rawWrites, denyR, denyW := m.collect(c, managedFS, managedReadOnly)
	var masks []string // built-in masks, under HOME: literal (= real: HOME is real)
	for _, b := range BuiltinMasks {
		masks = append(masks, filepath.Join(m.env.Home, b))
	}
	m.reads = m.keep(rawReads, false, masks, inManagedDeny)
	m.writes = m.keep(rawWrites, true, masks, inManagedDeny)
	if managedReadOnly {
		// A writable root re-opens reading inside a deny as an
		// allowRead would: only a managed one may.
		var kept []grant
		for _, g := range m.writes {
			if !g.managed && slices.ContainsFunc(denyR, func(d string) bool { return d != "/" && d != g.real && within(g.real, d) }) {
				m.notes = append(m.notes, "allowManagedReadPathsOnly drops "+g.what)
				continue
			}
			kept = append(kept, g)
		}
		m.writes = kept
	}
	m.untrustedReopen(masks)
	m.untrustedWrites()
	m.denyWriteLinks()
	m.finish(masks, denyR, denyW)
}

// untrustedReopen refuses the case when an allowRead that only layers
// in the working tree give equals or lies inside a built-in mask or a
// denyRead of a layer outside the tree, other than "/" (strict reads,
// under which a repository may name what it reads): a repository's file
// may narrow what the user denies, not undo it.
func (m *model) untrustedReopen(masks []string) {
	trusted := map[string]bool{}
	for _, g := range m.reads {
		if !g.untrusted {
			trusted[g.real] = true
		}
	}
	denied := append(append([]string(nil), masks...), m.trustedDenyR...)
	// A writable root re-opens reading inside a deny too: a tree's may
	// not undo a trusted deny that way (masks it does not lift).
	trustedW := map[string]bool{}
	for _, g := range m.writes {
		if !g.untrusted {
			trustedW[g.real] = true
		}
	}
	for _, g := range m.writes {
		if !g.untrusted || trustedW[g.real] {
			continue
		}
		for _, d := range m.trustedDenyR {
			if d != "/" && within(g.real, d) {
				m.refuseIf(true, "trust boundary: %s (in the working tree) re-opens %s for reading", g.what, d)
			}
		}
	}
	for _, g := range m.reads {
		if !g.untrusted || trusted[g.real] {
			continue
		}
		for _, d := range denied {
			if d != "/" && within(g.real, d) {
				m.refuseIf(true, "trust boundary: %s (in the working tree) re-opens %s", g.what, d)
			}
		}
	}
}

// untrustedWrites refuses the case when a writable root that only
// layers in the working tree grant lies outside the working tree (the
// "work" directory): a repository's file may make its own tree
// writable, not the user's home or the rest of the system.
func (m *model) untrustedWrites() {
	trusted := map[string]bool{}
	for _, g := range m.writes {
		if !g.untrusted {
			trusted[g.real] = true
		}
	}
	tree := filepath.Join(m.env.T, "work")
	for _, g := range m.writes {
		if g.untrusted && !trusted[g.real] && !within(g.real, tree) && !within(g.real, m.env.Cwd) {
			m.refuseIf(true, "trust boundary: %s (in the working tree) makes %s writable, outside the tree", g.what, g.real)
		}
	}
}

// denyWriteLinks refuses the case when a denyWrite entry is named
// through a symlink (the entry itself or a directory on its way) that
// lies in a writable root: the rule would land on the link's target
// while the command could replace the link.
func (m *model) denyWriteLinks() {
	for _, lit := range m.denyWLits {
		for q := lit; q != "/" && q != "."; q = filepath.Dir(q) {
			st, err := os.Lstat(q)
			if err != nil || st.Mode()&os.ModeSymlink == 0 {
				continue
			}
			d, _ := resolve(filepath.Dir(q))
			for _, g := range m.writes {
				if within(d, g.real) {
					m.refuseIf(true, "denyWrite %s is named through the symlink %s inside the writable %s", lit, q, g.real)
				}
			}
		}
	}
}

// managedKeys reports whether the managed layer sets filesystem keys,
// and whether it sets allowManagedReadPathsOnly.
func managedKeys(c *Case) (managedFS, managedReadOnly bool) {
	for _, l := range c.Layers {
		if l.Source == SrcManaged {
			managedFS = managedFS || len(l.AllowRead)+len(l.DenyRead)+len(l.AllowWrite)+len(l.DenyWrite) > 0 || l.Disabled || l.ManagedReadOnly ||
				len(l.ReadDeny)+len(l.EditDeny)+len(l.EditAllow)+len(l.AddDirs) > 0 // a permission rule, matching or not
			managedReadOnly = managedReadOnly || l.ManagedReadOnly
		}
	}
	return managedFS, managedReadOnly
}

// managedDeny returns the test for a path in a managed denyRead and not
// in a managed allowRead carved out of it (the managed layer re-opened it
// itself).
func (m *model) managedDeny(c *Case) func(p string) bool {
	var managedDeny, managedOpen []string
	// Managed denyRead first: it decides which other grants survive.
	for _, l := range c.Layers {
		if l.Source != SrcManaged || l.Raw != "" {
			continue
		}
		for _, s := range l.DenyRead {
			for _, g := range m.expand(s, l, false, false, "managed denyRead") {
				managedDeny = append(managedDeny, g.real)
			}
		}
		for _, s := range l.ReadDeny {
			for _, g := range m.expand(s, l, true, false, "managed Read() deny") {
				managedDeny = append(managedDeny, g.real)
			}
		}
		for _, s := range l.AllowRead {
			for _, g := range m.expand(s, l, false, false, "managed allowRead") {
				managedOpen = append(managedOpen, g.real)
			}
		}
	}
	return func(p string) bool {
		for _, d := range managedDeny {
			if !within(p, d) {
				continue
			}
			opened := false
			for _, a := range managedOpen {
				opened = opened || (a != d && within(a, d) && within(p, a))
			}
			if !opened {
				return true
			}
		}
		return false
	}
}

// collect gathers every layer's grants and denials, in layer order, and
// sets m.disabled.
func (m *model) collect(c *Case, managedFS, managedReadOnly bool) (rawReads, rawWrites []grant, denyR, denyW []string) {
	env := m.env
	disabledNonManaged, disabledManaged := false, false
	// A --claude-settings DIR the caller names must hold a project or
	// local scope (docs/settings.md, Claude Code settings): a mistyped
	// DIR would run without the rules it was meant to bring.
	if c.Claude && env.Cwd != env.Dir && !strings.HasPrefix(env.Cwd, env.Dir+"/") {
		scoped := false
		for _, l := range c.Layers {
			scoped = scoped || l.Source == SrcProject || l.Source == SrcLocal
		}
		m.refuseIf(!scoped, "--claude-settings DIR holds no project or local scope")
	}
	for i, l := range c.Layers {
		if !c.Claude && (l.Source == SrcUser || l.Source == SrcProject || l.Source == SrcLocal) {
			continue // scope files are read only with --claude-settings
		}
		if l.Raw != "" {
			m.refuseIf(true, "malformed layer %d (%s)", i, l.Source)
			continue
		}
		inTree := l.Source == SrcProject || l.Source == SrcLocal || (l.InTree && (l.Source == SrcSrt || l.Source == SrcClaude))
		if inTree {
			m.refuseIf(l.Disabled, "trust boundary: %s layer in the working tree sets filesystem.disabled", l.Source)
			m.refuseIf(l.IgnoreViolations, "trust boundary: %s layer in the working tree sets ignoreViolations", l.Source)
		}
		if l.Source == SrcManaged {
			disabledManaged = disabledManaged || l.Disabled
		} else {
			disabledNonManaged = disabledNonManaged || l.Disabled
		}
		managed := l.Source == SrcManaged
		// A Claude Code file's "/x" rules are relative to its project
		// root: the directory holding .claude/, else the file's own.
		m.fileRoot = filepath.Dir(env.Files[i])
		for _, s := range l.AllowRead {
			for _, g := range m.expand(s, l, false, managed, "allowRead "+s) {
				if !managed && managedReadOnly {
					m.notes = append(m.notes, "allowManagedReadPathsOnly drops "+g.what)
					continue
				}
				g.untrusted = inTree
				rawReads = append(rawReads, g)
			}
		}
		for _, s := range l.AllowWrite {
			for _, g := range m.expand(s, l, false, managed, "allowWrite "+s) {
				g.untrusted = inTree
				// A missing allowWrite directory whose parent exists is
				// created for the run, from the command line or a settings
				// file (docs/settings.md, allowWrite); a deeper missing
				// path is refused.
				if !g.soft && !g.exists && !hasGlob(g.lit) && isDir(filepath.Dir(g.real)) {
					g.exists, g.created = true, true
				}
				rawWrites = append(rawWrites, g)
			}
		}
		for _, s := range l.EditAllow {
			for _, g := range m.expand(s, l, true, managed, "Edit("+s+") allow") {
				g.untrusted = inTree
				rawWrites = append(rawWrites, g)
			}
		}
		for _, s := range l.AddDirs {
			for _, g := range m.expandDir(s, l, managed, "additionalDirectories "+s) {
				g.untrusted = inTree
				rawWrites = append(rawWrites, g)
			}
		}
		for _, name := range l.Presets {
			if name == "go" {
				// The caches, and the go command's telemetry counters
				// (created by sbx when missing: a previous run leaves
				// them).
				for _, d := range []string{"tool/gocache", "tool/gomod", "tool/gopath/pkg/sumdb", "home/.config/go/telemetry/local"} {
					p := filepath.Join(env.T, d)
					rawWrites = append(rawWrites, grant{lit: p, real: p, exists: true, managed: managed, what: "preset go " + d})
				}
			}
		}
		if l.ReadsDeclared {
			m.declared = true
		}
		for _, s := range l.DenyRead {
			for _, g := range m.expand(s, l, false, managed, "denyRead "+s) {
				denyR = append(denyR, g.real)
				if !inTree {
					m.trustedDenyR = append(m.trustedDenyR, g.real)
				}
			}
		}
		for _, s := range l.ReadDeny {
			for _, g := range m.expand(s, l, true, managed, "Read("+s+") deny") {
				denyR = append(denyR, g.real)
				if !inTree {
					m.trustedDenyR = append(m.trustedDenyR, g.real)
				}
			}
		}
		for _, s := range l.DenyWrite {
			for _, g := range m.expand(s, l, false, managed, "denyWrite "+s) {
				denyW = append(denyW, g.real)
				m.denyWLits = append(m.denyWLits, g.lit)
			}
		}
		for _, s := range l.EditDeny {
			for _, g := range m.expand(s, l, true, managed, "Edit("+s+") deny") {
				denyW = append(denyW, g.real)
				m.denyWLits = append(m.denyWLits, g.lit)
			}
		}
	}
	m.disabled = disabledManaged || (disabledNonManaged && !managedFS)
	if disabledNonManaged && managedFS && !disabledManaged {
		m.notes = append(m.notes, "a non-managed filesystem.disabled is ignored: the managed layer sets filesystem keys")
	}

	return rawReads, rawWrites, denyR, denyW
}

// keep returns the grants that stand: it refuses or skips the ones that
// cross a symlink out of the working tree, and drops the ones that reach
// a mask through a symlink or lie in a managed denyRead (write: and
// refuses or skips missing ones and those that would make a protected
// name writable).
func (m *model) keep(gs []grant, write bool, masks []string, inManagedDeny func(string) bool) []grant {
	var out []grant
	for _, g := range gs {
		if write && !g.exists && !g.soft {
			m.refuseIf(true, "%s: %s does not exist", g.what, g.real)
			continue
		}
		if link, target := m.crossesOut(g.lit); link != "" {
			if g.soft {
				m.notes = append(m.notes, fmt.Sprintf("%s skipped: crosses the symlink %s -> %s out of the working tree", g.what, link, target))
				continue
			}
			m.refuseIf(true, "%s crosses the symlink %s -> %s out of the working tree", g.what, link, target)
			continue
		}
		if k := inMask(g.real, masks); k != "" && !within(g.lit, k) {
			m.notes = append(m.notes, fmt.Sprintf("%s dropped: reaches the credential mask %s through a symlink", g.what, k))
			continue
		}
		if !g.managed && inManagedDeny(g.real) {
			m.notes = append(m.notes, fmt.Sprintf("%s dropped: inside a managed denyRead", g.what))
			continue
		}
		if write {
			if !g.exists {
				if g.soft {
					m.notes = append(m.notes, g.what+" skipped: does not exist")
					continue
				}
				m.refuseIf(true, "%s: %s does not exist", g.what, g.real)
				continue
			}
			if pn := protectedRoot(g.real); pn != "" {
				if g.soft {
					m.notes = append(m.notes, g.what+" skipped: would make the protected name "+pn+" writable")
					continue
				}
				m.refuseIf(true, "%s would make the protected name %s writable", g.what, pn)
				continue
			}
		}
		out = append(out, g)
	}
	return out
}

// inMask returns the mask that p lies in, or "".
func inMask(p string, masks []string) string {
	for _, k := range masks {
		if within(p, k) {
			return k
		}
	}
	return ""
}

// finish sets the model's masks and denials from what the layers gave.
func (m *model) finish(masks, denyR, denyW []string) {
	// Masks: an allowRead whose literal path is the mask lifts it.
	for _, k := range masks {
		lifted := false
		for _, g := range m.reads {
			lifted = lifted || g.lit == k
		}
		if !lifted && exists(k) {
			m.denyR = append(m.denyR, k)
		}
	}
	for _, d := range denyR {
		if exists(d) {
			m.denyR = append(m.denyR, d)
		}
	}
	if m.declared {
		m.denyR = append(m.denyR, "/")
	}
	m.denyW = denyW
	// A writable root inside a denyWrite entry is no writable root: it
	// neither takes writes nor re-opens reading.
	var roots []grant
	for _, g := range m.writes {
		if withinAny(g.real, denyW) {
			m.notes = append(m.notes, g.what+": inside a denyWrite entry, not writable")
			continue
		}
		roots = append(roots, g)
	}
	m.writes = roots
	for _, d := range denyW {
		if !exists(d) {
			m.pinW = append(m.pinW, firstMissing(d))
		}
	}
	m.blindSpots(masks)
}

// blindSpots adds what the plan's walks could not see where writes go
// (docs/settings.md "Paths and globs"): a directory a deny-read walk
// could not list is hidden whole, one a deny-write walk could not list
// is read-only whole, and so is one the protected-name search meant to
// read (a writable root, or a directory down to its depth below one or
// below the working directory in one); a directory on the way to a
// built-in mask that cannot be entered is hidden whole. Elsewhere a
// blind spot stays as it is (the view is read-only).
func (m *model) blindSpots(masks []string) {
	var roots []string
	for _, g := range m.writes {
		roots = append(roots, g.real)
	}
	takesWrites := func(d string) bool { return withinAny(d, roots) }
	for _, d := range m.blindR {
		if takesWrites(d) {
			m.notes = append(m.notes, "deny-read walk cannot list "+d+": hidden whole")
			m.denyR = append(m.denyR, d)
		}
	}
	for _, d := range m.blindW {
		if takesWrites(d) {
			m.notes = append(m.notes, "deny-write walk cannot list "+d+": read-only whole")
			m.denyW = append(m.denyW, d)
		}
	}
	search := append([]string(nil), roots...)
	if takesWrites(m.env.Cwd) {
		search = append(search, m.env.Cwd)
	}
	for d := range m.closed {
		if _, err := os.ReadDir(d); err == nil {
			continue // root reads it
		}
		for _, w := range search {
			if !within(d, w) {
				continue
			}
			depth := 0
			if d != w {
				depth = len(strings.Split(strings.TrimPrefix(d, w+"/"), "/"))
			}
			if depth <= searchDepth {
				m.notes = append(m.notes, "protected-name search cannot read "+d+": read-only whole")
				m.denyW = append(m.denyW, d)
				break
			}
		}
	}
	for _, k := range masks {
		for q := m.env.Home; q != k; {
			next := filepath.Join(q, strings.Split(strings.TrimPrefix(k, q+"/"), "/")[0])
			if syscall.Access(q, 1) != nil {
				if takesWrites(q) {
					m.notes = append(m.notes, "cannot resolve mask "+k+" past "+q+": hidden whole")
					m.denyR = append(m.denyR, q)
				}
				break
			}
			if st, err := os.Lstat(next); err != nil || !st.IsDir() {
				break
			}
			q = next
		}
	}
}

// ClosedDirs are the directories below t left with an owner mode short
// of rwx (an earlier run's chmod 000), and their modes; not below one
// another (one inside a closed directory is not looked for).
func ClosedDirs(t string) map[string]os.FileMode {
	out := map[string]os.FileMode{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if len(p) > maxPlanPath-300 {
				continue
			}
			st, err := os.Lstat(p)
			if err != nil {
				continue
			}
			if st.Mode().Perm()&0o700 != 0o700 {
				out[p] = st.Mode().Perm()
				continue
			}
			walk(p)
		}
	}
	walk(t)
	return out
}

// OpenDirs makes the closed directories 0755 (the caller owns the
// tree), and returns what closes them again.
func OpenDirs(closed map[string]os.FileMode) (reclose func()) {
	for d := range closed {
		_ = os.Chmod(d, 0o755)
	}
	return func() {
		for d, mode := range closed {
			_ = os.Chmod(d, mode)
		}
	}
}

// anchor turns an entry's text into an absolute path. rule: the text is a
// Claude Code permission pattern (whose forms differ).
func (m *model) anchor(s string, l Layer, rule bool) (abs string, anyDepth bool) {
	env := m.env
	s = strings.ReplaceAll(s, "@T", env.T)
	base := env.Cwd
	if l.Source == SrcUser || l.Source == SrcProject || l.Source == SrcLocal || (l.Source == SrcManaged && m.claude) {
		base = env.Dir // --claude-settings DIR anchors the scopes' (and managed) relative paths
	}
	if rule {
		switch {
		case strings.HasPrefix(s, "//"):
			return filepath.Clean(s[1:]), false
		case s == "~":
			return env.Home, false
		case strings.HasPrefix(s, "~/"):
			return filepath.Join(env.Home, s[2:]), false
		case strings.HasPrefix(s, "/"):
			root := m.fileRoot
			switch l.Source {
			case SrcUser:
				root = env.Home
			case SrcProject, SrcLocal:
				root = env.Dir
			}
			return filepath.Join(root, s[1:]), false
		case strings.HasPrefix(s, "./"):
			return filepath.Join(base, s[2:]), false
		}
		t := strings.TrimSuffix(s, "/")
		return filepath.Join(base, s), !strings.Contains(t, "/") && t != "**" && t != "." && t != ".."
	}
	switch {
	case s == "~":
		return env.Home, false
	case strings.HasPrefix(s, "~/"):
		return filepath.Join(env.Home, s[2:]), false
	case filepath.IsAbs(s):
		return filepath.Clean(s), false
	}
	return filepath.Join(base, s), false
}

// expand anchors s, expands its glob (gitignore semantics: * and ? in one
// component, [..] classes, ** zero or more directories, a trailing /**
// everything inside), and resolves each result through symlinks.
func (m *model) expand(s string, l Layer, rule, managed bool, what string) []grant {
	raw := strings.ReplaceAll(s, "@T", m.env.T)
	dirOnly := strings.HasSuffix(raw, "/") && raw != "/"
	abs, anyDepth := m.anchor(s, l, rule)
	soft := rule
	var bl *blindWalk
	if strings.Contains(what, "deny") {
		bl = &blindWalk{}
		defer func() {
			m.refuseIf(bl.refuse != "", "%s: %s", what, bl.refuse)
			if strings.HasPrefix(what, "denyRead") || strings.HasPrefix(what, "Read(") {
				m.blindR = append(m.blindR, bl.dirs...)
			} else {
				m.blindW = append(m.blindW, bl.dirs...)
			}
		}()
	}
	if !hasGlob(abs) {
		real, ok := resolve(abs)
		if dirOnly && ok && !isDir(real) {
			return nil
		}
		gs := []grant{{lit: abs, real: real, exists: ok, soft: soft, managed: managed, what: what}}
		if anyDepth { // a bare name matches at any depth too
			for _, p := range walkMatch(filepath.Dir(abs), []string{"**", filepath.Base(abs)}, dirOnly, bl) {
				if p != abs {
					r, ok := resolve(p)
					gs = append(gs, grant{lit: p, real: r, exists: ok, soft: true, managed: managed, what: what + " match " + p})
				}
			}
		}
		return gs
	}
	// Split into the glob-free base and the pattern below it.
	comps := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	k := 0
	for k < len(comps) && !hasGlob(comps[k]) {
		k++
	}
	pat := comps[k:]
	for i, c := range pat {
		if c == ".." {
			m.refuseIf(true, "%s: \"..\" after a glob", what)
			return nil
		}
		if _, err := path.Match(c, ""); err != nil {
			m.refuseIf(true, "%s: malformed glob %q", what, c)
			return nil
		}
		_ = i
	}
	if anyDepth {
		pat = append([]string{"**"}, pat...)
	}
	base := "/" + strings.Join(comps[:k], "/")
	inside := pat[len(pat)-1] == "**"
	var out []grant
	if inside && len(pat) == 1 {
		// "dir/**": the directory itself, everything inside. Whether
		// the directory itself may still be listed, the docs do not
		// say ("everything inside" / "the directory itself").
		// It is the literal directory, as a pattern without globs is:
		// a missing one is as a missing literal path (an allowWrite is
		// refused, a denyWrite pinned, a rule skipped).
		r, ok := resolve(base)
		if ok && isDir(r) {
			m.fuzzyList = append(m.fuzzyList, r)
		}
		return append(out, grant{lit: base, real: r, exists: ok, soft: rule, managed: managed, what: what})
	}
	if inside {
		pat = pat[:len(pat)-1]
	}
	matches := walkMatch(base, pat, dirOnly || inside, bl)
	if inside {
		m.fuzzyList = append(m.fuzzyList, matches...)
	}
	for _, p := range matches {
		r, ok := resolve(p)
		out = append(out, grant{lit: p, real: r, exists: ok, soft: true, managed: managed, what: what + " match " + p})
	}
	if len(matches) == 0 && (strings.HasPrefix(what, "deny") || strings.Contains(what, "deny")) {
		// A deny glob that matches nothing while the file its literal
		// text names exists: the user meant that file.
		if _, err := os.Lstat(abs); err == nil {
			m.refuseIf(true, "%s matches nothing, but %s exists: write it literally", what, abs)
		}
	}
	return out
}

// expandDir anchors an additionalDirectories entry (no globs). Like a
// permission rule, a missing or refused one is skipped with a note.
func (m *model) expandDir(s string, l Layer, managed bool, what string) []grant {
	// Anchored as the layer's other paths are: at DIR for Claude's scopes.
	abs, _ := m.anchor(s, Layer{Source: l.Source}, false)
	r, ok := resolve(abs)
	return []grant{{lit: abs, real: r, exists: ok, soft: true, managed: managed, what: what}}
}

// blindWalk collects what a deny walk could not look into
// (docs/settings.md "Paths and globs"): the directories it could not
// list, and a directory it could enter but not list (mode 0311), which
// is exit 125. A nil *blindWalk is a grant's walk: what it cannot see
// it does not grant.
type blindWalk struct {
	dirs   []string
	refuse string
}

// walkMatch lists the paths below base matching pat component by
// component ("**" = zero or more directories), without descending into
// symlinks; a matched directory is not descended into. For a deny walk
// (bl non-nil), a directory that cannot be listed is recorded in bl,
// and a directory holding a match or a directory to descend into whose
// path is longer than maxPlanPath is itself a match (denied whole).
func walkMatch(base string, pat []string, dirOnly bool, bl *blindWalk) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	// read lists dir, or records why it cannot.
	read := func(dir string, pat []string) ([]os.DirEntry, bool) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if bl != nil && errors.Is(err, fs.ErrPermission) {
				if syscall.Access(dir, 1) == nil { // X_OK: enter, but not list
					bl.refuse = "cannot list " + dir + " though the command could open files in it by name"
				} else {
					bl.dirs = append(bl.dirs, dir)
				}
			}
			return nil, false
		}
		for _, e := range ents {
			if len(dir)+1+len(e.Name()) <= maxPlanPath {
				continue
			}
			ok, _ := path.Match(pat[0], e.Name())
			if ok || (pat[0] == "**" && e.IsDir() && e.Type()&os.ModeSymlink == 0) {
				if bl != nil {
					add(dir)
				}
				return nil, false
			}
		}
		return ents, true
	}
	var walk func(dir string, pat []string)
	walk = func(dir string, pat []string) {
		if len(pat) == 0 {
			return
		}
		if pat[0] == "**" {
			ents, ok := read(dir, pat)
			if !ok {
				return
			}
			walk(dir, pat[1:]) // zero directories
			for _, e := range ents {
				if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
					walk(filepath.Join(dir, e.Name()), pat) // one more
				}
			}
			return
		}
		ents, _ := read(dir, pat)
		for _, e := range ents {
			ok, _ := path.Match(pat[0], e.Name())
			if !ok {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if len(pat) == 1 {
				if dirOnly && !isDir(p) {
					continue
				}
				add(p)
				continue
			}
			if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
				walk(p, pat[1:])
			}
		}
	}
	walk(base, pat)
	sort.Strings(out)
	return out
}

// crossesOut names a symlink on lit's way that lies inside the working
// tree (the working directory or the --claude-settings DIR) and points
// outside it.
func (m *model) crossesOut(lit string) (link, target string) {
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(lit, "/"), "/") {
		if c == "" {
			continue
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if err != nil {
			return "", ""
		}
		if st.Mode()&os.ModeSymlink != 0 {
			real, ok := resolve(next)
			for _, tree := range []string{m.env.Cwd, m.env.Dir} {
				if within(next, tree) && !within(real, tree) {
					return next, real
				}
			}
			if !ok {
				return "", ""
			}
			cur = real
			continue
		}
		cur = next
	}
	return "", ""
}

// access answers one probe: ok, why, and whether the model knows.
func (m *model) access(p Probe) (bool, string, bool) {
	if p.Op == "chmod" {
		if m.disabled {
			return true, "filesystem.disabled", true
		}
		real, ok := m.reach(p.Path)
		if !ok {
			return false, m.lastReach, true
		}
		return m.writable(real, false)
	}
	ok, why, known := m.access1(p)
	if !known || !ok || m.disabled {
		return ok, why, known
	}
	// A closed directory the command could not restore keeps its mode,
	// and the command has no capability that overrides it (root's
	// plan walks do list it).
	target := p.Path
	if p.Op == "create" {
		target = filepath.Dir(p.Path)
	}
	real, _ := m.reach(target)
	for d, mode := range m.closed {
		if m.restored[d] {
			continue
		}
		switch {
		case real == d && p.Op == "list" && mode&0o400 == 0:
			return false, fmt.Sprintf("%s left mode %03o", d, mode), true
		case real == d && p.Op == "create" && mode&0o300 != 0o300:
			return false, fmt.Sprintf("%s left mode %03o", d, mode), true
		case strings.HasPrefix(real, d+"/") && mode&0o100 == 0:
			return false, fmt.Sprintf("inside %s, left mode %03o", d, mode), true
		}
	}
	return ok, why, known
}

// access1 is access, the modes aside.
func (m *model) access1(p Probe) (bool, string, bool) {
	if m.disabled {
		return true, "filesystem.disabled", true
	}
	switch p.Op {
	case "read", "list":
		real, ok := m.reach(p.Path)
		if !ok {
			return false, m.lastReach, true
		}
		if p.Op == "list" && slices.Contains(m.fuzzyList, real) {
			return false, "", false
		}
		if m.declared && p.Op == "list" && (real == m.env.Cwd || m.onTheWay(real)) {
			return false, "", false // an empty directory on the way: the docs do not say
		}
		if p.Op == "list" && real == m.env.Cwd {
			if v, why := m.visible(real); !v && !slices.Contains(m.denyR, real) {
				// docs/settings.md: the working directory inside a
				// denied region is an empty directory made for the run.
				return true, "the working directory, empty (" + why + ")", true
			}
		}
		v, why := m.visible(real)
		return v, why, true
	case "write":
		real, ok := m.reach(p.Path)
		if !ok {
			return false, m.lastReach, true
		}
		return m.writable(real, false)
	case "create":
		parent, ok := m.reach(filepath.Dir(p.Path))
		if !ok {
			return false, "parent: " + m.lastReach, true
		}
		target := filepath.Join(parent, filepath.Base(p.Path))
		if _, err := os.Lstat(target); err == nil {
			return false, "", false
		}
		if v, why := m.visible(parent); !v {
			return false, "parent " + why, true
		}
		return m.writable(target, true)
	}
	return false, "", false
}

// reach resolves p as the kernel does in the sandbox's view, component
// by component: a name inside a hidden directory is not there (a mask is
// empty), unless a re-opened path or the working directory lies at or
// below it (its mount point, or the empty working directory made for the
// run, is made on the way); a symlink is followed from where it lies.
func (m *model) reach(p string) (string, bool) {
	real, why := m.reachWhy(p)
	m.lastReach = why
	return real, why == ""
}

// reachWhy is reach, with the reason a path is not there ("" when it is).
func (m *model) reachWhy(p string) (string, string) {
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(comps) > 0; {
		c := comps[0]
		comps = comps[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if v, why := m.visible(cur); !v && !m.boundBelow(next) && !within(m.env.Cwd, next) {
			return "", next + " is not there: " + why
		}
		st, err := os.Lstat(next)
		if err != nil {
			return "", next + " does not exist"
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", "too many symlinks"
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err.Error()
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		comps = append(strings.Split(strings.TrimPrefix(filepath.Clean(target), "/"), "/"), comps...)
		cur = "/"
	}
	return cur, ""
}

// boundBelow: a re-opened path or writable root lies at or below p, so p
// is there in the view even inside a mask.
func (m *model) boundBelow(p string) bool {
	for _, g := range append(append([]grant(nil), m.reads...), m.writes...) {
		if within(g.real, p) {
			return true
		}
	}
	return false
}

// onTheWay: real is a directory on the way to an allowed path under
// --reads declared.
func (m *model) onTheWay(real string) bool {
	for _, g := range append(append([]grant(nil), m.reads...), m.writes...) {
		if g.real != real && within(g.real, real) {
			return true
		}
	}
	return false
}

// visible: readable. The deepest existing denyRead entry holding real
// hides it unless an allowRead or writable root strictly inside that
// entry holds real.
func (m *model) visible(real string) (bool, string) {
	deepest := ""
	for _, d := range m.denyR {
		if within(real, d) && (deepest == "" || len(d) > len(deepest)) {
			deepest = d
		}
	}
	if deepest == "" {
		return true, "no denyRead holds it"
	}
	for _, g := range append(append([]grant(nil), m.reads...), m.writes...) {
		if g.real != deepest && within(g.real, deepest) && within(real, g.real) {
			return true, fmt.Sprintf("%s re-opens it inside denyRead %s", g.what, deepest)
		}
	}
	return false, "hidden by denyRead " + deepest
}

// writable: real (existing, or the path to create) may be written.
func (m *model) writable(real string, creating bool) (bool, string, bool) {
	root := ""
	for _, g := range m.writes {
		if within(real, g.real) {
			root = g.what
		}
	}
	if root == "" {
		return false, "no writable root holds it", true
	}
	for _, d := range m.denyW {
		if within(real, d) {
			return false, "denyWrite " + d, true
		}
	}
	if creating {
		for _, d := range m.pinW {
			if within(real, d) {
				return false, "denyWrite pinned at " + d, true
			}
		}
	}
	if pn := m.protected(real); pn != "" {
		return false, "protected name " + pn, true
	}
	if !creating {
		if v, why := m.visible(real); !v {
			return false, why, true
		}
	}
	return true, "inside " + root, true
}

// protected names the protected name real is or lies in, as seen from any
// writable root (and the working directory when it lies in one): existing
// ones down to searchDepth components, missing ones pinned (at their first
// missing component) directly in the root, where they act (stubbedIn).
func (m *model) protected(real string) string {
	roots := []string{}
	for _, g := range m.writes {
		if within(m.env.Cwd, g.real) {
			roots = append(roots, m.env.Cwd)
		}
		roots = append(roots, g.real)
	}
	for _, w := range roots {
		if !within(real, w) || real == w {
			continue
		}
		rel := strings.Split(strings.TrimPrefix(real, w+"/"), "/")
		for _, pn := range protectedNames {
			for i := range rel {
				j := 0
				for j < len(pn.comps) && i+j < len(rel) && rel[i+j] == pn.comps[j] {
					j++
				}
				if j == 0 {
					continue
				}
				prefix := filepath.Join(append([]string{w}, rel[:i+j]...)...)
				switch {
				case pn.onlyIfFile:
					if exists(prefix) && !isDir(prefix) && i+1 <= searchDepth {
						return ".git (a file)"
					}
				case j == len(pn.comps) && exists(prefix) && i+1 <= searchDepth:
					return strings.Join(pn.comps, "/") // an existing one, found
				case j == len(pn.comps) && i == 0 && !exists(prefix) && m.stubbedIn(pn, w):
					return strings.Join(pn.comps, "/") + " (missing: pinned)"
				case i+j == len(rel) && i == 0 && !exists(prefix) && m.stubbedIn(pn, w):
					// real is the first missing component of a name
					// whose rest would follow (.git of .git/hooks).
					return strings.Join(pn.comps, "/") + " (missing: pinned at " + prefix + ")"
				}
			}
		}
	}
	return ""
}

// protectedRoot names the protected name that a writable root at w would
// expose: w is one, lies in one, or holds the rest of one (.git holds
// hooks and config).
func protectedRoot(w string) string {
	comps := strings.Split(strings.TrimPrefix(w, "/"), "/")
	for _, pn := range protectedNames {
		if pn.onlyIfFile {
			if comps[len(comps)-1] == ".git" && exists(w) && !isDir(w) {
				return ".git"
			}
			continue
		}
		for i := range comps {
			j := 0
			for j < len(pn.comps) && i+j < len(comps) && comps[i+j] == pn.comps[j] {
				j++
			}
			if j == len(pn.comps) || (j > 0 && i+j == len(comps)) {
				return strings.Join(pn.comps, "/")
			}
		}
	}
	return ""
}

// resolve returns p with its symlinks resolved, and whether it exists; a
// missing path is its longest existing prefix resolved plus the rest.
func resolve(p string) (string, bool) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, true
	}
	dir, base := filepath.Dir(p), filepath.Base(p)
	if dir == p {
		return p, false
	}
	r, _ := resolve(dir)
	return filepath.Join(r, base), false
}

// firstMissing is the first component of p (real) that does not exist.
func firstMissing(p string) string {
	for {
		dir := filepath.Dir(p)
		if dir == p || exists(dir) {
			return p
		}
		p = dir
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func isDir(p string) bool { st, err := os.Stat(p); return err == nil && st.IsDir() }

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// within: p is root or lies below it.
func within(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}

func withinAny(p string, roots []string) bool {
	for _, r := range roots {
		if within(p, r) {
			return true
		}
	}
	return false
}
