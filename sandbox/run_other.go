//go:build !linux

package sandbox

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// Run is Linux-only: this package supervises Linux runs (macOS has
// package darwin/launch).
func Run(pl *Plan, stderr io.Writer, _ *violations.Collector) int {
	fmt.Fprintln(stderr, "sbx: this build runs sandboxes on Linux only")
	return 125
}

// Launch is Linux-only here, like Run.
func Launch(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	if _, err := Compute(p); err != nil {
		return 125, err
	}
	return Run(nil, stderr, col), nil
}

// LaunchObserved is Linux-only here, like Run.
func LaunchObserved(p *policy.Policy, _ Observe, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	return Launch(p, stderr, col, ready)
}
