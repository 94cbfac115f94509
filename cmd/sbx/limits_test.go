//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/violations"
)

// The limit tests run bounded payloads: were a limit not enforced, each
// would still end on its own (120 sleeping children, 400 MB, a busy loop
// under --timeout, 3 MB and 40 MB written) well inside the machine.
// Whether a limit's hit is recorded depends on its mechanism here (a
// cgroup's counters, an exit signal, the tmpfs; an rlimit's refused fork
// or allocation is the process's own business): each test reads the
// mechanism from --dry-run and asserts the record where the mechanism
// sees the hit, and the failure hint's "may have hit" where it does not.

// limitMechanism is the mechanism --dry-run names for limit name under
// flags.
func limitMechanism(t *testing.T, name string, flags ...string) string {
	t.Helper()
	r := sbx(t, runOpts{}, append(append([]string{"--dry-run"}, flags...), "--", "/bin/true")...)
	wantCode(t, r, 0)
	var out struct {
		Plan struct {
			Limits struct {
				Cgroup string `json:"cgroup"`
				Limits []struct {
					Name, Mechanism string
				} `json:"limits"`
			} `json:"limits"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, l := range out.Plan.Limits.Limits {
		if l.Name == name {
			t.Logf("%s: %s (cgroup %q)", name, l.Mechanism, out.Plan.Limits.Cgroup)
			return l.Mechanism
		}
	}
	t.Fatalf("--dry-run names no mechanism for %s: %s", name, r.stdout)
	return ""
}

// limitRecords runs script under sbx with flags and a --violations file,
// and returns the result and the limit records.
func limitRun(t *testing.T, script string, flags ...string) (result, []violations.Record) {
	t.Helper()
	vf := filepath.Join(t.TempDir(), "v.jsonl")
	r := sh(t, runOpts{}, script, append([]string{"--timeout", "30s", "--violations", vf}, flags...)...)
	var recs []violations.Record
	for _, rec := range readRecords(t, vf) {
		if rec.Kind == violations.KindLimit {
			recs = append(recs, rec)
		}
	}
	return r, recs
}

// wantLimitSeen: the hit of limit rule ("--pids 40") is recorded (one
// record of kind limit naming it, and the hint names it) when seen, else
// the hint names it as a possible cause.
func wantLimitSeen(t *testing.T, r result, recs []violations.Record, rule string, seen bool) {
	t.Helper()
	flag, _, _ := strings.Cut(rule, " ")
	if seen {
		if len(recs) != 1 || recs[0].Rule != rule || recs[0].Detail == "" || recs[0].Source == "" {
			t.Fatalf("want one limit record for %s, got %+v\n%s", rule, recs, r)
		}
		if r.code != 0 && !strings.Contains(r.stderr, "it hit "+rule) || r.code != 0 && !strings.Contains(r.stderr, "raise it with "+flag) {
			t.Errorf("the hint does not name %s: %s", rule, r)
		}
		return
	}
	if !strings.Contains(r.stderr, "may have hit "+rule) {
		t.Errorf("the hint does not name %s as a possible cause: %s", rule, r)
	}
}

func TestLimitPidsForkLoop(t *testing.T) {
	mech := limitMechanism(t, "pids", "--pids", "40")
	// 120 children that sleep, forked as fast as possible; the loop
	// stops at the first refused fork and exits 3.
	r, recs := limitRun(t, `exec /usr/bin/python3 -c '
import os, sys, time
n = 0
for i in range(120):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused after", n, e.errno)
        sys.exit(3)
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print("forked", n)
'`, "--pids", "40")
	wantCode(t, r, 3)
	m := regexp.MustCompile(`refused after (\d+) 11`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no refused fork: %s", r)
	}
	if n, _ := strconv.Atoi(m[1]); n > 40 || n < 20 {
		t.Errorf("%d children before the refusal under --pids 40", n)
	}
	wantLimitSeen(t, r, recs, "--pids 40", strings.HasPrefix(mech, "cgroup"))
}

func TestLimitMemory(t *testing.T) {
	mech := limitMechanism(t, "memory", "--memory", "96M")
	// 400 MB allocated and touched (bytearray writes every page).
	r, recs := limitRun(t, `exec /usr/bin/python3 -c '
b = bytearray(400 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
print("touched", len(b))
'`, "--memory", "96M")
	if strings.Contains(r.stdout, "touched") || r.code == 0 {
		t.Fatalf("400 MB touched under --memory 96M: %s", r)
	}
	if strings.HasPrefix(mech, "cgroup") {
		wantCode(t, r, 137) // the OOM killer's SIGKILL, as the command's status
	}
	wantLimitSeen(t, r, recs, "--memory 96M", strings.HasPrefix(mech, "cgroup"))
}

func TestLimitCPUTime(t *testing.T) {
	limitMechanism(t, "cpuTime", "--cpu-time", "1s")
	r, recs := limitRun(t, `while :; do :; done`, "--cpu-time", "1s")
	if r.code == 124 || r.code == 0 {
		t.Fatalf("the busy loop was not stopped by --cpu-time 1s: %s", r)
	}
	wantLimitSeen(t, r, recs, "--cpu-time 1s", true)
}

func TestLimitFileSize(t *testing.T) {
	limitMechanism(t, "fileSize", "--file-size", "1M")
	r, recs := limitRun(t, `exec dd if=/dev/zero of=/tmp/f bs=64k count=48`, "--file-size", "1M")
	if r.code == 0 {
		t.Fatalf("3 MB written under --file-size 1M: %s", r)
	}
	wantLimitSeen(t, r, recs, "--file-size 1M", true)
}

func TestLimitTmpSize(t *testing.T) {
	limitMechanism(t, "tmpSize", "--tmp-size", "16M")
	// 40 MB into /tmp, then 40 MB into /dev/shm: together they hold 16M.
	r, recs := limitRun(t, `dd if=/dev/zero of=/tmp/f bs=1M count=40 2>/dev/null; dd if=/dev/zero of=/dev/shm/f bs=1M count=40 2>/dev/null
echo used $(du -sk /tmp/f /dev/shm/f | awk '{s+=$1} END {print s}')
exit 1`, "--tmp-size", "16M")
	wantCode(t, r, 1)
	m := regexp.MustCompile(`used (\d+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no usage: %s", r)
	}
	if kb, _ := strconv.Atoi(m[1]); kb > 16<<10 || kb < 8<<10 {
		t.Errorf("%d KiB in /tmp and /dev/shm together under --tmp-size 16M", kb)
	}
	wantLimitSeen(t, r, recs, "--tmp-size 16M", true)
}

// TestLimitsFailOnViolation: a limit's record counts for
// --fail-on-violation, and the command's own status stays otherwise.
func TestLimitsFailOnViolation(t *testing.T) {
	r, recs := limitRun(t, `dd if=/dev/zero of=/tmp/f bs=1M count=4 2>/dev/null; exit 0`, "--tmp-size", "2M", "--fail-on-violation")
	wantCode(t, r, ExitViolation)
	if len(recs) != 1 {
		t.Fatalf("records: %+v", recs)
	}
	r, _ = limitRun(t, `dd if=/dev/zero of=/tmp/f bs=1M count=1 2>/dev/null; exit 0`, "--tmp-size", "2M", "--fail-on-violation")
	wantCode(t, r, 0)
}

// TestLimitsMalformed: a malformed or unenforceable limit is exit 125,
// one line, nothing run.
func TestLimitsMalformed(t *testing.T) {
	wantRefused(t, []string{"--memory", "lots"}, []string{"--pids", "0"}, []string{"--cpus", "-1"},
		[]string{"--cpu-time", "soon"}, []string{"--file-size", "1Q"}, []string{"--open-files", "x"},
		[]string{"--tmp-size", "0"}, []string{"--weaker-nested", "--memory", "1G"})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s.json"), `{"network": {}, "filesystem": {}, "limits": {"memory": "much"}}`)
	wantRefused(t, []string{"--settings", filepath.Join(dir, "s.json")})
	writeFile(t, filepath.Join(dir, "m.json"), `{"network": {}, "filesystem": {}, "limits": {"pids": 100}}`)
	wantRefused(t, []string{"--managed-settings", filepath.Join(dir, "m.json"), "--pids", "200"})
	r := sbx(t, runOpts{}, "--dry-run", "--cpus", "1", "--", "/bin/true")
	if r.code == 125 {
		// No cpu controller here: the run is refused too, naming it.
		wantRefused(t, []string{"--cpus", "1"})
		if !strings.Contains(r.stderr, "--cpus 1: cannot be enforced here") {
			t.Errorf("refusal does not name the limit: %s", r)
		}
	}
}

// TestLimitsDefaultsAllowWork: under the default limits a parallel
// build's worth of processes starts, and /tmp takes 100 MB.
func TestLimitsDefaultsAllowWork(t *testing.T) {
	r := sh(t, runOpts{}, `/usr/bin/python3 -c '
import os, sys, time
kids = []
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused after", len(kids))
        sys.exit(3)
    if pid == 0:
        time.sleep(1)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
' && dd if=/dev/zero of=/tmp/f bs=1M count=100 2>/dev/null && echo ok`, "--timeout", "30s")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "ok") {
		t.Fatalf("%s", r)
	}
}

// TestLimitsCgroupRemoved: the run's cgroup is gone after the run, also
// after a killed supervisor (the next run sweeps it).
func TestLimitsCgroupRemoved(t *testing.T) {
	r := sbx(t, runOpts{}, "--dry-run", "--", "/bin/true")
	if !strings.Contains(r.stdout, `"cgroup": "v1"`) && !strings.Contains(r.stdout, `"cgroup": "v2 `) {
		t.Skip("no cgroup used here")
	}
	parents := cgroupParents(t)
	before := sbxCgroups(parents)
	wantCode(t, sbx(t, runOpts{}, "--", "/bin/true"), 0)
	if got := sbxCgroups(parents); len(got) > len(before) {
		t.Fatalf("cgroups left: %v", got)
	}
	// A supervisor killed mid-run leaves its (empty) cgroup; the next
	// run removes it.
	cmd := exec.Command(sbxBin, "--", "/bin/sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("sbx-%d", cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for !slices.ContainsFunc(sbxCgroups(parents), func(d string) bool { return filepath.Base(d) == name }) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no cgroup %s appeared", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(200 * time.Millisecond) // the sandbox ends on its lifeline
	wantCode(t, sbx(t, runOpts{}, "--", "/bin/true"), 0)
	if got := sbxCgroups(parents); slices.ContainsFunc(got, func(d string) bool { return filepath.Base(d) == name }) {
		t.Fatalf("the killed run's cgroup was not swept: %v", got)
	}
}

// cgroupParents are the directories under which sbx makes a run's
// cgroup: this process's own cgroups (the test and sbx share them).
func cgroupParents(t *testing.T) []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" || c == "memory" {
				out = append(out, filepath.Join("/sys/fs/cgroup", c, f[2]))
			}
		}
		if f[0] == "0" {
			for d := filepath.Join("/sys/fs/cgroup", f[2]); strings.HasPrefix(d, "/sys/fs/cgroup"); d = filepath.Dir(d) {
				out = append(out, d, filepath.Join("/sys/fs/cgroup/unified", strings.TrimPrefix(d, "/sys/fs/cgroup")))
			}
		}
	}
	return out
}

