package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits bound what one run may take of the host: processes, memory,
// CPU, file sizes, descriptors and the private tmpfs mounts. They come
// from the settings' "limits" object (sbx's own key space; an srt file
// without it is unchanged) and the flags --memory, --pids, --cpus,
// --cpu-time, --file-size, --open-files and --tmp-size, the flags
// winning over the files. A managed layer's value is a cap: a value of
// another layer above it is refused (and the managed one applies where
// no other layer sets one). A zero value is "not bounded".
//
// Which mechanism enforces each limit (a cgroup, an rlimit, tmpfs
// size=) is the sandbox's choice at start (package sandbox); a limit the
// user asked for that the host cannot enforce is refused there, never
// dropped. Pids and TmpSize have defaults (DefaultPids,
// DefaultTmpSize), which protect the host and are applied where the host
// can; Asked names the limits the user set.
type Limits struct {
	Memory    int64         `json:"memory,omitempty"`    // bytes
	Pids      int64         `json:"pids,omitempty"`      // processes and threads
	CPUs      float64       `json:"cpus,omitempty"`      // CPUs' worth of time per wall second
	CPUTime   time.Duration `json:"cpuTime,omitempty"`   // CPU time, the whole sandbox's where a cgroup counts it
	FileSize  int64         `json:"fileSize,omitempty"`  // bytes, the largest file a process may write
	OpenFiles int64         `json:"openFiles,omitempty"` // descriptors per process
	TmpSize   int64         `json:"tmpSize,omitempty"`   // bytes, /tmp, /dev/shm and the discard overlays together
	// Asked are the limits set by a flag or a settings file, by their
	// settings names ("memory", "pids", …); the others are defaults.
	Asked []string `json:"asked,omitempty"`
}

// Limit names, as in the settings' "limits" object; LimitFlag maps each
// to its flag.
var (
	LimitNames = []string{"memory", "pids", "cpus", "cpuTime", "fileSize", "openFiles", "tmpSize"}
	LimitFlag  = map[string]string{"memory": "--memory", "pids": "--pids", "cpus": "--cpus",
		"cpuTime": "--cpu-time", "fileSize": "--file-size", "openFiles": "--open-files", "tmpSize": "--tmp-size"}
)

// DefaultPids is the process cap of a run that sets none: high enough
// for a parallel build and the runtimes (a JVM or a go test run with
// their threads, make -j), low enough that a fork bomb ends at it instead
// of at the caller's own limit across the host (docs/limits.md has the
// measurements).
const DefaultPids = 4096

// DefaultTmpSize is the size of the private tmpfs mounts of a run that
// sets none: an eighth of the RAM, at least 256 MiB and at most 4 GiB,
// for /tmp, /dev/shm and the discard overlays together (the kernel's
// default is half the RAM for each mount).
func DefaultTmpSize() int64 { return defaultTmpSize() }

var defaultTmpSize = sync.OnceValue(func() int64 {
	ram := physRAM()
	s := ram / 8
	if ram <= 0 {
		s = 1 << 30
	}
	return min(max(s, 256<<20), 4<<30) &^ (1<<20 - 1) // whole MiB
})

func physRAM() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// IsAsked says whether the user set limit name.
func (l *Limits) IsAsked(name string) bool {
	for _, a := range l.Asked {
		if a == name {
			return true
		}
	}
	return false
}

// Value is limit name's value as the user would write it ("512M",
// "40", "1.5", "30s"; "" when unset).
func (l *Limits) Value(name string) string {
	switch name {
	case "memory":
		return FormatSize(l.Memory)
	case "pids":
		return intString(l.Pids)
	case "cpus":
		if l.CPUs == 0 {
			return ""
		}
		return strconv.FormatFloat(l.CPUs, 'f', -1, 64)
	case "cpuTime":
		if l.CPUTime == 0 {
			return ""
		}
		return l.CPUTime.String()
	case "fileSize":
		return FormatSize(l.FileSize)
	case "openFiles":
		return intString(l.OpenFiles)
	case "tmpSize":
		return FormatSize(l.TmpSize)
	}
	return ""
}

