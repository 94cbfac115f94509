//go:build !linux && !darwin

package sandbox

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// InitArg is the hidden first argument of the sandbox's init (Linux only).
const InitArg = "__sbx_init"

// InitMain exists on Linux only.
func InitMain([]string) { panic("sbx: init is Linux-only") }

// Run is Linux-only; macOS has Launch (run_darwin.go).
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
