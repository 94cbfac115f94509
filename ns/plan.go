package ns

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Op kinds, in the order they are applied for one path.
const (
	OpRW   = "rw"   // bind the host path onto itself, writable
	OpPin  = "pin"  // bind a directory of the view onto itself: it can no longer be renamed or removed
	OpMask = "mask" // hide: empty mode-000 tmpfs (directory) or empty mode-000 file
	OpRO   = "ro"   // bind the host path onto itself, read-only
	OpStub = "stub" // create a missing protected name on the host for the run, bind it read-only, remove it afterwards
	OpDir  = "dir"  // an empty directory inside a mask or the empty root: the way to the working directory
	OpLink = "link" // a symlink in the empty root, as on the host (/lib64 -> usr/lib64), whose target is in the view
	// OpContent binds a read-only file holding Content over an existing
	// file (a credentials file masked with sentinels).
	OpContent = "content"
	// OpOverlay mounts an overlay over a directory: the host directory is
	// its lower layer, a tmpfs private to the run its upper one; writes
	// succeed, land in the upper layer and are gone with the run
	// (discardWrites). Init reads the upper layer at exit to report them.
	OpOverlay = "overlay"
)

var opOrder = map[string]int{OpOverlay: -1, OpRW: 0, OpPin: 1, OpMask: 2, OpRO: 3, OpStub: 4, OpDir: 5, OpLink: 6, OpContent: 7}

// Op is one step of the mount view. Path is absolute and the same on the
// host and in the sandbox.
type Op struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Dir: the masked or stubbed path is (or is created as) a directory.
	Dir bool `json:"dir,omitempty"`
	// Why names the policy entry or default that produced the op.
	Why string `json:"why,omitempty"`
	// Target is an OpLink's symlink text.
	Target string `json:"target,omitempty"`
	// Content is an OpContent's file contents.
	Content []byte `json:"content,omitempty"`
	// Protected marks a protected name: the view pins it through the stub
	// protocol whether it exists or not when the view is compiled
	// (another run's stub may have come or gone since the plan was made).
	Protected bool `json:"protected,omitempty"`
	// InOverlay marks a protected name inside a discard overlay: a
	// missing one is made in the overlay (never on the host) and pinned
	// read-only there.
	InOverlay bool `json:"inOverlay,omitempty"`
}

// Change is one path a discard overlay took a write for.
type Change struct {
	Path string `json:"path"`
	// Detail is "created", "modified" (copied up from below and
	// changed), "renamed-over" (an existing name taken by a rename, or
	// removed and made anew), "deleted" or "replaced" (a directory
	// removed and made anew, or a file's type changed).
	Detail string `json:"detail"`
}

// MountPlan is the whole mount view, computed in the supervisor.
type MountPlan struct {
	Ops []Op `json:"ops"`
	// Pty mounts a private devpts instance and /dev/ptmx.
	Pty bool `json:"pty"`
	// HostFS leaves the host's filesystem read-write (filesystem.disabled).
	HostFS bool `json:"hostFs,omitempty"`
	// EmptyRoot starts the view from an empty read-only directory instead
	// of the host's /: denyRead names "/", and only what the ops bind in
	// (allowRead, allowWrite) is there, besides the sandbox's own /proc,
	// /dev and /tmp. Directories on the way to a bound path are created
	// in it, mode 0555, listing only that way.
	EmptyRoot bool `json:"emptyRoot,omitempty"`
	// TmpSize bounds, in bytes, the one tmpfs that holds the sandbox's
	// /tmp, /dev/shm and the discard overlays' upper layers, so that
	// together they take at most that much (limits.tmpSize); 0 leaves
	// it at the kernel's default, half the RAM.
	TmpSize int64 `json:"tmpSize,omitempty"`
}

// HostInode reports whether p (absolute, clean) names the same inode in
// the view as on the host, provided no symlink lies on it: the deepest of
// the view's mounts holding p (the latest, at equal depth) is a bind of
// the host's same path (the host's / unless EmptyRoot, a writable or
// read-only bind), not the view's own /proc, /dev or /tmp, a mask, a
// content file, a stub, a link or a discard overlay. The raw start lets
// the early process open such paths for Landlock before the view exists.
func (mp MountPlan) HostInode(p string) bool {
	best, same := "/", !mp.EmptyRoot
	for _, m := range [...]string{"/proc", "/dev", "/tmp"} {
		if policy.Within(p, m) {
			best, same = m, false
		}
	}
	for _, op := range mp.Ops {
		if policy.Within(p, op.Path) && len(op.Path) >= len(best) {
			best, same = op.Path, (op.Kind == OpRW || op.Kind == OpRO) && !op.InOverlay
		}
	}
	return same
}

