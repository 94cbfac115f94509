package darwin

import (
	"encoding/json"
	"slices"
	"testing"
)

// ndjson builds one `log stream --style ndjson` line around a message, with
// the fields log(1) writes around it.
func ndjson(t *testing.T, msg string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"traceID":          123,
		"eventMessage":     msg,
		"eventType":        "logEvent",
		"processImagePath": "/kernel",
		"senderImagePath":  "/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox",
		"messageType":      "Error",
		"processID":        0,
		"timestamp":        "2026-03-01 10:00:00.000000+0100",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseLogLine(t *testing.T) {
	const tag = "sbx_1a2b"
	for _, c := range []struct {
		msg  string
		want Violation
	}{
		{"Sandbox: cat(123) deny(1) file-read-data /Users/x/.ssh/id_rsa\n" + tag,
			Violation{Kind: "file-read", Operation: "file-read-data", Path: "/Users/x/.ssh/id_rsa", Pid: 123, Exe: "cat"}},
		{"Sandbox: bash(7) deny(1) file-write-create /Users/x/proj/.git/hooks/pre-commit\n" + tag + "\n",
			Violation{Kind: "file-write", Operation: "file-write-create", Path: "/Users/x/proj/.git/hooks/pre-commit", Pid: 7, Exe: "bash"}},
		{"Sandbox: mv(8) deny(1) file-write-unlink /Users/x/proj/.git\n" + tag,
			Violation{Kind: "file-write", Operation: "file-write-unlink", Path: "/Users/x/proj/.git", Pid: 8, Exe: "mv"}},
		{"Sandbox: ln(8) deny(1) file-link /Users/x/a\n" + tag,
			Violation{Kind: "file-write", Operation: "file-link", Path: "/Users/x/a", Pid: 8, Exe: "ln"}},
		{"Sandbox: stty(9) deny(1) file-ioctl /dev/ttys003\n" + tag,
			Violation{Kind: "file-ioctl", Operation: "file-ioctl", Path: "/dev/ttys003", Pid: 9, Exe: "stty"}},
		{"Sandbox: curl(4321) deny(1) network-outbound 93.184.216.34:443\n" + tag,
			Violation{Kind: "network", Operation: "network-outbound", Host: "93.184.216.34", Port: 443, Pid: 4321, Exe: "curl"}},
		{"Sandbox: curl(5) deny(1) network-outbound [2606:4700::1111]:443\n" + tag,
			Violation{Kind: "network", Operation: "network-outbound", Host: "2606:4700::1111", Port: 443, Pid: 5, Exe: "curl"}},
		{"Sandbox: node(6) deny(1) network-bind 0.0.0.0:8080\n" + tag,
			Violation{Kind: "network", Operation: "network-bind", Host: "0.0.0.0", Port: 8080, Pid: 6, Exe: "node"}},
		{"Sandbox: curl(75886) deny(1) network-outbound /private/var/run/mDNSResponder\n" + tag,
			Violation{Kind: "unix-socket", Operation: "network-outbound", Path: "/private/var/run/mDNSResponder", Pid: 75886, Exe: "curl"}},
		{"3 duplicate reports for Sandbox: java(77) deny(1) mach-lookup com.apple.FontServer\n" + tag,
			Violation{Kind: "mach", Operation: "mach-lookup", Path: "com.apple.FontServer", Pid: 77, Exe: "java"}},
		{"1 duplicate report for Sandbox: sh(5) deny(1) file-write-data /dev/dtracehelper\n" + tag,
			Violation{Kind: "file-write", Operation: "file-write-data", Path: "/dev/dtracehelper", Pid: 5, Exe: "sh"}},
		{"Sandbox: Gradle Worker(10) deny(1) signal\n" + tag,
			Violation{Kind: "process", Operation: "signal", Pid: 10, Exe: "Gradle Worker"}},
		{"Sandbox: sh(11) deny(1) process-exec* /usr/local/bin/x\n" + tag,
			Violation{Kind: "process", Operation: "process-exec*", Path: "/usr/local/bin/x", Pid: 11, Exe: "sh"}},
		{"Sandbox: ps(12) deny(1) sysctl-read kern.procargs2\n" + tag,
			Violation{Kind: "sysctl", Operation: "sysctl-read", Path: "kern.procargs2", Pid: 12, Exe: "ps"}},
		{"Sandbox: python3(13) deny(1) ipc-posix-shm-write-create /psm_1\n" + tag,
			Violation{Kind: "ipc", Operation: "ipc-posix-shm-write-create", Path: "/psm_1", Pid: 13, Exe: "python3"}},
		{"Sandbox: x(14) deny(1) iokit-open IOHIDSystem\n" + tag,
			Violation{Kind: "iokit", Operation: "iokit-open", Path: "IOHIDSystem", Pid: 14, Exe: "x"}},
		{"Sandbox: osascript(15) deny(1) appleevent-send com.apple.finder\n" + tag,
			Violation{Kind: "appleevent", Operation: "appleevent-send", Path: "com.apple.finder", Pid: 15, Exe: "osascript"}},
		{"Sandbox: x(16) deny(1) some-new-operation y\n" + tag,
			Violation{Kind: "other", Operation: "some-new-operation", Path: "y", Pid: 16, Exe: "x"}},
		// Without a count, as older macOS printed it.
		{"Sandbox: cat(17) deny file-read-data /etc/x\n" + tag,
			Violation{Kind: "file-read", Operation: "file-read-data", Path: "/etc/x", Pid: 17, Exe: "cat"}},
		// Names and paths with spaces, parentheses and newlines.
		{"Sandbox: Google Chrome Helper (Renderer)(18) deny(1) file-read-data /Users/x/My Files (old)/a\nb.txt\n" + tag,
			Violation{Kind: "file-read", Operation: "file-read-data", Path: "/Users/x/My Files (old)/a\nb.txt", Pid: 18, Exe: "Google Chrome Helper (Renderer)"}},
		// A forged denial inside the process name does not win.
		{"Sandbox: a(1) deny(1) x(19) deny(1) file-read-data /real\n" + tag,
			Violation{Kind: "file-read", Operation: "file-read-data", Path: "/real", Pid: 19, Exe: "a(1) deny(1) x"}},
	} {
		got, ok := ParseLogLine(tag, ndjson(t, c.msg))
		if !ok || got != c.want {
			t.Errorf("ParseLogLine(%q) =\n  %+v, %v\nwant\n  %+v", c.msg, got, ok, c.want)
		}
	}
}

func TestParseLogLineRejects(t *testing.T) {
	const tag = "sbx_1a2b"
	for _, line := range []string{
		ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x\nsbx_other"),          // another run
		ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x\nsbx_1a2bc"),          // a longer tag
		ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x\nxsbx_1a2b"),          // a tag as a suffix
		ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x\n"+tag+"\nsbx_other"), // a forged tag in a path
		ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/"+tag),                  // the tag only in the path
		ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x "+tag),                // not on its own line
		ndjson(t, "Sandbox: cat(1) allow(1) file-read-data /tmp/x\n"+tag),              // a report, not a denial
		ndjson(t, "something else entirely\n"+tag),
		ndjson(t, "Sandbox: cat deny(1) file-read-data /tmp/x\n"+tag), // no pid
		ndjson(t, "\n"+tag),
		`Filtering the log data using "eventMessage ENDSWITH \"sbx_1a2b\""`,
		`{"count":5,"finished":1}`,
		`not json`,
		``,
	} {
		if v, ok := ParseLogLine(tag, line); ok {
			t.Errorf("ParseLogLine(%s) = %+v, want no match", line, v)
		}
	}
	line := ndjson(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x\n"+tag)
	for _, badTag := range []string{"", `x"`, "a b"} {
		if _, ok := ParseLogLine(badTag, line); ok {
			t.Errorf("tag %q accepted", badTag)
		}
	}
}

func TestLogStreamArgs(t *testing.T) {
	want := []string{"stream", "--style", "ndjson", "--predicate", `eventMessage ENDSWITH "sbx_1"`}
	if got := LogStreamArgs("sbx_1"); !slices.Equal(got, want) {
		t.Errorf("LogStreamArgs = %q", got)
	}
	if got := LogStreamArgs(`x" OR 1`); got != nil {
		t.Errorf("LogStreamArgs of a bad tag = %q", got)
	}
}

func TestSplitHostPort(t *testing.T) {
	for in, want := range map[string]struct {
		host string
		port int
	}{
		"1.2.3.4:80":    {"1.2.3.4", 80},
		"[::1]:443":     {"::1", 443},
		"::1:443":       {"::1", 443},
		"*:53":          {"*", 53},
		"example":       {"example", 0},
		"host:port":     {"host:port", 0},
		"1.2.3.4:99999": {"1.2.3.4:99999", 0},
	} {
		h, p := splitHostPort(in)
		if h != want.host || p != want.port {
			t.Errorf("splitHostPort(%q) = %q, %d", in, h, p)
		}
	}
}
