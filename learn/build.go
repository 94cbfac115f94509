package learn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Start is the starting point of a learn run.
type Start struct {
	// Policy is the starting policy as flags and settings built it,
	// before learn's own changes for the observation.
	Policy *policy.Policy
	// Argv is the command; Environ its environment (PATH finds the
	// program and interpreter that --reads declared adds, and the
	// presets' caches follow it).
	Argv    []string
	Environ []string
	Cwd     string
	Home    string
	// Existing is the --settings file's bytes when --output names that
	// same file (the learned policy is added to it); nil otherwise.
	Existing []byte
	// Status is the command's exit status.
	Status int
}

// Result is the learned policy, before encoding. Paths are absolute and
// clean; Encode writes those under the working directory as "./…" and
// those under HOME as "~/…", so that the policy replays in another
// checkout and for another user.
type Result struct {
	AllowRead, AllowWrite []string
	// DenyRead are the entries a listed directory inside the working
	// directory holds that the command never touched: the directory is
	// granted so that the listing works, and these stay hidden in it.
	DenyRead []string
	// Create are the AllowWrite directories the run created that do not
	// exist on the host. sbx creates a missing allowWrite directory
	// whose parent exists as the replay starts, from a settings file
	// or --allow-write; srt needs them made first (mkdir -p).
	Create           []string
	AllowedDomains   []string // host:port
	AllowUnixSockets []string
	// Presets are the presets whose caches the command used; the sbx
	// and flags formats name them. PresetPaths are those caches as
	// paths, which the srt and claude formats (that have no presets)
	// write into allowWrite instead.
	Presets     []string
	PresetPaths []string
	// Refused is what the run refused and learning does not grant, and
	// what learning chose not to grant, each with the flag that would.
	Refused []Refusal
	// Failed: learned from a failed run (Status != 0).
	Failed bool
	Status int

	cwd, home string
	existing  []byte
}

// Build is the narrowest policy under which the command passes again
// with --reads declared --fail-on-violation plus the start policy (see
// docs/learn.md for every rule). It reads the host (which the observed
// run left unchanged) to tell what exists and to list the directories
// the collapsing rule considers; the same observations on the same host
// give the same Result.
func Build(st Start, ob Observed) (*Result, error) {
	if st.Policy == nil {
		return nil, errors.New("learn: no starting policy")
	}
	if !filepath.IsAbs(st.Cwd) {
		return nil, fmt.Errorf("learn: working directory %q is not absolute", st.Cwd)
	}
	b := &builder{st: st, p: st.Policy, cwd: filepath.Clean(st.Cwd)}
	if filepath.IsAbs(st.Home) {
		b.home = filepath.Clean(st.Home)
	}
	b.r = &Result{Status: st.Status, Failed: st.Status != 0, cwd: b.cwd, home: b.home, existing: st.Existing}
	b.init()
	b.paths(ob.Paths, ob.Refused)
	b.hosts(ob.Hosts)
	b.r.Refused = append(b.r.Refused, ob.Refused...)
	b.finish()
	return b.r, nil
}

// builder is one Build under way.
type builder struct {
	st        Start
	p         *policy.Policy
	r         *Result
	cwd, home string
	// runtime is what --reads declared reads anyway (DeclaredReads).
	runtime []string
	// denied are the start policy's denyRead entries ("/" of a start
	// --reads declared left out): credential masks and the user's.
	denied  []string
	presets []policy.PresetDir

	reads   map[string]Access // existing paths read
	writes  map[string]bool   // existing paths written, or directories that must be writable
	created map[string]bool   // topmost created paths (missing on the host) → is a directory
	presetU map[string]bool   // preset dirs used
	touched map[string]bool   // touchedInCwd, once made
}

// RuleListed is the rule of a directory the command listed but did not
// read through: granting it would show entries the command never read.
const RuleListed = "learn: listed or looked up, its entries not read: not granted whole"

// viewOwn are the view's own places: never the host's, never granted.
// /sys is not one: the normal view shows the host's, and --reads
// declared shows only the attributes runtimes read at start
// (policy.DeclaredRuntime), so what else a command reads there must be
// granted for the replay to pass.
var viewOwn = []string{"/proc", "/dev", "/tmp"}

