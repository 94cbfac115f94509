//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/violations"
)

// readRecords reads a --violations file.
func readRecords(t *testing.T, path string) []violations.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []violations.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r violations.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad record %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestViolationsNetwork: each proxy refusal is exactly one record with
// host, port and rule; an allowed request makes none.
func TestViolationsNetwork(t *testing.T) {
	curl := needTool(t, "curl")
	s, _ := httpServer(t, false)
	hp := hostPort(t, s.URL)
	vf := filepath.Join(t.TempDir(), "v.jsonl")

	r := sbx(t, runOpts{}, "--violations", vf, "--allow-domain", hp, "--deny-domain", "bad.example",
		"--", curl, "-s", "-o", "/dev/null", s.URL+"/fine", "http://bad.example/", "http://other.example:8080/")
	wantCode(t, r, 0)
	recs := readRecords(t, vf)
	if len(recs) != 2 {
		t.Fatalf("want 2 records, got %d: %+v\n%s", len(recs), recs, r)
	}
	want := []struct {
		host string
		port int
		rule string
	}{{"bad.example", 80, "bad.example"}, {"other.example", 8080, "default-deny"}}
	for i, w := range want {
		got := recs[i]
		if got.Kind != "network" || got.Action != "deny" || got.Source != "proxy" || got.Host != w.host || got.Port != w.port || got.Rule != w.rule || got.Time.IsZero() || !strings.Contains(got.Command, "sbx ") {
			t.Errorf("record %d: %+v, want host %s port %d rule %s", i, got, w.host, w.port, w.rule)
		}
	}
	st, err := os.Stat(vf)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("violations file mode: %v %v", st.Mode(), err)
	}
	if !strings.Contains(r.stderr, "2 violations") {
		t.Errorf("no summary on stderr: %s", r)
	}

	// Appended, not truncated; --quiet-violations silences the summary;
	// --fail-on-violation turns a clean exit into 123.
	r = sbx(t, runOpts{}, "--violations", vf, "--quiet-violations", "--fail-on-violation", "--allow-domain", hp,
		"--", curl, "-s", "-o", "/dev/null", "http://bad.example/")
	wantCode(t, r, ExitViolation)
	if r.stderr != "" {
		t.Errorf("--quiet-violations printed: %q", r.stderr)
	}
	if n := len(readRecords(t, vf)); n != 3 {
		t.Fatalf("want 3 records after appending, got %d", n)
	}

	// A clean run: no records, no summary, exit 0 even with
	// --fail-on-violation.
	clean := filepath.Join(t.TempDir(), "clean.jsonl")
	r = sbx(t, runOpts{}, "--violations", clean, "--fail-on-violation", "--allow-domain", hp, "--", curl, "-sS", "-o", "/dev/null", s.URL+"/ok")
	wantCode(t, r, 0)
	if n := len(readRecords(t, clean)); n != 0 || r.stderr != "" {
		t.Fatalf("clean run reported %d records: %s", n, r)
	}

	// ignoreViolations from a settings file.
	set := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, set, `{"network":{"allowedDomains":["`+hp+`"],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},"ignoreViolations":{"*":["ignored.example"]}}`)
	ign := filepath.Join(t.TempDir(), "ign.jsonl")
	r = sbx(t, runOpts{}, "--settings", set, "--violations", ign, "--", curl, "-s", "-o", "/dev/null", "http://ignored.example/", "http://seen.example/")
	wantCode(t, r, 0)
	recs = readRecords(t, ign)
	if len(recs) != 1 || recs[0].Host != "seen.example" {
		t.Fatalf("ignoreViolations: %+v", recs)
	}
}

func TestViolationsBadOptions(t *testing.T) {
	for _, bad := range [][]string{
		{"--violations-format", "xml"},
		{"--violations-fd", "97"},
		{"--violations", "/nonexistent-dir/v.jsonl"},
	} {
		r := sbx(t, runOpts{}, append(bad, "--", "/bin/echo", "ran")...)
		if r.code != 125 || strings.Contains(r.stdout, "ran") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%q: want 125 and one line: %s", bad, r)
		}
	}
}
