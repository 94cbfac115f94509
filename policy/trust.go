package policy

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

// The trust boundary.
//
// A settings file that lies in the working tree is the repository's,
// not the user's: whoever can push a branch wrote it. Such a file may
// narrow the policy (add denies, allowWrite, allowedDomains) but may not
// configure the flow of secrets or switch enforcement off, unless the
// user says so (--trust-project-settings, or trustedProjectDirs in a
// file of their own). Claude Code's workspace trust and direnv's
// `allow` draw the same line.
//
// The working tree is the working directory and, with --claude-settings
// DIR, DIR too (each resolved through symlinks, and widened to the git
// work tree that holds it, if any), except one that is HOME or lies above
// it (/, /home): running in one's home or at the root is
// no checkout. A file is the tree's when the tree holds it or any step
// of the path it was found at: a symlink in the tree to a file elsewhere
// is the tree's too (the repository chose where it points, or the
// command made it in an earlier run), and so is a symlink outside to a
// file in the tree. The user scope (~/.claude/settings.json or
// $CLAUDE_CONFIG_DIR/settings.json) is the user's wherever it lies, and
// so is the managed layer.
//
// What a repository file may not set without trust is the class of keys
// that move secrets or open a way out, not a list of past cases: writes
// outside the working tree (allowWrite, Edit() and additionalDirectories
// there: ~/.local/bin or ~/.config/autostart is code the host runs, see
// untrustedWrites), .git/config (allowGitConfig) or another protected
// name (allowProtected) and a shallower search
// for protected names;
// credentials; where traffic leaves (parentProxy, mitmProxy) and which
// certificates vouch for upstream servers (tlsTerminate's CA paths),
// since either hands a terminated request, injected token and all, to
// whoever the file names; Unix sockets outside the sandbox (a Docker or
// D-Bus socket is the host); and the switches that turn enforcement off.
// Termination itself (a bare tlsTerminate) is refused from such a file
// while a credential is masked, since it switches injection on
// (untrustedTermination); so is an allowedDomains entry naming the
// host's own or a private network (untrustedReach).
// The hosts credentials are injected toward by default (allowedDomains)
// are those of trusted layers only (Network.TrustedDomains), so a
// repository file that only adds a domain cannot make it a destination
// for the user's token.

// weakening is one key a repository layer may not set without trust.
type weakening struct {
	key, why string
}

const (
	whySecrets = "a file in the working tree may not configure credential injection"
	whyWeaken  = "a file in the working tree may not switch enforcement off or weaken it"
	whyRoute   = "a file in the working tree may not choose where traffic leaves or which certificates vouch for upstream servers"
	whySockets = "a file in the working tree may not open Unix sockets outside the sandbox"
	whyWrites  = "a file in the working tree may make writable only what is inside it"
	// trustHint ends a refusal of a repository's file: the way out.
	trustHint = "review it, then pass --trust-project-settings (or list its directory in sandbox.trustedProjectDirs)"
)

// weakeningKeys are the keys a repository's file may not set without
// trust: for each, when the value just parsed needs it, and why. A key
// may be listed twice (tlsTerminate: its CA paths route, its excludes
// weaken).
var weakeningKeys = []struct {
	key     string
	why     string
	weakens func(l *layer) bool
}{
	{"filesystem.disabled", whyWeaken, func(l *layer) bool { return isTrue(l.fsDisabled) }},
	{"ignoreViolations", whyWeaken, func(l *layer) bool { return len(l.ignoreViolations) > 0 }},
	{"enableWeakerNestedSandbox", whyWeaken, func(l *layer) bool { return isTrue(l.weakerNested) }},
	{"enableWeakerNetworkIsolation", whyWeaken, func(l *layer) bool { return isTrue(l.weakerNetIso) }},
	{"network.allowAllUnixSockets", whyWeaken, func(l *layer) bool { return isTrue(l.allowAllUnixSockets) }},
	{"network.allowUnixSockets", whySockets, func(l *layer) bool { return len(l.allowUnixSockets) > 0 }},
	// A preset makes toolchain caches outside the tree writable: a
	// crate's build.rs or a Go build cache runs on the host next build.
	{"presets", whyWrites, func(l *layer) bool { return len(l.presets) > 0 }},
	// Apple Events to other apps run code outside the sandbox.
	{"allowAppleEvents", whyWeaken, func(l *layer) bool { return isTrue(l.appleEvents) }},
	{"network.allowMachLookup", whyWeaken, func(l *layer) bool { return len(l.allowMachLookup) > 0 }},
	// .git/config writable: core.fsmonitor, core.hooksPath and aliases
	// run on the host at the next git command.
	{"filesystem.allowGitConfig", whyWeaken, func(l *layer) bool { return isTrue(l.allowGitConfig) }},
	// Any protected name writable: what the host runs from it next.
	{"filesystem.allowProtected", whyWeaken, func(l *layer) bool { return len(l.allowProtected) > 0 }},
	{"mandatoryDenySearchDepth", whyWeaken, func(l *layer) bool { return l.searchDepth != nil && *l.searchDepth < DefaultSearchDepth }},
	{"network.parentProxy", whyRoute, func(l *layer) bool { return l.parentProxy != nil }},
	{"network.mitmProxy", whyRoute, func(l *layer) bool { return l.mitmProxy != nil }},
	{"network.tlsTerminate", whyRoute, func(l *layer) bool {
		t := l.tlsTerminate
		return t != nil && (t.CACertPath != "" || t.CAKeyPath != "" || len(t.ExtraCACertPaths) > 0)
	}},
	// Excluding hosts turns their tunnels opaque: no same-target check
	// inside (domain fronting), no injection.
	{"network.tlsTerminate", whyWeaken, func(l *layer) bool { return l.tlsTerminate != nil && len(l.tlsTerminate.ExcludeDomains) > 0 }},
	{"credentials", whySecrets, func(l *layer) bool { return l.credentials != nil && secretFlow(l.credentials) }},
}

