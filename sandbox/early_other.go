//go:build !(linux && (amd64 || arm64))

package sandbox

// Prespawn does nothing here: the raw start, whose first process it
// clones ahead of the plan, is linux/amd64 and linux/arm64 only.
func Prespawn() {}

// DropPrespawn does nothing here (see Prespawn).
func DropPrespawn() {}
