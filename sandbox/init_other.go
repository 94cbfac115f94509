//go:build !linux

package sandbox

// InitMain exists on Linux only: no other system runs sbx's init.
func InitMain([]string) { panic("sbx: init is Linux-only") }
