package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/sandbox"
	"github.com/sbx-sh/sbx/violations"
)

// limitFlag is one of --memory, --pids, --cpus, --cpu-time, --file-size,
// --open-files, --tmp-size: its value is checked when parsed (a
// malformed one is exit 125 with one line) and set in the Input's
// Limits, the limit's name added to Limits.Asked.
type limitFlag struct {
	name string // the limit's settings name
	dst  *policy.Limits
	val  string
}

func (f *limitFlag) String() string { return f.val }
func (f *limitFlag) Set(v string) error {
	l, err := policy.ParseLimit(f.name, v)
	if err != nil {
		return err
	}
	*f.dst = mergeFlag(*f.dst, l, f.name)
	f.val = v
	return nil
}

// mergeFlag sets limit name of dst from l: the last flag given wins.
func mergeFlag(dst, l policy.Limits, name string) policy.Limits {
	asked := append([]string(nil), dst.Asked...)
	dst.CopyFrom(&l, name)
	if !dst.IsAsked(name) {
		asked = append(asked, name)
	}
	dst.Asked = asked
	return dst
}

// registerLimitFlags defines the limit flags on fs, filling lim.
func registerLimitFlags(fs *flag.FlagSet, lim *policy.Limits) {
	for _, name := range policy.LimitNames {
		fs.Var(&limitFlag{name: name, dst: lim}, policy.LimitFlag[name][2:], "")
	}
}

// limitCause names a limit the command hit and the flag that raises it:
// "--memory 96M (…); raise it with --memory".
func limitCause(r violations.Record) string {
	flag, _, _ := strings.Cut(r.Rule, " ")
	s := r.Rule
	if r.Detail != "" {
		s += " (" + r.Detail + ")"
	}
	return s + "; raise it with " + flag
}

// maybeLimits names, for a command that failed (exit status 1-123 or a
// signal), the limits the user set whose hit sbx may not see (an
// rlimit's refused fork, allocation or open is the process's own
// business): "it may have hit --open-files 64 (…)". "" when none.
func maybeLimits(p *policy.Policy, code int) string {
	if code == 0 || code >= 124 && code <= 127 {
		return ""
	}
	var names []string
	for _, name := range []string{"memory", "pids", "openFiles", "fileSize", "cpuTime"} {
		if p.Limits.IsAsked(name) {
			names = append(names, policy.LimitFlag[name]+" "+p.Limits.Value(name))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "it may have hit " + strings.Join(names, ", ") + " (a limit's refusal is not always visible to sbx); raise it to check"
}

// writeLimits is sbx doctor's limits section: the mechanism each limit
// would use here.
func writeLimits(w io.Writer) {
	fmt.Fprintln(w, "limits (docs/limits.md):")
	for _, l := range sandbox.LimitMechanisms() {
		fmt.Fprintln(w, "  "+l)
	}
}
