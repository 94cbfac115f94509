//go:build !linux

package sandbox

import "runtime"

// Probe reports that this OS has none of the Linux mechanisms.
func Probe() Report {
	var r Report
	r.Kernel = runtime.GOOS
	r.Mode = "unavailable"
	r.Seccomp.Library = "none"
	return r
}