// PlanMounts computes the mount view for p. writable are the effective
// writable roots (allowWrite minus anything under denyWrite).
func PlanMounts(p *policy.Policy, writable []string) (MountPlan, error) {
	fs := p.Filesystem
	plan := MountPlan{Pty: p.AllowPty, HostFS: fs.Disabled}
	if fs.Disabled {
		return plan, nil
	}
	add := func(kind, path string, dir bool, why string) {
		plan.Ops = append(plan.Ops, Op{Kind: kind, Path: path, Dir: dir, Why: why})
	}
	writableSet := policy.NewPathSet(writable)
	inWritable := func(path string) bool { return writableSet.Deepest(path, true) != "" }
	names := fs.Protected()
	for _, d := range fs.DenyRead {
		if d == "/" {
			plan.EmptyRoot = true
		}
	}
	for _, w := range writable {
		add(OpRW, w, true, "allowWrite")
	}
	// Discard regions take writes like writable roots do, so the same
	// protections apply inside them (denyWrite, protected names, masks);
	// but nothing there is bound read-write from the host.
	for _, d := range fs.DiscardWrites {
		add(OpOverlay, d, true, "discardWrites")
	}
	takesWrites := append(append([]string(nil), writable...), fs.DiscardWrites...)
	hid, takes := newHider(fs.DenyRead, fs.AllowRead, takesWrites), policy.NewPathSet(takesWrites)
	denied, noWrite := policy.NewPathSet(fs.DenyRead), policy.NewPathSet(fs.DenyWrite)
	for _, d := range fs.DenyWrite {
		// A denied-write path that is also hidden stays hidden: binding
		// it read-only from the host would put it back over its mask.
		// The mask is read-only itself.
		if takes.Deepest(d, true) != "" && exists(d) && !hid.hidden(d, true) {
			add(OpRO, d, false, "denyWrite")
		}
	}
	allowed := policy.NewPathSet(fs.AllowRead)
	for _, a := range fs.AllowRead {
		if _, ok := denied[a]; a == "/tmp" || ok || coveredRead(a, allowed, denied) {
			// The private /tmp is always there; an allowRead that is
			// also denied exactly stays denied (fail closed); one inside
			// another allowRead is bound with it.
			continue
		}
		// The first denyRead entry (in list order) that holds a.
		d, first := "", -1
		policy.Up(a, func(q string) bool {
			if i, ok := denied[q]; ok && q != a && (first < 0 || i < first) {
				d, first = q, i
			}
			return true
		})
		if d != "" && exists(a) {
			// Bound from the host over its mask: writable only where a
			// write would be allowed there anyway, never inside a
			// protected name (the name's own read-only bind lies
			// under the mask, which this bind pierces).
			kind := OpRO
			if inWritable(a) && noWrite.Deepest(a, true) == "" && !inProtectedName(a, writableSet.Deepest(a, true), names) {
				kind = OpRW
			}
			add(kind, a, false, "allowRead inside denyRead "+d)
		}
	}
	// The sandbox's /tmp is a private tmpfs: host paths under /tmp that
	// the command needs (its working directory, the program itself, sbx
	// for `sbx connect`) are
	// bound in read-only unless already covered.
	for _, need := range append([]string{p.Process.Dir, programPath(p), p.Process.Self}, fs.AllowRead...) {
		if need != "" && policy.Within(need, "/tmp") && need != "/tmp" && !inWritable(need) && denied.Deepest(need, true) == "" && exists(need) {
			add(OpRO, need, false, "needed from the host's /tmp")
		}
	}
	// Host paths under /tmp are in the view only where an op above binds
	// them in: a denied path below /tmp that none of them overlaps is
	// hidden by the private /tmp already and needs no mask.
	// fromTmp holds those paths; underTmp them and their ancestors.
	fromTmp, underTmp := policy.PathSet{}, policy.PathSet{}
	for _, o := range plan.Ops {
		if policy.Within(o.Path, "/tmp") {
			fromTmp[o.Path] = 0
			policy.Up(o.Path, func(a string) bool {
				_, seen := underTmp[a]
				underTmp[a] = 0
				return !seen // its ancestors are in already
			})
		}
	}
	for _, d := range fs.DenyRead {
		if d == "/" {
			continue // the empty root (EmptyRoot)
		}
		if d != "/tmp" && policy.Within(d, "/tmp") && fromTmp.Deepest(d, true) == "" && !underTmp.Has(d) {
			continue
		}
		if hid.hidden(d, false) {
			continue
		}
		st, err := os.Stat(d)
		if err != nil {
			continue // nothing to hide
		}
		add(OpMask, d, st.IsDir(), "denyRead")
	}
	// The working directory must exist in the view, if only as an empty
	// directory, for the command to start there: under a mask or the
	// empty root it is made on the way, and shows nothing of the host.
	if dir := p.Process.Dir; dir != "" && !policy.WithinAny(dir, takesWrites) && hid.hidden(dir, false) {
		add(OpDir, dir, true, "the working directory (its contents stay hidden)")
	}
	if plan.EmptyRoot {
		plan.Ops = append(plan.Ops, rootLinks(append(append([]string(nil), fs.AllowRead...), writable...))...)
	}
	prot, err := protectionOps(p, writable, takesWrites, names, plan.Ops)
	if err != nil {
		return plan, err
	}
	plan.Ops = append(plan.Ops, prot...)
	plan.Ops = dedupeOps(plan.Ops)
	sort.SliceStable(plan.Ops, func(i, j int) bool {
		a, b := plan.Ops[i], plan.Ops[j]
		if da, db := depth(a.Path), depth(b.Path); da != db {
			return da < db
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return opOrder[a.Kind] < opOrder[b.Kind]
	})
	return plan, nil
}

// protectionOps are the ops that keep the protected names and the
// denyWrite paths read-only where writes go (takesWrites: the writable
// roots and the discard regions), less those a mask hides. planned are
// the ops PlanMounts has so far: what they bind read-only needs no
// second bind.
func protectionOps(p *policy.Policy, writable, takesWrites []string, names []policy.Protected, planned []Op) ([]Op, error) {
	fs := p.Filesystem
	// A name SearchDepth components below a root is found (srt's rg
	// --max-depth): the root and the directories down to SearchDepth-1
	// levels below it are listed.
	home := realHome(p.Process.Home)
	prot := protectedOps(takesWrites, p.Process.Dir, home, false, max(fs.SearchDepth-1, 0), names, fs.ScanCache)
	if prot.err == nil {
		prot = homeProtectedOps(prot, takesWrites, home, p.Process.Dir, names)
	}
	if prot.err != nil {
		return nil, prot.err
	}
	var readOnly []string
	for _, o := range append(append([]Op(nil), planned...), prot.ops...) {
		if o.Kind == OpRO || o.Kind == OpStub {
			readOnly = append(readOnly, o.Path)
		}
	}
	hooks, err := hooksPathOps(prot.repos, p.Process.Home, takesWrites, readOnly, names)
	if err != nil {
		return nil, err
	}
	for _, o := range hooks {
		if o.Kind == OpRO || o.Kind == OpStub {
			readOnly = append(readOnly, o.Path)
		}
	}
	prot.ops = append(prot.ops, hooks...)
	prot.ops = append(prot.ops, denyWriteOps(fs.DenyWrite, takesWrites, readOnly)...)
	// Only a denyRead entry that exists is masked (a missing one has
	// nothing to hide): a missing .env both denied reading and writing
	// has no mask to stand in for its stub, so the stub stays.
	// Likewise only an allowRead that exists pierces a mask (PlanMounts'
	// allowRead ops bind existing paths only): a stub under a mask that a
	// missing allowRead names would have nowhere to be bound.
	var masked, pierced []string
	for _, d := range fs.DenyRead {
		if d == "/" || exists(d) {
			masked = append(masked, d)
		}
	}
	for _, a := range fs.AllowRead {
		if exists(a) {
			pierced = append(pierced, a)
		}
	}
	hid := newHider(masked, pierced, takesWrites)
	var out []Op
	for _, o := range prot.ops {
		// A protected name inside a mask is hidden with it: the mask is
		// empty and read-only, so nothing there can be written or made.
		if !hid.hidden(o.Path, true) {
			o.InOverlay = deepestIsDiscard(o.Path, writable, fs.DiscardWrites)
			out = append(out, o)
		}
	}
	return out, nil
}

type protResult struct {
	ops []Op
	// repos are the working-tree roots found (a .git directory or file in them):
	// their core.hooksPath is protected too (hooksPathOps).
	repos []string
	err   error
}

// protectedOps finds the protected names under each writable root: every
// existing one in the root or in a directory down to depth levels below
// it becomes read-only (with its ancestors below the root pinned, so a
// rename of a parent cannot carry it away), and a missing one directly in
// a writable root or in the working directory is stubbed at its first
// missing component where it acts (policy.Protected.Stub: in HOME, in a
// repository root, in the working directory).
//
// homeOnly is for HOME searched as the working directory would be
// (homeProtectedOps): it is not where the command works.
func protectedOps(writable []string, cwd, home string, homeOnly bool, depth int, names []policy.Protected, cacheDir string) protResult {
	var r protResult
	add := func(kind, path string, dir bool, why string) {
		r.ops = append(r.ops, Op{Kind: kind, Path: path, Dir: dir, Why: why, Protected: kind != OpPin})
	}
	// The working directory first: a directory already walked is not
	// walked again, and the working directory gets its own level 0.
	// Pins run up to the enclosing writable root, so the working
	// directory cannot be renamed away from its protections either.
	type rootDir struct{ dir, pinTo string }
	var roots []rootDir
	for _, w := range writable {
		if cwd != w && policy.Within(cwd, w) {
			roots = append(roots, rootDir{cwd, w})
			break
		}
	}
	for _, w := range writable {
		roots = append(roots, rootDir{w, w})
	}
	// Deeper roots first: a directory already walked is not walked again,
	// and a root nested in another (--allow-write . --allow-write ./a)
	// must be searched from its own level 0, not from wherever its
	// parent's walk ran out of depth. What a deeper root's walk covers,
	// it covers with more depth than any root above it would.
	sort.SliceStable(roots, func(i, j int) bool {
		return strings.Count(roots[i].dir, "/") > strings.Count(roots[j].dir, "/")
	})
	pinned := map[string]bool{}
	pin := func(root, p string) {
		for dir := filepath.Dir(p); dir != root && policy.Within(dir, root); dir = filepath.Dir(dir) {
			if !pinned[dir] {
				pinned[dir] = true
				add(OpPin, dir, true, "ancestor of a protected path")
			}
		}
	}
	// blindOp keeps a directory the search cannot see into read-only
	// whole (see dirInfo.blind): a plain read-only bind, not a
	// protected name's (whose stub protocol would open it).
	blindOp := func(root, p string) {
		r.ops = append(r.ops, Op{Kind: OpRO, Path: p, Dir: true, Why: "unreadable: the protected-name search cannot see inside; read-only whole for the run (chmod u+rx it to search it)"})
		pin(root, p)
	}
	// Each name's first component, and whether there is more.
	type split struct {
		first  string
		nested bool
	}
	splits := make([]split, len(names))
	firsts := map[string]bool{}
	for i, pn := range names {
		first, _, nested := strings.Cut(pn.Name, "/")
		splits[i] = split{first, nested}
		firsts[first] = true
	}
	seen := map[string]bool{}
	// emit visits the scanned directories in the order of a depth-first
	// walk with entries in name order, so that the ops (and the first
	// error) do not depend on how the scan was scheduled. The directory's
	// path is made in path, which its subdirectories' calls extend (see
	// appendSubPath; clean as for subPaths), and is made a string only
	// when there is something to add.
	var emit func(tree map[string]*dirInfo, root string, path []byte, level int, clean bool)
	emit = func(tree map[string]*dirInfo, root string, path []byte, level int, clean bool) {
		d := tree[string(path)]
		if d == nil || r.err != nil {
			return // already walked from an earlier root
		}
		if d.blind {
			blindOp(root, string(path))
			return
		}
		todo, dir := names, ""
		if level > 0 && len(d.have) == 0 {
			todo = nil // no protected name here, and nothing to stub below the root
		} else {
			dir = string(path)
		}
		if t, ok := d.have[".git"]; ok && t != typeSymlink {
			// A .git directory, or a .git file naming one elsewhere.
			r.repos = append(r.repos, filepath.Clean(string(path)))
		}
		// Where a missing name is pinned: only where it acts.
		var where policy.StubWhere
		if level == 0 {
			if c := filepath.Clean(dir); c == home {
				where |= policy.StubHome
			} else if c == cwd && !homeOnly {
				where |= policy.StubCwd
			}
			if filepath.Clean(dir) == cwd && home == cwd && !homeOnly {
				where |= policy.StubCwd
			}
			if _, ok := d.have[".git"]; ok {
				where |= policy.StubRepo
			}
		}
		stubHere := func(pn policy.Protected) bool {
			if level != 0 {
				return false
			}
			if pn.Stub&where != 0 {
				return true
			}
			for _, w := range pn.StubWith {
				if _, ok := d.have[w]; ok {
					return true
				}
			}
			return false
		}
		for i, pn := range todo {
			first, nested := splits[i].first, splits[i].nested
			typ, ok := d.have[first]
			if !ok {
				if !pn.OnlyIfFile && stubHere(pn) {
					add(OpStub, filepath.Join(dir, first), nested || pn.Dir, "protected "+pn.Name+" (missing)")
				}
				continue
			}
			isDir := typ == typeDir
			full := filepath.Join(dir, pn.Name)
			if nested && isDir && isStub(filepath.Join(dir, first)) {
				// Another run's stub (or one gone since the scan): share
				// it, or make it again; do not build inside it.
				add(OpStub, filepath.Join(dir, first), true, "protected "+pn.Name+" (another run's stub)")
				continue
			}
			if typ == typeSymlink {
				r.err = fmt.Errorf("protected path %s is a symlink inside a writable place; remove it or do not make %s writable", filepath.Join(dir, first), root)
				return
			}
			if pn.OnlyIfFile {
				if !isDir {
					add(OpRO, full, false, "protected "+pn.Name)
					pin(root, full)
				}
				continue
			}
			if nested {
				if !isDir {
					continue // e.g. .git is a file: covered by its own entry
				}
				st, err := os.Lstat(full)
				switch {
				case err != nil && blindErr(err):
					// Inside a first component the search cannot
					// enter (.git made mode 000): that whole (see
					// dirInfo.blind).
					blindOp(root, filepath.Join(dir, first))
				case err == nil && st.Mode()&os.ModeSymlink != 0:
					r.err = fmt.Errorf("protected path %s is a symlink inside a writable place; remove it or do not make %s writable", full, root)
					return
				case err == nil:
					add(OpRO, full, st.IsDir(), "protected "+pn.Name)
					pin(root, full)
				case stubHere(pn):
					add(OpStub, full, pn.Dir, "protected "+pn.Name+" (missing)")
					pin(root, full)
				}
				continue
			}
			add(OpRO, full, isDir, "protected "+pn.Name)
			pin(root, full)
		}
		if level >= depth {
			return
		}
		for _, sub := range d.subs {
			emit(tree, root, appendSubPath(path, sub, clean), level+1, true)
		}
	}
	// A directory already walked is not walked again: the working
	// directory's subtree is not searched again from its writable root.
	for i, rd := range roots {
		if r.err != nil {
			break
		}
		tree, visited := scanRoot(rd.dir, depth, firsts, seen, cacheDir)
		if i < len(roots)-1 { // only the roots still to scan skip them
			for _, v := range visited {
				seen[v] = true
			}
		}
		emit(tree, rd.pinTo, append(make([]byte, 0, 256), rd.dir...), 0, filepath.Clean(rd.dir) == rd.dir)
	}
	return r
}

// homeProtectedOps adds to r the missing protected names of HOME when
// HOME lies inside a place that takes writes without being one of its
// roots (nor the working directory): the roots' search finds only the
// names that exist below a root, so a missing ~/.profile would otherwise
// be creatable there — under /var/tmp with --undeclared-writes discard,
// where HOME's region is folded into /var/tmp's, or under an allowWrite
// parent, where the write is real. HOME gets the working directory's
// treatment at level 0 only (the deeper names were searched from its
// root already): its missing names are stubbed, its existing ones made
// read-only again (dedupeOps merges them), and their ancestors up to the
// enclosing root are pinned.
func homeProtectedOps(r protResult, writable []string, real, cwd string, names []policy.Protected) protResult {
	if real == "" || real == cwd {
		return r
	}
	for _, w := range writable {
		if real == w {
			return r // a root: searched at level 0 already
		}
	}
	for _, w := range writable {
		if policy.Within(real, w) {
			h := protectedOps([]string{w}, real, real, true, 0, names, "")
			// Only what lies in HOME and the pins of its ancestors: the
			// root's own level 0 was done with every root.
			for _, o := range h.ops {
				if o.Kind == OpPin || policy.Within(o.Path, real) && o.Path != real {
					r.ops = append(r.ops, o)
				}
			}
			if h.err != nil {
				r.err = h.err
			}
			return r
		}
	}
	return r
}

// realHome is HOME with its symlinks resolved, or "" when it is unset,
// relative or cannot be resolved.
func realHome(home string) string {
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	real, err := filepath.EvalSymlinks(home)
	if err != nil {
		return ""
	}
	return real
}

// plainName says whether name is one plain path component: joined to a
// clean directory it makes a clean path.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && strings.IndexByte(name, '/') < 0
}

