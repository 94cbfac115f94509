package landlock

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Filesystem access rights, in the kernel's bit layout (uapi/linux/landlock.h).
const (
	accessExecute    = 1 << 0
	accessWriteFile  = 1 << 1
	accessReadFile   = 1 << 2
	accessReadDir    = 1 << 3
	accessRemoveDir  = 1 << 4
	accessRemoveFile = 1 << 5
	accessMakeChar   = 1 << 6
	accessMakeDir    = 1 << 7
	accessMakeReg    = 1 << 8
	accessMakeSock   = 1 << 9
	accessMakeFifo   = 1 << 10
	accessMakeBlock  = 1 << 11
	accessMakeSym    = 1 << 12
	accessRefer      = 1 << 13 // ABI 2
	accessTruncate   = 1 << 14 // ABI 3
	accessIoctlDev   = 1 << 15 // ABI 5
)

// Access right groups used by Plan.
const (
	Read  = accessReadFile | accessReadDir | accessExecute
	Write = accessWriteFile | accessTruncate | accessRemoveDir | accessRemoveFile |
		accessMakeDir | accessMakeReg | accessMakeSym | accessMakeSock | accessMakeFifo | accessRefer
	Device = accessReadFile | accessWriteFile | accessTruncate | accessIoctlDev
	// fileRights are the rights that make sense on a non-directory.
	fileRights = accessExecute | accessWriteFile | accessReadFile | accessTruncate | accessIoctlDev
)

// Rule grants Access beneath Path (a file or a directory).
type Rule struct {
	Path   string `json:"path"`
	Access uint64 `json:"access"`
	// NotDir records that Path was not a directory (nor a symlink) when
	// the plan was made: RestrictThread then drops the directory-only
	// rights without a stat. Should a directory have taken its place
	// since, it gets fewer rights, never more.
	NotDir bool `json:"notDir,omitempty"`
}

// Ruleset is the whole Landlock statement for one sandbox. It is a plain
// value: computed by Plan, serialised to the sandbox, applied there.
type Ruleset struct {
	Rules []Rule `json:"rules"`
	// RestrictTCP handles TCP bind and connect; ConnectPorts are the only
	// ports the command may connect to.
	RestrictTCP  bool     `json:"restrictTcp"`
	ConnectPorts []uint16 `json:"connectPorts,omitempty"`
	// ConnectAny leaves TCP connect unrestricted (only bind is handled):
	// set under capture, where every destination but the sandbox's own
	// loopback is the capture device, whose other end vets each
	// connection as the proxy would.
	ConnectAny bool `json:"connectAny,omitempty"`
	// BindPorts are the only ports the command may bind (published ports).
	BindPorts []uint16 `json:"bindPorts,omitempty"`
	// BindAny leaves TCP bind unrestricted (only connect is handled):
	// allowLocalBinding in the weaker mode, which has no network
	// namespace of its own, so that connect stays held to the proxy.
	BindAny bool `json:"bindAny,omitempty"`
	// Notes explain where Landlock leaves enforcement to the mount view.
	Notes []string `json:"notes,omitempty"`
}

// Options are the facts Plan needs beyond the Policy.
type Options struct {
	// Weaker is the mode without namespaces: no mount view, no private /tmp.
	Weaker bool
	// ProxyPorts are loopback ports the command may connect to.
	ProxyPorts []uint16
	// BindPorts are ports the command may listen on without
	// allowLocalBinding (the inside ports of --publish).
	BindPorts []uint16
	// Capture: TCP connect is not restricted (Ruleset.ConnectAny).
	Capture bool
}

