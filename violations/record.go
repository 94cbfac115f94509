package violations

import (
	"net"
	"strconv"
	"time"
	"unicode/utf8"
)

// Kinds of denial. Sources may use others (sandbox.KindCredential); every
// kind sbx writes is listed in the schema (violations/schema/record-v1.json),
// whose tests fail on one it does not list.
const (
	KindFileRead   = "file-read"
	KindFileWrite  = "file-write"
	KindNetwork    = "network"
	KindUnixSocket = "unix-socket"
	KindSyscall    = "syscall"
	KindSignal     = "signal"
	// KindLimit is a limit the run hit (--memory, --pids, …): Rule is
	// the limit ("--memory 96M"), Source the mechanism that saw it
	// (cgroup, rlimit, tmpfs, supervisor), Detail what it saw.
	KindLimit = "limit"
)

// Sources of records: the mechanism that saw the denial. Others live with
// their source (sandbox.SourceOverlay, …); the schema lists them all.
const (
	SourceProxy    = "proxy"
	SourceSeccomp  = "seccomp"
	SourceLandlock = "landlock"
	SourceObserver = "observer"
)

// RuleAllowPty is the rule of a refused open of /dev/ptmx or /dev/pts/*:
// the sandbox has no pseudo-terminals without allowPty (--allow-pty).
const RuleAllowPty = "allowPty"

// RuleNetNone is the rule of a connect or send refused under --net none
// (network mode none): the sandbox has only its own loopback, so any
// other destination is unreachable.
const RuleNetNone = "net-none"

// ActionDeny is the only action sbx reports today; Add fills it in when a
// source leaves Action empty.
const ActionDeny = "deny"

// Unknown is what Add puts in an empty Kind or Source, so that the four
// always-present fields are never empty.
const Unknown = "unknown"

// SchemaVersion is the "schema" of every JSON record sbx writes: the
// version of the record format. It changes only when a change would
// break a reader of the previous version (a field removed or renamed, its
// type or meaning changed); fields, kinds, sources and actions may be
// added within one version. The schema itself is the file
// violations/schema/record-v1.json.
const SchemaVersion = 1

// TimeFormat is how Record.Time is written: RFC 3339 in UTC with exactly
// nine fractional digits, so that lines sort and compare as text.
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// Record is one denial. The JSON field names are the schema (see the
// package documentation); time, schema (SchemaVersion, written by
// MarshalJSON: not a field of Record), kind, action and source are always
// present, the rest only when set.
type Record struct {
	Time     time.Time `json:"time"`               // marshalled with TimeFormat (RFC 3339, ns, UTC)
	Kind     string    `json:"kind"`               // file-read, file-write, network, unix-socket, syscall, signal, ...
	Action   string    `json:"action"`             // "deny" (default filled by Add)
	Source   string    `json:"source"`             // proxy, seccomp, landlock, observer, ...
	PID      int       `json:"pid,omitempty"`      // the process that was refused
	Exe      string    `json:"exe,omitempty"`      // its executable
	Command  string    `json:"command,omitempty"`  // the sbx command line, truncated (filled by Add from Options.Command)
	Path     string    `json:"path,omitempty"`     // the path as the command gave it
	Resolved string    `json:"resolved,omitempty"` // the path as resolved, when it differs
	Host     string    `json:"host,omitempty"`     // network: the host name or address asked for
	Port     int       `json:"port,omitempty"`     // network: the port
	Syscall  string    `json:"syscall,omitempty"`  // the system call refused
	Detail   string    `json:"detail,omitempty"`   // e.g. socket family, ioctl name, proxy protocol
	Rule     string    `json:"rule,omitempty"`     // the policy entry or default that decided
	// Probe marks a runtime's feature probe (seccomp.Probes): refused,
	// but not a violation. The collector keeps it out of the summary and
	// the sinks unless Options.Probes asks for it.
	Probe bool `json:"probe,omitempty"`
}

// MarshalJSON writes r as one JSON object with the fields in schema order,
// Time in TimeFormat, "schema" (SchemaVersion) second, and no HTML
// escaping. It never fails.
func (r Record) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 256)), nil
}

