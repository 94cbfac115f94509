//go:build !darwin

package main

import (
	"io"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/sandbox"
	"github.com/sbx-sh/sbx/violations"
)

// start runs p's command under sbx's Linux supervisor (package sandbox);
// ready is called just before the command starts.
func start(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func()) (int, error) {
	return sandbox.Launch(p, stderr, col, func(*sandbox.Plan) { ready() })
}
