//go:build !linux

package capture

import (
	"context"
	"errors"
)

// Serve is Linux-only: the capture device lives in a Linux network
// namespace.
func Serve(ctx context.Context, fd int, cfg Config) error {
	return errors.New("capture: transparent capture needs Linux network namespaces")
}
