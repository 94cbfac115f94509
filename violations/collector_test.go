package violations

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memSink keeps what it is given.
type memSink struct {
	mu     sync.Mutex
	recs   []Record
	closed int
	err    error // returned by Write
}

func (m *memSink) Write(r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	return m.err
}

func (m *memSink) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed++
	return nil
}

func (m *memSink) records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.recs...)
}

// gateSink blocks every Write until open is closed: a deliberately slow sink.
type gateSink struct {
	open   chan struct{}
	writes atomic.Int64
}

func newGateSink() *gateSink { return &gateSink{open: make(chan struct{})} }

func (g *gateSink) Write(Record) error {
	<-g.open
	g.writes.Add(1)
	return nil
}

func (g *gateSink) Close() error { return nil }

var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

func TestAddFills(t *testing.T) {
	m := &memSink{}
	c := New(Options{Command: "npm test", Sinks: []Sink{m}, Now: func() time.Time { return fixedNow }})
	c.Add(Record{Kind: KindNetwork, Source: SourceProxy, Host: "evil.example", Port: 443})
	c.Add(Record{Time: time.Date(2025, 3, 1, 13, 0, 0, 5, time.FixedZone("X", 3600)), Kind: KindSignal, Action: "audit", Source: SourceLandlock, Command: "own\ncommand"})
	c.Add(Record{})
	s := c.Close()
	got := m.records()
	if len(got) != 3 || s.Total != 3 || m.closed != 1 {
		t.Fatalf("got %d records, total %d, closed %d", len(got), s.Total, m.closed)
	}
	want := []Record{
		{Time: fixedNow, Kind: KindNetwork, Action: ActionDeny, Source: SourceProxy, Command: "npm test", Host: "evil.example", Port: 443},
		{Time: time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC), Kind: KindSignal, Action: "audit", Source: SourceLandlock, Command: "own\uFFFDcommand"},
		{Time: fixedNow, Kind: Unknown, Action: ActionDeny, Source: Unknown, Command: "npm test"},
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) || got[i].Time.Location() != time.UTC {
			t.Errorf("%d: time %v, want %v UTC", i, got[i].Time, want[i].Time)
		}
		got[i].Time, want[i].Time = time.Time{}, time.Time{}
		if got[i] != want[i] {
			t.Errorf("%d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestCommandTruncated(t *testing.T) {
	tests := []struct {
		name, cmd, want string
	}{
		{"short", "go test ./...", "go test ./..."},
		{"exactly 256", strings.Repeat("x", 256), strings.Repeat("x", 256)},
		{"257", strings.Repeat("x", 257), strings.Repeat("x", 253) + Ellipsis},
		{"multibyte boundary", strings.Repeat("é", 200), strings.Repeat("é", 126) + Ellipsis},
		{"control chars", "sh -c 'echo\x1b[2J'", "sh -c 'echo\uFFFD[2J'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &memSink{}
			c := New(Options{Command: tt.cmd, Sinks: []Sink{m}})
			c.Add(Record{Kind: KindFileRead, Source: SourceObserver, Path: "/x"})
			c.Close()
			got := m.records()[0].Command
			if got != tt.want {
				t.Errorf("command %q (%d bytes), want %q", got, len(got), tt.want)
			}
			if len(got) > MaxCommand {
				t.Errorf("%d bytes > %d", len(got), MaxCommand)
			}
		})
	}
}

func TestFieldsCapped(t *testing.T) {
	m := &memSink{}
	c := New(Options{Sinks: []Sink{m}})
	long := strings.Repeat("/très-long", 1000)
	c.Add(Record{Kind: KindFileWrite, Source: SourceSeccomp, Path: long, Resolved: long, Exe: long, Detail: long, Rule: long, Host: long, Syscall: long})
	c.Close()
	r := m.records()[0]
	for _, f := range []string{r.Path, r.Resolved, r.Exe, r.Detail, r.Rule, r.Host, r.Syscall} {
		if len(f) > MaxField || !strings.HasSuffix(f, Ellipsis) || !strings.HasPrefix(long, strings.TrimSuffix(f, Ellipsis)) {
			t.Fatalf("field of %d bytes not capped properly: ...%q", len(f), f[len(f)-20:])
		}
	}
}

