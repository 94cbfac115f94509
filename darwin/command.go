package darwin

import "errors"

// ErrUnsupported is returned by Run on every OS but macOS: Seatbelt only
// exists there, and sbx never runs a command unsandboxed instead.
var ErrUnsupported = errors.New("darwin: sandbox-exec is only available on macOS")

// SandboxExec is the macOS tool that applies a profile and execs a command.
const SandboxExec = "/usr/bin/sandbox-exec"

// Command returns the program and arguments that run argv under profile:
// sandbox-exec -p PROFILE -- ARGV... The "--" ends sandbox-exec's options,
// so a command whose name starts with "-" is not read as one.
func Command(profile string, argv []string) (name string, args []string) {
	args = make([]string, 0, len(argv)+3)
	args = append(args, "-p", profile, "--")
	return SandboxExec, append(args, argv...)
}

// LogStreamArgs are the arguments of log(1) that stream the denials of the
// run tagged tag, one ndjson object a line, for ParseLogLine. It returns nil
// for a tag Profile would refuse.
func LogStreamArgs(tag string) []string {
	if !validTag(tag) {
		return nil
	}
	return []string{"stream", "--style", "ndjson", "--predicate", `eventMessage ENDSWITH "` + tag + `"`}
}
