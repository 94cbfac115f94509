//go:build !linux && !darwin

package main

// isTerminal reports whether fd is a terminal: never, where sbx runs
// nothing.
func isTerminal(int) bool { return false }
