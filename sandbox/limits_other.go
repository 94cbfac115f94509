//go:build !linux

package sandbox

import "github.com/sbx-sh/sbx/policy"

// hostLimits plans l for a host this package does not run sandboxes on:
// no cgroups, only what rlimits and tmpfs would do (for --dry-run).
func hostLimits(l policy.Limits, weaker bool) (*LimitPlan, error) {
	return planLimits(l, limitHost{weaker: weaker})
}
