package main

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/learn"
)

// writeLearned builds the learned policy from what the run saw, writes
// it in lf.format to lf.output (atomically) or to stdout, and prints the
// report with the replay command on stderr.
// replay makes the replay command from the policy's flags (the flags
// format) or nil (a settings file).
func writeLearned(st learn.Start, ob learn.Observed, lf learnFlags, replay func([]string) []string, stdout, stderr io.Writer) error {
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
	var pol []string
	if lf.format == "flags" {
		pol = shellWords(string(data))
	}
	res.Report(stderr, replay(pol))
	return nil
}

// shellWords splits a line that learn.ShellJoin wrote back into its
// words: unquoted runs, single-quoted runs and the \' between them.
func shellWords(s string) []string {
	var words []string
	var w []byte
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w = append(w, c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(s):
			i++
			w, in = append(w, s[i]), true
		case c == ' ' || c == '\n' || c == '\t':
			if in {
				words = append(words, string(w))
			}
			w, in = w[:0], false
		default:
			w, in = append(w, c), true
		}
	}
	if in {
		words = append(words, string(w))
	}
	return words
}