// Plan computes the Ruleset for p.
func Plan(p *policy.Policy, o Options) Ruleset {
	var rs Ruleset
	fs := p.Filesystem
	writable := WritableRoots(p)
	if fs.Disabled {
		rs.Rules = append(rs.Rules, Rule{Path: "/", Access: Read | Write | Device})
	} else {
		// Discard regions take writes too (into their overlay).
		takesWrites := append(append([]string(nil), writable...), fs.DiscardWrites...)
		rs.Rules = append(rs.Rules, readRules(fs.DenyRead, fs.AllowRead, takesWrites, o.Weaker, &rs.Notes)...)
		for _, w := range takesWrites {
			rs.Rules = append(rs.Rules, Rule{Path: w, Access: Read | Write})
		}
		if !o.Weaker {
			rs.Rules = append(rs.Rules, Rule{Path: "/tmp", Access: Read | Write}, Rule{Path: "/dev/shm", Access: Read | Write})
			if policy.WithinAny("/proc", fs.DenyRead) {
				// The sandbox's own /proc (its pids only), which the
				// mount view keeps even in an empty root.
				rs.Rules = append(rs.Rules, Rule{Path: "/proc", Access: Read})
			}
		}
		for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"} {
			rs.Rules = append(rs.Rules, Rule{Path: d, Access: Device, NotDir: true})
		}
		if p.AllowPty {
			rs.Rules = append(rs.Rules, Rule{Path: "/dev/pts", Access: Device | accessReadDir}, Rule{Path: "/dev/ptmx", Access: Device, NotDir: true})
		}
	}
	// allowLocalBinding lifts the TCP rules where the sandbox has a
	// network namespace of its own (its loopback is all a bind or a
	// connect there reaches). In the weaker mode there is none: binding
	// is free, but connect stays held to the proxy, else every address
	// would be one connect away.
	if p.Network.Mode != "host" && !(p.Network.AllowLocalBinding && !o.Weaker) {
		rs.RestrictTCP = true
		rs.ConnectAny = o.Capture
		if !o.Capture {
			rs.ConnectPorts = append(rs.ConnectPorts, o.ProxyPorts...)
		}
		if p.Network.AllowLocalBinding {
			rs.BindAny = true
			rs.Notes = append(rs.Notes, "allowLocalBinding in the weaker mode: any port may be bound, but TCP connects reach only the proxy (there is no network namespace to keep them on the sandbox's loopback)")
		} else {
			rs.BindPorts = append(rs.BindPorts, o.BindPorts...)
		}
	}
	return rs
}

// WritableRoots are the allowWrite paths not inside a denyWrite path.
func WritableRoots(p *policy.Policy) []string {
	var out []string
	for _, w := range p.Filesystem.AllowWrite {
		if !policy.WithinAny(w, p.Filesystem.DenyWrite) {
			out = append(out, w)
		}
	}
	return out
}

// readRules splits the read grant on "/" around each denied path, and
// grants Read again on each allowed path inside a denied one. Denials and
// re-allowances are taken in path order, so an ancestor comes before what
// lies in it: deny "/", allow "/etc", deny "/etc/shadow" leaves /etc
// readable but for /etc/shadow.
func readRules(deny, allow, writable []string, weaker bool, notes *[]string) []Rule {
	grants := map[string]uint64{"/": Read}
	notDir := map[string]bool{}
	type step struct {
		path  string
		allow bool
	}
	steps := make([]step, 0, len(deny)+len(allow))
	for _, d := range deny {
		steps = append(steps, step{d, false})
	}
	denied, writes := policy.NewPathSet(deny), policy.NewPathSet(writable)
	for _, a := range allow {
		if denied.Deepest(a, true) != "" {
			steps = append(steps, step{a, true})
		}
	}
	sort.SliceStable(steps, func(i, j int) bool {
		if steps[i].path != steps[j].path {
			return steps[i].path < steps[j].path
		}
		return !steps[i].allow && steps[j].allow
	})
	for _, st := range steps {
		d := st.path
		if st.allow {
			grants[d] |= Read
			continue
		}
		if d == "/" {
			delete(grants, "/")
			continue
		}
		parent := filepath.Dir(d)
		if !weaker && writes.Deepest(parent, true) != "" {
			*notes = append(*notes, "read-deny of "+d+" is enforced by the mount view only: its parent is writable")
			continue
		}
		// Find the granted hierarchy containing d (the deepest of d and
		// its ancestors granted exactly Read) and split it.
		g := ""
		for a := d; ; a = filepath.Dir(a) {
			if grants[a] == Read {
				g = a
				break
			}
			if a == "/" {
				break
			}
		}
		if g == "" || g == d {
			delete(grants, d)
			continue
		}
		delete(grants, g)
		for dir := g; dir != d; {
			next := childOnPath(dir, d)
			grants[dir] |= accessReadDir
			entries, err := readDirUnsorted(dir)
			if err == nil {
				prefix := entryPrefix(dir)
				for _, e := range entries {
					c := prefix + e.Name()
					if c != next {
						grants[c] |= Read
						if !e.IsDir() && e.Type()&os.ModeSymlink == 0 {
							notDir[c] = true
						}
					}
				}
			}
			dir = next
		}
	}
	out := make([]Rule, 0, len(grants))
	for path, acc := range grants {
		out = append(out, Rule{Path: path, Access: acc, NotDir: notDir[path]})
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// readDirUnsorted is os.ReadDir without the sort (readRules sorts its
// result once): / and /etc are read on every run.
func readDirUnsorted(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// entryPrefix is what filepath.Join(dir, name) puts before a name from
// dir's listing (no "/", not "." or ".."): computed once per directory
// instead of a Join (and its Clean) per entry.
func entryPrefix(dir string) string {
	if dir = filepath.Clean(dir); dir == "/" {
		return "/"
	}
	return dir + "/"
}

func childOnPath(dir, target string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(target, dir), "/")
	first, _, _ := strings.Cut(rest, "/")
	return filepath.Join(dir, first)
}