// subPaths appends to ps filepath.Join(dir, sub) for each sub in subs,
// the subdirectories the protected-name search listed in dir. When clean
// says dir is clean already (the search's root when filepath.Clean
// leaves it as it is, and every path the search makes below it) and the
// names are plain, the joined paths are clean too: they are made without
// Clean's pass over each, as substrings of one string.
func subPaths(ps []string, dir string, subs []string, clean bool) []string {
	prefix := len(dir) + 1 // dir + "/"
	switch dir {
	case "/":
		prefix = 1
	case "", ".":
		prefix = 0
	}
	n := 0
	for _, sub := range subs {
		if !clean || !plainName(sub) {
			for _, sub := range subs {
				ps = append(ps, filepath.Join(dir, sub))
			}
			return ps
		}
		n += prefix + len(sub)
	}
	var b strings.Builder
	b.Grow(n)
	for _, sub := range subs {
		switch prefix {
		case 0:
		case 1:
			b.WriteByte('/')
		default:
			b.WriteString(dir)
			b.WriteByte('/')
		}
		b.WriteString(sub)
	}
	all, off := b.String(), 0
	for _, sub := range subs {
		ps = append(ps, all[off:off+prefix+len(sub)])
		off += prefix + len(sub)
	}
	return ps
}

// appendSubPath appends the rest of filepath.Join(string(dir), sub) to
// dir, as subPaths would make it; when Clean must make it, it is made in
// a new slice, and dir is left as it was.
func appendSubPath(dir []byte, sub string, clean bool) []byte {
	if !clean || !plainName(sub) {
		return []byte(filepath.Join(string(dir), sub))
	}
	switch string(dir) {
	case "", ".":
		return append(dir[:0:0], sub...)
	case "/":
	default:
		dir = append(dir, '/')
	}
	return append(dir, sub...)
}

