package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// probeLimitHost finds the cgroups this process may write: the nearest
// cgroup v2 ancestor (its own cgroup included) whose children have
// controllers enabled and whose cgroup.procs it may write (the common
// ancestor a move into a child needs), and the v1 hierarchies whose
// cgroup of this process it may write.
func probeLimitHost(root, weaker bool) limitHost {
	h := limitHost{root: root, weaker: weaker, v1: map[string]string{}}
	self, err1 := os.ReadFile("/proc/self/cgroup")
	mi, err2 := os.ReadFile("/proc/self/mountinfo")
	if err1 != nil || err2 != nil {
		return h
	}
	own := map[string]string{} // controller ("" for v2) → path
	for _, line := range strings.Split(string(self), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			own[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			own[c] = f[2]
		}
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		mroot, mp := f[3], f[4]
		under := func(p string) (string, bool) {
			if p == mroot || mroot == "/" {
				return filepath.Join(mp, p), strings.HasPrefix(p, "/")
			}
			if rest, ok := strings.CutPrefix(p, mroot+"/"); ok {
				return filepath.Join(mp, rest), true
			}
			return "", false
		}
		switch g[0] {
		case "cgroup2":
			p, ok := own[""]
			if !ok || h.v2 != "" {
				continue
			}
			dir, ok := under(p)
			if !ok {
				continue
			}
			for d := dir; ; d = filepath.Dir(d) {
				ctl, err := os.ReadFile(d + "/cgroup.subtree_control")
				if err == nil && len(strings.TrimSpace(string(ctl))) > 0 && unix.Access(d, unix.W_OK|unix.X_OK) == nil && unix.Access(d+"/cgroup.procs", unix.W_OK) == nil {
					cs := map[string]bool{}
					for _, c := range strings.Fields(string(ctl)) {
						cs[c] = true
					}
					if cs["pids"] || cs["memory"] || cs["cpu"] {
						h.v2, h.v2Ctl = d, cs
						break
					}
				}
				if d == mp || d == "/" || !strings.HasPrefix(d, mp) {
					break
				}
			}
			if h.v2 == "" {
				h.v2Notes = " (cgroup v2: no writable subtree with the controllers enabled for its children)"
			}
		case "cgroup":
			for _, c := range strings.Split(g[2], ",") {
				switch c {
				case "pids", "memory", "cpu", "cpuacct":
					if p, ok := own[c]; ok && h.v1[c] == "" {
						if dir, ok := under(p); ok && unix.Access(dir, unix.W_OK|unix.X_OK) == nil {
							h.v1[c] = dir
						}
					}
				}
			}
		}
	}
	return h
}

// hostLimits plans l on this host (weaker: --weaker-nested).
func hostLimits(l policy.Limits, weaker bool) (*LimitPlan, error) {
	// The sandbox's processes keep the caller's real uid (mapped to
	// itself in the host's user namespace): root's are uid 0.
	return planLimits(l, probeLimitHost(os.Getuid() == 0, weaker))
}

// cgroupRun is the run's own cgroup (one directory per v1 hierarchy, or
// one in v2): made before the start, joined by the sandbox's first
// process before it forks the command, read at the end for the records,
// removed when the sandbox is gone.
type cgroupRun struct {
	lp    *LimitPlan
	dirs  map[string]string // controller ("" v2) → the run's directory
	procs []*os.File        // their cgroup.procs, open for the first process
	// cpuHit: the supervisor killed the sandbox at --cpu-time.
	cpuHit bool
	stop   chan struct{}
	done   chan struct{}
}

