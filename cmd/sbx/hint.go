package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// writeHint is the one stderr line sbx adds when the command failed and
// the sandbox is a likely cause; otherwise it says nothing (a failing
// test, `false`, `exit 3`, a Ctrl-C, the end of an interactive shell are
// the command's own business). A likely cause is:
//
//   - something refused and recorded (tap): the line names each refused
//     thing and what would allow it — a host and the --allow-domain for
//     it, a pty and --allow-pty, a write's path and its flag, a read, a
//     Unix socket, a system call — the one most likely to have ended the
//     command first (rankRefusals), counting distinct things, not records;
//   - nothing recorded, but the status a shell gives a program it could
//     not find (127) or not execute (126): in the sandbox that is often a
//     path its view leaves out or masks, which no record shows (an
//     execve is not observed). Not when the command itself is missing on
//     the host: sbx already said so. Under --weaker-nested, which has no
//     view of its own, only 126 (Landlock's EACCES).
//
// It returns "" for sbx's own statuses (124 timeout, 125 sbx failed).
func writeHint(p *policy.Policy, code int, sum violations.Summary, tap *hintTap) string {
	if code == 0 || code == 124 || code == 125 {
		return ""
	}
	if parts := causes(p, tap); len(parts) > 0 {
		return fmt.Sprintf("sbx: the command exited %d after %s", code, strings.Join(parts, "; "))
	}
	// A limit the user set whose hit sbx may not see (an rlimit's
	// refused fork or allocation) is a likely cause too.
	if maybe := maybeLimits(p, code); maybe != "" {
		return fmt.Sprintf("sbx: the command exited %d; %s", code, maybe)
	}
	if sum.Total > 0 || sum.Dropped > 0 || p.Filesystem.Disabled || (code != 126 && code != 127) {
		return ""
	}
	if len(p.Process.Argv) > 0 && !onHost(p.Process.Argv[0], p.Process.Env, p.Process.Dir) {
		return ""
	}
	absent := "masked by denyRead or a built-in mask"
	if slices.Contains(p.Filesystem.DenyRead, "/") {
		absent = "outside the declared reads, or masked"
	}
	if p.WeakerNested {
		// No mount view: every path is the host's, and Landlock refuses
		// a program the policy does not let the command read with EACCES
		// (126). A 127 is the host's own.
		if code == 127 {
			return ""
		}
		return fmt.Sprintf("sbx: the command exited 126 (not executable): under --weaker-nested, Landlock refuses to run what the command may not read (%s); --dry-run lists the rules", strings.Replace(absent, "masked by ", "", 1))
	}
	if code == 127 {
		return fmt.Sprintf("sbx: the command exited 127 (not found): a program or file it needs may be absent in the sandbox (%s); --dry-run shows the view", absent)
	}
	return "sbx: the command exited 126 (not executable): in the sandbox a masked file is an empty placeholder that cannot run; --dry-run lists the masks"
}

