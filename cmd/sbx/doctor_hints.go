package main

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/doctor"
)

// writeDoctor prints sbx doctor's report: one "key: value" line for each
// mechanism and the mode, then exactly one "diagnosis:" line (the reason's
// id and message, or ok) and, under it, what the diagnosis rests on and
// each fix with its commands, flush left so they can be copied as they
// are.
func writeDoctor(w io.Writer, r doctor.Report) {
	yes := func(b bool, why string) string {
		switch {
		case b:
			return "yes"
		case why != "":
			return "NO — " + why
		}
		return "NO"
	}
	fmt.Fprintf(w, "kernel:           %s\n", r.Kernel)
	fmt.Fprintf(w, "user namespaces:  %s\n", yes(r.UserNS.Available, r.UserNS.Reason))
	if r.UserNS.Available {
		fmt.Fprintf(w, "fresh /proc:      %s\n", yes(r.Proc.Mountable, r.Proc.Reason))
	}
	fmt.Fprintf(w, "discard overlays: %s\n", yes(r.Discard.Available, r.Discard.Reason))
	fmt.Fprintf(w, "landlock:         ABI %d%s\n", r.Landlock.ABI, map[bool]string{true: "", false: " (unavailable)"}[r.Landlock.ABI > 0])
	fmt.Fprintf(w, "seccomp:          %s (%s)\n", yes(r.Seccomp.Available, ""), r.Seccomp.Library)
	capture := "yes"
	if !r.Capture.Available {
		capture = "NO — " + r.Capture.Reason + ": the capture is off, and with --allow-domain clients that ignore the proxy variables get no network"
	}
	fmt.Fprintf(w, "capture:          %s\n", capture)
	fmt.Fprintf(w, "mode:             %s\n", r.Mode)
	writeDiagnosis(w, r.Diagnosis)
}

const doctorIndent = "                  "

func writeDiagnosis(w io.Writer, d doctor.Diagnosis) {
	fmt.Fprintf(w, "diagnosis:        %s: %s\n", d.ID, d.Message)
	for i, e := range d.Evidence {
		key := doctorIndent
		if i == 0 {
			key = "seen:             "
		}
		fmt.Fprintf(w, "%s%s\n", key, e)
	}
	for _, f := range d.Fixes {
		fmt.Fprintf(w, "fix:              %s\n", f.Say)
		for _, c := range f.Commands {
			// Flush left: a here-document's EOF must start its line.
			fmt.Fprintln(w, c)
		}
	}
	if len(d.Fixes) > 0 && len(d.Fixes[0].Steps) > 0 {
		fmt.Fprintf(w, "%ssbx doctor --fix --yes runs the first fix (as root, or through sudo -n) and checks it.\n", doctorIndent)
	}
	if d.ID != "ok" && d.ID != "not-linux" {
		fmt.Fprintf(w, "%sSee the README, \"When sbx cannot start\".\n", doctorIndent)
	}
}
