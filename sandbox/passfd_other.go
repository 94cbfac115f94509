//go:build !linux

package sandbox

// CheckPassedFDs has nothing to refuse here: Seatbelt judges every open
// by its path, whatever descriptor it is relative to.
func CheckPassedFDs([]int) error { return nil }
