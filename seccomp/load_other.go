//go:build !linux

package seccomp

import "errors"

// LoadThread is Linux-only.
func LoadThread(Program) error { return errors.New("seccomp: not supported on this OS") }
