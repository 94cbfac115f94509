package sandbox

import (
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

func asked(t *testing.T, kv ...string) policy.Limits {
	t.Helper()
	l := policy.Limits{Pids: policy.DefaultPids, TmpSize: 1 << 30}
	for i := 0; i < len(kv); i += 2 {
		one, err := policy.ParseLimit(kv[i], kv[i+1])
		if err != nil {
			t.Fatal(err)
		}
		l.CopyFrom(&one, kv[i])
		l.Asked = append(l.Asked, kv[i])
	}
	return l
}

func mech(lp *LimitPlan, name string) string {
	u, _ := lp.uses(name)
	return u.Mechanism
}

// TestPlanLimits: each host kind gets the mechanism docs/limits.md
// names, and a limit asked for that the host cannot enforce is refused
// with one line naming it, never dropped; a default is left out with a
// note.
func TestPlanLimits(t *testing.T) {
	v1 := map[string]string{"pids": "/cg/pids/x", "memory": "/cg/memory/x", "cpu": "/cg/cpu/x", "cpuacct": "/cg/cpuacct/x"}
	v2 := limitHost{v2: "/cg2/user", v2Ctl: map[string]bool{"pids": true, "memory": true, "cpu": true}}

	lp, err := planLimits(asked(t, "memory", "96M", "cpus", "0.5", "cpuTime", "1s"), v2)
	if err != nil || lp.Cgroup != "v2 /cg2/user" || mech(lp, "pids") != "cgroup v2 pids.max" || mech(lp, "memory") != "cgroup v2 memory.max" || mech(lp, "cpus") != "cgroup v2 cpu.max" || !strings.HasPrefix(mech(lp, "cpuTime"), "cgroup v2 cpu.stat") {
		t.Errorf("v2: %+v %v", lp, err)
	}
	// v2 without the cpu controller, v1 with it: v1.
	noCPU := limitHost{v2: "/cg2/user", v2Ctl: map[string]bool{"pids": true}, v1: v1, root: true}
	if lp, err = planLimits(asked(t, "cpus", "1"), noCPU); err != nil || lp.Cgroup != "v1" || mech(lp, "cpus") != "cgroup v1 cpu.cfs_quota_us" {
		t.Errorf("v1 fallback: %+v %v", lp, err)
	}
	// v1 as root.
	if lp, err = planLimits(asked(t, "pids", "40", "memory", "1G"), limitHost{v1: v1, root: true}); err != nil || lp.Cgroup != "v1" || mech(lp, "pids") != "cgroup v1 pids.max" || mech(lp, "memory") != "cgroup v1 memory.limit_in_bytes" {
		t.Errorf("v1: %+v %v", lp, err)
	}
	// No cgroup, not root: rlimits; --cpus refused.
	user := limitHost{}
	if lp, err = planLimits(asked(t, "pids", "40", "memory", "1G", "cpuTime", "2s"), user); err != nil || lp.Cgroup != "" || !strings.HasPrefix(mech(lp, "pids"), "RLIMIT_NPROC") || !strings.HasPrefix(mech(lp, "memory"), "RLIMIT_DATA") || !strings.HasPrefix(mech(lp, "cpuTime"), "RLIMIT_CPU") {
		t.Errorf("rlimits: %+v %v", lp, err)
	}
	if _, err = planLimits(asked(t, "cpus", "1"), user); err == nil || !strings.HasPrefix(err.Error(), "--cpus 1: cannot be enforced here") {
		t.Errorf("--cpus without a cgroup: %v", err)
	}
	// Root without a cgroup: RLIMIT_NPROC does not bind uid 0. Asked:
	// refused; the default: left out, with a note.
	root := limitHost{root: true}
	if _, err = planLimits(asked(t, "pids", "40"), root); err == nil || !strings.Contains(err.Error(), "--pids 40") || !strings.Contains(err.Error(), "uid 0") {
		t.Errorf("root --pids without a cgroup: %v", err)
	}
	if lp, err = planLimits(asked(t), root); err != nil || mech(lp, "pids") != "" || len(lp.Notes) != 1 {
		t.Errorf("root's default pids without a cgroup: %+v %v", lp, err)
	}
	// --weaker-nested: every asked limit refused, the defaults noted.
	weak := limitHost{weaker: true, v1: v1}
	for _, kv := range [][2]string{{"memory", "1G"}, {"cpuTime", "1s"}, {"pids", "10"}} {
		if _, err = planLimits(asked(t, kv[0], kv[1]), weak); err == nil || !strings.Contains(err.Error(), "--weaker-nested") {
			t.Errorf("weaker %s: %v", kv[0], err)
		}
	}
	if lp, err = planLimits(asked(t), weak); err != nil || len(lp.Limits) != 0 || len(lp.Notes) != 2 {
		t.Errorf("weaker defaults: %+v %v", lp, err)
	}
}