func TestIgnore(t *testing.T) {
	ignore := map[string][]string{
		"*":     {"/tmp/cache", ".npm/_logs"},
		"npm":   {"registry.npmjs.org"},
		"cargo": {"/home"},
		"make":  {""},
	}
	tests := []struct {
		name    string
		command string // Options.Command
		r       Record
		ignored bool
	}{
		{"star path", "npm test", Record{Kind: KindFileWrite, Path: "/tmp/cache/x"}, true},
		{"star other command", "go build", Record{Kind: KindFileRead, Path: "/home/u/.npm/_logs/1.log"}, true},
		{"star resolved", "go build", Record{Kind: KindFileWrite, Path: "./c/x", Resolved: "/tmp/cache/x"}, true},
		{"path matches but resolved does not", "go build", Record{Kind: KindFileWrite, Path: "/tmp/cache/../../home/u/.bashrc", Resolved: "/home/u/.bashrc"}, false},
		{"star no match", "go build", Record{Kind: KindFileWrite, Path: "/etc/passwd"}, false},
		{"command host", "npm install", Record{Kind: KindNetwork, Host: "registry.npmjs.org", Port: 443}, true},
		{"command substring anywhere", "/usr/bin/npm ci", Record{Kind: KindNetwork, Host: "registry.npmjs.org"}, true},
		{"other command host", "pip install", Record{Kind: KindNetwork, Host: "registry.npmjs.org"}, false},
		{"command not matching", "npm test", Record{Kind: KindFileRead, Path: "/home/u/.ssh/id"}, false},
		{"record's own command", "npm test", Record{Kind: KindFileRead, Path: "/home/u/x", Command: "cargo build"}, true},
		{"record's own command overrides", "cargo build", Record{Kind: KindFileRead, Path: "/home/u/x", Command: "npm test"}, false},
		{"no path no host", "npm test", Record{Kind: KindSyscall, Syscall: "ptrace"}, false},
		{"empty value ignores all for command", "make all", Record{Kind: KindSyscall, Syscall: "ptrace"}, true},
		{"control char does not collapse", "go build", Record{Kind: KindFileWrite, Path: "/tmp/ca\x01che/x"}, false},
		{"key in untruncated command", strings.Repeat("a", 300) + " cargo", Record{Kind: KindFileRead, Path: "/home/x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &memSink{}
			c := New(Options{Command: tt.command, Ignore: ignore, Sinks: []Sink{m}})
			c.Add(tt.r)
			s := c.Close()
			want := Summary{Total: 1}
			if tt.ignored {
				want = Summary{Ignored: 1}
			}
			if s.Total != want.Total || s.Ignored != want.Ignored || s.Dropped != 0 || len(m.records()) != want.Total {
				t.Errorf("total %d ignored %d dropped %d written %d; want ignored=%v", s.Total, s.Ignored, s.Dropped, len(m.records()), tt.ignored)
			}
		})
	}
}

func TestSummaryCounts(t *testing.T) {
	c := New(Options{Keep: 2})
	for i := range 3 {
		c.Add(Record{Kind: KindFileWrite, Path: fmt.Sprint("/w", i)})
	}
	c.Add(Record{Kind: KindNetwork, Host: "h"})
	s := c.Close()
	if s.Total != 4 || s.ByKind[KindFileWrite] != 3 || s.ByKind[KindNetwork] != 1 || len(s.ByKind) != 2 {
		t.Errorf("summary %+v", s)
	}
	if len(s.First) != 2 || s.First[0].Path != "/w0" || s.First[1].Path != "/w1" {
		t.Errorf("first %+v", s.First)
	}
	// Close is idempotent and returns copies.
	s.ByKind["x"] = 9
	s.First[0].Path = "changed"
	s2 := c.Close()
	if s2.ByKind["x"] != 0 || s2.First[0].Path != "/w0" {
		t.Errorf("second Close saw caller's changes: %+v", s2)
	}
	// Add after Close is dropped, not written, and does not block.
	c.Add(Record{Kind: KindFileRead})
	if c.dropped.Load() != 1 {
		t.Errorf("add after close: dropped %d", c.dropped.Load())
	}
}

func TestKeepNegativeAndKindCap(t *testing.T) {
	c := New(Options{Keep: -1})
	for i := range MaxKinds + 10 {
		c.Add(Record{Kind: fmt.Sprint("k", i)})
	}
	s := c.Close()
	if len(s.First) != 0 {
		t.Errorf("kept %d", len(s.First))
	}
	if len(s.ByKind) != MaxKinds+1 || s.ByKind["other"] != 10 {
		t.Errorf("%d kinds, other=%d", len(s.ByKind), s.ByKind["other"])
	}
}

func TestNilCollector(t *testing.T) {
	var c *Collector
	c.Add(Record{Kind: KindFileRead})
	if s := c.Close(); s.Total != 0 || s.ByKind == nil {
		t.Errorf("%+v", s)
	}
}