// own says whether p is in the view's own places: the working directory
// and HOME, which the view shows even inside /tmp, are the host's.
func (b *builder) own(p string) bool {
	if policy.Within(p, b.cwd) || (b.home != "" && policy.Within(p, b.home)) {
		return false
	}
	return policy.WithinAny(p, viewOwn)
}

func (b *builder) init() {
	b.runtime = policy.DeclaredReads(b.st.Argv, b.st.Environ, b.cwd)
	for _, d := range b.p.Filesystem.DenyRead {
		if d != "/" {
			b.denied = append(b.denied, d)
		}
	}
	for _, name := range policy.PresetNames {
		dirs, err := policy.PresetDirs(name, b.st.Environ, b.home)
		if err == nil {
			b.presets = append(b.presets, dirs...)
		}
	}
	b.reads, b.writes, b.created, b.presetU = map[string]Access{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
}

func (b *builder) refuse(kind, what, rule, grant string) {
	b.r.Refused = append(b.r.Refused, Refusal{Kind: kind, What: what, Rule: rule, Grant: grant})
}

// preset is the preset cache that holds p, or nil.
func (b *builder) preset(p string) *policy.PresetDir {
	for i := range b.presets {
		if policy.Within(p, b.presets[i].Path) {
			return &b.presets[i]
		}
	}
	return nil
}

// paths sorts every observed path into reads, writes, created paths and
// sockets, leaving out what the start policy or the runtime already
// allows and what the protections refused.
func (b *builder) paths(obs map[string]Access, refusals []Refusal) {
	fs := b.p.Filesystem
	// What the protections refused is never granted, whatever else the
	// observer saw of it.
	refused := map[string]bool{}
	for _, f := range refusals {
		refused[filepath.Clean(f.What)] = true
	}
	keys := make([]string, 0, len(obs))
	for p := range obs {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, raw := range keys {
		a := obs[raw]
		p := filepath.Clean(raw)
		if !filepath.IsAbs(p) || b.own(p) || refused[p] {
			continue
		}
		if a&Connect != 0 {
			b.socket(p)
			continue
		}
		_, err := os.Lstat(p)
		exists := err == nil
		if a&(Write|Create|Remove) != 0 {
			b.write(p, a, exists)
			continue
		}
		if !exists || policy.WithinAny(p, b.runtime) {
			continue
		}
		if policy.WithinAny(p, b.denied) && !policy.WithinAny(p, fs.AllowRead) {
			continue // a mask's refusal: the observed run noted it as one
		}
		if policy.WithinAny(p, fs.AllowRead) || policy.WithinAny(p, fs.AllowWrite) {
			continue
		}
		if d := b.preset(p); d != nil {
			b.presetU[d.Path] = true
			continue
		}
		b.reads[p] |= a
	}
	// A created path with something observed below it is a directory.
	tops := make([]string, 0, len(b.created))
	for t := range b.created {
		tops = append(tops, t)
	}
	sort.Strings(tops)
	for _, t := range tops {
		if b.created[t] {
			b.grantCreatedDir(t)
		} else {
			b.needDir(filepath.Dir(t), t)
		}
	}
}

func (b *builder) socket(p string) {
	n := b.p.Network
	if n.AllowAllUnixSockets || slices.Contains(n.AllowUnixSockets, p) {
		return
	}
	b.r.AllowUnixSockets = append(b.r.AllowUnixSockets, p)
}

// write notes one written, created or removed path.
func (b *builder) write(p string, a Access, exists bool) {
	fs := b.p.Filesystem
	if policy.WithinAny(p, fs.DenyWrite) {
		b.refuse("file-write", p, "denyWrite", "")
		return
	}
	if policy.WithinAny(p, fs.AllowWrite) {
		return
	}
	if d := b.preset(p); d != nil {
		b.presetU[d.Path] = true
		return
	}
	switch {
	case exists && a&Remove == 0:
		b.writes[p] = true
	case exists:
		// Removing (or renaming away) needs the directory writable.
		b.needDir(filepath.Dir(p), p)
	default:
		// Created in a discard region: the topmost missing component
		// is what the replay must be able to create.
		top := p
		for q := filepath.Dir(p); q != "/"; q = filepath.Dir(q) {
			if _, err := os.Lstat(q); err == nil {
				break
			}
			top = q
		}
		b.created[top] = b.created[top] || top != p || a&Dir != 0
	}
}

// grantCreatedDir grants a directory the run made, which the replay
// must create first (Result.Create).
func (b *builder) grantCreatedDir(d string) {
	if pn := policy.ProtectedRoot(d, b.p.Filesystem.AllowGitConfig); pn != "" {
		b.refuse("file-write", d, "protected name "+pn, protectedGrant(pn))
		return
	}
	if !b.mayHold(filepath.Dir(d)) {
		b.refuse("file-write", d, "learn: creating it needs "+filepath.Dir(d)+" writable, which learn never grants", "--allow-write "+filepath.Dir(d))
		return
	}
	b.writes[d] = true
	b.r.Create = append(b.r.Create, d)
}

// needDir grants dir for writing because the command created or removed
// the entry what in it: there is no narrower grant for a new name.
func (b *builder) needDir(dir, what string) {
	if b.writes[dir] {
		return
	}
	if pn := policy.ProtectedRoot(dir, b.p.Filesystem.AllowGitConfig); pn != "" {
		b.refuse("file-write", what, "protected name "+pn, protectedGrant(pn))
		return
	}
	if !b.mayGrant(dir) {
		b.refuse("file-write", what, "learn: creating or removing it needs "+dir+" writable, which learn never grants", "--allow-write "+dir)
		return
	}
	b.writes[dir] = true
}

// protectedGrant is the flag that makes protected name pn writable, or
// "" when none does.
func protectedGrant(pn string) string {
	if pn == ".git/config" {
		return "--allow-git-config"
	}
	return ""
}

// mayGrant says whether learning may ever name dir as a whole: never
// "/", HOME or an ancestor of HOME, an ancestor of the working
// directory, the runtime, the view's own places, or a directory that
// holds a credential mask.
func (b *builder) mayGrant(dir string) bool {
	if dir == "/" || !filepath.IsAbs(dir) {
		return false
	}
	if b.home != "" && policy.Within(b.home, dir) {
		return false
	}
	if dir != b.cwd && policy.Within(b.cwd, dir) {
		return false
	}
	if policy.WithinAny(dir, b.runtime) || b.own(dir) {
		return false
	}
	for _, d := range b.denied {
		if policy.Within(d, dir) {
			return false
		}
	}
	return true
}

// untouched are the entries under the listed directory d that the
// command touched nothing in (read, listed, wrote) and that the replay
// does not show anyway (shown): each whole, as high as it goes. A
// directory holding something touched is walked into, so that what it
// holds untouched is found as well.
func (b *builder) untouched(d string, shown func(string) bool) []string {
	touched := b.touchedInCwd()
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		names, err := readNames(dir)
		if err != nil {
			return
		}
		for _, n := range names {
			e := filepath.Join(dir, n)
			switch {
			case shown(e):
			case !touched[e]:
				out = append(out, e)
			default:
				if st, err := os.Lstat(e); err == nil && st.IsDir() {
					walk(e)
				}
			}
		}
	}
	walk(d)
	sort.Strings(out)
	return out
}

// touchedInCwd is every path in the working directory that the command
// touched (read, listed, wrote, made) or that holds one, made once for
// all the listings untouched walks.
func (b *builder) touchedInCwd() map[string]bool {
	if b.touched != nil {
		return b.touched
	}
	b.touched = map[string]bool{}
	mark := func(p string) {
		for q := p; policy.Within(q, b.cwd) && !b.touched[q]; q = filepath.Dir(q) {
			b.touched[q] = true
			if q == b.cwd {
				break
			}
		}
	}
	for p := range b.reads {
		mark(p)
	}
	for p := range b.writes {
		mark(p)
	}
	for p := range b.created {
		mark(p)
	}
	return b.touched
}

// mayHold says whether a directory the run made may be created in dir:
// not in "/" nor in the runtime (the replay could not make it there).
func (b *builder) mayHold(dir string) bool {
	return dir != "/" && !policy.WithinAny(dir, b.runtime) && !b.own(dir)
}

// hosts notes every host the start policy does not already allow.
func (b *builder) hosts(hosts []string) {
	for _, h := range hosts {
		if allowsHost(b.p.Network.AllowedDomains, h) {
			continue
		}
		b.r.AllowedDomains = append(b.r.AllowedDomains, h)
	}
}

// allowsHost says whether one of entries (srt's domain patterns,
// "host", "host:port", "*.suffix") allows hostport.
func allowsHost(entries []string, hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, e := range entries {
		eh, ep := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			if _, perr := strconv.Atoi(p); perr == nil {
				eh, ep = h, p
			}
		}
		eh = strings.ToLower(strings.TrimSuffix(eh, "."))
		if ep != "" && ep != port {
			continue
		}
		if eh == host || eh == "*" || (strings.HasPrefix(eh, "*.") && strings.HasSuffix(host, eh[1:])) {
			return true
		}
	}
	return false
}

