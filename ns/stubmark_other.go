//go:build !linux

package ns

func isStub(string) bool { return false }

// HeldStub reports whether p is a stub a run still holds: never here.
func HeldStub(string) bool { return false }