// entryType is what the protected-name search needs to know of an entry.
type entryType uint8

const (
	typeOther entryType = iota
	typeDir
	typeSymlink
)

// dirInfo is one directory read by the protected-name search: the types
// of its entries named like the first component of a protected name, and,
// above the search depth, its subdirectories (not symlinks) in name order.
//
// blind marks a directory the search meant to read and could not open
// or list (a mode-000 directory, an error reading it). Inside a writable
// root that is what an earlier run's command may have arranged: it runs
// as the caller and can make the directory readable again, and write
// the hooks of a repository the search did not see. Such a directory is
// kept read-only whole for the run (with its ancestors pinned): the
// command sees it as the search did and cannot change its mode, nor
// anything below it. The scan cache never holds one.
type dirInfo struct {
	have  map[string]entryType
	subs  []string
	blind bool
}

// programPath is the command's path when it is given as one.
func programPath(p *policy.Policy) string {
	if len(p.Process.Argv) == 0 || !strings.Contains(p.Process.Argv[0], "/") {
		return ""
	}
	prog := p.Process.Argv[0]
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(p.Process.Dir, prog)
	}
	if real, err := filepath.EvalSymlinks(prog); err == nil {
		return real
	}
	return ""
}

// rootLinks are the host's top-level symlinks (merged /usr: /bin, /lib,
// /lib64, /sbin → usr/…) whose targets lie in a visible path, so that an
// empty root reaches the same objects by the same names (the ELF
// interpreter's /lib64/ld-linux-x86-64.so.2, #!/bin/sh). A link shows
// nothing but its own text.
func rootLinks(visible []string) []Op {
	entries, err := os.ReadDir("/")
	if err != nil {
		return nil
	}
	var ops []Op
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		p := "/" + e.Name()
		target, err1 := os.Readlink(p)
		real, err2 := filepath.EvalSymlinks(p)
		if err1 != nil || err2 != nil || !policy.WithinAny(real, visible) {
			continue
		}
		ops = append(ops, Op{Kind: OpLink, Path: p, Target: target, Why: "host symlink into " + real})
	}
	return ops
}

