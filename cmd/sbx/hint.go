package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// writeHint is the one stderr line sbx adds when the command failed:
// it names what the sandbox refused and recorded, and what would allow
// each — a host and the --allow-domain for it, a pty and --allow-pty, a
// write's path and its flag, a read, a Unix socket, a system call. When
// nothing was recorded, and writes were not observed, a refused write
// may still be why (a tool's EROFS stack trace names no flag): the line
// then says where writes were allowed and how to see what was refused.
// It returns "" when the command succeeded or died of sbx's own status
// (124-127), and when writes were observed and nothing at all was
// refused.
func writeHint(p *policy.Policy, code int, sum violations.Summary) string {
	if code == 0 || code >= 124 && code <= 127 {
		return ""
	}
	if parts := causes(p, sum); len(parts) > 0 {
		return fmt.Sprintf("sbx: the command exited %d after %s", code, strings.Join(parts, "; "))
	}
	if sum.Total > 0 || sum.Dropped > 0 || p.Filesystem.Disabled {
		return ""
	}
	observing := p.ObserveFiles == "writes" || p.ObserveFiles == "all"
	if observing {
		return ""
	}
	where := []string{"/tmp (private to the run)"}
	for _, w := range p.Filesystem.AllowWrite {
		where = append(where, tilde(w, p.Process.Home))
	}
	if len(where) > 6 {
		where = append(where[:6], fmt.Sprintf("%d more", len(where)-6))
	}
	reads := ""
	if slices.Contains(p.Filesystem.DenyRead, "/") {
		reads = "; reads were limited to the declared paths (--dry-run lists them; anything else is absent)"
	}
	return fmt.Sprintf("sbx: the command exited %d; writes were allowed only in %s; if it failed on a read-only file system, rerun with --observe-files writes to see the refused paths (toolchain caches: --preset %s)%s",
		code, strings.Join(where, ", "), strings.Join(policy.PresetNames, "|"), reads)
}

// causeOrder is the order causes are named in: the ones a user most
// often has to act on first.
var causeOrder = []string{"network", "pty", violations.KindFileWrite, violations.KindFileRead, violations.KindUnixSocket, violations.KindSyscall}

// causes describes each kind of refusal in sum, one phrase a kind, from
// the records the summary kept (the first few; the counts cover all).
func causes(p *policy.Policy, sum violations.Summary) []string {
	type group struct {
		n    int      // records of this cause (from the counts)
		kept int      // of them, in sum.First
		seen []string // distinct descriptions, in order
	}
	groups := map[string]*group{}
	add := func(cause, what string) {
		g := groups[cause]
		if g == nil {
			g = &group{}
			groups[cause] = g
		}
		g.kept++
		if !slices.Contains(g.seen, what) {
			g.seen = append(g.seen, what)
		}
	}
	for _, r := range sum.First {
		switch {
		case r.Rule == violations.RuleAllowPty:
			add("pty", "/dev/ptmx")
		case r.Kind == violations.KindNetwork:
			add("network", hostCause(p, r))
		case r.Kind == violations.KindFileWrite:
			add(r.Kind, fmt.Sprintf("%s (%s)", tilde(pathOf(r), p.Process.Home), allowFor(pathOf(r), p)))
		case r.Kind == violations.KindFileRead:
			add(r.Kind, fmt.Sprintf("%s (%s)", tilde(pathOf(r), p.Process.Home), ruleOr(r.Rule, "not readable in the sandbox")))
		case r.Kind == violations.KindUnixSocket:
			add(r.Kind, fmt.Sprintf("%s (--allow-unix-socket %s)", pathOf(r), pathOf(r)))
		case r.Kind == violations.KindSyscall:
			what := r.Syscall
			if r.Detail != "" {
				what += " " + r.Detail
			}
			add(r.Kind, what+" (never allowed in the sandbox)")
		}
	}
	for cause, g := range groups {
		switch cause {
		case "pty":
			g.n = g.kept
		default:
			g.n = sum.ByKind[cause]
			if cause == violations.KindFileWrite || cause == violations.KindFileRead {
				g.n -= ptyKinds(sum.First, cause)
			}
		}
	}
	nouns := map[string][2]string{
		"network":                 {"refused host", "refused hosts"},
		violations.KindFileWrite:  {"refused write", "refused writes"},
		violations.KindFileRead:   {"refused read", "refused reads"},
		violations.KindUnixSocket: {"refused Unix socket", "refused Unix sockets"},
		violations.KindSyscall:    {"refused system call", "refused system calls"},
	}
	var out []string
	for _, cause := range causeOrder {
		g := groups[cause]
		if g == nil {
			continue
		}
		if cause == "pty" {
			out = append(out, "finding no pseudo-terminal: /dev/ptmx is absent unless --allow-pty")
			continue
		}
		n := max(g.n, g.kept)
		noun := nouns[cause]
		phrase := fmt.Sprintf("%d %s: %s", n, plural(n, noun[0], noun[1]), strings.Join(g.seen, ", "))
		if n > g.kept {
			// Records past the ones the summary kept: their details
			// are in the --violations output only.
			phrase += fmt.Sprintf(" and %d more (see --violations)", n-g.kept)
		}
		out = append(out, phrase)
	}
	return out
}

