package sandbox

// ActionDiscard and SourceOverlay mark a write a discard overlay took: it
// succeeded in the sandbox and is gone with the run.
const (
	ActionDiscard = "discard"
	SourceOverlay = "overlay"
)