func (r *Record) appendJSON(b []byte) []byte {
	b = append(b, `{"time":"`...)
	b = r.Time.UTC().AppendFormat(b, TimeFormat)
	b = append(b, `","schema":`...)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = appendField(b, "kind", r.Kind, true)
	b = appendField(b, "action", r.Action, true)
	b = appendField(b, "source", r.Source, true)
	if r.PID != 0 {
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(r.PID), 10)
	}
	b = appendField(b, "exe", r.Exe, false)
	b = appendField(b, "command", r.Command, false)
	b = appendField(b, "path", r.Path, false)
	b = appendField(b, "resolved", r.Resolved, false)
	b = appendField(b, "host", r.Host, false)
	if r.Port != 0 {
		b = append(b, `,"port":`...)
		b = strconv.AppendInt(b, int64(r.Port), 10)
	}
	b = appendField(b, "syscall", r.Syscall, false)
	b = appendField(b, "detail", r.Detail, false)
	b = appendField(b, "rule", r.Rule, false)
	if r.Probe {
		b = append(b, `,"probe":true`...)
	}
	return append(b, '}')
}

func appendField(b []byte, name, v string, always bool) []byte {
	if v == "" && !always {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return appendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as a JSON string. It is safe on any input
// (control characters are \u-escaped, invalid UTF-8 becomes \ufffd, U+2028
// and U+2029 are escaped), although Add has already sanitised the fields.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += n
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
			i += n
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Line is the one-line human text of r used by the text format and the
// summaries, e.g.
//
//	file-write deny /home/u/x (rule: allowWrite) pid 12 /usr/bin/touch
//	file-write deny ./link -> /etc/passwd (rule: default) pid 7 /usr/bin/tee
//	network deny example.com:443 (CONNECT) (rule: deniedDomains) pid 9 /usr/bin/curl
//	syscall deny ptrace (PTRACE_ATTACH) (rule: default) pid 3 /usr/bin/gdb
//
// The parts are: kind, action, syscall, path (and "-> resolved" when it
// differs), host[:port], (detail), (rule: rule), pid N, exe — each only when
// set. Paths, hosts and the executable are quoted in Go syntax when they
// contain spaces, quotes, parentheses, backslashes or anything not
// printable, so a hostile name cannot pass for other parts of the line; Line
// is inert even for a Record that Add has not sanitised. Time, source and
// command are left out (the text format prefixes the time).
func (r Record) Line() string {
	return string(r.appendLine(make([]byte, 0, 128)))
}

func (r *Record) appendLine(b []byte) []byte {
	b = appendWord(b, orDefault(r.Kind, Unknown))
	b = append(b, ' ')
	b = appendWord(b, orDefault(r.Action, ActionDeny))
	if r.Syscall != "" {
		b = append(b, ' ')
		b = appendWord(b, r.Syscall)
	}
	switch {
	case r.Path != "":
		b = append(b, ' ')
		b = appendWord(b, r.Path)
		if r.Resolved != "" && r.Resolved != r.Path {
			b = append(b, " -> "...)
			b = appendWord(b, r.Resolved)
		}
	case r.Resolved != "":
		b = append(b, ' ')
		b = appendWord(b, r.Resolved)
	}
	switch {
	case r.Host != "" && r.Port != 0:
		b = append(b, ' ')
		b = appendWord(b, net.JoinHostPort(r.Host, strconv.Itoa(r.Port)))
	case r.Host != "":
		b = append(b, ' ')
		b = appendWord(b, r.Host)
	case r.Port != 0:
		b = append(b, " port "...)
		b = strconv.AppendInt(b, int64(r.Port), 10)
	}
	if r.Detail != "" {
		b = append(b, " ("...)
		b = appendPhrase(b, r.Detail)
		b = append(b, ')')
	}
	if r.Rule != "" {
		b = append(b, " (rule: "...)
		b = appendPhrase(b, r.Rule)
		b = append(b, ')')
	}
	if r.Probe {
		b = append(b, " (probe)"...)
	}
	if r.PID != 0 {
		b = append(b, " pid "...)
		b = strconv.AppendInt(b, int64(r.PID), 10)
	}
	if r.Exe != "" {
		b = append(b, ' ')
		b = appendWord(b, r.Exe)
	}
	return b
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// appendWord appends s bare when it is a single plain token, quoted
// otherwise.
func appendWord(b []byte, s string) []byte {
	if needsQuote(s, true) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// appendPhrase is appendWord for text inside parentheses: spaces are fine.
func appendPhrase(b []byte, s string) []byte {
	if needsQuote(s, false) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func needsQuote(s string, word bool) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		switch {
		case r == ' ':
			if word {
				return true
			}
		case r == '"' || r == '\\' || r == '(' || r == ')':
			return true
		case r == utf8.RuneError || !strconv.IsPrint(r):
			return true
		}
	}
	return false
}
