package main

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/learn"
)

// writeLearned builds the learned policy from what the run saw, writes
// it in lf.format to lf.output (atomically) or to stdout, and prints the
// report with the replay command on stderr.
func writeLearned(st learn.Start, ob learn.Observed, lf learnFlags, replay []string, stdout, stderr io.Writer) error {
	res, err := learn.Build(st, ob)
	if err != nil {
		return err
	}
	data, err := res.Encode(lf.format, st.Existing)
	if err != nil {
		return err
	}
	if lf.output == "" {
		if _, err := stdout.Write(data); err != nil {
			return fmt.Errorf("writing the policy: %w", err)
		}
	} else if err := learn.WriteAtomic(lf.output, data); err != nil {
		return err
	}
	res.Report(stderr, replay)
	return nil
}