func isTrue(b *bool) bool { return b != nil && *b }

// noteWeakening records key (shown as in the file) when the value just
// parsed widens the flow of secrets or weakens enforcement.
func (l *layer) noteWeakening(key, shown string) {
	for _, w := range weakeningKeys {
		if w.key == key && w.weakens(l) {
			l.weakens = append(l.weakens, weakening{shown, w.why})
		}
	}
}

// secretFlow reports whether c lets a secret flow: a masked variable or
// file (it passes a default-scrubbed variable in, injected on egress),
// inject hosts, plaintext injection, AWS pairs, SigV4 passthrough. Mode
// deny entries only narrow.
func secretFlow(c *Credentials) bool {
	for _, r := range append(append([]CredentialRule(nil), c.EnvVars...), c.Files...) {
		if r.Mode == "mask" || len(r.InjectHosts) > 0 {
			return true
		}
	}
	return c.AllowPlaintextInject || len(c.AWSPairs) > 0 ||
		c.SigV4.Streaming == "passthrough" || c.SigV4.Presigned == "passthrough" || c.SigV4.SigV4A == "passthrough"
}

// workTrees are the resolved working-tree roots for dirs (the working
// directory, the --claude-settings DIR), without HOME and its ancestors.
func workTrees(home string, dirs ...string) []string {
	rhome := ""
	if home != "" {
		rhome = resolvedOr(filepath.Clean(home))
	}
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		rd := resolvedOr(filepath.Clean(d))
		if rhome != "" && Within(rhome, rd) {
			continue
		}
		// A subdirectory of a checkout is in the checkout: a file in
		// its git work tree (`--settings ../.sbx.json` from a
		// subdirectory) is the repository's too.
		if top := gitTop(rd, rhome); top != "" {
			rd = top
		}
		out = append(out, rd)
	}
	return dedupe(out)
}

// gitTop is the outermost directory at or above dir (resolved, clean),
// below home, that holds a .git entry (a repository's directory, or a
// worktree's or submodule's file), or "": a submodule, or a nested
// repository the command made itself, is inside the checkout around it,
// and a file of that checkout is the repository's too.
func gitTop(dir, home string) string {
	top := ""
	for d := dir; ; d = filepath.Dir(d) {
		if home != "" && Within(home, d) {
			return top // HOME or above: no checkout
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			top = d
		}
		if d == "/" {
			return top
		}
	}
}

