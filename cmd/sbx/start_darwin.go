package main

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/darwin/launch"
	"github.com/sbx-sh/sbx/learn"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// start runs p's command under Seatbelt (package darwin/launch); ready
// is called just before the command starts.
func start(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func()) (int, error) {
	// The limits are Linux's (cgroups, rlimits, the sandbox's tmpfs):
	// one asked for here is refused, never dropped.
	if len(p.Limits.Asked) > 0 {
		name := p.Limits.Asked[0]
		return 125, fmt.Errorf("%s %s: limits are not enforced on macOS yet; remove it", policy.LimitFlag[name], p.Limits.Value(name))
	}
	if p.Process.Tty {
		return 125, fmt.Errorf("--tty: a pseudo-terminal of the command's own is not relayed on macOS yet; drop --tty (the command uses sbx's terminal as it is)")
	}
	return launch.Launch(p, stderr, col, ready)
}

// startObserved: sbx learn observes a run with Linux's discard overlays
// and seccomp notifications; macOS has neither.
func startObserved(*policy.Policy, *learn.Recorder, bool, io.Writer, *violations.Collector) (int, error) {
	return 125, fmt.Errorf("sbx learn runs on Linux only (it observes the run with discard overlays and seccomp notifications)")
}