// makeCgroup makes the run's cgroup and sets its limits; nil when the
// plan uses none.
func (lp *LimitPlan) makeCgroup() (*cgroupRun, error) {
	if lp == nil || lp.Cgroup == "" {
		return nil, nil
	}
	cg := &cgroupRun{lp: lp, dirs: map[string]string{}}
	name := fmt.Sprintf("sbx-%d", os.Getpid())
	parents := map[string]string{}
	if lp.v2 != "" {
		parents[""] = lp.v2
	} else {
		parents = lp.v1
	}
	made := map[string]string{} // parent → child (co-mounted controllers share one)
	for c, parent := range parents {
		if d, ok := made[parent]; ok {
			cg.dirs[c] = d
			continue
		}
		sweepCgroups(parent)
		d := filepath.Join(parent, name)
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, os.ErrExist) {
			_ = os.Remove(d) // a run of an earlier process with this pid
			err = os.Mkdir(d, 0o755)
		}
		if err != nil {
			cg.remove()
			return nil, fmt.Errorf("limits: making the run's cgroup: %w", err)
		}
		made[parent], cg.dirs[c] = d, d
	}
	l := lp.values
	var writes [][3]string // controller, file, value
	v2 := lp.v2 != ""
	if lp.cgroupUse("pids") {
		writes = append(writes, [3]string{"pids", "pids.max", strconv.FormatInt(l.Pids, 10)})
	}
	if lp.cgroupUse("memory") {
		if v2 {
			writes = append(writes, [3]string{"memory", "memory.max", strconv.FormatInt(l.Memory, 10)}, [3]string{"memory", "?memory.swap.max", "0"})
		} else {
			writes = append(writes, [3]string{"memory", "memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)}, [3]string{"memory", "?memory.memsw.limit_in_bytes", strconv.FormatInt(l.Memory, 10)})
		}
	}
	if lp.cgroupUse("cpus") {
		quota := max(1000, int64(l.CPUs*100000))
		if v2 {
			writes = append(writes, [3]string{"cpu", "cpu.max", fmt.Sprintf("%d 100000", quota)})
		} else {
			writes = append(writes, [3]string{"cpu", "cpu.cfs_period_us", "100000"}, [3]string{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)})
		}
	}
	for _, w := range writes {
		file, optional := strings.CutPrefix(w[1], "?")
		err := os.WriteFile(filepath.Join(cg.dir(w[0]), file), []byte(w[2]), 0)
		if err != nil && !(optional && errors.Is(err, os.ErrNotExist)) {
			cg.remove()
			return nil, fmt.Errorf("limits: setting %s to %s: %w", file, w[2], err)
		}
	}
	seen := map[string]bool{}
	for _, d := range cg.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			cg.remove()
			return nil, fmt.Errorf("limits: opening the run's cgroup: %w", err)
		}
		_ = f.Fd() // blocking: the first process writes it, not the poller
		cg.procs = append(cg.procs, f)
	}
	return cg, nil
}

// dir is the run's directory for controller c.
func (cg *cgroupRun) dir(c string) string {
	if d, ok := cg.dirs[""]; ok {
		return d
	}
	return cg.dirs[c]
}

// closeProcs closes the supervisor's cgroup.procs descriptors (the first
// process has its copies).
func (cg *cgroupRun) closeProcs() {
	if cg == nil {
		return
	}
	for _, f := range cg.procs {
		f.Close()
	}
	cg.procs = nil
}

// readInt reads the first number of file in controller c's directory, or
// the value after key on one of its lines.
func (cg *cgroupRun) readInt(c, file, key string) int64 {
	b, err := os.ReadFile(filepath.Join(cg.dir(c), file))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case key == "" && len(f) >= 1:
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n
		case len(f) >= 2 && f[0] == key:
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// cpuUsage is the CPU time the run's processes used.
func (cg *cgroupRun) cpuUsage() time.Duration {
	if cg.lp.v2 != "" {
		return time.Duration(cg.readInt("cpuacct", "cpu.stat", "usage_usec")) * time.Microsecond
	}
	return time.Duration(cg.readInt("cpuacct", "cpuacct.usage", ""))
}

// watchCPU polls the run's CPU time and, at --cpu-time, kills every
// process of the sandbox but its first (which then reports the command
// killed, and ends).
func (cg *cgroupRun) watchCPU(init int) {
	if cg == nil || !cg.lp.cgroupUse("cpuTime") {
		return
	}
	limit := cg.lp.values.CPUTime
	cg.stop, cg.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(cg.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-cg.stop:
				return
			case <-t.C:
			}
			if cg.cpuUsage() < limit {
				continue
			}
			cg.cpuHit = true
			for range 100 {
				b, _ := os.ReadFile(filepath.Join(cg.dir("cpuacct"), "cgroup.procs"))
				left := 0
				for _, s := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(s); err == nil && pid != init {
						_ = unix.Kill(pid, unix.SIGKILL)
						left++
					}
				}
				if left == 0 {
					return
				}
				time.Sleep(time.Millisecond)
			}
			return
		}
	}()
}

