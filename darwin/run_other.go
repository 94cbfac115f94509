//go:build !darwin

package darwin

import (
	"context"
	"fmt"
	"runtime"
)

// Run is the macOS runner; on this OS it runs nothing and returns 125.
func Run(ctx context.Context, profile string, argv, env []string, dir string) (exitCode int, err error) {
	return 125, fmt.Errorf("%w (this is %s)", ErrUnsupported, runtime.GOOS)
}