func TestSinkErrors(t *testing.T) {
	bad := &memSink{err: errors.New("disk full")}
	good := &memSink{}
	c := New(Options{Sinks: []Sink{bad, good}})
	for range 3 {
		c.Add(Record{Kind: KindFileRead})
	}
	s := c.Close()
	if s.SinkErr == nil || !strings.Contains(s.SinkErr.Error(), "disk full") {
		t.Errorf("SinkErr %v", s.SinkErr)
	}
	if n := len(bad.records()); n != 1 {
		t.Errorf("failed sink written %d times after its error", n)
	}
	if n := len(good.records()); n != 3 || s.Total != 3 {
		t.Errorf("good sink %d, total %d", n, s.Total)
	}
}

func TestCloseTimeout(t *testing.T) {
	g := newGateSink()
	defer close(g.open)
	c := New(Options{Sinks: []Sink{g}, Queue: 10, CloseTimeout: 50 * time.Millisecond})
	for range 5 {
		c.Add(Record{Kind: KindFileWrite})
	}
	start := time.Now()
	s := c.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	if s.SinkErr == nil || !strings.Contains(s.SinkErr.Error(), "did not drain") {
		t.Errorf("SinkErr %v", s.SinkErr)
	}
	if s.Total+s.Dropped != 5 || s.Dropped < 4 {
		t.Errorf("total %d dropped %d", s.Total, s.Dropped)
	}
}

var longHostile = strings.Repeat("\x1b[31m\u202e", 2000)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFloodBoundedMemory: 100k denials against a sink that does not move
// keep the heap bounded and are all accounted for.
func TestFloodBoundedMemory(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		path  func(i int) string
		limit uint64
	}{
		{"short paths", 100_000, func(i int) string { return fmt.Sprintf("/home/u/flood/%d", i) }, 4 << 20},
		// Each path sanitises to a fresh MaxField-byte string: the byte
		// bound, not the record count, limits the queue.
		{"long hostile paths", 20_000, func(int) string { return longHostile }, 6 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateSink()
			before := heapAlloc()
			c := New(Options{Command: "sh -c flood", Sinks: []Sink{g}})
			for i := range tt.n {
				c.Add(Record{Kind: KindFileWrite, Source: SourceSeccomp, Path: tt.path(i), PID: i})
			}
			during := heapAlloc()
			growth := int64(during) - int64(before)
			t.Logf("heap growth with the queue full: %d KiB", growth/1024)
			if growth > int64(tt.limit) {
				t.Errorf("heap grew %d bytes, limit %d", growth, tt.limit)
			}
			close(g.open)
			s := c.Close()
			if s.Dropped == 0 {
				t.Error("nothing dropped")
			}
			if s.Total+s.Dropped != tt.n {
				t.Errorf("total %d + dropped %d != %d", s.Total, s.Dropped, tt.n)
			}
			if int(g.writes.Load()) != s.Total {
				t.Errorf("sink saw %d, total %d", g.writes.Load(), s.Total)
			}
			if c.pending.Load() != 0 {
				t.Errorf("pending bytes %d after close", c.pending.Load())
			}
			var b bytes.Buffer
			s.WriteText(&b, "text")
			if !strings.Contains(b.String(), fmt.Sprintf("sbx: %d more not recorded (queue full)\n", s.Dropped)) {
				t.Errorf("summary does not report drops:\n%s", b.String())
			}
		})
	}
}

// TestConcurrentAdd is meant for -race: many writers, a slow-ish sink, and
// Close racing the last Adds.
func TestConcurrentAdd(t *testing.T) {
	const writers, each = 8, 5000
	m := &memSink{}
	c := New(Options{Command: "x", Queue: 256, Sinks: []Sink{m}, Ignore: map[string][]string{"*": {"/ignored"}}})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := "/kept"
				if i%10 == 0 {
					p = "/ignored"
				}
				c.Add(Record{Kind: fmt.Sprint("k", w%3), Path: p, PID: i})
			}
		}()
	}
	wg.Wait()
	s := c.Close()
	if s.Total+s.Dropped+s.Ignored != writers*each {
		t.Errorf("total %d + dropped %d + ignored %d != %d", s.Total, s.Dropped, s.Ignored, writers*each)
	}
	if s.Ignored != writers*each/10 {
		t.Errorf("ignored %d", s.Ignored)
	}
	if len(m.records()) != s.Total {
		t.Errorf("sink %d, total %d", len(m.records()), s.Total)
	}
	sum := 0
	for _, n := range s.ByKind {
		sum += n
	}
	if sum != s.Total {
		t.Errorf("by kind sums to %d, total %d", sum, s.Total)
	}

	// Close while Adds are running: no panic, no race, nothing counted twice.
	c2 := New(Options{Sinks: []Sink{&memSink{}}})
	var added atomic.Int64
	start := make(chan struct{})
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				c2.Add(Record{Kind: KindFileRead})
				added.Add(1)
			}
		}()
	}
	close(start)
	time.Sleep(time.Millisecond)
	s2 := c2.Close()
	wg.Wait()
	if s2.Total+s2.Dropped > writers*each {
		t.Errorf("total %d + dropped %d > %d", s2.Total, s2.Dropped, writers*each)
	}
	if got := int64(s2.Total) + c2.dropped.Load(); got != added.Load() {
		t.Errorf("total %d + all drops %d != added %d", s2.Total, c2.dropped.Load(), added.Load())
	}
}

