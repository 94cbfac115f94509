package violations

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Formats of a Sink.
const (
	FormatJSON   = "json"   // JSON Lines, one Record object a line (the default)
	FormatText   = "text"   // one human line a record: time, then Record.Line
	FormatGitHub = "github" // one GitHub Actions ::warning workflow command a record
)

// Formats lists the formats ParseFormat accepts, default first.
var Formats = []string{FormatJSON, FormatText, FormatGitHub}

// ParseFormat validates a --violations-format value. The empty string means
// FormatJSON; case and surrounding space are ignored. An unknown name is an
// error naming it and the choices.
func ParseFormat(s string) (string, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	switch f {
	case "":
		return FormatJSON, nil
	case FormatJSON, FormatText, FormatGitHub:
		return f, nil
	}
	return "", fmt.Errorf("violations: unknown format %q (want %s)", s, strings.Join(Formats, ", "))
}

// A Sink receives the records the Collector accepted, in order, from one
// goroutine (the collector's writer). Write must not retain r past the
// call. After a Write error the Collector writes nothing more to that sink
// and reports the error in Summary.SinkErr. Close is called once, by
// Collector.Close, possibly while a Write that outlived the drain timeout is
// still blocked; it should make that Write return.
type Sink interface {
	Write(Record) error
	Close() error
}

// NewSink returns a Sink that writes each record to w in format (see
// ParseFormat), as one Write call of one complete line, so that lines from
// several writers of an O_APPEND file never interleave. Records are
// sanitised again on the way out (Record.Sanitized). Close closes w.
func NewSink(w io.WriteCloser, format string) (Sink, error) {
	if w == nil {
		return nil, errors.New("violations: NewSink: nil writer")
	}
	f, err := ParseFormat(format)
	if err != nil {
		return nil, err
	}
	return &lineSink{w: w, format: f}, nil
}

type lineSink struct {
	mu     sync.Mutex // serialises Write; Close does not take it
	w      io.WriteCloser
	format string
	buf    []byte
}

func (s *lineSink) Write(r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r = r.Sanitized()
	b := s.buf[:0]
	switch s.format {
	case FormatText:
		b = r.Time.UTC().AppendFormat(b, TimeFormat)
		b = append(b, ' ')
		b = r.appendLine(b)
	case FormatGitHub:
		b = appendGitHubRecord(b, &r)
	default:
		b = r.appendJSON(b)
	}
	b = append(b, '\n')
	if cap(b) <= 64<<10 {
		s.buf = b
	}
	_, err := s.w.Write(b)
	return err
}

func (s *lineSink) Close() error { return s.w.Close() }

// appendGitHubRecord writes one ::warning workflow command for r, without
// the trailing newline.
func appendGitHubRecord(b []byte, r *Record) []byte {
	title := "sbx violation (" + orDefault(r.Kind, Unknown) + ")"
	return appendGitHubCommand(b, "warning", title, string(r.appendLine(nil)))
}

func appendGitHubCommand(b []byte, cmd, title, msg string) []byte {
	b = append(b, "::"...)
	b = append(b, cmd...)
	if title != "" {
		b = append(b, " title="...)
		b = append(b, EscapeGitHubProperty(title)...)
	}
	b = append(b, "::"...)
	return append(b, EscapeGitHubData(msg)...)
}

var (
	ghData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// EscapeGitHubData escapes the message of a workflow command as the Actions
// runner expects: % → %25, CR → %0D, LF → %0A.
func EscapeGitHubData(s string) string { return ghData.Replace(s) }

// EscapeGitHubProperty escapes a property value of a workflow command: as
// EscapeGitHubData, and also : → %3A and , → %2C.
func EscapeGitHubProperty(s string) string { return ghProperty.Replace(s) }