// classify marks the layers that lie in a working tree. userScope is
// the Claude user scope file ("" none), always the user's. A layer that
// is not a file (the command line, --allow-registry's) is the user's.
func classify(layers []*layer, trees []string, userScope string) {
	ru := ""
	if userScope != "" {
		ru = resolvedOr(userScope)
	}
	for _, l := range layers {
		if l.managed || l.flags || l.label != "" || len(trees) == 0 {
			continue
		}
		abs, err := filepath.Abs(l.file)
		if err != nil {
			l.repo = true // fail closed: where it lies is unknown
			continue
		}
		// filepath.Abs cleans "link/.." away as text; the kernel follows
		// the link first. The file as opened (raw path resolved step by
		// step) counts too.
		raw := l.file
		if !filepath.IsAbs(raw) {
			if wd, err := os.Getwd(); err == nil {
				raw = wd + "/" + raw
			}
		}
		real, rerr := filepath.EvalSymlinks(raw)
		l.repo = inTree(abs, trees) || (rerr == nil && WithinAny(real, trees))
		if l.repo && userScope != "" && (filepath.Clean(abs) == filepath.Clean(userScope) || resolvedOr(abs) == ru) {
			// The user scope is the user's wherever it lies, but not
			// inside the tree: a CLAUDE_CONFIG_DIR (or a ~/.claude
			// link) into the checkout would make the repository's
			// file the user's.
			l.notes = append(l.notes, fmt.Sprintf("%s: the user scope lies in the working tree, so it is read as the repository's", l.file))
		}
	}
}

// inTree reports whether the file at abs is the tree's: the tree holds
// the file itself or any step of the path, each step resolved through
// the symlinks before it. A symlink the tree holds (a file's or a
// directory's) decides where the rest of the path goes, so the tree
// owns what it leads to.
func inTree(abs string, trees []string) bool {
	abs = filepath.Clean(abs)
	for p := abs; ; p = filepath.Dir(p) {
		if WithinAny(resolvedOr(p), trees) {
			return true
		}
		if p == "/" || p == "." {
			return false
		}
	}
}

// checkTrust refuses a repository layer that sets a key it may not,
// unless trusted (--trust-project-settings, or a trustedProjectDirs
// entry of a layer outside the tree that holds the file). A repository
// layer may not list trustedProjectDirs itself.
func checkTrust(layers []*layer, trustAll bool, r resolver) error {
	var trusted []string
	for _, l := range layers {
		if len(l.trustedDirs) == 0 {
			continue
		}
		if l.repo {
			return &SettingsError{File: l.file, Key: "trustedProjectDirs", Problem: "a file in the working tree may not trust itself; list the directory in ~/.claude/settings.json or another file outside it, or pass --trust-project-settings"}
		}
		for _, d := range l.trustedDirs {
			if !filepath.IsAbs(d) && !strings.HasPrefix(d, "~/") && d != "~" {
				return &SettingsError{File: l.file, Key: "trustedProjectDirs", Problem: fmt.Sprintf("entry %q: write an absolute or ~/ path", d)}
			}
			abs, err := r.abs(d)
			if err != nil {
				return &SettingsError{File: l.file, Key: "trustedProjectDirs", Problem: fmt.Sprintf("entry %q: %v", d, err)}
			}
			trusted = append(trusted, resolvedOr(abs))
		}
	}
	for _, l := range layers {
		l.trusted = !l.repo || trustAll
		if l.trusted {
			continue
		}
		abs, _ := filepath.Abs(l.file)
		if l.trusted = inTree(abs, trusted); l.trusted || len(l.weakens) == 0 {
			continue
		}
		w := l.weakens[0]
		return &SettingsError{File: l.file, Key: w.key, Problem: w.why + "; " + trustFix(l)}
	}
	return nil
}

// trustFix is the way out of a refusal of repository layer l: review
// it, then trust it.
func trustFix(l *layer) string {
	abs, _ := filepath.Abs(l.file)
	dir := filepath.Dir(filepath.Clean(abs))
	if filepath.Base(dir) == ".claude" {
		dir = filepath.Dir(dir)
	}
	return fmt.Sprintf("review it, then pass --trust-project-settings (or list %s in sandbox.trustedProjectDirs in ~/.claude/settings.json)", dir)
}