func TestSummaryWriteText(t *testing.T) {
	recs := []Record{
		{Kind: KindFileWrite, Action: ActionDeny, Path: "/home/u/.bashrc", Rule: "denyWrite", PID: 12, Exe: "/usr/bin/tee"},
		{Kind: KindFileWrite, Action: ActionDeny, Path: "/etc/hosts", Rule: "default", PID: 12, Exe: "/usr/bin/tee"},
		{Kind: KindNetwork, Action: ActionDeny, Host: "example.com", Port: 443, Detail: "CONNECT", Rule: "deniedDomains", PID: 14, Exe: "/usr/bin/curl"},
	}
	tests := []struct {
		name   string
		s      Summary
		format string
		want   string
	}{
		{"clean run", Summary{Ignored: 4, ByKind: map[string]int{}}, "text", ""},
		{"clean run github", Summary{}, "github", ""},
		{"three", Summary{Total: 3, ByKind: map[string]int{KindFileWrite: 2, KindNetwork: 1}, First: recs}, "text",
			"sbx: 3 violations (2 file-write, 1 network); first:\n" +
				"  file-write deny /home/u/.bashrc (rule: denyWrite) pid 12 /usr/bin/tee\n" +
				"  file-write deny /etc/hosts (rule: default) pid 12 /usr/bin/tee\n" +
				"  network deny example.com:443 (CONNECT) (rule: deniedDomains) pid 14 /usr/bin/curl\n"},
		{"one", Summary{Total: 1, ByKind: map[string]int{KindNetwork: 1}, First: recs[2:]}, "",
			"sbx: 1 violation (1 network); first:\n" +
				"  network deny example.com:443 (CONNECT) (rule: deniedDomains) pid 14 /usr/bin/curl\n"},
		{"more than kept, dropped, sink error", Summary{Total: 7, ByKind: map[string]int{KindNetwork: 2, KindFileWrite: 2, KindSyscall: 3}, First: recs[:1], Dropped: 95, SinkErr: errors.New("sink 0: disk full")}, "json",
			"sbx: 7 violations (3 syscall, 2 file-write, 2 network); first 1:\n" +
				"  file-write deny /home/u/.bashrc (rule: denyWrite) pid 12 /usr/bin/tee\n" +
				"sbx: 95 more not recorded (queue full)\n" +
				"sbx: writing violations: sink 0: disk full\n"},
		{"only dropped", Summary{Dropped: 2}, "text", "sbx: 2 violations not recorded (queue full)\n"},
		{"github", Summary{Total: 3, ByKind: map[string]int{KindFileWrite: 2, KindNetwork: 1}, First: recs[:2], Dropped: 1}, "github",
			"::warning title=sbx violation (file-write)::file-write deny /home/u/.bashrc (rule: denyWrite) pid 12 /usr/bin/tee\n" +
				"::warning title=sbx violation (file-write)::file-write deny /etc/hosts (rule: default) pid 12 /usr/bin/tee\n" +
				"::warning title=sbx violations::3 violations (2 file-write, 1 network); 1 more not recorded (queue full)\n"},
		{"github sink errors", Summary{Total: 1, ByKind: map[string]int{"a,b:c": 1}, SinkErr: errors.Join(errors.New("sink 0: 100% full"), errors.New("sink 1: closed"))}, "github",
			"::warning title=sbx violations::1 violation (1 a,b:c); writing violations: sink 0: 100%25 full; sink 1: closed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.s.WriteText(&b, tt.format)
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// TestEndToEndSummary drives the collector and prints its summary.
func TestEndToEndSummary(t *testing.T) {
	c := New(Options{Now: func() time.Time { return fixedNow }})
	c.Add(Record{Kind: KindFileWrite, Source: SourceLandlock, Path: "/home/u/x", Rule: "allowWrite", PID: 12, Exe: "/usr/bin/touch"})
	c.Add(Record{Kind: KindFileWrite, Source: SourceLandlock, Path: "/home/u/y", Rule: "allowWrite", PID: 12, Exe: "/usr/bin/touch"})
	c.Add(Record{Kind: KindNetwork, Source: SourceProxy, Host: "example.com", Port: 80, Rule: "not in allowedDomains"})
	var b bytes.Buffer
	c.Close().WriteText(&b, "text")
	want := "sbx: 3 violations (2 file-write, 1 network); first:\n" +
		"  file-write deny /home/u/x (rule: allowWrite) pid 12 /usr/bin/touch\n" +
		"  file-write deny /home/u/y (rule: allowWrite) pid 12 /usr/bin/touch\n" +
		"  network deny example.com:80 (rule: not in allowedDomains)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func BenchmarkAdd(b *testing.B) {
	r := Record{Kind: KindFileWrite, Source: SourceSeccomp, Path: "/home/user/project/build/output.o", Syscall: "openat", Rule: "allowWrite", PID: 1234, Exe: "/usr/bin/cc"}
	b.Run("serial", func(b *testing.B) {
		c := New(Options{Command: "make -j8", Sinks: []Sink{&discardSink{}}})
		b.ReportAllocs()
		for b.Loop() {
			c.Add(r)
		}
		b.StopTimer()
		c.Close()
	})
	b.Run("parallel", func(b *testing.B) {
		c := New(Options{Command: "make -j8", Sinks: []Sink{&discardSink{}}})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Add(r)
			}
		})
		b.StopTimer()
		c.Close()
	})
}

