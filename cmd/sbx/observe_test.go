//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/violations"
)

// observeCase is one file operation under --observe-files: the shell
// command, whether the sandbox refuses it, and the record it must make.
type observeCase struct {
	name   string
	script string // run in the writable working directory w; $O is the read-only directory
	flags  []string
	// want is the record (kind, syscall, path, resolved, rule and detail
	// substrings); nil: the operation is allowed and makes no record.
	want *violations.Record
}

// observeSetup makes the working directory w (writable, with a .git
// holding a config), the directory o outside it (readable, not writable,
// holding f and secret/key), and a symbolic link w/out → o. Every write
// the tests try lands in these test-owned directories if the sandbox
// fails.
func observeSetup(t *testing.T) (w, o string) {
	t.Helper()
	w, o = t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(w, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(w, "mine.txt"), "mine\n")
	writeFile(t, filepath.Join(o, "f"), "f\n")
	writeFile(t, filepath.Join(o, "secret", "key"), "key\n")
	writeFile(t, filepath.Join(o, "denied.txt"), "denied\n")
	if err := os.Symlink(o, filepath.Join(w, "out")); err != nil {
		t.Fatal(err)
	}
	return w, o
}

func observeCases(o string) []observeCase {
	rec := func(kind, syscall, path, resolved, rule, detail string) *violations.Record {
		return &violations.Record{Kind: kind, Syscall: syscall, Path: path, Resolved: resolved, Rule: rule, Detail: detail}
	}
	return []observeCase{
		{"create outside allowWrite", `echo x > "$O/new"`, nil,
			rec("file-write", "openat", o+"/new", o+"/new", "allowWrite", "create: read-only")},
		{"through a symlink: path as given and as resolved", `touch out/new`, nil,
			rec("file-write", "openat", "out/new", o+"/new", "allowWrite", "create: read-only")},
		{"open an existing file for writing", `echo x >> "$O/f"`, nil,
			rec("file-write", "openat", o+"/f", o+"/f", "allowWrite", "write: read-only")},
		{"truncate", `truncate -s 0 "$O/f"`, nil,
			rec("file-write", "openat", o+"/f", o+"/f", "allowWrite", "write: read-only")},
		{"mkdir", `mkdir "$O/d"`, nil,
			rec("file-write", "mkdir", o+"/d", o+"/d", "allowWrite", "create: read-only")},
		{"unlink", `rm -f "$O/f"`, nil,
			rec("file-write", "unlink", o+"/f", o+"/f", "allowWrite", "remove: read-only")},
		{"rename in a read-only directory", `mv "$O/f" "$O/g"`, nil,
			rec("file-write", "rename", o+"/f", o+"/f", "allowWrite", "remove: read-only")},
		{"hard link into a read-only directory", `ln mine.txt "$O/hard"`, nil,
			rec("file-write", "link", o+"/hard", o+"/hard", "allowWrite", "create: read-only")},
		{"symlink", `ln -s mine.txt "$O/sym"`, nil,
			rec("file-write", "symlink", o+"/sym", o+"/sym", "allowWrite", "create: read-only")},
		{"chmod", `chmod 600 "$O/f"`, nil,
			rec("file-write", "chmod|fchmodat", o+"/f", o+"/f", "allowWrite", "write: read-only")},
		{"create a protected name that does not exist", `echo x > .mcp.json`, nil,
			rec("file-write", "openat", ".mcp.json", "/.mcp.json", ".mcp.json", "read-only")},
		{"remove a protected file", `rm -f .git/config`, nil,
			rec("file-write", "unlink", ".git/config", "/.git/config", ".git/config", "remove: mount point")},
		{"rename a protected path's parent", `mv .git moved`, nil,
			rec("file-write", "rename", ".git", "/.git", "protected", "remove: mount point")},
		{"read a denied file", `cat "$O/denied.txt"`, []string{"--deny-read", filepath.Join(o, "denied.txt")},
			rec("file-read", "openat", o+"/denied.txt", o+"/denied.txt", "denyRead", "read: masked")},
		{"read inside a denied directory", `cat "$O/secret/key"`, []string{"--deny-read", filepath.Join(o, "secret")},
			rec("file-read", "openat", o+"/secret/key", o+"/secret/key", "denyRead", "read: masked")},
		{"list a denied directory", `ls "$O/secret"`, []string{"--deny-read", filepath.Join(o, "secret")},
			rec("file-read", "openat", o+"/secret", o+"/secret", "denyRead", "read: masked")},
		{"write inside a denied directory", `echo x > "$O/secret/new"`, []string{"--deny-read", filepath.Join(o, "secret")},
			rec("file-write", "openat", o+"/secret/new", o+"/secret/new", "denyRead", "masked")},
		// Allowed: no record.
		{"write in the working directory", `echo x > new.txt && mkdir d && mv new.txt d/ && rm -r d && chmod 600 mine.txt`, nil, nil},
		{"write in /tmp", `echo x > /tmp/x && rm /tmp/x`, nil, nil},
		{"read outside", `cat "$O/f" /etc/hostname > /dev/null`, nil, nil},
		{"write to /dev/null", `echo x > /dev/null`, nil, nil},
		{"an ordinary failure is not sbx's", `cat "$O/missing"; mkdir mine.txt; true`, nil, nil},
	}
}

