//go:build !linux

package landlock

import "errors"

// ABI is 0 outside Linux.
func ABI() int { return 0 }

// RestrictThread is Linux-only.
func (rs Ruleset) RestrictThread() (int, error) {
	return 0, errors.New("landlock: not supported on this OS")
}
