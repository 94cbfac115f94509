//go:build linux

package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/violations"
)

// TestNetNoneRecordsConnects: under the default --net none a connect or
// a datagram to an address other than loopback is a network record with
// the address, a DNS query's name when the datagram holds one, and
// --fail-on-violation counts them; the sandbox's own loopback makes no
// record, except a lookup through it that nothing inside answers.
//
// Why this test sends nothing anywhere, even with sbx broken: the probe
// (internal/attack netnone) reads /proc/net/dev first and sends nothing
// unless its network namespace holds the loopback interface alone, where
// no packet can leave whatever the address; and the address, 192.0.2.1,
// is TEST-NET-1 (RFC 5737), reserved for documentation and routed nowhere.
// The name asked, sbx-lookup.test, is under the reserved .test domain.
func TestNetNoneRecordsConnects(t *testing.T) {
	vf := filepath.Join(t.TempDir(), "v.jsonl")
	r := sbx(t, runOpts{}, "--violations", vf, "--fail-on-violation", "--", attackBin, "netnone", "192.0.2.1", "sbx-lookup.test")
	wantCode(t, r, 123)
	want(t, r, "udp connect 192.0.2.1:53", "ENETUNREACH")
	want(t, r, "udp sendto 192.0.2.1:53", "ENETUNREACH")
	want(t, r, "udp sendto 127.0.0.1:53", "OK")
	recs := readRecords(t, vf)
	type key struct{ syscall, host, via string }
	got := map[key]bool{}
	for _, g := range recs {
		if g.Kind != violations.KindNetwork || g.Rule != violations.RuleNetNone || g.Exe != attackBin {
			t.Errorf("record: %+v", g)
		}
		via := ""
		if strings.Contains(g.Detail, "127.0.0.1:53") {
			via = "lo"
		}
		got[key{g.Syscall, g.Host, via}] = true
	}
	// The TCP connect and the two lookups through 192.0.2.1, and the two
	// lookups through 127.0.0.1:53, where nothing inside serves DNS (a
	// host whose resolv.conf names 127.0.0.53); not the TCP connect to
	// the sandbox's own loopback.
	for _, k := range []key{
		{"connect", "192.0.2.1", ""}, {"sendto", "sbx-lookup.test", ""},
		{"connect", "127.0.0.1", "lo"}, {"sendto", "sbx-lookup.test", "lo"},
	} {
		if !got[k] {
			t.Errorf("no record %+v in %+v", k, recs)
		}
	}
	if len(recs) != 5 {
		t.Fatalf("want 5 records (connects to 192.0.2.1:443 and :53, its DNS query, and the two lookups through the loopback), got %+v\n%s", recs, r)
	}
	for _, g := range recs {
		if g.Host == "127.0.0.1" && g.Port != 53 {
			t.Errorf("a loopback connect was recorded: %+v", g)
		}
	}

	// A failing run's hint names the way to allow the network; with a
	// preset, its registry. (The probe lies in the host's /tmp, which
	// the view binds in for the command itself only: named here.)
	r = sbx(t, runOpts{}, "--preset", "go", "--allow-read", attackBin, "--", "/bin/sh", "-c", attackBin+" netnone 192.0.2.1 sbx-lookup.test; exit 3")
	wantCode(t, r, 3)
	want(t, r, "udp sendto 192.0.2.1:53", "ENETUNREACH")
	h := sbxHint(r.stderr)
	for _, w := range []string{"sbx-lookup.test", "--allow-domain sbx-lookup.test", "--allow-registry go", "no network"} {
		if !strings.Contains(h, w) {
			t.Errorf("hint lacks %q: %q", w, h)
		}
	}
}

