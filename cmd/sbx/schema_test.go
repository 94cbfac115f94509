//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/violations/schema"
)

// recordLogPath is the file the test build of sbx appends every record
// of every run to (recordlog.go; TestMain links the path in).
var recordLogPath string

// checkRecordLog checks every record the suite's sbx runs wrote against
// violations/schema/record-v1.json, and reports each that fails on w.
func checkRecordLog(w io.Writer) bool {
	f, err := os.Open(recordLogPath)
	if os.IsNotExist(err) {
		return true // no run recorded anything
	}
	if err != nil {
		fmt.Fprintf(w, "record log: %v\n", err)
		return false
	}
	defer f.Close()
	s := schema.Record()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, bad := 0, 0
	for sc.Scan() {
		n++
		if err := s.CheckLine(sc.Bytes()); err != nil {
			if bad++; bad <= 20 {
				fmt.Fprintf(w, "FAIL: a record sbx wrote does not match violations/schema/record-v1.json: %v\n\t%s\n", err, sc.Text())
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "record log: %v\n", err)
		return false
	}
	if bad > 0 {
		fmt.Fprintf(w, "FAIL: %d of %d records sbx wrote do not match the schema\n", bad, n)
	} else if testing.Verbose() {
		fmt.Fprintf(w, "record log: the %d records sbx wrote match the schema\n", n)
	}
	return bad == 0
}

// checkRecordLine checks one line of a --violations file against the
// schema (readRecords calls it, so the test that reads a record says
// which record drifted).
func checkRecordLine(t *testing.T, line string) {
	t.Helper()
	if err := schema.Record().CheckLine([]byte(line)); err != nil {
		t.Errorf("record does not match violations/schema/record-v1.json: %v\n%s", err, line)
	}
}

// logged returns the lines of the record log that contain mark.
func logged(t *testing.T, mark string) []string {
	t.Helper()
	b, err := os.ReadFile(recordLogPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, mark) {
			out = append(out, l)
		}
	}
	return out
}

// TestEveryRecordIsChecked: the suite's check of every record cannot
// pass by seeing nothing. A run's records reach the record log in JSON
// whatever the run's own sinks — none, a text file, a JSON file — and the
// check at the end of the suite refuses a log with a drifted record.
func TestEveryRecordIsChecked(t *testing.T) {
	mark := fmt.Sprintf("sbx-schema-mark-%d", os.Getpid())
	dir := t.TempDir()
	for i, flags := range [][]string{
		nil,
		{"--violations", filepath.Join(dir, "v.txt"), "--violations-format", "text"},
		{"--violations", filepath.Join(dir, "v.jsonl")},
	} {
		m := fmt.Sprintf("%s-%d", mark, i)
		r := sbx(t, runOpts{}, append(flags, "--", attackBin, "deny", "ptrace", m)...)
		wantCode(t, r, 0)
		lines := logged(t, m)
		if len(lines) != 1 || !strings.Contains(lines[0], `"schema":1,"kind":"syscall"`) {
			t.Fatalf("flags %q: the record log holds %q", flags, lines)
		}
	}
	if recs := readRecords(t, filepath.Join(dir, "v.jsonl")); len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}

	var out bytes.Buffer
	if !checkRecordLog(&out) {
		t.Fatalf("the suite's records so far fail the schema:\n%s", out.String())
	}
	// A log with one drifted record fails, and names it.
	saved := recordLogPath
	defer func() { recordLogPath = saved }()
	good := logged(t, mark+"-0")[0]
	recordLogPath = filepath.Join(dir, "drifted.jsonl")
	writeFile(t, recordLogPath, good+"\n"+strings.Replace(good, `"kind":"syscall"`, `"kind":"syscal"`, 1)+"\n")
	out.Reset()
	if checkRecordLog(&out) || !strings.Contains(out.String(), `"syscal"`) || !strings.Contains(out.String(), "1 of 2") {
		t.Fatalf("a drifted record passed: %q", out.String())
	}
}
