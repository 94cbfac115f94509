package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// ExitViolation is the exit status under --fail-on-violation when the
// command succeeded but something was refused (distinct from 124-127).
const ExitViolation = 123

// extraSink, when set, gives every run one more sink: the test build's
// record log (recordlog.go, build tag sbxrecordlog), never a release.
var extraSink func() (violations.Sink, error)

// violationFlags are the reporting options.
type violationFlags struct {
	file   string
	fd     int
	format string
	fail   bool
	quiet  bool
	probes bool

	// extra are more sinks open adds (sbx learn's refusals).
	extra []violations.Sink

	created bool     // open created the --violations file
	tap     *hintTap // what the failure hint names (open)
}

func (v *violationFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.file, "violations", "", "")
	fs.IntVar(&v.fd, "violations-fd", -1, "")
	fs.StringVar(&v.format, "violations-format", "", "")
	fs.BoolVar(&v.fail, "fail-on-violation", false, "")
	fs.BoolVar(&v.quiet, "quiet-violations", false, "")
	fs.BoolVar(&v.probes, "violations-probes", false, "")
}

// open validates the options and starts the collector. Nothing is created
// on failure.
func (v *violationFlags) open(p *policy.Policy, args []string) (*violations.Collector, error) {
	format, err := violations.ParseFormat(v.format)
	if err != nil {
		return nil, fmt.Errorf("--violations-format %q: use json, text or github", v.format)
	}
	v.format = format
	var sinks []violations.Sink
	closeAll := func() {
		for _, s := range sinks {
			_ = s.Close()
		}
	}
	if v.fd >= 0 {
		s, err := violations.FDSink(v.fd, format)
		if err != nil {
			return nil, fmt.Errorf("--violations-fd %d: %v; pass a descriptor open for writing", v.fd, err)
		}
		sinks = append(sinks, s)
	} else if v.fd != -1 {
		return nil, fmt.Errorf("--violations-fd %d: not a descriptor number", v.fd)
	}
	if v.file != "" {
		_, statErr := os.Lstat(v.file)
		f, err := violations.OpenFile(v.file)
		v.created = err == nil && os.IsNotExist(statErr)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("--violations %s: %v", v.file, err)
		}
		s, err := violations.NewSink(f, format)
		if err != nil {
			f.Close()
			closeAll()
			return nil, err
		}
		sinks = append(sinks, s)
	}
	if extraSink != nil {
		s, err := extraSink()
		if err != nil {
			closeAll()
			return nil, err
		}
		sinks = append(sinks, s)
	}
	v.tap = newHintTap()
	return violations.New(violations.Options{
		Command: "sbx " + strings.Join(redactSetEnv(args), " "),
		Ignore:  p.IgnoreViolations,
		Sinks:   append(append(sinks, v.extra...), v.tap),
		Probes:  v.probes,
	}), nil
}

// finish closes the collector, prints the summary and applies
// --fail-on-violation to the command's exit status.
func (v *violationFlags) finish(p *policy.Policy, col *violations.Collector, code int, stderr io.Writer) int {
	sum := col.Close()
	if !v.quiet {
		format := violations.FormatText
		if v.format == violations.FormatGitHub {
			format = violations.FormatGitHub
		}
		sum.WriteText(stderr, format)
		if h := writeHint(p, code, sum, v.tap); h != "" {
			fmt.Fprintln(stderr, h)
		}
	}
	if v.quiet && sum.SinkErr != nil {
		fmt.Fprintf(stderr, "sbx: writing violations: %v\n", sum.SinkErr)
	}
	if v.fail && code == 0 && (sum.Total > 0 || sum.Dropped > 0) {
		return ExitViolation
	}
	return code
}

// abort closes the collector after sbx failed before running anything,
// and removes the --violations file if this run created it and wrote
// nothing: nothing is left behind.
func (v *violationFlags) abort(col *violations.Collector) {
	col.Close()
	if v.created {
		if st, err := os.Lstat(v.file); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
			_ = os.Remove(v.file)
		}
	}
}

// redactSetEnv hides the values --set-env gives (K=V becomes K=…): a
// record's command line may be read by the command itself (a violations
// file in the working tree) or shown in CI, and a value set on the
// command line can be one the credentials rules mask. Everything after
// "--" is the command's own argv, kept as it is.
func redactSetEnv(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	hide := func(kv string) string {
		if k, _, ok := strings.Cut(kv, "="); ok {
			return k + "=…"
		}
		return kv
	}
	for i := 0; i < len(out); i++ {
		switch a := out[i]; {
		case a == "--":
			return out
		case a == "--set-env" || a == "-set-env":
			if i+1 < len(out) {
				out[i+1] = hide(out[i+1])
				i++
			}
		case strings.HasPrefix(a, "--set-env=") || strings.HasPrefix(a, "-set-env="):
			flag, kv, _ := strings.Cut(a, "=")
			out[i] = flag + "=" + hide(kv)
		}
	}
	return out
}
