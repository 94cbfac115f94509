//go:build linux || darwin

package violations

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func readLines(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	return recs
}

func TestFileSinkCreateAndAppend(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "violations.jsonl")
	for run, n := range []int{2, 3} {
		s, err := FileSink(path)
		if err != nil {
			t.Fatal(err)
		}
		c := New(Options{Command: "run " + string(rune('A'+run)), Sinks: []Sink{s}})
		for i := range n {
			c.Add(Record{Kind: KindFileWrite, Source: SourceLandlock, Path: "/p", PID: i})
		}
		if sum := c.Close(); sum.SinkErr != nil || sum.Total != n {
			t.Fatalf("run %d: %+v", run, sum)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("run %d: mode %v, want 0600", run, perm)
		}
	}
	recs := readLines(t, path)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5 (appended)", len(recs))
	}
	if recs[0].Command != "run A" || recs[4].Command != "run B" || recs[4].PID != 2 {
		t.Errorf("records %+v", recs)
	}
}

func TestFileSinkModes(t *testing.T) {
	dir := t.TempDir()

	// An existing file keeps its mode, broader or narrower.
	for _, mode := range []fs.FileMode{0o644, 0o400 | 0o200} {
		p := filepath.Join(dir, "existing"+mode.String())
		if err := os.WriteFile(p, []byte("{}\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		s, err := FileSink(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Write(Record{Time: fixedNow, Kind: KindNetwork})
		s.Close()
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != mode {
			t.Errorf("mode %v changed to %v", mode, fi.Mode().Perm())
		}
		b, _ := os.ReadFile(p)
		if !strings.HasPrefix(string(b), "{}\n{\"time\"") {
			t.Errorf("not appended: %q", b)
		}
	}

	// A symbolic link is refused, and its target untouched.
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := FileSink(link); err == nil || !errors.Is(err, syscall.ELOOP) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlink: %v", err)
	}

	// A FIFO with no reader is an error, not a hang.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := FileSink(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("FIFO without reader accepted")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("FileSink hangs on a FIFO without a reader")
	}

	// Directories and missing parents fail.
	if _, err := FileSink(dir); err == nil {
		t.Error("directory accepted")
	}
	if _, err := FileSink(filepath.Join(dir, "no", "such")); err == nil {
		t.Error("missing parent accepted")
	}
	if _, err := FileSink(""); err == nil {
		t.Error("empty name accepted")
	}
}

func TestOpenFileText(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v.txt")
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSink(f, "text")
	if err != nil {
		t.Fatal(err)
	}
	s.Write(Record{Time: fixedNow, Kind: KindFileRead, Action: ActionDeny, Path: "/secret"})
	s.Close()
	b, _ := os.ReadFile(p)
	if want := "2025-03-01T12:00:00.123456789Z file-read deny /secret\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

func TestFDSink(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := int(w.Fd())
	s, err := FDSink(fd, "github")
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Sinks: []Sink{s}})
	c.Add(Record{Kind: KindSyscall, Source: SourceSeccomp, Syscall: "ptrace", PID: 3})
	if sum := c.Close(); sum.SinkErr != nil || sum.Total != 1 {
		t.Fatalf("%+v", sum)
	}
	// The caller's descriptor is still open and usable.
	if _, err := w.Write([]byte("after\n")); err != nil {
		t.Fatalf("fd closed by the sink: %v", err)
	}
	w.Close()
	b, _ := io.ReadAll(r)
	want := "::warning title=sbx violation (syscall)::syscall deny ptrace pid 3\nafter\n"
	if string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

func TestFDSinkStderrSurvives(t *testing.T) {
	s, err := FDSink(2, "text")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(2, unix.F_GETFL, 0); err != nil {
		t.Fatalf("fd 2 closed: %v", err)
	}
}

func TestFDSinkErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ro")
	os.WriteFile(p, nil, 0o600)
	ro, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()

	closed, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	closedFD := int(closed.Fd())
	closed.Close()

	tests := []struct {
		name   string
		fd     int
		format string
		want   string
	}{
		{"negative", -1, "json", "not a descriptor"},
		{"not open", closedFD, "json", "bad file descriptor"},
		{"read only", int(ro.Fd()), "json", "not open for writing"},
		{"bad format", 2, "csv", `"csv"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FDSink(tt.fd, tt.format)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FDSink(%d, %q) = %v, want %q", tt.fd, tt.format, err, tt.want)
			}
		})
	}
}