type discardSink struct{}

func (discardSink) Write(Record) error { return nil }
func (discardSink) Close() error       { return nil }

// TestProbes: a record marked Probe (a runtime's refused feature probe)
// is counted in Summary.Probes only: not in Total, ByKind, First or
// Dropped, so no summary line and no --fail-on-violation. Options.Probes
// writes it to the sinks, marked.
func TestProbes(t *testing.T) {
	probe := Record{Kind: KindSyscall, Source: SourceSeccomp, Syscall: "io_uring_setup", Probe: true}
	real := Record{Kind: KindSyscall, Source: SourceSeccomp, Syscall: "ptrace"}
	for _, show := range []bool{false, true} {
		m := &memSink{}
		c := New(Options{Sinks: []Sink{m}, Probes: show, Now: func() time.Time { return fixedNow }})
		c.Add(probe)
		c.Add(probe)
		s := c.Close()
		var out bytes.Buffer
		s.WriteText(&out, FormatText)
		if s.Total != 0 || len(s.ByKind) != 0 || len(s.First) != 0 || s.Dropped != 0 || s.Probes != 2 || out.Len() != 0 {
			t.Errorf("show %v: probes only: %+v, summary %q", show, s, out.String())
		}
		recs := m.records()
		if !show && len(recs) != 0 || show && (len(recs) != 2 || !recs[0].Probe) {
			t.Errorf("show %v: sink got %+v", show, recs)
		}
		if show {
			if b, _ := recs[0].MarshalJSON(); !strings.HasSuffix(string(b), `,"probe":true}`) {
				t.Errorf("probe JSON: %s", b)
			}
			if l := recs[0].Line(); !strings.Contains(l, "io_uring_setup (probe)") {
				t.Errorf("probe line: %s", l)
			}
		}
	}
	// Mixed with a real refusal: the summary is the real one's alone.
	c := New(Options{Probes: true})
	c.Add(probe)
	c.Add(real)
	s := c.Close()
	if s.Total != 1 || s.ByKind[KindSyscall] != 1 || len(s.First) != 1 || s.First[0].Syscall != "ptrace" || s.Probes != 1 {
		t.Errorf("mixed: %+v", s)
	}
	// A full queue drops probes silently: Dropped is for violations.
	g := newGateSink()
	c = New(Options{Sinks: []Sink{g}, Probes: true, Queue: 1, CloseTimeout: 50 * time.Millisecond})
	for i := 0; i < 10; i++ {
		c.Add(probe)
	}
	s = c.Close()
	close(g.open)
	if s.Dropped != 0 || s.Total != 0 || s.Probes != 10 {
		t.Errorf("flooded with probes: %+v", s)
	}
}