// coveredRead reports whether allowRead a lies inside another allowRead
// with no denied path between them: binding that one shows a already.
// allow and deny are the allowRead and denyRead sets.
func coveredRead(a string, allow, deny policy.PathSet) bool {
	covered := false
	// Walking up from a: the first denied path met blocks every
	// allowRead above it, unless that allowRead is the denied path
	// itself (a denied path's own allowRead is never bound, below).
	blocked := false
	policy.Up(a, func(b string) bool {
		if b == a {
			_, blocked = deny[a]
			return true
		}
		_, isAllow := allow[b]
		_, isDeny := deny[b]
		if isAllow && b != "/tmp" && !isDeny && !blocked {
			covered = true
			return false
		}
		if isDeny {
			blocked = true
		}
		return true
	})
	return covered
}

// Visible lists what an empty-root view (EmptyRoot) holds, one line per
// path, for --dry-run: everything else is absent. It is nil for a view
// of the host's /.
func (m MountPlan) Visible() []string {
	if !m.EmptyRoot {
		return nil
	}
	out := []string{"/proc (the sandbox's own)", "/dev (minimal: null zero full random urandom tty shm)", "/tmp (private to the run)"}
	for _, o := range m.Ops {
		switch {
		case o.Kind == OpLink:
			out = append(out, o.Path+" -> "+o.Target)
		case o.Kind == OpDir:
			out = append(out, o.Path+" (empty directory: "+o.Why+")")
		case o.Kind == OpRW && !o.Protected:
			out = append(out, o.Path+" (read-write)")
		case o.Kind == OpRO && !o.Protected:
			out = append(out, o.Path+" (read-only)")
		case o.Kind == OpMask:
			out = append(out, o.Path+" (hidden: "+o.Why+")")
		}
	}
	return out
}