// finish collapses the lists and sorts everything.
func (b *builder) finish() {
	r := b.r
	// Writes: collapse; a protected name is never written.
	agc := b.p.Filesystem.AllowGitConfig
	w, _ := collapse(setOf(b.writes), b.mayGrant, nil, true, agc)
	for _, p := range w {
		if pn := policy.ProtectedRoot(p, agc); pn != "" {
			b.refuse("file-write", p, "protected name "+pn, protectedGrant(pn))
			continue
		}
		r.AllowWrite = append(r.AllowWrite, p)
	}
	// Reads: a write implies a read.
	rs := map[string]bool{}
	for p := range b.reads {
		if !policy.WithinAny(p, r.AllowWrite) {
			rs[p] = true
		}
	}
	// An entry the replay shows anyway (the start policy's reads and
	// writes, the learned writes) does not keep its directory from
	// being named whole: a project listed, its sources read and its
	// build directory written, is one line.
	fs := b.p.Filesystem
	shown := func(p string) bool {
		return policy.WithinAny(p, fs.AllowRead) || policy.WithinAny(p, fs.AllowWrite) || policy.WithinAny(p, r.AllowWrite)
	}
	rd, open := collapse(rs, b.mayGrant, shown, false, false)
	r.AllowRead = rd
	for _, d := range open {
		switch {
		case policy.WithinAny(d, rd) || policy.WithinAny(d, r.AllowWrite):
		case policy.Within(d, "/sys"):
			// The kernel's own attributes, no one's data: a runtime
			// lists them at start (the JVM lists
			// /sys/kernel/mm/hugepages for the page sizes) and
			// fails the replay without them.
			r.AllowRead = append(r.AllowRead, d)
		case policy.Within(d, b.cwd) && b.mayGrant(d):
			// A listing inside the project (a test runner's
			// collection, a cached build, a linter's walk): the
			// directory is granted so that the listing works, and
			// every entry in it the command never touched is denied,
			// so that it shows nothing more than was read.
			r.AllowRead = append(r.AllowRead, d)
			r.DenyRead = append(r.DenyRead, b.untouched(d, shown)...)
		default:
			// Listed, its entries not all read: granting it would
			// show them all, and the replay cannot list it without.
			b.refuse("file-read", d, RuleListed, "--allow-read "+d)
		}
	}
	r.AllowRead = outermost(r.AllowRead)
	// Presets.
	names := map[string]bool{}
	for d := range b.presetU {
		for _, pd := range b.presets {
			if pd.Path == d {
				names[pd.Preset] = true
			}
		}
		r.PresetPaths = append(r.PresetPaths, d)
	}
	for n := range names {
		r.Presets = append(r.Presets, n)
	}
	sort.Strings(r.AllowRead)
	sort.Strings(r.AllowWrite)
	r.DenyRead = outermost(r.DenyRead)
	r.AllowRead = slices.Compact(r.AllowRead)
	r.AllowWrite = slices.Compact(r.AllowWrite)
	r.Create = keepWithin(r.Create, r.AllowWrite)
	sort.Strings(r.AllowedDomains)
	r.AllowedDomains = slices.Compact(r.AllowedDomains)
	sort.Strings(r.AllowUnixSockets)
	r.AllowUnixSockets = slices.Compact(r.AllowUnixSockets)
	sort.Strings(r.Presets)
	sort.Strings(r.PresetPaths)
	sortRefusals(r.Refused)
	r.Refused = slices.Compact(r.Refused)
}

// keepWithin keeps the entries of c that are themselves in list (a
// created directory inside a wider grant needs no creating of its own).
func keepWithin(c, list []string) []string {
	var out []string
	for _, p := range c {
		if slices.Contains(list, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func sortRefusals(rs []Refusal) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.What != b.What {
			return a.What < b.What
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Grant < b.Grant
	})
}

func setOf(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		if v {
			out[k] = true
		}
	}
	return out
}