// ptyKinds counts the pty records of kind in first.
func ptyKinds(first []violations.Record, kind string) int {
	n := 0
	for _, r := range first {
		if r.Kind == kind && r.Rule == violations.RuleAllowPty {
			n++
		}
	}
	return n
}

// hostCause names a refused host and what would allow it.
func hostCause(p *policy.Policy, r violations.Record) string {
	hp := r.Host
	if r.Port != 0 {
		hp = net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	}
	switch r.Rule {
	case violations.RuleNetNone:
		// No network at all: a name lookup whose name the record could
		// not read names only the DNS server.
		host := bracketed(r.Host)
		if r.Port == 53 {
			hp, host = "a name lookup through "+hp, "HOST"
		}
		return fmt.Sprintf("%s (no network: --allow-domain %s, or %s)", hp, host, registryFlag(p))
	case "default-deny":
		return fmt.Sprintf("%s (--allow-domain %s)", hp, bracketed(r.Host))
	case "address-guard":
		// The name was allowed; the address it resolved to was not.
		return fmt.Sprintf("%s (its address is refused: list the address itself with --allow-domain; see --violations)", hp)
	case "":
		return hp
	case "invalid-host", "host-mismatch", "origin-form", "protocol", "tls-upstream":
		return fmt.Sprintf("%s (rule: %s)", hp, r.Rule)
	}
	// Anything else is the deniedDomains entry (or the
	// deniedResolvedAddresses range) that matched: no flag overrides it.
	return fmt.Sprintf("%s (denied by %s)", hp, r.Rule)
}

// registryFlag is the --allow-registry a run's presets suggest
// (--preset go: --allow-registry go), or the flag's general form.
func registryFlag(p *policy.Policy) string {
	var names []string
	for _, src := range p.Sources {
		for _, from := range strings.Split(src.From, "; ") {
			if name, ok := strings.CutPrefix(from, "preset "); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return "--allow-registry NAME for a package registry"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "--allow-registry " + n
	}
	return strings.Join(out, " or ")
}

// bracketed writes an IPv6 literal in brackets, as --allow-domain takes it.
func bracketed(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

func pathOf(r violations.Record) string {
	if r.Resolved != "" {
		return r.Resolved
	}
	return r.Path
}

func ruleOr(rule, d string) string {
	if rule == "" {
		return d
	}
	return rule
}

// allowFor names the flag that would let a write to path through: the
// preset whose cache holds it, else --allow-write of its directory.
func allowFor(path string, p *policy.Policy) string {
	for _, name := range policy.PresetNames {
		dirs, _ := policy.PresetDirs(name, p.Process.Env, p.Process.Home)
		for _, d := range dirs {
			if policy.Within(path, d.Path) {
				return "--preset " + name
			}
		}
	}
	for _, pn := range policy.ProtectedNames(false) {
		if filepath.Base(path) == filepath.Base(pn.Name) {
			return "a protected name: sbx never makes it writable"
		}
	}
	dir := path
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	return "--allow-write " + tilde(dir, p.Process.Home)
}

// tilde writes path under home as ~/….
func tilde(path, home string) string {
	if home != "" && home != "/" && policy.Within(path, home) {
		return "~" + strings.TrimPrefix(path, home)
	}
	return path
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
