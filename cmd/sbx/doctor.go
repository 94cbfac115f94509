package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/sbx-sh/sbx/sandbox"
)

func cmdVersion(w io.Writer) int {
	r := sandbox.Probe()
	fmt.Fprintf(w, "sbx %s (%s, %s/%s; %s; landlock ABI %d)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, r.Seccomp.Library, r.Landlock.ABI)
	return 0
}

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fail(stderr, "usage: sbx doctor [--json]")
	}
	r := sandbox.Probe()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
		return 0
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	fmt.Fprintf(stdout, "kernel:           %s\n", r.Kernel)
	fmt.Fprintf(stdout, "user namespaces:  %s", yes(r.UserNS.Available))
	if r.UserNS.Reason != "" {
		fmt.Fprintf(stdout, " — %s", r.UserNS.Reason)
	}
	fmt.Fprintf(stdout, "\nlandlock:         ABI %d%s\n", r.Landlock.ABI, map[bool]string{true: "", false: " (unavailable)"}[r.Landlock.ABI > 0])
	fmt.Fprintf(stdout, "seccomp:          %s (%s)\n", yes(r.Seccomp.Available), r.Seccomp.Library)
	fmt.Fprintf(stdout, "mode:             %s\n", r.Mode)
	return 0
}
