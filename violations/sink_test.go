package violations

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type bufCloser struct {
	bytes.Buffer
	closed bool
	writes int
}

func (b *bufCloser) Write(p []byte) (int, error) { b.writes++; return b.Buffer.Write(p) }
func (b *bufCloser) Close() error                { b.closed = true; return nil }

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{"", FormatJSON, false},
		{"json", FormatJSON, false},
		{"text", FormatText, false},
		{"github", FormatGitHub, false},
		{" GitHub ", FormatGitHub, false},
		{"xml", "", true},
		{"jsonl", "", true},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseFormat(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil {
			for _, w := range []string{tt.in, "json", "text", "github"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		}
	}
	if _, err := NewSink(&bufCloser{}, "yaml"); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("NewSink yaml: %v", err)
	}
	if _, err := NewSink(nil, "json"); err == nil {
		t.Error("NewSink(nil) succeeded")
	}
}

func TestGitHubEscape(t *testing.T) {
	tests := []struct {
		in, data, prop string
	}{
		{"plain", "plain", "plain"},
		{"100%", "100%25", "100%25"},
		{"a\r\nb", "a%0D%0Ab", "a%0D%0Ab"},
		{"k: v, w", "k: v, w", "k%3A v%2C w"},
		{"%0A", "%250A", "%250A"},
		{"::error::x", "::error::x", "%3A%3Aerror%3A%3Ax"},
	}
	for _, tt := range tests {
		if got := EscapeGitHubData(tt.in); got != tt.data {
			t.Errorf("data %q = %q, want %q", tt.in, got, tt.data)
		}
		if got := EscapeGitHubProperty(tt.in); got != tt.prop {
			t.Errorf("property %q = %q, want %q", tt.in, got, tt.prop)
		}
	}
}

func TestSinkFormats(t *testing.T) {
	r := fullRecord()
	tests := []struct {
		format, want string
	}{
		{"json", `{"time":"2025-03-01T12:04:05.123456789Z","schema":1,"kind":"file-write","action":"deny","source":"landlock","pid":4242,"exe":"/usr/bin/touch","command":"make install","path":"./link/x","resolved":"/etc/x","host":"example.com","port":443,"syscall":"openat","detail":"O_WRONLY|O_CREAT","rule":"allowWrite: ./build"}` + "\n"},
		{"text", "2025-03-01T12:04:05.123456789Z file-write deny openat ./link/x -> /etc/x example.com:443 (O_WRONLY|O_CREAT) (rule: allowWrite: ./build) pid 4242 /usr/bin/touch\n"},
		{"github", "::warning title=sbx violation (file-write)::file-write deny openat ./link/x -> /etc/x example.com:443 (O_WRONLY|O_CREAT) (rule: allowWrite: ./build) pid 4242 /usr/bin/touch\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			w := &bufCloser{}
			s, err := NewSink(w, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(r); err != nil {
				t.Fatal(err)
			}
			if got := w.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if w.writes != 1 {
				t.Errorf("%d Write calls for one record", w.writes)
			}
			if err := s.Close(); err != nil || !w.closed {
				t.Errorf("close: %v, closed %v", err, w.closed)
			}
		})
	}
}

// hostile is a path a sandboxed command can create or ask for.
const hostile = "/tmp/\x1b[31mred\x1b[0m\u202egpj.exe\nFAKE {\"kind\":\"x\"}\r::error::pwned\x00\xff\u2066%0A"

// TestHostileInert: a hostile path comes out inert in every format, through
// the collector and through a sink used directly.
func TestHostileInert(t *testing.T) {
	for _, format := range Formats {
		for _, via := range []string{"collector", "sink"} {
			t.Run(format+"/"+via, func(t *testing.T) {
				w := &bufCloser{}
				s, err := NewSink(w, format)
				if err != nil {
					t.Fatal(err)
				}
				r := Record{Time: fixedNow, Kind: KindFileWrite, Action: ActionDeny, Source: SourceSeccomp, Path: hostile, Resolved: hostile, Exe: hostile, Detail: hostile, Rule: hostile, Host: hostile, Command: hostile}
				if via == "collector" {
					c := New(Options{Command: hostile, Sinks: []Sink{s}})
					c.Add(r)
					var sum bytes.Buffer
					c.Close().WriteText(&sum, format)
					checkInert(t, "summary", sum.String(), 2) // a header or summary warning, one record
				} else {
					if err := s.Write(r); err != nil {
						t.Fatal(err)
					}
				}
				out := w.String()
				checkInert(t, "sink", out, 1)
				if format == FormatJSON {
					var got Record
					if err := json.Unmarshal([]byte(out), &got); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
					if got.Kind != KindFileWrite || !strings.HasPrefix(got.Path, "/tmp/\uFFFD[31mred") {
						t.Errorf("decoded %+v", got)
					}
					for _, f := range []string{got.Path, got.Command, got.Host} {
						checkInert(t, "decoded field", f, 0)
					}
					if strings.Contains(out, `\u001b`) || strings.Contains(out, `\n`) || strings.Contains(out, `\u202e`) {
						t.Errorf("escaped controls survive in JSON: %s", out)
					}
				}
				if format == FormatGitHub {
					for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
						if strings.Count(l, "::warning ") != 1 || !strings.HasPrefix(l, "::warning ") {
							t.Errorf("line is not one warning: %q", l)
						}
						if strings.HasPrefix(l, "::warning title=sbx violation (") && !strings.Contains(l, "%250A") {
							t.Errorf("%% not escaped: %q", l)
						}
					}
				}
			})
		}
	}
}

// checkInert fails if s has a control, format or bidi character, invalid
// UTF-8, or (when lines > 0) other than lines newline-terminated lines.
func checkInert(t *testing.T, what, s string, lines int) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s: invalid UTF-8: %q", what, s)
	}
	body := s
	if lines > 0 {
		if !strings.HasSuffix(s, "\n") {
			t.Errorf("%s: no final newline: %q", what, s)
		}
		body = strings.TrimSuffix(s, "\n")
		if n := strings.Count(body, "\n") + 1; n > lines {
			t.Errorf("%s: %d lines, want at most %d: %q", what, n, lines, s)
		}
		body = strings.ReplaceAll(body, "\n", "")
	}
	for _, c := range body {
		if unsafeRune(c) {
			t.Errorf("%s: unsafe rune %U in %q", what, c, s)
			return
		}
	}
	if strings.Contains(body, "\x1b") || strings.Contains(body, "\r") {
		t.Errorf("%s: escape or CR in %q", what, s)
	}
}

// TestSinkSerialLines: one Write call of one line per record, whatever the
// record's size.
func TestSinkSerialLines(t *testing.T) {
	w := &bufCloser{}
	s, _ := NewSink(w, "json")
	long := strings.Repeat("x", 3*MaxField)
	for i := range 50 {
		r := Record{Time: fixedNow.Add(time.Duration(i)), Kind: KindFileRead, Path: long[:i*200]}
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if w.writes != 50 {
		t.Errorf("%d writes", w.writes)
	}
	sc := bufio.NewScanner(io.Reader(&w.Buffer))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Path) != n*200 && len(r.Path) > MaxField {
			t.Errorf("line %d: path %d bytes", n, len(r.Path))
		}
		n++
	}
	if n != 50 {
		t.Errorf("%d lines", n)
	}
}
