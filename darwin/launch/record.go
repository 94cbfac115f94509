package launch

import (
	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/violations"
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
