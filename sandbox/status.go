package sandbox

import (
	"encoding/json"
	"io"

	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/violations"
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

// maxStatusLine bounds one line on the status pipe; the supervisor's
// reader takes lines up to it. sendDiscarded keeps its lines well below.
const maxStatusLine = 4 << 20

// sendDiscarded sends changes in batches of at most about 64 KiB of
// paths. A path longer than twice violations.MaxField is cut there
// first: its record keeps MaxField bytes of it anyway (--save-changes
// has the whole path), and a line must fit maxStatusLine however deep
// the command nested its directories.
func sendDiscarded(w io.Writer, changes []ns.Change) {
	const batchBytes, maxPath = 64 << 10, 2 * violations.MaxField
	for len(changes) > 0 {
		n, size := 0, 0
		for n < len(changes) && n < 256 {
			l := min(len(changes[n].Path), maxPath)
			if n > 0 && size+l > batchBytes {
				break
			}
			size += l
			n++
		}
		batch := make([]ns.Change, n)
		copy(batch, changes[:n])
		for i := range batch {
			if len(batch[i].Path) > maxPath {
				batch[i].Path = batch[i].Path[:maxPath]
			}
		}
		sendStatus(w, status{Discarded: batch})
		changes = changes[n:]
	}
}
