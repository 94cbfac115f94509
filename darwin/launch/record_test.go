package launch

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/violations"
	"github.com/sbx-sh/sbx/violations/schema"
)

type bufCloser struct{ bytes.Buffer }

func (*bufCloser) Close() error { return nil }

// checkSchema writes r as sbx does and checks the line against the
// record schema.
func checkSchema(t *testing.T, r violations.Record) {
	t.Helper()
	var w bufCloser
	s, _ := violations.NewSink(&w, violations.FormatJSON)
	c := violations.New(violations.Options{Command: "sbx -- cat", Sinks: []violations.Sink{s}})
	c.Add(r)
	c.Close()
	if err := schema.Record().CheckLine(w.Bytes()); err != nil || w.Len() == 0 {
		t.Errorf("record %q: %v", w.String(), err)
	}
}

// Seatbelt denials from macOS's system log become records of the same
// kinds as on Linux, valid against the record schema.
func TestSeatbeltRecord(t *testing.T) {
	const tag = "sbx-0a1b2c"
	line := func(msg string) string {
		b, _ := json.Marshal(map[string]any{"eventMessage": msg + "\n" + tag})
		return string(b)
	}
	for _, c := range []struct {
		msg  string
		want violations.Record
	}{
		{"Sandbox: cat(123) deny(1) file-read-data /Users/x/.ssh/id_rsa",
			violations.Record{Kind: violations.KindFileRead, PID: 123, Exe: "cat", Path: "/Users/x/.ssh/id_rsa", Detail: "file-read-data"}},
		{"Sandbox: bash(7) deny(1) file-write-create /Users/x/p/.git/hooks/pre-commit",
			violations.Record{Kind: violations.KindFileWrite, PID: 7, Exe: "bash", Path: "/Users/x/p/.git/hooks/pre-commit", Detail: "file-write-create"}},
		{"Sandbox: curl(4321) deny(1) network-outbound 127.0.0.1:8080",
			violations.Record{Kind: violations.KindNetwork, PID: 4321, Exe: "curl", Host: "127.0.0.1", Port: 8080, Detail: "network-outbound"}},
	} {
		v, ok := darwin.ParseLogLine(tag, line(c.msg))
		if !ok {
			t.Fatalf("%q: not parsed", c.msg)
		}
		got := seatbeltRecord(v)
		c.want.Source, c.want.Rule = SourceSeatbelt, "seatbelt profile"
		if got != c.want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.msg, got, c.want)
		}
		checkSchema(t, got)
	}
	// Another run's tag is not ours.
	if _, ok := darwin.ParseLogLine("sbx-ffffff", line("Sandbox: cat(1) deny(1) file-read-data /x")); ok {
		t.Error("a record of another run was accepted")
	}
}
