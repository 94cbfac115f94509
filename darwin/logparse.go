package darwin

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Violation is one denial the kernel reported for a sandboxed process.
type Violation struct {
	Kind      string // file-read, file-write, file-ioctl, network, unix-socket, process, mach, sysctl, iokit, ipc, ... (see kindOf)
	Operation string // the SBPL operation, e.g. file-read-data, network-outbound
	Path      string // the file or socket path; for other kinds the target's name (Mach service, sysctl, ...)
	Host      string // network: the remote (or local, for bind) address
	Port      int    // network: the port
	Pid       int
	Exe       string // the process name the kernel reports
}

// denialRE reads the kernel's message: an optional "N duplicate reports
// for " prefix, then "Sandbox: EXE(PID) deny(N) OPERATION [TARGET]". The
// process name may hold spaces and parentheses; an operation never does,
// which is what lets a forged "(1) deny(1)" in a name fail to match early.
// The target may hold anything, newlines included.
var denialRE = lazyRegexp(`(?s)^(?:\d+ duplicate reports? for )?Sandbox: (.+?)\((\d+)\) deny(?:\(\d+\))? ([a-z][a-z0-9*-]*)(?: (.*))?$`)

// ParseLogLine reads one line of `log stream --style ndjson` (see
// LogStreamArgs) and returns the denial it reports, if it is a Seatbelt
// denial of the run tagged tag. The message must end with a line holding
// exactly the tag (that is how (with message "TAG") appears), so another
// run's tag, or a tag forged inside a denied path, does not match.
func ParseLogLine(tag, line string) (Violation, bool) {
	if !validTag(tag) {
		return Violation{}, false
	}
	var ev struct {
		EventMessage string `json:"eventMessage"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		return Violation{}, false
	}
	msg := strings.TrimRight(ev.EventMessage, " \t\r\n")
	body, ok := strings.CutSuffix(msg, "\n"+tag)
	if !ok {
		return Violation{}, false
	}
	m := denialRE().FindStringSubmatch(body)
	if m == nil {
		return Violation{}, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil {
		return Violation{}, false
	}
	v := Violation{Exe: m[1], Pid: pid, Operation: m[3]}
	target := m[4]
	v.Kind = kindOf(v.Operation, target)
	if v.Kind == "network" {
		v.Host, v.Port = splitHostPort(target)
	} else {
		v.Path = target
	}
	return v, true
}

// kindOf groups an operation into the kind sbx reports.
func kindOf(op, target string) string {
	switch {
	case strings.HasPrefix(op, "file-read"):
		return "file-read"
	case strings.HasPrefix(op, "file-write"), op == "file-link", op == "file-clone", op == "file-mknod":
		return "file-write"
	case op == "file-ioctl":
		return "file-ioctl"
	case strings.HasPrefix(op, "file-"):
		return "file"
	case strings.HasPrefix(op, "network-"):
		if strings.HasPrefix(target, "/") {
			return "unix-socket"
		}
		return "network"
	case op == "system-socket":
		return "network"
	case strings.HasPrefix(op, "process-"), op == "signal":
		return "process"
	case strings.HasPrefix(op, "mach-"):
		return "mach"
	case strings.HasPrefix(op, "sysctl-"):
		return "sysctl"
	case strings.HasPrefix(op, "iokit-"):
		return "iokit"
	case strings.HasPrefix(op, "ipc-"):
		return "ipc"
	case op == "pseudo-tty":
		return "pty"
	case op == "appleevent-send", op == "lsopen":
		return "appleevent"
	case strings.HasPrefix(op, "user-preference-"):
		return "preference"
	}
	return "other"
}

// splitHostPort reads "host:port", "[v6]:port" or a bare "v6:port"; a
// target without a numeric port is returned whole as the host.
func splitHostPort(t string) (string, int) {
	i := strings.LastIndexByte(t, ':')
	if i < 0 {
		return t, 0
	}
	port, err := strconv.Atoi(t[i+1:])
	if err != nil || port < 0 || port > 65535 {
		return t, 0
	}
	host := t[:i]
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	return host, port
}
