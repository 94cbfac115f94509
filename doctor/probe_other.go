//go:build !linux

package doctor

import "runtime"

// Probe reports that this OS has none of the Linux mechanisms.
func Probe() Report {
	var r Report
	r.Kernel = runtime.GOOS
	r.Mode = "unavailable"
	r.Seccomp.Library = "none"
	r.Capture.Reason = "the capture is Linux's"
	r.Diagnosis = Diagnosis{ID: "not-linux", Message: "the Linux mechanisms (user namespaces, Landlock, seccomp) do not exist on " + runtime.GOOS}
	return r
}
