package learn

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Start is the starting point of a learn run.
type Start struct {
	// Policy is the starting policy as flags and settings built it,
	// before learn's own changes for the observation.
	Policy *policy.Policy
	// Argv is the command; Environ its environment (PATH finds the
	// program and interpreter that --reads declared adds).
	Argv    []string
	Environ []string
	Cwd     string
	Home    string
	// Existing is the --settings file's bytes when --output names that
	// same file (the learned policy is added to it); nil otherwise.
	Existing []byte
	// Status is the command's exit status.
	Status int
}

// Result is the learned policy, before encoding. Paths are absolute
// and cleaned; Encode writes those under the working directory as
// "./…" and those under HOME as "~/…" (see docs/learn.md).
type Result struct {
	AllowRead, AllowWrite []string
	// Create are the AllowWrite directories that the run created and
	// that do not exist on the host: the replay needs them made first
	// (--allow-write creates a missing directory whose parent exists; a
	// settings file's allowWrite must exist).
	Create           []string
	AllowedDomains   []string // host:port
	AllowUnixSockets []string
	// Presets are preset names whose caches the command wrote.
	Presets []string
	// Refused is what the run refused and learning does not grant, and
	// what learning chose not to grant (each with its flag).
	Refused []Refusal
	// Failed: learned from a failed run (Status != 0).
	Failed bool
	Status int

	cwd, home string
}

// Formats are the output formats Encode knows, the default first.
func Formats() []string { return []string{"sbx", "srt", "claude", "flags"} }

// Build is the narrowest policy under which the command passes again
// with --reads declared --fail-on-violation plus the start policy.
func Build(st Start, ob Observed) (*Result, error) {
	if st.Policy == nil {
		return nil, fmt.Errorf("learn: no starting policy")
	}
	r := &Result{Status: st.Status, Failed: st.Status != 0, cwd: st.Cwd, home: st.Home}
	paths := make([]string, 0, len(ob.Paths))
	for p := range ob.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		a := ob.Paths[p]
		switch {
		case a&Connect != 0:
			r.AllowUnixSockets = append(r.AllowUnixSockets, p)
		case a&(Write|Create|Remove) != 0:
			r.AllowWrite = append(r.AllowWrite, p)
		default:
			r.AllowRead = append(r.AllowRead, p)
		}
	}
	r.AllowedDomains = append(r.AllowedDomains, ob.Hosts...)
	r.Refused = append(r.Refused, ob.Refused...)
	return r, nil
}

// Encode writes r in format, added to existing (the bytes of the
// settings file it extends; nil for a new one).
func (r *Result) Encode(format string, existing []byte) ([]byte, error) {
	switch format {
	case "flags":
		var b strings.Builder
		for _, p := range r.AllowRead {
			fmt.Fprintf(&b, "--allow-read %s ", p)
		}
		for _, p := range r.AllowWrite {
			fmt.Fprintf(&b, "--allow-write %s ", p)
		}
		for _, h := range r.AllowedDomains {
			fmt.Fprintf(&b, "--allow-domain %s ", h)
		}
		b.WriteString("--reads declared\n")
		return []byte(b.String()), nil
	case "sbx", "srt", "claude":
		return nil, fmt.Errorf("learn: format %q not implemented yet", format)
	}
	return nil, fmt.Errorf("learn: format %q is unknown; use one of %s", format, strings.Join(Formats(), ", "))
}

// Report writes what was granted, what was refused and not granted, and
// the replay command to w (stderr).
func (r *Result) Report(w io.Writer, replay []string) {
	if r.Failed {
		fmt.Fprintf(w, "sbx learn: learned from a failed run (exit %d)\n", r.Status)
	}
	fmt.Fprintf(w, "sbx learn: granted %d reads, %d writes, %d hosts, %d sockets\n",
		len(r.AllowRead), len(r.AllowWrite), len(r.AllowedDomains), len(r.AllowUnixSockets))
	for _, f := range r.Refused {
		fmt.Fprintf(w, "  refused, not granted: %s %s (%s)\n", f.Kind, f.What, f.Grant)
	}
	fmt.Fprintf(w, "sbx learn: replay: %s\n", strings.Join(replay, " "))
}
