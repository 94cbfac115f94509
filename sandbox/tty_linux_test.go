//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"sync/atomic"
	"testing"
)

// TestCRLFWriter: sbx's own messages return the carriage while the
// caller's terminal is raw (no output processing), and only then.
func TestCRLFWriter(t *testing.T) {
	var buf bytes.Buffer
	var raw atomic.Bool
	w := crlfWriter{w: &buf, raw: &raw}
	if n, err := w.Write([]byte("a\nb\n")); n != 4 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	raw.Store(true)
	if n, err := w.Write([]byte("c\nd\n")); n != 4 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if got, want := buf.String(), "a\nb\nc\r\nd\r\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
