//go:build sbxrecordlog

package main

// The test build of sbx: cmd/sbx's TestMain builds the binary with
// -tags sbxrecordlog and -ldflags "-X main.recordLog=FILE", and every run
// appends each record it writes anywhere (or would write, without
// --violations) to FILE as JSON Lines. The tests check every line of it
// against violations/schema/record-v1.json when they end, so a record
// that drifts from the schema fails the suite, whichever test made it.
// The file is outside the sandbox's view (the test's own temporary
// directory) and opened close-on-exec: the command never sees it.

import (
	"errors"

	"github.com/sbx-sh/sbx/violations"
)

// recordLog is the file every record is appended to (set at link time).
var recordLog string

func init() {
	extraSink = func() (violations.Sink, error) {
		if recordLog == "" {
			return nil, errors.New("this test build of sbx (tag sbxrecordlog) has no record log: link with -X main.recordLog=FILE")
		}
		f, err := violations.OpenFile(recordLog)
		if err != nil {
			return nil, err
		}
		return violations.NewSink(f, violations.FormatJSON)
	}
}
