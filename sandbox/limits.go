package sandbox

import (
	"fmt"
	"math"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Limits: how each of the policy's limits is enforced on this host,
// chosen once at start, best first:
//
//  1. a cgroup v2 subtree this user may write (root, or a subtree
//     delegated to the user), whose controllers are enabled for its
//     children: the sandbox runs in a fresh child, removed at the end;
//  2. cgroup v1 controllers (pids, memory, cpu, cpuacct) the caller may
//     write (root): a fresh child in each hierarchy;
//  3. rlimits set in the command before its execve, hard and soft
//     (RLIMIT_NPROC, which inside the sandbox's own user namespace
//     counts the sandbox's processes only, but never binds a real uid 0;
//     RLIMIT_DATA for memory, per process; RLIMIT_CPU per process);
//  4. tmpfs size= for the one private tmpfs that holds /tmp, /dev/shm
//     and the discard overlays' upper layers: always.
//
// A limit the user asked for that no mechanism here can enforce refuses
// the run (exit 125, naming the limit and why); a default that cannot be
// enforced is left out with a note in the plan.

// LimitPlan is the enforcement of a run's limits (--dry-run shows it,
// sbx doctor says which mechanism each limit would use).
type LimitPlan struct {
	// Cgroup is "v2 DIR" or "v1" when the sandbox runs in a cgroup of
	// its own, "" when it does not.
	Cgroup string `json:"cgroup,omitempty"`
	// Limits are the limits in force, each with its mechanism.
	Limits []LimitUse `json:"limits"`
	// Notes say which default is not enforced here, and why.
	Notes []string `json:"notes,omitempty"`

	values policy.Limits
	// v2 is the cgroup v2 directory under which the run's cgroup is
	// made; v1 the v1 hierarchies' directories by controller.
	v2 string
	v1 map[string]string
}

// LimitUse is one limit and how it is enforced.
type LimitUse struct {
	Name      string `json:"name"`  // the settings name: memory, pids, …
	Flag      string `json:"flag"`  // --memory, …
	Value     string `json:"value"` // as the user writes it: 512M
	Default   bool   `json:"default,omitempty"`
	Mechanism string `json:"mechanism"` // "cgroup v1 pids.max", "RLIMIT_NPROC", …
	// Seen is what reports the limit being hit ("" the failure hint
	// names it as a possible cause only).
	Seen string `json:"seen,omitempty"`
}

// limitHost is what the host offers: the writable cgroup v2 parent
// with its enabled controllers, and the writable v1 hierarchies.
type limitHost struct {
	v2      string          // "" none
	v2Ctl   map[string]bool // controllers enabled for v2's children
	v1      map[string]string
	root    bool // the sandbox's processes run as the real uid 0
	weaker  bool // --weaker-nested: no namespaces, no private tmpfs
	v2Notes string
}

// controllers each limit needs in a cgroup ("" none: rlimit or tmpfs
// only).
var limitController = map[string]string{"pids": "pids", "memory": "memory", "cpus": "cpu", "cpuTime": "cpuacct"}

// planLimits decides each limit's mechanism on host h.
func planLimits(l policy.Limits, h limitHost) (*LimitPlan, error) {
	lp := &LimitPlan{values: l}
	// The cgroup: v2 when its parent has every controller the set
	// limits need, else v1 where the caller may write, else none.
	need := map[string]bool{}
	for _, name := range policy.LimitNames {
		if c := limitController[name]; c != "" && l.IsSet(name) && !h.weaker {
			need[c] = true
		}
	}
	useV2 := h.v2 != "" && len(need) > 0
	for c := range need {
		v2c := c
		if c == "cpuacct" {
			continue // cpu.stat is in every v2 cgroup
		}
		useV2 = useV2 && h.v2Ctl[v2c]
	}
	has := func(c string) bool {
		if useV2 {
			return c == "cpuacct" || h.v2Ctl[c]
		}
		return h.v1[c] != ""
	}
	kind := "cgroup v1 "
	if useV2 {
		kind = "cgroup v2 "
		lp.v2 = h.v2
	}
	for _, name := range policy.LimitNames {
		if !l.IsSet(name) {
			continue
		}
		u := LimitUse{Name: name, Flag: policy.LimitFlag[name], Value: l.Value(name), Default: !l.IsAsked(name)}
		refuse := func(why string) error {
			return fmt.Errorf("%s %s: %s", u.Flag, u.Value, why)
		}
		if h.weaker {
			if u.Default {
				lp.Notes = append(lp.Notes, fmt.Sprintf("%s (default %s) not enforced: --weaker-nested runs without the sandbox's namespaces and private tmpfs", u.Flag, u.Value))
				continue
			}
			return nil, refuse("cannot be enforced with --weaker-nested, which starts the command without the sandbox's namespaces, cgroup, rlimits and private tmpfs; run the full sandbox")
		}
		c := limitController[name]
		cg := c != "" && !h.weaker && has(c)
		if cg && !useV2 {
			if lp.v1 == nil {
				lp.v1 = map[string]string{}
			}
			lp.v1[c] = h.v1[c]
		}
		switch name {
		case "pids":
			switch {
			case cg:
				u.Mechanism, u.Seen = kind+"pids.max", "pids.events"
			case !h.root:
				u.Mechanism = "RLIMIT_NPROC (counts the sandbox's processes: they run in a user namespace of their own)"
			case u.Default:
				lp.Notes = append(lp.Notes, fmt.Sprintf("--pids (default %s) not enforced: the processes run as uid 0, which RLIMIT_NPROC does not bind, and no cgroup pids controller is writable here%s", u.Value, h.v2Notes))
				continue
			default:
				return nil, refuse("cannot be enforced here: the processes run as uid 0, which RLIMIT_NPROC does not bind, and no cgroup pids controller is writable" + h.v2Notes + "; run as another user, or where a cgroup is delegated")
			}
		case "memory":
			if cg {
				u.Mechanism, u.Seen = kind+map[bool]string{true: "memory.max", false: "memory.limit_in_bytes"}[useV2], map[bool]string{true: "memory.events oom_kill", false: "memory.oom_control oom_kill"}[useV2]
			} else {
				u.Mechanism = "RLIMIT_DATA (per process: each process's heap and private mappings)"
			}
		case "cpus":
			if !cg {
				return nil, refuse("cannot be enforced here: it needs a cgroup cpu controller, and none is writable" + h.v2Notes)
			}
			u.Mechanism = kind + map[bool]string{true: "cpu.max", false: "cpu.cfs_quota_us"}[useV2]
		case "cpuTime":
			if cg {
				u.Mechanism, u.Seen = kind+map[bool]string{true: "cpu.stat usage_usec", false: "cpuacct.usage"}[useV2]+" (the whole sandbox's, polled) and RLIMIT_CPU", "the supervisor's kill, SIGXCPU"
			} else {
				u.Mechanism, u.Seen = "RLIMIT_CPU (per process)", "SIGXCPU or SIGKILL at the command's exit"
			}
		case "fileSize":
			u.Mechanism, u.Seen = "RLIMIT_FSIZE (per process)", "SIGXFSZ at the command's exit"
		case "openFiles":
			u.Mechanism = "RLIMIT_NOFILE (per process)"
		case "tmpSize":
			u.Mechanism, u.Seen = "tmpfs size= (one tmpfs for /tmp, /dev/shm and the discard overlays)", "the tmpfs full at the command's exit"
		}
		lp.Limits = append(lp.Limits, u)
	}
	switch {
	case lp.v2 != "":
		lp.Cgroup = "v2 " + lp.v2
	case len(lp.v1) > 0:
		lp.Cgroup = "v1"
	}
	return lp, nil
}

// uses says whether limit name is enforced, and how.
func (lp *LimitPlan) uses(name string) (LimitUse, bool) {
	if lp == nil {
		return LimitUse{}, false
	}
	for _, u := range lp.Limits {
		if u.Name == name {
			return u, true
		}
	}
	return LimitUse{}, false
}

// cgroupUse says whether limit name is enforced by the run's cgroup.
func (lp *LimitPlan) cgroupUse(name string) bool {
	u, ok := lp.uses(name)
	return ok && strings.HasPrefix(u.Mechanism, "cgroup")
}

// rlimitSeconds is RLIMIT_CPU's value for d: whole seconds, rounded up.
func rlimitSeconds(d float64) uint64 {
	return uint64(math.Max(1, math.Ceil(d)))
}

// Describe is one line per limit: "--pids 4096 (default): cgroup v1
// pids.max", for sbx doctor.
func (lp *LimitPlan) Describe() []string {
	var out []string
	for _, u := range lp.Limits {
		d := ""
		if u.Default {
			d = " (default)"
		}
		out = append(out, fmt.Sprintf("%s %s%s: %s", u.Flag, u.Value, d, u.Mechanism))
	}
	return append(out, lp.Notes...)
}

// LimitMechanisms says, for sbx doctor, which mechanism each limit would
// use on this host when asked for (or why it would be refused), and how
// the defaults are enforced: one line each.
func LimitMechanisms() []string {
	var out []string
	for _, name := range policy.LimitNames {
		probe := map[string]string{"memory": "1G", "pids": "1000", "cpus": "1", "cpuTime": "1m", "fileSize": "1G", "openFiles": "1024", "tmpSize": "1G"}[name]
		l, _ := policy.ParseLimit(name, probe)
		l.Asked = []string{name}
		lp, err := hostLimits(l, false)
		switch u, ok := lp.uses(name); {
		case err != nil:
			_, why, _ := strings.Cut(err.Error(), ": ")
			out = append(out, fmt.Sprintf("%-13s NO — %s", policy.LimitFlag[name]+":", why))
		case ok:
			out = append(out, fmt.Sprintf("%-13s %s", policy.LimitFlag[name]+":", u.Mechanism))
		}
	}
	lp, _ := hostLimits(policy.Limits{Pids: policy.DefaultPids, TmpSize: policy.DefaultTmpSize()}, false)
	for _, u := range lp.Limits {
		out = append(out, fmt.Sprintf("default %s %s: %s", u.Flag, u.Value, u.Mechanism))
	}
	return append(out, lp.Notes...)
}
