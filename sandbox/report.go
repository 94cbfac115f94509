package sandbox

import (
	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/netproxy"
	"github.com/sbx-sh/sbx/violations"
)

// proxyReporter turns the proxy's refusals into violation records.
func proxyReporter(col *violations.Collector) func(netproxy.Denial) {
	if col == nil {
		return nil
	}
	return func(d netproxy.Denial) {
		col.Add(violations.Record{
			Kind:   violations.KindNetwork,
			Source: violations.SourceProxy,
			Host:   d.Host,
			Port:   d.Port,
			Rule:   d.Rule,
			Detail: d.Proto + ": " + d.Reason,
		})
	}
}

// ActionDiscard and SourceOverlay mark a write a discard overlay took: it
// succeeded in the sandbox and is gone with the run.
const (
	ActionDiscard = "discard"
	SourceOverlay = "overlay"
)

// SourceSeatbelt marks records read from macOS's system log.
const SourceSeatbelt = "seatbelt"

// seatbeltRecord turns a Seatbelt denial from the system log into a
// record of the same kinds as on Linux.
func seatbeltRecord(v darwin.Violation) violations.Record {
	kind := v.Kind
	switch v.Kind {
	case "file-read":
		kind = violations.KindFileRead
	case "file-write":
		kind = violations.KindFileWrite
	case "network":
		kind = violations.KindNetwork
	case "unix-socket":
		kind = violations.KindUnixSocket
	}
	return violations.Record{
		Kind: kind, Source: SourceSeatbelt,
		PID: v.Pid, Exe: v.Exe,
		Path: v.Path, Host: v.Host, Port: v.Port,
		Detail: v.Operation, Rule: "seatbelt profile",
	}
}
