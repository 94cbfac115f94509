package main

import (
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// TestHintTable: the one line after a failed command names each recorded
// cause and what would allow it; the generic read-only hint appears only
// when nothing was recorded and writes were not observed.
func TestHintTable(t *testing.T) {
	home := "/nonexistent-sbx-home"
	base := func(observe string) *policy.Policy {
		p := &policy.Policy{ObserveFiles: observe}
		p.Process.Home = home
		p.Filesystem.AllowWrite = []string{home + "/out"}
		return p
	}
	sum := func(recs ...violations.Record) violations.Summary {
		s := violations.Summary{ByKind: map[string]int{}, First: recs}
		for _, r := range recs {
			s.Total++
			s.ByKind[r.Kind]++
		}
		return s
	}
	net := func(host string, port int, rule string) violations.Record {
		return violations.Record{Kind: violations.KindNetwork, Host: host, Port: port, Rule: rule}
	}
	write := func(path string) violations.Record {
		return violations.Record{Kind: violations.KindFileWrite, Path: path, Rule: "filesystem: writes only under allowWrite and /tmp"}
	}
	pty := violations.Record{Kind: violations.KindFileWrite, Path: "/dev/ptmx", Rule: violations.RuleAllowPty}
	generic := "writes were allowed only in /tmp (private to the run), ~/out; if it failed on a read-only file system, rerun with --observe-files writes"
	for _, c := range []struct {
		name    string
		p       *policy.Policy
		code    int
		sum     violations.Summary
		want    []string // substrings of the line, in order
		without []string
	}{
		{"success", base(""), 0, sum(net("a.example", 443, "default-deny")), nil, nil},
		{"timeout", base(""), 124, sum(), nil, nil},
		{"nothing recorded", base(""), 1, sum(), []string{"sbx: the command exited 1; ", generic}, nil},
		{"nothing recorded, writes observed", base("writes"), 1, sum(), nil, nil},
		{"refused host", base(""), 6, sum(net("registry.example", 443, "default-deny")),
			[]string{"sbx: the command exited 6 after 1 refused host: registry.example:443 (--allow-domain registry.example)"}, []string{"read-only"}},
		{"refused IPv6 literal", base(""), 7, sum(net("::1", 8080, "default-deny")),
			[]string{"[::1]:8080 (--allow-domain [::1])"}, nil},
		{"two refused hosts, one twice", base(""), 1, sum(net("a.example", 443, "default-deny"), net("a.example", 443, "default-deny"), net("b.example", 80, "default-deny")),
			[]string{"3 refused hosts: a.example:443 (--allow-domain a.example), b.example:80 (--allow-domain b.example)"}, nil},
		{"denied host", base(""), 1, sum(net("evil.example", 443, "*.example")),
			[]string{"evil.example:443 (denied by *.example)"}, []string{"--allow-domain"}},
		{"address guard", base(""), 1, sum(net("intranet.example", 443, "address-guard")),
			[]string{"intranet.example:443 (its address is refused"}, nil},
		{"missing pty", base("writes"), 1, sum(pty),
			[]string{"sbx: the command exited 1 after finding no pseudo-terminal: /dev/ptmx is absent unless --allow-pty"}, []string{"refused write", "read-only"}},
		{"refused write", base("writes"), 1, sum(write("/etc/x")),
			[]string{"after 1 refused write: /etc/x (--allow-write /etc)"}, []string{"read-only file system"}},
		{"refused writes beyond the kept ones", base("writes"), 1, violations.Summary{Total: 9, ByKind: map[string]int{"file-write": 9}, First: []violations.Record{write("/etc/x")}},
			[]string{"9 refused writes: /etc/x (--allow-write /etc) and 8 more (see --violations)"}, nil},
		{"refused read", base("reads"), 1, sum(violations.Record{Kind: violations.KindFileRead, Path: home + "/.ssh/id", Rule: "denyRead: " + home + "/.ssh"}),
			[]string{"1 refused read: ~/.ssh/id (denyRead: " + home + "/.ssh)"}, nil},
		{"refused unix socket", base(""), 1, sum(violations.Record{Kind: violations.KindUnixSocket, Path: "/run/docker.sock"}),
			[]string{"1 refused Unix socket: /run/docker.sock (--allow-unix-socket /run/docker.sock)"}, nil},
		{"refused syscall", base(""), 1, sum(violations.Record{Kind: violations.KindSyscall, Syscall: "unshare", Detail: "CLONE_NEWUSER"}),
			[]string{"1 refused system call: unshare CLONE_NEWUSER (never allowed in the sandbox)"}, []string{"read-only"}},
		{"host, pty and write together", base("writes"), 2, sum(write("/etc/x"), pty, net("a.example", 443, "default-deny")),
			[]string{"after 1 refused host: a.example:443", "; finding no pseudo-terminal", "; 1 refused write: /etc/x"}, nil},
		{"the same write twice", base("writes"), 1, sum(write("/etc/x"), write("/etc/x")),
			[]string{"after 2 refused writes: /etc/x (--allow-write /etc)"}, []string{"more"}},
		{"hosts beyond the kept ones", base(""), 1, violations.Summary{Total: 4, ByKind: map[string]int{"network": 4}, First: []violations.Record{net("a.example", 443, "default-deny")}},
			[]string{"4 refused hosts: a.example:443 (--allow-domain a.example) and 3 more (see --violations)"}, nil},
		{"net none: an address", base(""), 1, sum(net("192.0.2.1", 443, violations.RuleNetNone)),
			[]string{"1 refused host: 192.0.2.1:443 (no network: --allow-domain 192.0.2.1, or --allow-registry NAME for a package registry)"}, []string{"denied by", "read-only"}},
		{"net none: a lookup whose name is unknown", base(""), 1, sum(net("10.0.0.2", 53, violations.RuleNetNone)),
			[]string{"a name lookup through 10.0.0.2:53 (no network: --allow-domain HOST, or --allow-registry NAME"}, nil},
		{"net none: a named lookup under a preset", func() *policy.Policy {
			p := base("")
			p.Sources = []policy.Source{{List: "allowWrite", Entry: home + "/go/pkg/mod", From: "preset go"}}
			return p
		}(), 1, sum(net("proxy.golang.org", 0, violations.RuleNetNone)),
			[]string{"proxy.golang.org (no network: --allow-domain proxy.golang.org, or --allow-registry go)"}, []string{"NAME"}},
		{"only dropped", base(""), 1, violations.Summary{Dropped: 3, ByKind: map[string]int{}}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := writeHint(c.p, c.code, c.sum)
			if c.want == nil {
				if got != "" {
					t.Fatalf("want no hint, got %q", got)
				}
				return
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("not one line: %q", got)
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("want %q (in order) in %q", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range c.without {
				if strings.Contains(got, w) {
					t.Fatalf("%q should not be in %q", w, got)
				}
			}
		})
	}
}
