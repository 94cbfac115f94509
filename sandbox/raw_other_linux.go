//go:build linux && !amd64 && !arm64

package sandbox

import (
	"errors"
	"io"
	"time"

	"github.com/sbx-sh/sbx/violations"
)

// The raw start (raw_linux.go) is built for amd64 and arm64; elsewhere
// every run starts the Go init.

func rawCandidate(*Plan) bool { return false }

var errNotRaw = errors.New("sandbox: not a raw start")

func runRaw(*Plan, io.Writer, *violations.Collector, func(*Plan)) (int, error) { return 0, errNotRaw }

// The raw start's dial protocol: unused (no raw start, no rawDial).

func rawDialRequest(uint64, uint16) []byte { return nil }

func rawDialReply([]byte) (uint64, uint32, error) { return 0, 0, errNotRaw }

func rawWaitConnected(int, time.Duration) error { return errNotRaw }
