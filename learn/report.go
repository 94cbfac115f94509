package learn

import (
	"fmt"
	"io"
	"strings"
)

// Report writes to w (stderr) what was granted, grouped, what was
// refused and not granted with the flag that would grant it, whether
// the run failed, and replay: the command that replays the learned
// policy.
func (r *Result) Report(w io.Writer, replay []string) {
	if r.Failed {
		fmt.Fprintf(w, "sbx learn: learned from a failed run (exit %d): what it never reached is not in the policy\n", r.Status)
	}
	group := func(what string, ps []string, show bool) {
		if len(ps) == 0 {
			return
		}
		items := ps
		if show {
			items = make([]string, len(ps))
			for i, p := range ps {
				items[i] = r.show(p)
			}
		}
		fmt.Fprintf(w, "  %-7s %s\n", what, strings.Join(items, " "))
	}
	n := len(r.AllowRead) + len(r.AllowWrite) + len(r.Presets) + len(r.AllowedDomains) + len(r.AllowUnixSockets)
	if n == 0 {
		fmt.Fprintln(w, "sbx learn: nothing to grant beyond the start policy and the runtime")
	} else {
		fmt.Fprintln(w, "sbx learn: granted")
		group("read", r.AllowRead, true)
		group("write", r.AllowWrite, true)
		group("preset", r.Presets, false)
		group("host", r.AllowedDomains, false)
		group("socket", r.AllowUnixSockets, true)
	}
	if len(r.Create) > 0 {
		made := make([]string, len(r.Create))
		for i, p := range r.Create {
			made[i] = r.show(p)
		}
		fmt.Fprintf(w, "  created by the run, missing on the host: sbx makes them as the replay starts (srt needs them made first: mkdir -p %s)\n", ShellJoin(made))
	}
	if len(r.Refused) > 0 {
		fmt.Fprintln(w, "sbx learn: refused, not granted")
		for _, f := range r.Refused {
			how := "no flag grants it"
			if f.Grant != "" {
				how = "grant with " + f.Grant
			}
			rule := ""
			if f.Rule != "" {
				rule = " (" + f.Rule + ")"
			}
			fmt.Fprintf(w, "  %-11s %s%s: %s\n", f.Kind, f.What, rule, how)
		}
		for _, f := range r.Refused {
			if f.Rule == RuleListed {
				fmt.Fprintln(w, "  a listing not read through, outside the working directory: a version manager or a cache lists more than it reads; grant the listing as above, or learn from a clean run (go test -count=1, a clean build)")
				break
			}
		}
	}
	if len(replay) > 0 {
		fmt.Fprintf(w, "sbx learn: replay: %s\n", ShellJoin(replay))
	}
}