// TestObserveFiles: with --observe-files all, each refused file operation
// fails in the command and makes exactly one record with the path as
// given and as resolved, the syscall and the rule; allowed operations
// (and ordinary failures) make none.
func TestObserveFiles(t *testing.T) {
	for _, c := range observeCases("$O") {
		t.Run(c.name, func(t *testing.T) {
			w, o := observeSetup(t)
			vf := filepath.Join(t.TempDir(), "v.jsonl")
			flags := append([]string{"--observe-files", "all", "--violations", vf, "--allow-write", w, "--allow-read", o}, c.flags...)
			for i := range flags {
				flags[i] = strings.ReplaceAll(flags[i], "$O", o)
			}
			r := sbx(t, runOpts{dir: w, env: append(os.Environ(), "O="+o)}, append(flags, "--", "/bin/sh", "-c", c.script)...)
			recs := readRecords(t, vf)
			if c.want == nil {
				if r.code != 0 || len(recs) != 0 {
					t.Fatalf("allowed: want exit 0 and no record, got %s\nrecords: %+v", r, recs)
				}
				return
			}
			if r.code == 0 {
				t.Fatalf("the operation was not refused: %s", r)
			}
			if len(recs) != 1 {
				t.Fatalf("want exactly 1 record, got %d: %+v\n%s", len(recs), recs, r)
			}
			g, x := recs[0], c.want
			x.Path = strings.ReplaceAll(x.Path, "$O", o)
			x.Resolved = strings.ReplaceAll(x.Resolved, "$O", o)
			if strings.HasPrefix(x.Resolved, "/.") {
				x.Resolved = w + x.Resolved // a name in the working directory
			}
			if g.Kind != x.Kind || g.Source != "observer" || g.Action != "deny" || !syscallIs(g.Syscall, x.Syscall) ||
				g.Path != x.Path || g.Resolved != x.Resolved || !strings.Contains(g.Rule, x.Rule) || !strings.Contains(g.Detail, x.Detail) ||
				g.PID == 0 || g.Exe == "" {
				t.Fatalf("record:\n got %+v\nwant %+v", g, *x)
			}
			if _, err := os.Stat(filepath.Join(o, "f")); err != nil {
				t.Fatalf("a refused operation changed the read-only directory: %v", err)
			}
		})
	}
}

// TestObserveFilesModes checks what docs/violations.md says each mode sees: by
// default no file records at all; "writes" the refused write and not
// the refused read; "reads" the read and not the write; "all" both.
func TestObserveFilesModes(t *testing.T) {
	for _, m := range []struct {
		mode        string
		read, write bool
	}{{"", false, false}, {"writes", false, true}, {"reads", true, false}, {"all", true, true}} {
		t.Run("mode="+m.mode, func(t *testing.T) {
			w, o := observeSetup(t)
			vf := filepath.Join(t.TempDir(), "v.jsonl")
			flags := []string{"--violations", vf, "--allow-write", w, "--allow-read", o, "--deny-read", filepath.Join(o, "secret")}
			if m.mode != "" {
				flags = append(flags, "--observe-files", m.mode)
			}
			r := sh(t, runOpts{dir: w}, `cat "`+o+`/secret/key"; echo x > "`+o+`/new"; echo x > ok; true`, flags...)
			wantCode(t, r, 0)
			var reads, writes int
			for _, g := range readRecords(t, vf) {
				switch g.Kind {
				case "file-read":
					reads++
				case "file-write":
					writes++
				default:
					t.Errorf("unexpected record %+v", g)
				}
			}
			if reads != b2i(m.read) || writes != b2i(m.write) {
				t.Fatalf("mode %q: %d read and %d write records, want %d and %d", m.mode, reads, writes, b2i(m.read), b2i(m.write))
			}
		})
	}
}

// syscallIs: got is one of the "|"-separated names in want, or its *at
// or *at2 form (coreutils and libc pick either).
func syscallIs(got, want string) bool {
	for _, w := range strings.Split(want, "|") {
		if got == w || got == w+"at" || got == w+"at2" {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestObserveFilesBadInput: a bad mode, or the observer with the weaker
// mode (no supervisor to observe), is refused before anything runs.
func TestObserveFilesBadInput(t *testing.T) {
	wantRefused(t, []string{"--observe-files", "everything"}, []string{"--observe-files", "all", "--weaker-nested"})
}

// TestObserveFilesNotSeen checks docs/violations.md's "not recorded" column for
// reads: a stat, an access check and an exec of a masked path fail in
// the command, and make no record even under --observe-files all (they
// are not opens). If sbx starts to observe them, update docs/violations.md.
func TestObserveFilesNotSeen(t *testing.T) {
	w, o := observeSetup(t)
	vf := filepath.Join(t.TempDir(), "v.jsonl")
	key := filepath.Join(o, "secret", "key")
	r := sh(t, runOpts{dir: w}, `stat "`+key+`" >/dev/null 2>&1 && echo stat-ok; test -e "`+key+`" && echo exists; "`+key+`" 2>/dev/null; echo done`,
		"--observe-files", "all", "--violations", vf, "--allow-write", w, "--allow-read", o, "--deny-read", filepath.Join(o, "secret"))
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "stat-ok") || strings.Contains(r.stdout, "exists") || !strings.Contains(r.stdout, "done") {
		t.Fatalf("the masked directory was reachable: %s", r)
	}
	if recs := readRecords(t, vf); len(recs) != 0 {
		t.Fatalf("records docs/violations.md says are not made: %+v", recs)
	}
}