func intString(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// FormatSize writes n bytes the way ParseSize reads them, in the largest
// binary unit that divides n ("512M", "1G"; "" for 0).
func FormatSize(n int64) string {
	if n == 0 {
		return ""
	}
	for _, u := range []struct {
		s string
		v int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseSize reads a size: a number of bytes with an optional binary unit
// K, M, G or T (also written k, KB, KiB, …), as Docker's --memory does.
// Fractions are accepted with a unit ("1.5G").
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.ToUpper(t[len(num):])
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	mult, ok := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
	if !ok || t[len(num):] == "i" {
		mult = 0
	}
	f, err := strconv.ParseFloat(num, 64)
	if mult == 0 || err != nil || num == "" || strings.ContainsAny(num, "eExXpP_") || math.IsNaN(f) || f <= 0 || f*mult > 1<<62 {
		return 0, fmt.Errorf("%q is not a size; use a positive number with K, M, G or T, e.g. 512M or 2G", s)
	}
	return int64(math.Ceil(f * mult)), nil
}

// ParseLimit reads the value of limit name as a flag gives it.
func ParseLimit(name, s string) (Limits, error) {
	var l Limits
	err := l.set(name, s)
	return l, err
}

// Minimums below which a run cannot even start its sandbox.
const (
	minMemory  = 8 << 20
	minTmpSize = 1 << 20
	minPids    = 2 // the sandbox's init and the command
	minFiles   = 16
)

// set parses s as limit name into l, with the one-line error.
func (l *Limits) set(name, s string) error {
	bad := func(why string) error {
		return fmt.Errorf("%s %q: %s", LimitFlag[name], s, why)
	}
	size := func(dst *int64, least int64) error {
		n, err := ParseSize(s)
		if err != nil {
			return bad("not a size; use a positive number with K, M, G or T, e.g. 512M or 2G")
		}
		if n < least {
			return bad(fmt.Sprintf("below the least a sandbox needs (%s)", FormatSize(least)))
		}
		*dst = n
		return nil
	}
	count := func(dst *int64, least int64) error {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n <= 0 {
			return bad("not a positive whole number")
		}
		if n < least {
			return bad(fmt.Sprintf("below the least a sandbox needs (%d)", least))
		}
		if n > 1<<30 {
			return bad("too large")
		}
		*dst = n
		return nil
	}
	switch name {
	case "memory":
		return size(&l.Memory, minMemory)
	case "tmpSize":
		return size(&l.TmpSize, minTmpSize)
	case "fileSize":
		return size(&l.FileSize, 1)
	case "pids":
		return count(&l.Pids, minPids)
	case "openFiles":
		return count(&l.OpenFiles, minFiles)
	case "cpus":
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0.01 || f > 4096 {
			return bad("not a number of CPUs from 0.01 up, e.g. 0.5 or 2")
		}
		l.CPUs = f
		return nil
	case "cpuTime":
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			if n, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil && n > 0 && n < 1e9 {
				d, err = time.Duration(n*float64(time.Second)), nil
			}
		}
		if err != nil || d < 10*time.Millisecond {
			return bad("not a duration of 10ms or more; use e.g. 30s, 5m")
		}
		l.CPUTime = d
		return nil
	}
	return fmt.Errorf("internal: unknown limit %q", name)
}

// IsSet reports whether limit name has a value (asked or defaulted).
func (l *Limits) IsSet(name string) bool { return l.get(name) > 0 }

// get is limit name's value as a number, for the comparisons of merge.
func (l *Limits) get(name string) float64 {
	switch name {
	case "memory":
		return float64(l.Memory)
	case "pids":
		return float64(l.Pids)
	case "cpus":
		return l.CPUs
	case "cpuTime":
		return float64(l.CPUTime)
	case "fileSize":
		return float64(l.FileSize)
	case "openFiles":
		return float64(l.OpenFiles)
	case "tmpSize":
		return float64(l.TmpSize)
	}
	return 0
}

// CopyFrom sets limit name of l from o.
func (l *Limits) CopyFrom(o *Limits, name string) {
	switch name {
	case "memory":
		l.Memory = o.Memory
	case "pids":
		l.Pids = o.Pids
	case "cpus":
		l.CPUs = o.CPUs
	case "cpuTime":
		l.CPUTime = o.CPUTime
	case "fileSize":
		l.FileSize = o.FileSize
	case "openFiles":
		l.OpenFiles = o.OpenFiles
	case "tmpSize":
		l.TmpSize = o.TmpSize
	}
}

// parseLimits reads one file's "limits" object: sizes as strings ("512M")
// or numbers of bytes, counts as numbers, cpuTime as a duration string
// ("30s") or a number of seconds.
func parseLimits(file, shown string, raw json.RawMessage) (*Limits, error) {
	var obj map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil || obj == nil {
		return nil, &SettingsError{File: file, Key: shown, Problem: "must be an object of memory, pids, cpus, cpuTime, fileSize, openFiles, tmpSize"}
	}
	out := &Limits{}
	for _, name := range LimitNames {
		v, ok := obj[name]
		if !ok {
			continue
		}
		delete(obj, name)
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return nil, &SettingsError{File: file, Key: shown + "." + name, Problem: "must be a number or a string"}
			}
			s = n.String()
		}
		if err := out.set(name, s); err != nil {
			_, why, _ := strings.Cut(err.Error(), ": ")
			return nil, &SettingsError{File: file, Key: shown + "." + name, Problem: fmt.Sprintf("%s: %s", s, why)}
		}
		out.Asked = append(out.Asked, name)
	}
	for k := range obj {
		return nil, &SettingsError{File: file, Key: shown + "." + k, Problem: "unknown limit; the limits are memory, pids, cpus, cpuTime, fileSize, openFiles, tmpSize (docs/limits.md)"}
	}
	return out, nil
}

