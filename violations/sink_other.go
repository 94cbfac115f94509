//go:build !linux && !darwin

package violations

import (
	"errors"
	"os"
)

var errUnsupported = errors.New("violations: file and descriptor sinks are implemented on Linux and macOS only")

// OpenFile is implemented on Linux and macOS only.
func OpenFile(path string) (*os.File, error) { return nil, errUnsupported }

// FileSink is implemented on Linux and macOS only.
func FileSink(path string) (Sink, error) { return nil, errUnsupported }

// FDSink is implemented on Linux and macOS only.
func FDSink(fd int, format string) (Sink, error) { return nil, errUnsupported }
