//go:build !linux

package seccomp

import (
	"errors"
	"os"
)

// LoadThread is Linux-only.
func LoadThread(Program) error { return errors.New("seccomp: not supported on this OS") }

// LoadThreadListener is Linux-only.
func LoadThreadListener(Program) (*os.File, error) {
	return nil, errors.New("seccomp: not supported on this OS")
}
