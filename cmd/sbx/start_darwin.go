package main

import (
	"io"

	"github.com/sbx-sh/sbx/darwin/launch"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// start runs p's command under Seatbelt (package darwin/launch); ready
// is called just before the command starts.
func start(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func()) (int, error) {
	return launch.Launch(p, stderr, col, ready)
}
