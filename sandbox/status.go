package sandbox

import (
	"encoding/json"
	"github.com/sbx-sh/sbx/ns"
	"io"
)

// status is one message from init to the supervisor, a JSON line on the
// status pipe.
type status struct {
	// Started carries the command's pid (in the sandbox's pid namespace).
	Started int `json:"started,omitempty"`
	// Exit is set when the command has ended: Code is its sbx exit status.
	Exit bool `json:"exit,omitempty"`
	Code int  `json:"code"`
	// Error is a failure before the command ran (Code 125, 126 or 127).
	Error string `json:"error,omitempty"`
	// Discarded are writes the discard overlays took, sent in batches
	// before Exit.
	Discarded []ns.Change `json:"discarded,omitempty"`
}

func sendStatus(w io.Writer, s status) {
	b, _ := json.Marshal(s)
	_, _ = w.Write(append(b, '\n'))
}
