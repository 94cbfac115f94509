package violations

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/violations/schema"
)

// checkLines checks every line w holds against the record schema.
func checkLines(t *testing.T, w *bufCloser, want int) {
	t.Helper()
	s := schema.Record()
	lines := strings.SplitAfter(w.String(), "\n")
	if last := lines[len(lines)-1]; last != "" {
		t.Fatalf("output does not end in a newline: %q", last)
	}
	lines = lines[:len(lines)-1]
	if len(lines) != want {
		t.Fatalf("%d records, want %d:\n%s", len(lines), want, w.String())
	}
	for _, l := range lines {
		if err := s.CheckLine([]byte(l)); err != nil {
			t.Errorf("%v\n%s", err, l)
		}
	}
}

// TestRecordsMatchSchema: every kind of record this package writes —
// each kind, source and action sbx uses, the defaults Add fills in, a
// probe, hostile and overlong strings, a zero time — is valid against
// violations/schema/record-v1.json, written through the collector and
// through a sink directly.
func TestRecordsMatchSchema(t *testing.T) {
	long := strings.Repeat("é/", 3000)
	var recs []Record
	kinds := []string{KindFileRead, KindFileWrite, KindNetwork, KindUnixSocket, KindSyscall, KindSignal, KindLimit, "credential"}
	sources := []string{SourceProxy, SourceSeccomp, SourceLandlock, SourceObserver, "overlay", "after-run", "cgroup", "rlimit", "tmpfs", "supervisor", "seatbelt"}
	for i, k := range kinds {
		recs = append(recs, Record{Kind: k, Source: sources[i%len(sources)], Rule: "rule of " + k})
	}
	for _, s := range sources {
		recs = append(recs, Record{Kind: KindFileWrite, Source: s, Rule: "rule"})
	}
	recs = append(recs,
		fullRecord(),
		Record{Rule: "default-deny"}, // kind and source "unknown", action "deny"
		Record{Kind: KindFileWrite, Action: "discard", Source: "overlay", Path: "/w/out"},
		Record{Kind: KindSyscall, Source: SourceSeccomp, Syscall: "io_uring_setup", Rule: "seccomp: io_uring_setup", Probe: true},
		Record{Kind: KindNetwork, Source: SourceProxy, Host: hostile, Port: 65535, Detail: hostile, Rule: RuleNetNone, PID: 1, Exe: hostile, Command: hostile},
		Record{Kind: KindFileRead, Source: SourceObserver, Path: long, Resolved: long, Syscall: long, Detail: long, Rule: long, Command: long},
		Record{Time: time.Time{}.Add(1), Kind: KindLimit, Source: "rlimit", Rule: "--file-size 1M"},
		Record{Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("", -7*3600)), Kind: KindFileRead, Source: SourceObserver, Rule: RuleAllowPty},
	)
	t.Run("collector", func(t *testing.T) {
		w := &bufCloser{}
		s, _ := NewSink(w, FormatJSON)
		c := New(Options{Command: "sbx " + long, Sinks: []Sink{s}, Probes: true})
		for _, r := range recs {
			c.Add(r)
		}
		if sum := c.Close(); sum.SinkErr != nil || sum.Dropped != 0 {
			t.Fatalf("summary %+v", sum)
		}
		checkLines(t, w, len(recs))
	})
	t.Run("sink", func(t *testing.T) {
		w := &bufCloser{}
		s, _ := NewSink(w, FormatJSON)
		for _, r := range recs {
			if r.Action == "" {
				r.Action = ActionDeny
			}
			if r.Kind == "" {
				r.Kind = Unknown
			}
			if r.Source == "" {
				r.Source = Unknown
			}
			if err := s.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		checkLines(t, w, len(recs))
	})
}

// TestSchemaRefusesDriftedRecords: the schema test above can fail. A
// denial without its rule, a kind or source the schema does not list,
// and a version other than SchemaVersion are each refused.
func TestSchemaRefusesDriftedRecords(t *testing.T) {
	s := schema.Record()
	for _, r := range []Record{
		{Kind: KindSyscall, Action: ActionDeny, Source: SourceSeccomp, Syscall: "ptrace"},
		{Kind: "file-append", Action: ActionDeny, Source: SourceSeccomp, Rule: "r"},
		{Kind: KindFileRead, Action: ActionDeny, Source: "ebpf", Rule: "r"},
		{Kind: KindFileRead, Action: "allow", Source: SourceSeccomp, Rule: "r"},
	} {
		if err := s.CheckLine(r.appendJSON(nil)); err == nil {
			t.Errorf("accepted %s", r.appendJSON(nil))
		}
	}
	good := Record{Kind: KindSyscall, Action: ActionDeny, Source: SourceSeccomp, Syscall: "ptrace", Rule: "seccomp: ptrace"}
	b := good.appendJSON(nil)
	if err := s.CheckLine(b); err != nil {
		t.Fatal(err)
	}
	b2 := bytes.Replace(b, []byte(`"schema":1`), []byte(`"schema":2`), 1)
	if bytes.Equal(b, b2) || s.CheckLine(b2) == nil {
		t.Errorf("accepted %s", b2)
	}
}
