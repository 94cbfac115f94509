package policy

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{"512M": 512 << 20, "1G": 1 << 30, "1.5G": 3 << 29, "96m": 96 << 20,
		"2GiB": 2 << 30, "64KB": 64 << 10, "4096": 4096, "1T": 1 << 40}
	for s, want := range good {
		if n, err := ParseSize(s); err != nil || n != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"", "M", "-1M", "0", "1X", "1e9", "0x10", "NaN", "1i", "1KiBB", "9999999T", "1.5.2G"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) passed", s)
		}
	}
}

// TestLimitFlagsMalformed: each limit refuses what it cannot read with
// one line naming the flag.
func TestLimitFlagsMalformed(t *testing.T) {
	bad := map[string][]string{
		"memory":    {"lots", "1M", "-5G", "0"},
		"pids":      {"1", "0", "ten", "2.5", "-3"},
		"cpus":      {"0", "half", "-1", "Inf", "0.001"},
		"cpuTime":   {"1ms", "forever", "-1s"},
		"fileSize":  {"big", "0"},
		"openFiles": {"3", "many"},
		"tmpSize":   {"10K", "x"},
	}
	for name, vs := range bad {
		for _, v := range vs {
			_, err := ParseLimit(name, v)
			if err == nil || !strings.HasPrefix(err.Error(), LimitFlag[name]+" ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %q: %v", name, v, err)
			}
		}
	}
	l, err := ParseLimit("cpuTime", "1.5")
	if err != nil || l.CPUTime != 1500*time.Millisecond {
		t.Errorf("cpuTime 1.5: %v %v", l.CPUTime, err)
	}
	if l, err := ParseLimit("cpus", "0.5"); err != nil || l.CPUs != 0.5 {
		t.Errorf("cpus 0.5: %v %v", l.CPUs, err)
	}
}

// TestLimitsMerge: files, then flags; the managed layer caps both; the
// defaults fill the rest; a working tree's file may only lower.
func TestLimitsMerge(t *testing.T) {
	in := input(t)
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Pids != DefaultPids || p.Limits.TmpSize != DefaultTmpSize() || len(p.Limits.Asked) != 0 || p.Limits.Memory != 0 {
		t.Fatalf("defaults: %+v", p.Limits)
	}
	f := filepath.Join(t.TempDir(), "s.json")
	mustWrite(t, f, srtFile(`"limits": {"memory": "1G", "pids": 100, "cpus": 1.5, "cpuTime": "30s", "fileSize": 1048576, "openFiles": 64, "tmpSize": "64M"}`))
	in.Settings = []string{f}
	if p, err = Build(in); err != nil {
		t.Fatal(err)
	}
	g0 := p.Limits
	if g0.Memory != 1<<30 || g0.Pids != 100 || g0.CPUs != 1.5 || g0.CPUTime != 30*time.Second || g0.FileSize != 1<<20 || g0.OpenFiles != 64 || g0.TmpSize != 64<<20 || len(g0.Asked) != 7 {
		t.Fatalf("from the file: %+v", p.Limits)
	}
	// The flag wins over the file.
	in.Limits, _ = ParseLimit("memory", "512M")
	in.Limits.Asked = []string{"memory"}
	if p, err = Build(in); err != nil || p.Limits.Memory != 512<<20 || p.Limits.Pids != 100 {
		t.Fatalf("flag over file: %+v %v", p.Limits, err)
	}
	// A managed cap: below it passes, above it is refused, and it
	// applies where nothing else sets the limit.
	m := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, m, srtFile(`"limits": {"memory": "768M", "openFiles": 128}`))
	in.ManagedSettings = m
	if p, err = Build(in); err != nil || p.Limits.Memory != 512<<20 || p.Limits.OpenFiles != 64 {
		t.Fatalf("under the managed cap: %+v %v", p.Limits, err)
	}
	_, err = Build(in)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, srtFile(`"limits": {"memory": "256M", "cpuTime": "1m"}`))
	if _, err = Build(in); err == nil || !strings.Contains(err.Error(), "limits.memory 512M (from --memory) is above the managed settings' 256M") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("over the managed cap: %v", err)
	}
	in.Limits = Limits{}
	in.Settings = nil
	if p, err = Build(in); err != nil || p.Limits.Memory != 256<<20 || p.Limits.CPUTime != time.Minute || !p.Limits.IsAsked("memory") {
		t.Fatalf("the managed value alone: %+v %v", p.Limits, err)
	}
	in.ManagedSettings = ""
	// A file in the working tree may lower, not raise above a default.
	g := filepath.Join(in.Cwd, "sbx.json")
	mustWrite(t, g, srtFile(`"limits": {"pids": 50}`))
	in.Settings = []string{g}
	if p, err = Build(in); err != nil || p.Limits.Pids != 50 {
		t.Fatalf("tree file lowering: %+v %v", p.Limits, err)
	}
	mustWrite(t, g, srtFile(`"limits": {"pids": 100000}`))
	if _, err = Build(in); err == nil || !strings.Contains(err.Error(), "--trust-project-settings") {
		t.Fatalf("tree file raising: %v", err)
	}
	in.TrustProjectSettings = true
	if p, err = Build(in); err != nil || p.Limits.Pids != 100000 {
		t.Fatalf("trusted tree file raising: %+v %v", p.Limits, err)
	}
	// Malformed and unknown keys in a file: one line naming the key.
	for _, body := range []string{`"limits": {"memory": "lots"}`, `"limits": {"memroy": "1G"}`, `"limits": 5`, `"limits": {"pids": true}`} {
		mustWrite(t, f, srtFile(body))
		in.Settings = []string{f}
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "limits") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", body, err)
		}
	}
	// Claude Code's shape: under "sandbox".
	mustWrite(t, f, `{"sandbox": {"limits": {"pids": 77}}}`)
	if p, err = Build(in); err != nil || p.Limits.Pids != 77 {
		t.Errorf("sandbox.limits: %+v %v", p.Limits, err)
	}
}