// onHost says whether argv0 names an executable on the host (as the
// sandbox's lookup does, from env's PATH and dir).
func onHost(argv0 string, env []string, dir string) bool {
	if strings.Contains(argv0, "/") {
		if !filepath.IsAbs(argv0) {
			argv0 = filepath.Join(dir, argv0)
		}
		_, err := os.Stat(argv0)
		return err == nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if st, err := os.Stat(filepath.Join(d, argv0)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// maxRefusals bounds the distinct refused things a run's hint keeps;
// past it, records only count (the line then says "at least").
const maxRefusals = 1024

// hintTap is a violations.Sink that keeps what the failure hint needs
// from every record (the summary keeps only the first few): each distinct
// refused thing — a host and port, a path, a system call — with how many
// records named it and when it was last refused.
type hintTap struct {
	mu    sync.Mutex
	seq   int
	byKey map[string]*refusal
	list  []*refusal
	// over: causes with records past maxRefusals distinct things.
	over map[string]bool
}

// refusal is one distinct refused thing.
type refusal struct {
	cause string            // "network", "pty", or the record's kind
	rec   violations.Record // its first record
	n     int               // records that named it
	last  int               // sequence number of its last record
}

func newHintTap() *hintTap {
	return &hintTap{byKey: map[string]*refusal{}, over: map[string]bool{}}
}

// Write takes one record (never a probe: the collector keeps those
// from sinks unless asked, and they are not refusals the hint names).
func (t *hintTap) Write(r violations.Record) error {
	if r.Probe {
		return nil
	}
	cause, key := refusalKey(r)
	if cause == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	k := cause + "\x00" + key
	if x := t.byKey[k]; x != nil {
		x.n++
		x.last = t.seq
		return nil
	}
	if len(t.list) >= maxRefusals {
		t.over[cause] = true
		return nil
	}
	x := &refusal{cause: cause, rec: r, n: 1, last: t.seq}
	t.byKey[k] = x
	t.list = append(t.list, x)
	return nil
}

func (t *hintTap) Close() error { return nil }

// refusalKey is the cause a record belongs to in the hint and what makes
// it distinct within it; "" for records the hint does not name.
func refusalKey(r violations.Record) (cause, key string) {
	switch {
	case r.Kind == violations.KindLimit:
		return r.Kind, r.Rule
	case r.Rule == violations.RuleAllowPty:
		return "pty", ""
	case r.Kind == violations.KindNetwork:
		return "network", net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	case r.Kind == violations.KindFileWrite, r.Kind == violations.KindFileRead, r.Kind == violations.KindUnixSocket:
		return r.Kind, pathOf(r)
	case r.Kind == violations.KindSyscall:
		return r.Kind, r.Syscall + " " + r.Detail
	}
	return "", ""
}

// incidental says whether a refused file access is one tools shrug off:
// a toolchain's cache (what a preset makes writable) or a log file. It
// ranks below the others: the command more likely ended on those (npm
// keeps going when ~/.npm/_logs is read-only; nyc does not when its
// .nyc_output is).
func incidental(p *policy.Policy, r *refusal) bool {
	if r.cause != violations.KindFileWrite && r.cause != violations.KindFileRead {
		return false
	}
	path := pathOf(r.rec)
	if policy.Within(path, p.Process.Dir) && p.Process.Dir != "/" {
		return false
	}
	for _, c := range strings.Split(path, "/") {
		if c == "logs" || c == "_logs" || c == "log" || strings.HasSuffix(c, ".log") {
			return true
		}
	}
	return strings.HasPrefix(allowFor(path, p), "--preset ")
}

// rankRefusals orders the refused things most likely to have ended the
// command first: what a tool does not shrug off before what it does
// (incidental), then the most recently refused first (a command usually
// stops at the refusal it cannot get past, after any it could).
func rankRefusals(p *policy.Policy, list []*refusal) []*refusal {
	out := slices.Clone(list)
	tier := map[*refusal]int{}
	for _, r := range out {
		switch {
		case r.cause == violations.KindLimit:
			tier[r] = -1 // a limit hit ends a command before anything else
		case incidental(p, r):
			tier[r] = 1
		}
	}
	slices.SortStableFunc(out, func(a, b *refusal) int {
		if tier[a] != tier[b] {
			return tier[a] - tier[b]
		}
		return b.last - a.last
	})
	return out
}

// shownPerCause is how many refused things of one cause the line names.
const shownPerCause = 3

// causes describes the refused things the tap saw, one phrase a cause,
// the causes and the things in each in rankRefusals' order.
func causes(p *policy.Policy, tap *hintTap) []string {
	if tap == nil {
		return nil
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	type group struct {
		shown []string
		n     int
	}
	groups := map[string]*group{}
	var order []string
	for _, r := range rankRefusals(p, tap.list) {
		g := groups[r.cause]
		if g == nil {
			g = &group{}
			groups[r.cause] = g
			order = append(order, r.cause)
		}
		g.n++
		if len(g.shown) < shownPerCause {
			g.shown = append(g.shown, describe(p, r.rec))
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
	for _, cause := range order {
		g := groups[cause]
		if cause == "pty" {
			out = append(out, "finding no pseudo-terminal: /dev/ptmx is absent unless --allow-pty")
			continue
		}
		if cause == violations.KindLimit {
			out = append(out, "it hit "+strings.Join(g.shown, "; "))
			continue
		}
		noun := nouns[cause]
		count := strconv.Itoa(g.n)
		if tap.over[cause] {
			count = "at least " + count
		}
		phrase := fmt.Sprintf("%s %s: %s", count, plural(g.n, noun[0], noun[1]), strings.Join(g.shown, ", "))
		switch more := g.n - len(g.shown); {
		case tap.over[cause]:
			phrase += " and more (see --violations)"
		case more > 0:
			phrase += fmt.Sprintf(" and %d more (see --violations)", more)
		}
		out = append(out, phrase)
	}
	return out
}

// describe names one refused thing and what would allow it.
func describe(p *policy.Policy, r violations.Record) string {
	switch r.Kind {
	case violations.KindLimit:
		return limitCause(r)
	case violations.KindNetwork:
		return hostCause(p, r)
	case violations.KindFileWrite:
		return fmt.Sprintf("%s (%s)", tilde(pathOf(r), p.Process.Home), allowFor(pathOf(r), p))
	case violations.KindFileRead:
		return fmt.Sprintf("%s (%s)", tilde(pathOf(r), p.Process.Home), ruleOr(r.Rule, "not readable in the sandbox"))
	case violations.KindUnixSocket:
		return fmt.Sprintf("%s (--allow-unix-socket %s)", pathOf(r), pathOf(r))
	}
	what := r.Syscall
	if r.Detail != "" {
		what += " " + r.Detail
	}
	return what + " (never allowed in the sandbox)"
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
		if strings.HasSuffix(path, "/"+pn.Name) || strings.Contains(path, "/"+pn.Name+"/") {
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
