package violations

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func fullRecord() Record {
	return Record{
		Time:     time.Date(2025, 3, 1, 13, 4, 5, 123456789, time.FixedZone("CET", 3600)),
		Kind:     KindFileWrite,
		Action:   ActionDeny,
		Source:   SourceLandlock,
		PID:      4242,
		Exe:      "/usr/bin/touch",
		Command:  "make install",
		Path:     "./link/x",
		Resolved: "/etc/x",
		Host:     "example.com",
		Port:     443,
		Syscall:  "openat",
		Detail:   "O_WRONLY|O_CREAT",
		Rule:     "allowWrite: ./build",
	}
}

func TestMarshalJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		r        Record
		wantTime string
		absent   []string
	}{
		{
			name:     "every field",
			r:        fullRecord(),
			wantTime: `"time":"2025-03-01T12:04:05.123456789Z"`,
		},
		{
			name:     "whole second keeps nine digits",
			r:        Record{Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Kind: KindSyscall, Action: ActionDeny, Source: SourceSeccomp, Syscall: "ptrace"},
			wantTime: `"time":"2025-01-02T03:04:05.000000000Z"`,
			absent:   []string{`"pid"`, `"exe"`, `"command"`, `"path"`, `"resolved"`, `"host"`, `"port"`, `"detail"`, `"rule"`},
		},
		{
			name:     "json-special characters",
			r:        Record{Time: time.Date(2025, 1, 2, 3, 4, 5, 1, time.UTC), Kind: KindFileRead, Action: ActionDeny, Source: SourceObserver, Path: `/tmp/a"b\c<d>&e é`},
			wantTime: `"time":"2025-01-02T03:04:05.000000001Z"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
			if !bytes.HasPrefix(b, []byte("{"+tt.wantTime)) {
				t.Errorf("time not first or wrong: %s (want %s)", b, tt.wantTime)
			}
			for _, a := range tt.absent {
				if bytes.Contains(b, []byte(a)) {
					t.Errorf("%s present in %s", a, b)
				}
			}
			var got Record
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !got.Time.Equal(tt.r.Time) {
				t.Errorf("time %v, want %v", got.Time, tt.r.Time)
			}
			want := tt.r
			want.Time, got.Time = time.Time{}, time.Time{}
			if got != want {
				t.Errorf("round trip\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestMarshalJSONFieldOrder(t *testing.T) {
	b, _ := json.Marshal(fullRecord())
	order := []string{"time", "schema", "kind", "action", "source", "pid", "exe", "command", "path", "resolved", "host", "port", "syscall", "detail", "rule"}
	last := -1
	for _, f := range order {
		i := bytes.Index(b, []byte(`"`+f+`":`))
		if i <= last {
			t.Fatalf("field %q out of order in %s", f, b)
		}
		last = i
	}
	// The struct tags and the encoder agree on the names.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["schema"] != float64(SchemaVersion) {
		t.Errorf("schema %v, want %d", m["schema"], SchemaVersion)
	}
	if len(m) != len(order) {
		t.Errorf("%d fields, want %d: %v", len(m), len(order), m)
	}
}

func TestAppendJSONStringHostile(t *testing.T) {
	// Unsanitised input must still give valid, control-free JSON.
	in := "a\x00b\x1b[31m\n\r\t\"\\\xff\u2028\u2029z"
	b := appendJSONString(nil, in)
	if !json.Valid(b) {
		t.Fatalf("invalid: %s", b)
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("raw control %#x in %q", c, b)
		}
	}
	if bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029")) {
		t.Errorf("raw line separator in %q", b)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if want := strings.ToValidUTF8(in, "\uFFFD"); s != want {
		t.Errorf("decoded %q, want %q", s, want)
	}
}

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{"file write", Record{Kind: KindFileWrite, Action: ActionDeny, Path: "/home/u/x", Rule: "allowWrite", PID: 12, Exe: "/usr/bin/touch"},
			"file-write deny /home/u/x (rule: allowWrite) pid 12 /usr/bin/touch"},
		{"resolved differs", Record{Kind: KindFileWrite, Action: ActionDeny, Path: "./link", Resolved: "/etc/passwd", Rule: "default", PID: 7, Exe: "/usr/bin/tee"},
			"file-write deny ./link -> /etc/passwd (rule: default) pid 7 /usr/bin/tee"},
		{"resolved same", Record{Kind: KindFileRead, Action: ActionDeny, Path: "/a", Resolved: "/a"},
			"file-read deny /a"},
		{"resolved only", Record{Kind: KindFileRead, Action: ActionDeny, Resolved: "/a"},
			"file-read deny /a"},
		{"network", Record{Kind: KindNetwork, Action: ActionDeny, Host: "example.com", Port: 443, Detail: "CONNECT", Rule: "deniedDomains"},
			"network deny example.com:443 (CONNECT) (rule: deniedDomains)"},
		{"ipv6", Record{Kind: KindNetwork, Action: ActionDeny, Host: "::1", Port: 80},
			"network deny [::1]:80"},
		{"host only", Record{Kind: KindNetwork, Action: ActionDeny, Host: "example.com"},
			"network deny example.com"},
		{"port only", Record{Kind: KindNetwork, Action: ActionDeny, Port: 25},
			"network deny port 25"},
		{"syscall", Record{Kind: KindSyscall, Action: ActionDeny, Syscall: "socket", Detail: "AF_NETLINK", PID: 3},
			"syscall deny socket (AF_NETLINK) pid 3"},
		{"empty", Record{}, "unknown deny"},
		{"spaces quoted", Record{Kind: KindFileRead, Action: ActionDeny, Path: "/tmp/my file", Rule: "deny read"},
			`file-read deny "/tmp/my file" (rule: deny read)`},
		{"spoof quoted", Record{Kind: KindFileRead, Action: ActionDeny, Path: "/x (rule: allowRead) pid 1"},
			`file-read deny "/x (rule: allowRead) pid 1"`},
		{"hostile unsanitised", Record{Kind: KindFileRead, Action: ActionDeny, Path: "/t/\x1b[31m\u202e\n"},
			`file-read deny "/t/\x1b[31m\u202e\n"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Line(); got != tt.want {
				t.Errorf("Line()\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestLineInertOnAnyInput(t *testing.T) {
	for _, s := range []string{"\x00", "\x1b", "\x7f", "\u0085", "\u202e", "\u2066", "\u200f", "\u061c", "\ufeff", "\u2028", "\xff\xfe", "\U000E0041"} {
		r := Record{Kind: s, Action: s, Path: "p" + s, Resolved: s, Host: s, Syscall: s, Detail: s, Rule: s, Exe: s}
		l := r.Line()
		if !utf8.ValidString(l) {
			t.Errorf("%q: invalid UTF-8 %q", s, l)
		}
		for _, c := range l {
			if unsafeRune(c) {
				t.Errorf("%q: unsafe rune %U in %q", s, c, l)
			}
		}
	}
}
