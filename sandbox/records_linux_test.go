package sandbox

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"github.com/sbx-sh/sbx/violations/schema"
	"golang.org/x/sys/unix"
)

type bufCloser struct{ bytes.Buffer }

func (*bufCloser) Close() error { return nil }

// TestSourceRecordsMatchSchema: the records this package makes — a
// discarded write, the limits a run hit, a connect under --net none, the
// after-run check's — are valid against violations/schema/record-v1.json
// once the collector has them, and each denial names its rule.
func TestSourceRecordsMatchSchema(t *testing.T) {
	var recs []violations.Record
	recs = append(recs, discardRecord(ns.Change{Path: "/w/out", Detail: "created"}))
	lp := &LimitPlan{
		Limits: []LimitUse{
			{Name: "fileSize", Flag: "--file-size", Value: "1M"},
			{Name: "cpuTime", Flag: "--cpu-time", Value: "1s"},
		},
		values: policy.Limits{CPUTime: time.Second},
	}
	for _, sig := range []unix.Signal{unix.SIGXFSZ, unix.SIGXCPU} {
		ws := unix.WaitStatus(sig) // killed by sig
		lr := limitRecords(lp, nil, ws, true, false, nil)
		if len(lr) != 1 {
			t.Fatalf("%v: limit records %+v", sig, lr)
		}
		recs = append(recs, lr...)
	}
	r := &seccomp.Request{PID: 42, Syscall: "connect"}
	nc := &seccomp.NetCall{Syscall: "connect", Dest: netip.MustParseAddrPort("192.0.2.1:53"), SockType: unix.SOCK_DGRAM}
	nr, ok := netRecord(r, nc, func(int) bool { return false })
	if !ok {
		t.Fatal("no record of a connect under --net none")
	}
	recs = append(recs, nr)

	var w bufCloser
	s, _ := violations.NewSink(&w, violations.FormatJSON)
	c := violations.New(violations.Options{Command: "sbx -- make", Sinks: []violations.Sink{s}})
	for _, rec := range recs {
		c.Add(rec)
	}
	// The after-run check's record: a .git the run made in the
	// working directory (a test directory), moved aside.
	d := t.TempDir()
	if err := os.Mkdir(filepath.Join(d, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	afterRunCheck(afterRunState{places: []afterPlace{{dir: d}}}, nil, false, c, &bytes.Buffer{})
	c.Close()
	lines := strings.SplitAfter(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) != len(recs)+1 {
		t.Fatalf("%d lines for %d records:\n%s", len(lines), len(recs)+1, w.String())
	}
	sch := schema.Record()
	for _, l := range lines {
		if err := sch.CheckLine([]byte(l)); err != nil {
			t.Errorf("%v\n%s", err, l)
		}
	}
}
