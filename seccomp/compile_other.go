//go:build !(linux && cgo)

package seccomp

import "errors"

// Compile needs libseccomp (linux, cgo).
func Compile(Config) (Program, error) {
	return nil, errors.New("seccomp: this build has no libseccomp (needs linux and cgo)")
}

// LibraryVersion reports that no libseccomp is linked.
func LibraryVersion() string { return "none" }
