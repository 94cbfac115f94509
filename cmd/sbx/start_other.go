//go:build !darwin

package main

import (
	"io"

	"github.com/sbx-sh/sbx/learn"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/sandbox"
	"github.com/sbx-sh/sbx/violations"
)

// start runs p's command under sbx's Linux supervisor (package sandbox);
// ready is called just before the command starts.
func start(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func()) (int, error) {
	return sandbox.Launch(p, stderr, col, func(*sandbox.Plan) { ready() })
}

// startObserved runs p's command as `sbx learn` observes it (package
// sandbox fills rec); learnNet lets unlisted hosts through and notes
// them.
func startObserved(p *policy.Policy, rec *learn.Recorder, learnNet bool, stderr io.Writer, col *violations.Collector) (int, error) {
	return sandbox.LaunchObserved(p, sandbox.Observe{Recorder: rec, Net: learnNet}, stderr, col, nil)
}
