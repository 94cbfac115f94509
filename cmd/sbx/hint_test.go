package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// TestHintTable: the one line after a failed command appears only when
// the sandbox is a likely cause (something recorded; 126 or 127 for a
// program the host has), names each recorded cause and what would allow
// it, the refusal most likely to have ended the command first, and counts
// distinct things.
func TestHintTable(t *testing.T) {
	home := "/nonexistent-sbx-home"
	proj := "/nonexistent-sbx-proj"
	base := func(observe string) *policy.Policy {
		p := &policy.Policy{ObserveFiles: observe}
		p.Process.Home = home
		p.Process.Dir = proj
		p.Process.Argv = []string{"/bin/sh", "-c", "x"}
		p.Filesystem.AllowWrite = []string{home + "/out"}
		return p
	}
	declared := base("")
	declared.Filesystem.DenyRead = []string{"/"}
	weaker := base("")
	weaker.WeakerNested = true
	missing := base("")
	missing.Process.Argv = []string{"/nonexistent-sbx-tool"}
	type recs []violations.Record
	net := func(host string, port int, rule string) violations.Record {
		return violations.Record{Kind: violations.KindNetwork, Host: host, Port: port, Rule: rule}
	}
	write := func(path string) violations.Record {
		return violations.Record{Kind: violations.KindFileWrite, Path: path, Rule: "filesystem: writes only under allowWrite and /tmp"}
	}
	read := func(path string) violations.Record {
		return violations.Record{Kind: violations.KindFileRead, Path: path, Rule: "denyRead: " + path}
	}
	pty := violations.Record{Kind: violations.KindFileWrite, Path: "/dev/ptmx", Rule: violations.RuleAllowPty}
	npmLogs := recs{write(home + "/.npm/_logs"), write(home + "/.npm/_logs/1-debug-0.log"), write(home + "/.npm/_logs/1-debug-0.log"), write(home + "/.npm/_logs/2-debug-0.log")}
	nyc := write(proj + "/.nyc_output")
	sixHosts := recs{}
	for _, h := range []string{"a", "b", "c", "d", "e", "f", "a", "b"} {
		sixHosts = append(sixHosts, net(h+".example", 443, "default-deny"))
	}
	many := recs{}
	for i := range maxRefusals + 5 {
		many = append(many, net(fmt.Sprintf("h%d.example", i), 443, "default-deny"))
	}
	for _, c := range []struct {
		name    string
		p       *policy.Policy
		code    int
		recs    recs
		dropped int
		want    []string // substrings of the line, in order
		without []string
	}{
		// Silent: success, sbx's own statuses, the command's own failures.
		{"success", base(""), 0, recs{net("a.example", 443, "default-deny")}, 0, nil, nil},
		{"timeout", base(""), 124, recs{net("a.example", 443, "default-deny")}, 0, nil, nil},
		{"sbx failed", base(""), 125, nil, 0, nil, nil},
		{"false", base(""), 1, nil, 0, nil, nil},
		{"exit 3", base(""), 3, nil, 0, nil, nil},
		{"Ctrl-C", base(""), 130, nil, 0, nil, nil},
		{"end of an interactive shell", base(""), 2, nil, 0, nil, nil},
		{"nothing recorded, writes observed", base("writes"), 1, nil, 0, nil, nil},
		{"a read denial not recorded", base(""), 1, nil, 0, nil, nil},
		{"only dropped", base(""), 1, nil, 3, nil, nil},
		{"only probes", base(""), 1, recs{{Kind: violations.KindSyscall, Syscall: "io_uring_setup", Probe: true}}, 0, nil, nil},
		// The statuses a sandbox typically causes, nothing recorded.
		{"127", base(""), 127, nil, 0,
			[]string{"sbx: the command exited 127 (not found): a program or file it needs may be absent in the sandbox (masked", "--dry-run"}, []string{"read-only", "writes"}},
		{"127 under --reads declared", declared, 127, nil, 0,
			[]string{"exited 127 (not found)", "outside the declared reads"}, nil},
		{"127 for a command the host lacks too", missing, 127, nil, 0, nil, nil},
		{"126", base(""), 126, nil, 0,
			[]string{"sbx: the command exited 126 (not executable)", "masked file"}, nil},
		// The weaker mode has no view, no placeholders, no private /tmp.
		{"126 under --weaker-nested", weaker, 126, nil, 0,
			[]string{"sbx: the command exited 126 (not executable): under --weaker-nested, Landlock refuses", "denyRead"}, []string{"placeholder", "private", "/tmp"}},
		{"127 under --weaker-nested", weaker, 127, nil, 0, nil, nil},
		{"a failed write under --weaker-nested", weaker, 2, nil, 0, nil, nil},
		// Recorded causes.
		{"refused host", base(""), 6, recs{net("registry.example", 443, "default-deny")}, 0,
			[]string{"sbx: the command exited 6 after 1 refused host: registry.example:443 (--allow-domain registry.example)"}, []string{"read-only"}},
		{"refused host then Ctrl-C", base(""), 130, recs{net("registry.example", 443, "default-deny")}, 0,
			[]string{"exited 130 after 1 refused host"}, nil},
		{"refused IPv6 literal", base(""), 7, recs{net("::1", 8080, "default-deny")}, 0,
			[]string{"[::1]:8080 (--allow-domain [::1])"}, nil},
		{"two refused hosts, one twice", base(""), 1, recs{net("a.example", 443, "default-deny"), net("a.example", 443, "default-deny"), net("b.example", 80, "default-deny")}, 0,
			[]string{"2 refused hosts: b.example:80 (--allow-domain b.example), a.example:443 (--allow-domain a.example)"}, []string{"more"}},
		{"eight refusals of six hosts", base(""), 1, sixHosts, 0,
			[]string{"after 6 refused hosts: ", " and 3 more (see --violations)"}, []string{"8 refused"}},
		{"more distinct hosts than kept", base(""), 1, many, 0,
			[]string{fmt.Sprintf("after at least %d refused hosts: ", maxRefusals), " and more (see --violations)"}, nil},
		{"denied host", base(""), 1, recs{net("evil.example", 443, "*.example")}, 0,
			[]string{"evil.example:443 (denied by *.example)"}, []string{"--allow-domain"}},
		{"address guard", base(""), 1, recs{net("intranet.example", 443, "address-guard")}, 0,
			[]string{"intranet.example:443 (its address is refused"}, nil},
		{"missing pty", base("writes"), 1, recs{pty}, 0,
			[]string{"sbx: the command exited 1 after finding no pseudo-terminal: /dev/ptmx is absent unless --allow-pty"}, []string{"refused write", "read-only"}},
		{"refused write", base("writes"), 1, recs{write("/etc/x")}, 0,
			[]string{"after 1 refused write: /etc/x (--allow-write /etc)"}, []string{"read-only file system"}},
		{"refused read", base("reads"), 1, recs{read(home + "/.ssh/id")}, 0,
			[]string{"1 refused read: ~/.ssh/id (denyRead: " + home + "/.ssh/id)"}, []string{"writes were allowed", "read-only file system"}},
		{"refused unix socket", base(""), 1, recs{{Kind: violations.KindUnixSocket, Path: "/run/docker.sock"}}, 0,
			[]string{"1 refused Unix socket: /run/docker.sock (--allow-unix-socket /run/docker.sock)"}, nil},
		{"refused syscall", base(""), 1, recs{{Kind: violations.KindSyscall, Syscall: "unshare", Detail: "CLONE_NEWUSER"}}, 0,
			[]string{"1 refused system call: unshare CLONE_NEWUSER (never allowed in the sandbox)"}, []string{"read-only"}},
		{"the same write twice", base("writes"), 1, recs{write("/etc/x"), write("/etc/x")}, 0,
			[]string{"after 1 refused write: /etc/x (--allow-write /etc)"}, []string{"more"}},
		// Ranked: the likely end of the command first.
		{"host, pty and write: the latest first", base("writes"), 2, recs{write("/etc/x"), pty, net("a.example", 443, "default-deny")}, 0,
			[]string{"after 1 refused host: a.example:443", "; finding no pseudo-terminal", "; 1 refused write: /etc/x"}, nil},
		{"the fatal mkdir above the npm logs", base("writes"), 1, append(append(recs{}, npmLogs...), nyc), 0,
			[]string{"after 4 refused writes: " + proj + "/.nyc_output (--allow-write " + proj + "), ~/.npm/_logs"}, nil},
		{"the fatal mkdir above npm logs written after it", base("writes"), 1, append(append(recs{nyc}, npmLogs...), write(home+"/.npm/_logs/3-debug-0.log")), 0,
			[]string{"after 5 refused writes: " + proj + "/.nyc_output (", "~/.npm/_logs", " and 2 more (see --violations)"}, nil},
		{"a log file ranks below a read", base("all"), 1, recs{read(home + "/.ssh/id"), write("/var/log/tool.log")}, 0,
			[]string{"after 1 refused read: ~/.ssh/id", "; 1 refused write: /var/log/tool.log"}, nil},
		// No network: the hint names the flags that open one.
		{"net none: an address", base(""), 1, recs{net("192.0.2.1", 443, violations.RuleNetNone)}, 0,
			[]string{"1 refused host: 192.0.2.1:443 (no network: --allow-domain 192.0.2.1, or --allow-registry NAME for a package registry)"}, []string{"denied by", "read-only"}},
		{"net none: a lookup whose name is unknown", base(""), 1, recs{net("10.0.0.2", 53, violations.RuleNetNone)}, 0,
			[]string{"a name lookup through 10.0.0.2:53 (no network: --allow-domain HOST, or --allow-registry NAME"}, nil},
		{"net none: a named lookup under a preset", func() *policy.Policy {
			p := base("")
			p.Sources = []policy.Source{{List: "allowWrite", Entry: home + "/go/pkg/mod", From: "preset go"}}
			return p
		}(), 1, recs{net("proxy.golang.org", 0, violations.RuleNetNone)}, 0,
			[]string{"proxy.golang.org (no network: --allow-domain proxy.golang.org, or --allow-registry go)"}, []string{"NAME"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tap := newHintTap()
			sum := violations.Summary{ByKind: map[string]int{}, Dropped: c.dropped}
			for _, r := range c.recs {
				tap.Write(r)
				if !r.Probe {
					sum.Total++
					sum.ByKind[r.Kind]++
				}
			}
			got := writeHint(c.p, c.code, sum, tap)
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