// endWatch stops watchCPU.
func (cg *cgroupRun) endWatch() {
	if cg != nil && cg.stop != nil {
		close(cg.stop)
		<-cg.done
		cg.stop = nil
	}
}

// remove removes the run's cgroup directories; the sandbox's processes
// must be gone (a cgroup whose last task is still exiting is busy for a
// moment: retried for up to a second).
func (cg *cgroupRun) remove() {
	if cg == nil {
		return
	}
	cg.closeProcs()
	seen := map[string]bool{}
	for _, d := range cg.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		for i := 0; i < 200; i++ {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) || !errors.Is(err, unix.EBUSY) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// sweepCgroups removes the empty cgroups of earlier runs whose
// supervisor is gone (killed before its end): sbx-PID with no process
// PID left.
func sweepCgroups(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "sbx-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(n)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			_ = unix.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

// procsFiles are the run's cgroup.procs descriptors (none without a
// cgroup).
func (cg *cgroupRun) procsFiles() []*os.File {
	if cg == nil {
		return nil
	}
	return cg.procs
}

// limitRecords are the records of the limits the run hit, as far as
// their mechanisms show it: the cgroup's event counters, the supervisor's
// CPU-time kill, the command's exit signal (SIGXCPU, SIGXFSZ, or the
// shell's 128+N for them), a full private tmpfs at the end (statfs, when
// ok). An rlimit's refused fork, allocation or open is the process's own
// business: not seen, the failure hint names it as a possible cause.
func limitRecords(lp *LimitPlan, cg *cgroupRun, ws unix.WaitStatus, exited, ok bool, st *unix.Statfs_t) []violations.Record {
	var out []violations.Record
	rec := func(name, source, detail string) {
		rule := "limit " + name // the plan names every limit it sets; never an empty rule
		if u, planned := lp.uses(name); planned {
			rule = u.Flag + " " + u.Value
		}
		out = append(out, violations.Record{Time: time.Now(), Kind: violations.KindLimit, Source: source,
			Rule: rule, Detail: detail})
	}
	sig := func(s unix.Signal) bool {
		return exited && (ws.Signaled() && ws.Signal() == s || ws.Exited() && ws.ExitStatus() == 128+int(s))
	}
	v2 := lp.v2 != ""
	if cg != nil && lp.cgroupUse("pids") {
		if n := cg.readInt("pids", "pids.events", "max"); n > 0 {
			rec("pids", "cgroup", fmt.Sprintf("forks refused at the process cap: pids.events max %d", n))
		}
	}
	if cg != nil && lp.cgroupUse("memory") {
		file := "memory.oom_control"
		if v2 {
			file = "memory.events"
		}
		if n := cg.readInt("memory", file, "oom_kill"); n > 0 {
			rec("memory", "cgroup", fmt.Sprintf("OOM kill at the memory limit: %s oom_kill %d", file, n))
		}
	}
	switch {
	case cg != nil && cg.cpuHit:
		rec("cpuTime", "supervisor", fmt.Sprintf("the sandbox's processes killed after %v of CPU time", cg.cpuUsage().Round(time.Millisecond)))
	case lp.values.CPUTime > 0 && sig(unix.SIGXCPU):
		rec("cpuTime", "rlimit", "the command ended by SIGXCPU (RLIMIT_CPU)")
	}
	if _, on := lp.uses("fileSize"); on && sig(unix.SIGXFSZ) {
		rec("fileSize", "rlimit", "the command ended by SIGXFSZ: a write beyond the file-size limit (RLIMIT_FSIZE)")
	}
	if _, on := lp.uses("tmpSize"); on && ok && st.Bsize > 0 && st.Blocks > 0 && uint64(st.Bfree)*uint64(st.Bsize) < 64<<10 {
		rec("tmpSize", "tmpfs", "ENOSPC: /tmp, /dev/shm and the discard overlays' tmpfs was full at the command's exit")
	}
	return out
}