// mergeLimits fills p.Limits: the settings files' values in order, then
// the flags', capped by the managed layer's; then the defaults. A file
// in the working tree the user has not trusted may lower a limit, not
// raise one above the default.
func mergeLimits(layers []*layer, flags Limits, p *Policy) error {
	var out Limits
	from := map[string]string{}
	var managed []*layer
	for _, l := range layers {
		if l.limits == nil {
			continue
		}
		if l.managed {
			managed = append(managed, l)
			continue
		}
		for _, name := range l.limits.Asked {
			if l.repo && !l.trusted {
				if def := defaultLimit(name); def > 0 && l.limits.get(name) > def {
					return &SettingsError{File: l.file, Key: "limits." + name, Problem: fmt.Sprintf("%s is above the default %s; a settings file in the working tree may lower a limit, not raise it (trust it with --trust-project-settings, or pass %s)", l.limits.Value(name), defaultValue(name), LimitFlag[name])}
				}
			}
			out.CopyFrom(l.limits, name)
			from[name] = "settings " + l.file
		}
	}
	for _, name := range flags.Asked {
		out.CopyFrom(&flags, name)
		from[name] = LimitFlag[name]
	}
	for _, ml := range managed {
		for _, name := range ml.limits.Asked {
			cap := ml.limits.get(name)
			if v := out.get(name); v > cap {
				return fmt.Errorf("%s %s (from %s) is above the managed settings' %s (%s); use at most that", "limits."+name, out.Value(name), from[name], ml.limits.Value(name), ml.file)
			} else if v == 0 {
				out.CopyFrom(ml.limits, name)
				from[name] = "managed settings " + ml.file
			}
		}
	}
	for _, name := range LimitNames {
		if from[name] != "" {
			out.Asked = append(out.Asked, name)
		}
	}
	if out.Pids == 0 {
		out.Pids = DefaultPids
	}
	if out.TmpSize == 0 {
		out.TmpSize = DefaultTmpSize()
	}
	p.Limits = out
	return nil
}

func defaultLimit(name string) float64 {
	switch name {
	case "pids":
		return DefaultPids
	case "tmpSize":
		return float64(DefaultTmpSize())
	}
	return 0
}

func defaultValue(name string) string {
	if name == "pids" {
		return strconv.Itoa(DefaultPids)
	}
	return FormatSize(DefaultTmpSize())
}

func init() {
	Keys["limits"] = "honoured (sbx's own): memory, pids, cpus, cpuTime, fileSize, openFiles, tmpSize: what the run may take of the host (docs/limits.md)"
}