func sbxCgroups(parents []string) []string {
	var out []string
	for _, p := range parents {
		m, _ := filepath.Glob(filepath.Join(p, "sbx-*"))
		out = append(out, m...)
	}
	return out
}

// TestLimitsCannotBeRaised: the command cannot lift its limits: the
// rlimits are hard (raising needs CAP_SYS_RESOURCE in the host's user
// namespace), and the cgroup files are on the read-only view (moving
// itself out of the run's cgroup, or raising pids.max, fails).
func TestLimitsCannotBeRaised(t *testing.T) {
	r := sh(t, runOpts{}, `exec /usr/bin/python3 -c '
import resource, os, glob
for res, name, want in ((resource.RLIMIT_NOFILE, "nofile", 64), (resource.RLIMIT_FSIZE, "fsize", 1 << 20), (resource.RLIMIT_CPU, "cpu", 10)):
    soft, hard = resource.getrlimit(res)
    if soft != want or hard > want + 1:
        print("raised", name, soft, hard)
    try:
        resource.setrlimit(res, (2 * want + 2, 2 * want + 2))
        print("raised", name)
    except (ValueError, OSError):
        pass
for f in glob.glob("/sys/fs/cgroup/*/cgroup.procs") + glob.glob("/sys/fs/cgroup/*/sbx-*/pids.max") + glob.glob("/sys/fs/cgroup/*/cgroup.procs"):
    try:
        with open(f, "w") as fh:
            fh.write(str(os.getpid()) if f.endswith("procs") else "max")
        print("wrote", f)
    except OSError:
        pass
print("done")
'`, "--timeout", "30s", "--open-files", "64", "--file-size", "1M", "--cpu-time", "10s", "--pids", "100")
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "raised") || strings.Contains(r.stdout, "wrote") || !strings.Contains(r.stdout, "done") {
		t.Fatalf("a limit was lifted from inside: %s", r)
	}
}

// TestLimitTmpSizeCoversDiscard: the discard overlays' upper layers are
// on the same bounded tmpfs as /tmp: writes into a discard region stop at
// --tmp-size too, and what they took leaves /tmp less.
func TestLimitTmpSizeCoversDiscard(t *testing.T) {
	dir := hostTempDir(t)
	r, recs := limitRun(t, `dd if=/dev/zero of=`+dir+`/f bs=1M count=40 2>/dev/null
dd if=/dev/zero of=/tmp/g bs=1M count=40 2>/dev/null
echo used $(du -sk `+dir+`/f /tmp/g | awk '{s+=$1} END {print s}')
exit 1`, "--tmp-size", "16M", "--discard-writes", dir)
	wantCode(t, r, 1)
	m := regexp.MustCompile(`used (\d+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no usage: %s", r)
	}
	if kb, _ := strconv.Atoi(m[1]); kb > 16<<10 {
		t.Errorf("%d KiB in a discard region and /tmp together under --tmp-size 16M", kb)
	}
	wantLimitSeen(t, r, recs, "--tmp-size 16M", true)
	if _, err := os.Stat(filepath.Join(dir, "f")); err == nil {
		t.Errorf("the discarded file reached the host")
	}
}
