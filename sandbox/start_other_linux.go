//go:build linux && !amd64 && !arm64

package sandbox

import (
	"errors"
	"io"
	"runtime"
	"time"

	"github.com/sbx-sh/sbx/violations"
)

// The full sandbox's start (start_linux.go) is built for amd64 and arm64,
// the CPUs sbx's releases ship. On other Linux CPUs the full mode is
// refused, with exit 125 and the way on: the weaker mode (--weaker-nested,
// Landlock + seccomp only), which a user chooses knowing what it drops,
// rather than gets without asking.

var errNoFullMode = errors.New("sandbox: the full mode is linux/amd64 and linux/arm64 only")

func run(*Plan, io.Writer, *violations.Collector, func(*Plan)) (int, error) {
	return 125, errors.New("the full sandbox runs on linux/amd64 and linux/arm64 only, not on linux/" + runtime.GOARCH +
		"; run with --weaker-nested (Landlock + seccomp only: no namespaces, no mount view) on this CPU")
}

// The published ports' dials: unused (no full mode, no dial socket).

func dialRequest(uint64, uint16) []byte { return nil }

func dialReply([]byte) (uint64, uint32, error) { return 0, 0, errNoFullMode }

func waitConnected(int, time.Duration) error { return errNoFullMode }
