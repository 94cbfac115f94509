//go:build !(linux && (amd64 || arm64))

package sandbox

import "github.com/sbx-sh/sbx/capture"

// Prespawn does nothing here: the raw start, whose first process it
// clones ahead of the plan, is linux/amd64 and linux/arm64 only.
func Prespawn(bool) {}

// DropPrespawn does nothing here (see Prespawn).
func DropPrespawn() {}

// earlyNames is nil here: there is no early process.
func earlyNames() *capture.Names { return nil }