// untrustedReach refuses an allowedDomains entry of a layer the user
// has not trusted that names the host's own or a private network:
// localhost in any spelling (localhost., LOCALHOST, *.localhost,
// a.localhost), an address in one of the proxy's guarded ranges
// (hostaddr.Guarded: loopback, link-local, metadata, private, CGNAT,
// unspecified, multicast, reserved, and their IPv4-mapped, NAT64 and
// 6to4 forms) in any spelling the proxy canonicalises (127.1,
// 2130706433, 0x7f.1, 0177.0.0.1, [::1]:80, ::ffff:127.0.0.1), or an
// address of this host. The proxy lets an address through its guard
// when an allow entry names it literally, and loopback when the entry
// is localhost: from a repository's file either would reach the
// host's database, the Docker API or the cloud metadata service. An
// entry a trusted layer names too (same host, the trusted one's port
// or any) opens nothing new and passes.
func untrustedReach(layers []*layer) error {
	type hp struct {
		host string
		port int
	}
	trusted := map[hp]bool{}
	for _, l := range layers {
		if !l.trusted {
			continue
		}
		for _, e := range l.allowedDomains {
			if h, port, _, ok := entryHost(e); ok {
				trusted[hp{h, port}] = true
			}
		}
	}
	own := sync.OnceValue(ownAddrs) // asked only for a public address
	for _, l := range layers {
		if l.trusted {
			continue
		}
		for _, e := range l.allowedDomains {
			h, port, ip, ok := entryHost(e)
			if !ok || trusted[hp{h, 0}] || trusted[hp{h, port}] {
				continue
			}
			what := ""
			switch {
			case ip.IsValid() && hostaddr.Classify(ip) != "":
				what = fmt.Sprintf("%s (%s)", ip, hostaddr.Classify(ip))
			case ip.IsValid() && own()[ip]:
				what = fmt.Sprintf("%s (an address of this host)", ip)
			case !ip.IsValid() && hostaddr.IsLocalhostName(h):
				what = "the host's loopback (localhost)"
			default:
				continue
			}
			return &SettingsError{File: l.file, Key: "network.allowedDomains", Problem: fmt.Sprintf("entry %q names %s, which the proxy would then let the command reach; a file in the working tree may not open the host's own or private network: %s", e, what, trustFix(l))}
		}
	}
	return nil
}

// entryHost is the canonical host of an allowedDomains entry (the base
// of a wildcard), its port (0 any) and its address when it is one; ok
// false for an entry that does not parse (the proxy refuses it at
// start-up). An IPv6 zone is dropped here: the proxy refuses zones, and
// the address is judged all the same.
func entryHost(e string) (h string, port int, ip netip.Addr, ok bool) {
	hostPart, port, err := hostaddr.SplitEntry(e)
	if err != nil {
		return "", 0, netip.Addr{}, false
	}
	hostPart = strings.TrimPrefix(hostPart, "*.")
	if i := strings.IndexByte(hostPart, '%'); i >= 0 && strings.Contains(hostPart, ":") {
		hostPart = strings.TrimPrefix(hostPart[:i], "[")
	}
	h, ip, err = hostaddr.Canonical(hostPart)
	if err != nil {
		return "", 0, netip.Addr{}, false
	}
	return h, port, ip, true
}

// ownAddrs are the host's interface addresses (unmapped).
func ownAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// untrustedWrites refuses a writable path (resolved) that only untrusted
// sources granted and that lies outside every working tree: a
// repository's file may make its own tree writable, not the user's
// home or the rest of the system. g holds which sources spelled each
// grant (see links.go).
func untrustedWrites(g *grantLog, list string, writes []string, m *merged, trees, masks, homes []string) error {
	if g == nil {
		return nil
	}
	// A trusted grant that reaches a mask only through a link does not
	// count (the masks drop it; see userGranted).
	spell := maskSpellings(masks, homes)
	for _, a := range writes {
		if _, ok := g.lits[list][a]; !ok || WithinAny(a, trees) || g.userGranted(list, a, masks, spell) {
			continue
		}
		return fmt.Errorf("%s: %s %s lies outside the working tree; %s: %s", strings.Join(m.src[list][a], ", "), list, a, whyWrites, trustHint)
	}
	return nil
}

// untrustedTermination refuses TLS termination that only a layer the
// user has not trusted turns on (a bare "tlsTerminate": {} in a
// repository's file) while a credential is masked: termination is what
// puts the real values back into requests toward their inject hosts, so
// such a file would switch on the injection of the user's secrets. With
// no masked credential there is nothing to inject, and termination from
// such a file is honoured. --tls-terminate, or a trusted file that sets
// tlsTerminate, is the user's choice.
func untrustedTermination(m *merged, flag bool, c *Credentials) error {
	l := m.tlsUntrusted
	if m.tls == nil || l == nil || flag || m.tlsTrusted || !masksSecrets(c) {
		return nil
	}
	return &SettingsError{File: l.file, Key: "network.tlsTerminate", Problem: "turns TLS termination on, and with it the injection of the masked credentials' real values into requests; a file in the working tree may not: " + trustFix(l) + ", or pass --tls-terminate yourself"}
}

// masksSecrets reports whether c masks a credential (a variable or a
// file in mode mask, an AWS pair): one whose real value termination
// would inject.
func masksSecrets(c *Credentials) bool {
	if c == nil {
		return false
	}
	for _, r := range append(append([]CredentialRule(nil), c.EnvVars...), c.Files...) {
		if r.Mode == "mask" {
			return true
		}
	}
	return len(c.AWSPairs) > 0
}
