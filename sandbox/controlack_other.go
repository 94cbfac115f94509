//go:build !linux

package sandbox

// isSocket: acknowledgments are sent on Linux only (the full sandbox,
// which alone reads --control-fd).
func isSocket(int) bool { return false }

func sendNoWait(int, []byte) error { return nil }
