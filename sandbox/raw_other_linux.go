//go:build linux && !amd64 && !arm64

package sandbox

import (
	"errors"
	"io"

	"github.com/sbx-sh/sbx/violations"
)

// The raw start (raw_linux.go) is built for amd64 and arm64; elsewhere
// every run starts the Go init.

func rawCandidate(*Plan) bool { return false }

var errNotRaw = errors.New("sandbox: not a raw start")

func runRaw(*Plan, io.Writer, *violations.Collector, func(*Plan)) (int, error) { return 0, errNotRaw }