// TestReadsDeclaredRecordsUndeclared: under --reads declared with the
// reads observed, a read of a host file left out of the view is a
// file-read record naming it, and --fail-on-violation fails the run even
// though the script caught the error; a declared read, and a read of a
// file the host lacks too, record nothing.
func TestReadsDeclaredRecordsUndeclared(t *testing.T) {
	proj := t.TempDir()
	writeFile(t, filepath.Join(proj, "notes", "todo.txt"), "undeclared\n")
	writeFile(t, filepath.Join(proj, "decl.txt"), "declared\n")
	o := runOpts{dir: proj}

	vf := filepath.Join(t.TempDir(), "v.jsonl")
	r := sh(t, o, "cat notes/todo.txt 2>/dev/null || echo caught",
		"--reads", "declared", "--observe-files", "all", "--fail-on-violation", "--violations", vf)
	wantCode(t, r, 123)
	if !strings.Contains(r.stdout, "caught") || strings.Contains(r.stdout, "undeclared") {
		t.Fatalf("the undeclared file was readable: %s", r)
	}
	recs := readRecords(t, vf)
	todo := filepath.Join(proj, "notes", "todo.txt")
	found := false
	for _, g := range recs {
		if g.Kind == violations.KindFileRead && g.Resolved == todo && g.Path == "notes/todo.txt" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no file-read record of %s: %+v\n%s", todo, recs, r)
	}
	if !strings.Contains(r.stderr, todo) {
		t.Errorf("the summary does not name %s: %s", todo, r)
	}

	// Declared: read, and nothing recorded; a file missing on the host
	// as well is the kernel's ENOENT, not a refusal.
	os.Remove(vf)
	r = sh(t, o, "cat decl.txt && cat missing.txt 2>/dev/null; true",
		"--reads", "declared", "--allow-read", filepath.Join(proj, "decl.txt"), "--observe-files", "reads", "--fail-on-violation", "--violations", vf)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "declared") {
		t.Fatalf("the declared file was not read: %s", r)
	}
	if recs := readRecords(t, vf); len(recs) != 0 {
		t.Fatalf("records for a declared read: %+v", recs)
	}
}

// TestRefusalsNameTheirRule: a refused read, write, host (through the
// proxy and under --net none), Unix socket, system call and limit each
// make a record whose rule is the policy entry or default that refused
// it. The limit is --file-size, an rlimit, so that it is seen as root
// and unprivileged alike.
func TestRefusalsNameTheirRule(t *testing.T) {
	w, o := observeSetup(t)
	sockDir := t.TempDir()
	other := filepath.Join(sockDir, "other.sock")
	l, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(other, 0o777)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	allowed := filepath.Join(sockDir, "allowed.sock")
	writeFile(t, allowed, "")
	curl := needTool(t, "curl")
	s, _ := httpServer(t, false)
	hp := hostPort(t, s.URL)

	for _, c := range []struct {
		name       string
		flags      []string
		argv       []string
		kind, rule string
	}{
		{"read", []string{"--observe-files", "reads", "--allow-read", o, "--deny-read", o + "/denied.txt"},
			[]string{"/bin/cat", o + "/denied.txt"}, "file-read", "denyRead: " + o + "/denied.txt"},
		{"write", []string{"--observe-files", "writes", "--allow-write", w, "--allow-read", o},
			[]string{"/bin/sh", "-c", `echo x > "$0/new"`, o}, "file-write", "filesystem: writes only under allowWrite and /tmp"},
		{"write to a protected name", []string{"--observe-files", "writes", "--allow-write", w},
			[]string{"/bin/rm", "-f", ".git/config"}, "file-write", "protected .git/config: " + w + "/.git/config"},
		{"host", []string{"--allow-domain", hp},
			[]string{curl, "-s", "-o", "/dev/null", "http://other.example:8080/"}, "network", "default-deny"},
		{"host under --net none", nil,
			[]string{attackBin, "netnone", "192.0.2.1", "sbx-lookup.test"}, "network", "net-none"},
		{"unix socket", append([]string{"--allow-read", sockDir, "--allow-unix-socket", allowed}, probeDir()...),
			[]string{attackBin, "unix", other}, "unix-socket", "network.allowUnixSockets"},
		{"system call", nil,
			[]string{attackBin, "deny", "ptrace"}, "syscall", "seccomp: ptrace"},
		{"limit", []string{"--file-size", "1M", "--timeout", "30s"},
			[]string{"/bin/dd", "if=/dev/zero", "of=/tmp/f", "bs=64k", "count=48"}, "limit", "--file-size 1M"},
	} {
		t.Run(c.name, func(t *testing.T) {
			vf := filepath.Join(t.TempDir(), "v.jsonl")
			r := sbx(t, runOpts{dir: w}, append(append(c.flags, "--violations", vf, "--"), c.argv...)...)
			recs := readRecords(t, vf)
			found := false
			for _, g := range recs {
				if g.Rule == "" {
					t.Errorf("a record without its rule: %+v", g)
				}
				found = found || g.Kind == c.kind && g.Action == "deny" && g.Rule == c.rule
			}
			if !found {
				t.Fatalf("no %s record with rule %q: %+v\n%s", c.kind, c.rule, recs, r)
			}
		})
	}
}