// deepestIsDiscard reports whether the deepest writable root or discard
// region holding p is a discard region (p is written into an overlay).
func deepestIsDiscard(p string, writable, discard []string) bool {
	best, isDiscard := "", false
	for _, w := range writable {
		if policy.Within(p, w) && len(w) > len(best) {
			best, isDiscard = w, false
		}
	}
	for _, d := range discard {
		if policy.Within(p, d) && len(d) >= len(best) {
			best, isDiscard = d, true
		}
	}
	return isDiscard
}

func dedupeOps(ops []Op) []Op {
	seen := map[string]bool{}
	out := ops[:0]
	for _, o := range ops {
		k := o.Kind + "\x00" + o.Path
		if !seen[k] {
			seen[k] = true
			out = append(out, o)
		}
	}
	return out
}

func depth(p string) int { return strings.Count(p, "/") }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// inProtectedName reports whether p, below root (the deepest writable
// root that holds it), is a protected name or lies inside one, at any
// depth.
func inProtectedName(p, root string, names []policy.Protected) bool {
	if root == "" || root == p {
		return false
	}
	rel := strings.TrimPrefix(p, root+"/")
	if root == "/" {
		rel = strings.TrimPrefix(p, "/")
	}
	comps := strings.Split(rel, "/")
	for _, pn := range names {
		if pn.OnlyIfFile {
			continue // a .git file holds nothing
		}
		nc := strings.Split(pn.Name, "/")
		for i := 0; i+len(nc) <= len(comps); i++ {
			if slices.Equal(comps[i:i+len(nc)], nc) {
				return true
			}
		}
	}
	return false
}
