package policy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Input is everything Build needs: the flags as given, the settings files
// to read, and the caller's context (working directory, home, environment).
type Input struct {
	Settings        []string // --settings, in order
	ManagedSettings string   // --managed-settings: a file, or a directory in Claude Code's managed layout
	// ClaudeSettings is --claude-settings: read Claude Code's own scopes
	// for the project that holds ClaudeDir (see ClaudeProject); Build
	// sets ClaudeDir to the project's root. ClaudeDirGiven: the caller
	// named the directory (--claude-settings=DIR), which must then exist
	// and find settings.
	ClaudeSettings bool
	ClaudeDir      string
	ClaudeDirGiven bool
	// claudeDirs are the directories whose project scopes are read
	// (ClaudeProject), set by Build.
	claudeDirs []string
	// TrustProjectSettings is --trust-project-settings: settings files
	// in the working tree may configure credentials and weaker modes
	// (see trust.go).
	TrustProjectSettings bool

	// Reads is --reads: "" or "all" (everything not denied), or
	// "declared" (denyRead "/" with allowRead carve-outs and a minimal
	// runtime; see DeclaredRuntime).
	Reads string
	// Presets are --preset names; AllowRegistry --allow-registry names.
	Presets, AllowRegistry []string
	// DryRun: nothing is created on the host (a preset's missing cache).
	DryRun bool

	AllowRead, DenyRead, AllowWrite, DenyWrite []string
	DiscardWrites                              []string // --discard-writes
	// UndeclaredWrites is --undeclared-writes: "" or "refuse" (writes
	// outside allowWrite fail), or "discard" (see UndeclaredRegions).
	UndeclaredWrites                       string
	SaveChanges                            string // --save-changes DIR
	AllowGitConfig, AllowPty, WeakerNested bool
	// Tty is --tty: the command gets a pseudo-terminal of its own, which
	// sbx relays to the caller's terminal (it implies AllowPty). Terminal
	// says the caller's standard input and output are terminals: with
	// allowPty (flag or settings) that asks for the same on Linux.
	Tty, Terminal bool
	// AllowProtected is --allow-protected: protected names let be written.
	AllowProtected []string

	AllowDomains, DenyDomains, AllowUnixSockets []string
	AllowAllUnixSockets, AllowLocalBinding      bool
	NetMode                                     string // "", "none", "filtered", "host"
	// Capture is --capture: "" (the settings decide; on by default),
	// "on" or "off".
	Capture      string
	TLSTerminate bool // --tls-terminate: with an ephemeral CA unless settings name one
	Publish      []string

	ClearEnv                  bool
	PassEnv, SetEnv, UnsetEnv []string
	Timeout                   time.Duration
	ObserveFiles              string // --observe-files: "", "writes", "reads" or "all"
	KeepFDs                   []int
	ControlFD                 int // --control-fd N (0: none)
	AskFD                     int // --ask-fd N (0: none)
	AskTimeout                time.Duration
	Argv                      []string
	Cwd, Home, Self           string
	// PasswdHome is the caller's home directory in /etc/passwd, which
	// may differ from HOME (or stand in for an unset one); credential
	// locations under it are denied too.
	PasswdHome string
	// ScanCache is a directory for the protected-name search's cache
	// (see package ns), owned by the caller and writable by no one else;
	// "" for none. It is denied writes in the sandbox, like Self: the
	// command runs as the caller and must not forge what a later run
	// trusts.
	ScanCache string
	Environ   []string
	UID, GID  int
	// Limits are the limit flags given (--memory, --pids, …; see
	// limits.go), their names in Limits.Asked.
	Limits Limits
}

// Build merges defaults, settings files and flags into a validated Policy.
// Every error it returns is one line naming the bad input and what to do.
//
// It runs in stages, each a method of builder, in this order (a later one
// reads what an earlier one decided): merge the layers (merge), the
// command's environment and the credential rules (environment), resolve
// the grants (grants), the discard regions (discard), plan the default
// denials (denials), the network (network), and the process (process),
// which also creates a preset's missing caches, last, once nothing can
// fail any more.
func Build(in Input) (*Policy, error) {
	if in.Cwd == "" {
		return nil, errors.New("internal: Build needs Cwd")
	}
	if in.ClaudeSettings {
		if err := in.claudeProject(); err != nil {
			return nil, err
		}
	}
	b := &builder{in: in}
	for _, stage := range []func() error{b.merge, b.environment, b.grants, b.discard, b.denials, b.network, b.process} {
		if err := stage(); err != nil {
			return nil, err
		}
	}
	return b.p, nil
}

// builder is one Build under way: its input, the policy it fills, and
// what one stage hands the next.
type builder struct {
	in   Input
	home string
	p    *Policy
	r    resolver
	m    *merged
	// The path lists as merged; stages add to them before they are
	// resolved.
	allowRead, denyRead, allowWrite, denyWrite, discardWrites []pathEntry
	// env is the command's environment; removed the variables taken out.
	env, removed []string
	// toCreate receives a preset's missing caches (see process).
	toCreate []string
	// declared is the runtime --reads declared derives.
	declared []pathEntry
	// grantLog is the grants' record (see links.go), kept from grants
	// for denials.
	grantLog *grantLog
}

// merge reads the layers (settings files, flags) and merges them.
func (b *builder) merge() error {
	in := b.in
	if in.Capture != "" && in.Capture != "on" && in.Capture != "off" {
		return fmt.Errorf("--capture %q: use on or off", in.Capture)
	}
	b.home = in.Home
	if b.home == "" || !filepath.IsAbs(b.home) {
		b.home = in.PasswdHome
	}
	layers, layerNotes, err := readLayers(in, b.home)
	if err != nil {
		return err
	}
	if in.ClaudeSettings {
		layerNotes = append([]string{claudeProjectNote(in.ClaudeDir, in.claudeDirs)}, layerNotes...)
	}
	b.p = &Policy{Notes: layerNotes}
	b.p.Filesystem.SearchDepth = DefaultSearchDepth
	b.p.Network.Capture = true // sbx's own default; network.capture false or --capture off
	b.r = resolver{cwd: in.Cwd, home: b.home, dirs: map[string]string{}, names: map[string]bool{}, notes: &b.p.Notes}
	m, err := mergeLayers(layers, b.p, b.r)
	if err != nil {
		return err
	}
	b.m = m
	if err := mergeLimits(layers, in.Limits, b.p); err != nil {
		return err
	}
	b.allowRead, b.denyRead, b.allowWrite, b.denyWrite, b.discardWrites = m.allowRead, m.denyRead, m.allowWrite, m.denyWrite, m.discardWrites
	if m.domainsOnly && in.AskFD > 0 {
		b.p.Notes = append(b.p.Notes, "allowManagedDomainsOnly: --ask-fd is never consulted")
	}

	if in.ClaudeSettings && m.sandboxEnabled != nil && !*m.sandboxEnabled {
		return fmt.Errorf("Claude Code settings turn the sandbox off (sandbox.enabled: false, last set in %s); sbx runs nothing rather than run unsandboxed or against that choice: set it to true, or call sbx without --claude-settings", m.enabledFrom)
	}
	return nil
}

// environment filters the command's environment and applies the
// credential rules to it and to the file lists.
func (b *builder) environment() error {
	in, p, r, creds := b.in, b.p, b.r, b.m.creds
	// The command's environment: presets and --reads declared resolve
	// against what the command will see. A credentials variable in mode
	// mask passes (the sandbox swaps its value for a sentinel), one in
	// mode deny is removed, whatever the other lists say.
	pass, unset := in.PassEnv, in.UnsetEnv
	if creds != nil {
		pass, unset = append([]string(nil), pass...), append([]string(nil), unset...)
		for _, c := range creds.EnvVars {
			if c.Mode == "mask" {
				pass = append(pass, c.Name)
			} else {
				unset = append(unset, c.Name)
			}
		}
	}
	// In the weaker mode the host's processes are visible, sbx's own
	// command line with them: a value --set-env gives a masked variable
	// would be readable there.
	if b.p.WeakerNested && creds != nil {
		for _, kv := range in.SetEnv {
			k, _, _ := strings.Cut(kv, "=")
			for _, c := range creds.EnvVars {
				if c.Mode == "mask" && c.Name == k {
					return fmt.Errorf("--set-env %s: %s is masked, and with --weaker-nested the command can read sbx's own command line; pass the value in sbx's environment instead", k, k)
				}
			}
		}
	}
	env, removed, err := FilterEnv(in.Environ, in.ClearEnv, pass, unset, in.SetEnv)
	if err != nil {
		return err
	}
	b.removed = removed
	if creds != nil && runtime.GOOS != "linux" {
		for _, c := range append(append([]CredentialRule(nil), creds.EnvVars...), creds.Files...) {
			if c.Mode == "mask" {
				return fmt.Errorf("credentials mode mask is built for Linux only (%s%s would enter the sandbox unmasked); use mode deny here", c.Name, c.Path)
			}
		}
	}
	if creds != nil {
		for _, c := range creds.EnvVars {
			if c.Mode == "deny" {
				env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, c.Name+"=") })
			}
		}
		for i, f := range creds.Files {
			abs, err := r.abs(f.Path)
			if err != nil {
				return fmt.Errorf("credentials.files %q: %w", f.Path, err)
			}
			if real, _, err := Resolve(abs); err == nil {
				abs = real
			}
			creds.Files[i].Path = abs
			if f.Mode == "deny" {
				e := pathEntry{path: abs, literal: true, from: "credentials.files", managed: f.managed}
				b.denyRead = append(b.denyRead, e)
				if f.managed {
					b.m.denyRead = append(b.m.denyRead, e) // a managed deny: carved (see merged.reopens)
				}
			}
		}
		p.Credentials = creds
	}
	b.env = env
	return nil
}

// grants resolves what the command may read and write: the presets'
// caches, --reads, allowRead, allowWrite and discardWrites.
func (b *builder) grants() error {
	in, p, m := b.in, b.p, b.m
	b.r.create = &b.toCreate
	b.r.createFile = map[string]bool{}
	// Presets make toolchain caches writable: created 0700 when missing
	// (a cache the tool would make on its first run anyway), once every
	// check has passed and only for a real run.
	preset, err := presetWrites(dedupe(m.presets), b.env, b.home, &p.Notes)
	if err != nil {
		return err
	}
	b.allowWrite = append(b.allowWrite, preset...)
	if slices.Contains(m.presets, "rust") {
		b.allowWrite = append(b.allowWrite, cargoLockfile(in.Cwd, &p.Notes)...)
	}
	switch in.Reads {
	case "", "all":
	case "declared":
		b.denyRead = append(b.denyRead, pathEntry{path: "/", literal: true, from: "--reads declared"})
		b.declared = declaredRuntime(in.Argv, b.env, in.Cwd)
	default:
		return fmt.Errorf("--reads %q: use all (the default) or declared", in.Reads)
	}
	b.r.grants = newGrantLog(in.Cwd, claudeDir(in))
	if p.Filesystem.AllowRead, err = m.resolve(b.r, "allowRead", b.allowRead, false); err != nil {
		return err
	}
	p.Filesystem.AllowProtected = dedupe(p.Filesystem.AllowProtected)
	b.r.protected = p.Filesystem.Protected()
	if p.Filesystem.AllowWrite, err = m.resolve(b.r, "allowWrite", b.allowWrite, true); err != nil {
		return err
	}
	if p.Filesystem.DiscardWrites, err = m.resolve(b.r, "discardWrites", b.discardWrites, true); err != nil {
		return err
	}
	b.grantLog = b.r.grants
	b.r.grants = nil
	return nil
}

// discard adds the --undeclared-writes discard regions, checks
// --save-changes, and validates every discard region.
func (b *builder) discard() error {
	in, p, m, r := b.in, b.p, b.m, b.r
	switch in.UndeclaredWrites {
	case "", "refuse":
	case "discard":
		for _, d := range UndeclaredRegions(b.home, in.Cwd) {
			if !WithinAny(d, p.Filesystem.AllowWrite) && !WithinAny(d, p.Filesystem.DiscardWrites) && !m.reopens("discardWrites", d) {
				p.Filesystem.DiscardWrites = append(p.Filesystem.DiscardWrites, d)
				m.add("discardWrites", d, "--undeclared-writes discard")
			}
		}
		// A region inside another one is covered by it.
		var outer []string
		for _, d := range p.Filesystem.DiscardWrites {
			inside := false
			for _, e := range p.Filesystem.DiscardWrites {
				inside = inside || (e != d && Within(d, e))
			}
			if !inside {
				outer = append(outer, d)
			}
		}
		p.Filesystem.DiscardWrites = outer
		p.Notes = append(p.Notes, "--undeclared-writes discard: writes are discarded (and reported) in "+strings.Join(outer, ", "))
	default:
		return fmt.Errorf("--undeclared-writes %q: use refuse (the default) or discard", in.UndeclaredWrites)
	}
	if in.SaveChanges != "" {
		d, err := r.abs(in.SaveChanges)
		if err != nil {
			return fmt.Errorf("--save-changes %q: %w", in.SaveChanges, err)
		}
		switch _, err := os.Lstat(d); {
		case len(p.Filesystem.DiscardWrites) == 0:
			return errors.New("--save-changes keeps what discard overlays took; add --discard-writes DIR or --undeclared-writes discard")
		case err == nil:
			return fmt.Errorf("--save-changes %s: it exists already; name a new directory (sbx makes it, mode 0700)", d)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("--save-changes %s: %v", d, unwrapPathErr(err))
		}
		parent, err := filepath.EvalSymlinks(filepath.Dir(d))
		if err != nil {
			return fmt.Errorf("--save-changes %s: its parent directory must exist: %v", d, unwrapPathErr(err))
		}
		d = filepath.Join(parent, filepath.Base(d))
		if WithinAny(d, p.Filesystem.DiscardWrites) {
			return fmt.Errorf("--save-changes %s is inside a discard region, where it would be discarded too; name a directory outside", d)
		}
		p.Filesystem.SaveChanges = d
	}
	if len(p.Filesystem.DiscardWrites) > 0 && p.WeakerNested {
		return errors.New("--discard-writes needs an overlay in the sandbox's own mount namespace, which --weaker-nested does not have; it never falls back to real writes: drop one of them")
	}
	for _, d := range p.Filesystem.DiscardWrites {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("discardWrites %s: not a directory; an overlay covers a directory", d)
		}
		if Within(d, "/tmp") || Within(d, "/proc") || Within(d, "/dev") || d == "/" {
			return fmt.Errorf("discardWrites %s: the sandbox has its own /tmp, /proc and /dev, and / cannot be overlaid; name a directory elsewhere", d)
		}
	}
	return nil
}

// denials resolves denyWrite and denyRead and plans the default denials
// around the grants: the credential locations, the runtime --reads
// declared re-opens, sbx itself and its scan cache.
func (b *builder) denials() error {
	in, p, m := b.in, b.p, b.m
	r := &b.r
	r.protected = nil
	var err error
	r.takesWrites = append(append([]string(nil), p.Filesystem.AllowWrite...), p.Filesystem.DiscardWrites...)
	dw := *r
	dw.writable = r.takesWrites
	if p.Filesystem.DenyWrite, err = m.resolve(dw, "denyWrite", b.denyWrite, false); err != nil {
		return err
	}
	userDeny, err := m.resolve(*r, "denyRead", b.denyRead, false)
	if err != nil {
		return err
	}
	homes := []string{in.Home, in.PasswdHome}
	defaults, err := r.defaults(DefaultDenyRead, homes...)
	if err != nil {
		return err
	}
	// The stores the caller's variables move (DOCKER_CONFIG, KUBECONFIG,
	// XDG_CONFIG_HOME/gh, …), masked as the default paths are: taken
	// literally (a value is no glob), resolved.
	for _, s := range movedStorePaths(in.Environ) {
		got, err := r.all("built-in denyRead", []pathEntry{{path: s, literal: true, from: "built-in (moved store)"}}, false)
		if err != nil {
			r.note(fmt.Sprintf("built-in denyRead %q (a store a variable moves) skipped: %v", s, errors.Unwrap(err)))
			continue
		}
		defaults = append(defaults, got...)
	}
	defaults = dedupe(defaults)
	// A masked copy of a file is a way to read it: a mask another layer
	// asks for does not re-open what the managed settings deny.
	if c := p.Credentials; c != nil {
		for _, f := range c.Files {
			if f.Mode == "mask" && !f.managed && m.reopens("allowRead", f.Path) {
				return fmt.Errorf("credentials.files %s (mode mask) lies in a path the managed settings deny; a masked copy would re-open it, which only the managed settings may", f.Path)
			}
		}
	}
	// Masks win over grants that reach them through a symlink.
	b.grantLog.dropMaskedThroughLinks(map[string]*[]string{"allowRead": &p.Filesystem.AllowRead, "allowWrite": &p.Filesystem.AllowWrite, "discardWrites": &p.Filesystem.DiscardWrites}, defaults, homes, &p.Notes)
	// allowManagedReadPathsOnly: a writable root re-opens reading inside
	// a deny as an allowRead would, so only a managed one may (dropped
	// first: a dropped grant re-opens nothing, see untrustedReopen).
	if m.readOnly {
		p.Filesystem.AllowWrite = b.grantLog.dropUnmanagedIn("allowWrite", p.Filesystem.AllowWrite, userDeny, &p.Notes)
	}
	if err := m.untrustedReopen(p.Filesystem.AllowRead, p.Filesystem.AllowWrite, defaults, userDeny, b.grantLog, homes); err != nil {
		return err
	}
	// After that drop, as the reads: a grant that reached a mask only
	// through a link is gone already, not refused.
	if err := untrustedWrites(b.grantLog, "allowWrite", p.Filesystem.AllowWrite, m, workTrees(b.home, in.Cwd, claudeDir(in)), defaults, homes); err != nil {
		return err
	}
	// A default credential location is re-opened by an allowRead that
	// names it exactly; one inside it is re-opened by the mount view.
	allowed := map[string]bool{}
	for _, a := range p.Filesystem.AllowRead {
		allowed[a] = true
	}
	for _, d := range defaults {
		if !allowed[d] {
			p.Filesystem.DenyRead = append(p.Filesystem.DenyRead, d)
		}
	}
	p.Filesystem.DenyRead = dedupe(append(p.Filesystem.DenyRead, userDeny...))
	if err := r.maskedCopies(p, userDeny, allowed, homes, in.Environ); err != nil {
		return err
	}
	// The runtime --reads declared derives (the program, its #!
	// interpreter) never re-opens a denied path: a script's own first line
	// must not undo a credential mask.
	if len(b.declared) > 0 {
		got, err := r.all("allowRead", b.declared, false)
		if err != nil {
			return err
		}
		declareReads(p, m, got, "--reads declared", "not re-opened for the program")
	}
	if in.Self != "" {
		if self, err := filepath.EvalSymlinks(in.Self); err == nil {
			p.Process.Self = self
			p.Filesystem.DenyWrite = dedupe(append(p.Filesystem.DenyWrite, self))
		}
	}
	if in.ScanCache != "" {
		if dir, err := filepath.EvalSymlinks(in.ScanCache); err == nil {
			p.Filesystem.ScanCache = dir
			p.Filesystem.DenyWrite = dedupe(append(p.Filesystem.DenyWrite, dir))
		}
	}
	if p.Filesystem.Disabled {
		p.Notes = append(p.Notes, "filesystem.disabled: every filesystem rule is dropped, the mandatory ones too")
	}
	return nil
}

// network decides the network mode, validates --ask-fd and --control-fd,
// applies TLS termination and resolves allowUnixSockets.
func (b *builder) network() error {
	in, p, m, r := b.in, b.p, b.m, b.r
	// Network mode and sockets.
	switch in.NetMode {
	case "":
		p.Network.Mode = "none"
		if len(p.Network.AllowedDomains) > 0 || in.ControlFD > 0 || in.AskFD > 0 {
			// With --control-fd the proxy runs from the start, so that a
			// later line can open what the first lists keep closed.
			p.Network.Mode = "filtered"
		}
	case "none", "filtered", "host":
		p.Network.Mode = in.NetMode
	default:
		return fmt.Errorf("--net %q: use none, filtered or host", in.NetMode)
	}
	p.Network.Publish = in.Publish
	// Flags that only mean something with the proxy, beside --net none
	// on the same command line: one of the two is a mistake. (A settings
	// file's allowedDomains under --net none is the caller choosing to
	// run offline, and stays quiet.)
	if in.NetMode == "none" {
		switch {
		case len(in.AllowDomains) > 0:
			return fmt.Errorf("--allow-domain %s has no effect with --net none; drop one of them", in.AllowDomains[0])
		case len(in.AllowRegistry) > 0:
			return fmt.Errorf("--allow-registry %s has no effect with --net none; drop one of them", in.AllowRegistry[0])
		case in.TLSTerminate:
			return errors.New("--tls-terminate has no effect with --net none; drop one of them")
		}
	}
	if p.Network.Mode == "host" {
		if err := hostNetBypass(p, m); err != nil {
			return err
		}
	}
	if in.AskFD > 0 {
		switch {
		case p.Network.Mode != "filtered":
			return fmt.Errorf("--ask-fd asks about hosts the proxy sees, and --net %s has no proxy; drop one of them", p.Network.Mode)
		case p.WeakerNested:
			return fmt.Errorf("--ask-fd needs sbx's proxy, which --weaker-nested cannot run; drop one of them")
		case slices.Contains(in.KeepFDs, in.AskFD):
			return fmt.Errorf("--ask-fd %d is also --keep-fd %d: the asking descriptor must never reach the command", in.AskFD, in.AskFD)
		case in.AskFD == in.ControlFD:
			return fmt.Errorf("--ask-fd and --control-fd are both %d; give each its own descriptor", in.AskFD)
		case in.AskTimeout < 0:
			return fmt.Errorf("--ask-timeout %v: must be positive", in.AskTimeout)
		}
	}
	if in.ControlFD > 0 {
		switch {
		case p.Network.Mode != "filtered":
			return fmt.Errorf("--control-fd changes the proxy's lists, and --net %s has no proxy; drop one of them", p.Network.Mode)
		case p.WeakerNested:
			return fmt.Errorf("--control-fd needs sbx's proxy, which --weaker-nested cannot run; drop one of them")
		case slices.Contains(in.KeepFDs, in.ControlFD):
			return fmt.Errorf("--control-fd %d is also --keep-fd %d: the control descriptor must never reach the command", in.ControlFD, in.ControlFD)
		}
	}
	tlsSet := m.tls
	if in.TLSTerminate && tlsSet == nil {
		tlsSet = &tlsSetting{}
	}
	if tlsSet != nil && p.Network.Mode == "filtered" {
		if err := untrustedTermination(m, in.TLSTerminate, p.Credentials); err != nil {
			return err
		}
	}
	if tlsSet != nil {
		t, err := r.tlsTerminate(*tlsSet, m.tlsFrom)
		if err != nil {
			return err
		}
		// A CA key of the user's is never readable in the sandbox, and
		// the certificates it trusts are never writable there.
		if t.CAKeyPath != "" {
			// A second hard link would stay readable (the deny is
			// by path), as masked credentials files refuse too.
			if fi, err := os.Stat(t.CAKeyPath); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
					return fmt.Errorf("tlsTerminate.caKeyPath %s has %d hard links, which the sandbox's deny would not cover; keep one link", t.CAKeyPath, st.Nlink)
				}
			}
			p.Filesystem.DenyRead = dedupe(append(p.Filesystem.DenyRead, resolvedOr(t.CAKeyPath)))
		}
		for _, c := range append([]string{t.CACertPath}, t.ExtraCACertPaths...) {
			if c != "" {
				p.Filesystem.DenyWrite = dedupe(append(p.Filesystem.DenyWrite, resolvedOr(c)))
			}
		}
		switch p.Network.Mode {
		case "filtered":
			p.Network.TLSTerminate = t
		case "host":
			return fmt.Errorf("network.tlsTerminate / --tls-terminate needs sbx's proxy, which --net host bypasses; drop one of them")
		default:
			p.Notes = append(p.Notes, "network.tlsTerminate: no effect, the command has no network (allow a domain to use it)")
		}
	}
	socks, err := m.resolve(r, "allowUnixSockets", m.named("allowUnixSockets", p.Network.AllowUnixSockets), false)
	if err != nil {
		return err
	}
	p.Network.AllowUnixSockets = socks
	// An empty root (--reads declared, denyRead "/") shows only what is
	// declared: an allowed socket is declared by its allowance, so it is
	// there to connect to, unless another deny hides it.
	if slices.Contains(p.Filesystem.DenyRead, "/") && !p.Network.AllowAllUnixSockets {
		var hidden []string
		for _, s := range socks {
			if !WithinAny(s, p.Filesystem.AllowRead) && !WithinAny(s, p.Filesystem.AllowWrite) {
				hidden = append(hidden, s)
			}
		}
		declareReads(p, m, hidden, "allowUnixSockets", "not shown in the empty root")
	}
	return nil
}

// declareReads makes paths readable in an empty root (denyRead "/"),
// each named as coming from from in --dry-run's sources. It never
// re-opens a path another denyRead holds (a script's own #! line, or a
// socket's allowance, must not undo a credential mask), nor one the
// managed settings deny (managed wins, a managed "/" too outside its own
// allowRead): such a path is left out with a note ending in skipped.
func declareReads(p *Policy, m *merged, paths []string, from, skipped string) {
	var denied []string
	for _, d := range p.Filesystem.DenyRead {
		if d != "/" {
			denied = append(denied, d)
		}
	}
	for _, g := range paths {
		if WithinAny(g, denied) {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: %s is denied for reading; %s", from, g, skipped))
			continue
		}
		if m.reopens("allowRead", g) {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: %s is not readable under the managed settings; %s", from, g, skipped))
			continue
		}
		p.Filesystem.AllowRead = append(p.Filesystem.AllowRead, g)
		m.add("allowRead", g, from)
	}
	p.Filesystem.AllowRead = dedupe(p.Filesystem.AllowRead)
}

// process validates the command and its flags, fills Process, and, for a
// real run, creates the presets' missing caches: last, since nothing
// after it can fail.
func (b *builder) process() error {
	in, p, m, env := b.in, b.p, b.m, b.env
	if len(in.Argv) == 0 || in.Argv[0] == "" {
		return errors.New("no command given; usage: sbx [flags] -- COMMAND [ARG...] or sbx [flags] -c 'STRING'")
	}
	if in.Timeout < 0 {
		return fmt.Errorf("--timeout %v: must be positive", in.Timeout)
	}
	switch in.ObserveFiles {
	case "", "writes", "reads", "all":
	default:
		return fmt.Errorf("--observe-files %q: use writes, reads or all", in.ObserveFiles)
	}
	if in.ObserveFiles != "" && p.WeakerNested {
		return fmt.Errorf("--observe-files %s needs the full sandbox (its supervisor observes the calls); drop it or --weaker-nested", in.ObserveFiles)
	}
	p.ObserveFiles = in.ObserveFiles
	if in.Tty && p.WeakerNested {
		return errors.New("--tty needs the full sandbox's private pseudo-terminals, which --weaker-nested does not have; drop one of them")
	}
	if in.Tty && !p.AllowPty {
		return errors.New("--tty needs pseudo-terminals, and the managed settings set allowPty false; drop --tty")
	}
	p.Process = Process{
		Tty:  in.Tty || p.AllowPty && in.Terminal && !p.WeakerNested && runtime.GOOS == "linux",
		Argv: in.Argv, Dir: in.Cwd, Timeout: in.Timeout, KeepFDs: in.KeepFDs, ControlFD: in.ControlFD,
		AskFD: in.AskFD, AskTimeout: in.AskTimeout,
		Home: b.home, UID: in.UID, GID: in.GID, Self: p.Process.Self,
	}
	if slices.Contains(m.presets, "node") && !p.WeakerNested && !hasEnv(env, "SPAWN_WRAP_SHIM_ROOT") {
		// nyc's spawn-wrap writes its shims into HOME
		// (~/.node-spawn-wrap-*) unless told otherwise: the private /tmp.
		env = append(env, "SPAWN_WRAP_SHIM_ROOT=/tmp")
		p.Notes = append(p.Notes, "preset node: SPAWN_WRAP_SHIM_ROOT=/tmp (nyc's shims go to the private /tmp, not HOME)")
	}
	if slices.Contains(m.presets, "node") && !hasEnv(env, "npm_config_update_notifier") && !hasEnv(env, "NPM_CONFIG_UPDATE_NOTIFIER") {
		// npm looks up its registry for a newer npm on a fresh HOME,
		// every day: a network attempt that no build needs, refused
		// and recorded under --net none (failing --fail-on-violation)
		// or by the proxy.
		env = append(env, "npm_config_update_notifier=false")
		p.Notes = append(p.Notes, "preset node: npm_config_update_notifier=false (npm does not look for a newer npm)")
	}
	p.Process.Env = env
	if !in.DryRun {
		// Last: nothing above can fail any more.
		for _, c := range b.toCreate {
			created, err := createMissing(c, b.r.createFile[c])
			if err != nil {
				p.Notes = append(p.Notes, fmt.Sprintf("allowWrite %s skipped: cannot create it: %v", c, unwrapPathErr(err)))
				p.Filesystem.AllowWrite = slices.DeleteFunc(p.Filesystem.AllowWrite, func(w string) bool { return w == c })
				continue
			}
			// An empty file made in the working tree (the crate's
			// Cargo.lock) goes again after the run if nothing filled it.
			if created && b.r.createFile[c] && Within(c, in.Cwd) {
				p.Filesystem.Placeholders = append(p.Filesystem.Placeholders, c)
			}
		}
	}
	p.Process.Removed = b.removed
	p.Sources = m.sources(p)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		p.Process.EnvKeys = append(p.Process.EnvKeys, k)
	}
	return nil
}

// createMissing makes a preset's missing cache: a directory (mode 0700,
// with its parents), or with file an empty file (mode 0644 less the
// umask) in such a directory; a file that appeared meanwhile is left as
// it is. created reports whether it made the file.
func createMissing(path string, file bool) (created bool, err error) {
	if !file {
		return false, os.MkdirAll(path, 0o700)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, f.Close()
}

// RemovePlaceholders removes the empty files Build made in the working
// tree for the run (Filesystem.Placeholders) that are still empty
// regular files: a run that never ran cargo leaves no empty Cargo.lock
// behind.
func RemovePlaceholders(p *Policy) {
	for _, f := range p.Filesystem.Placeholders {
		if st, err := os.Lstat(f); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
			os.Remove(f)
		}
	}
}

// cargoLockfile is the rust preset's Cargo.lock of a crate that has none
// yet: when the working directory holds a Cargo.toml and no directory
// above it does (so it is its own workspace root, where cargo writes the
// lock file), a missing Cargo.lock beside it is created empty (cargo
// reads an empty lock file as none and fills it in) and made writable,
// the one file of the crate the preset opens. An existing Cargo.lock
// stays read-only: a build that would change it fails, as cargo's
// --locked would.
func cargoLockfile(cwd string, notes *[]string) []pathEntry {
	if cwd == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(cwd, "Cargo.toml")); err != nil {
		return nil
	}
	lock := filepath.Join(cwd, "Cargo.lock")
	if _, err := os.Lstat(lock); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for d := filepath.Dir(cwd); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "Cargo.toml")); err == nil {
			*notes = append(*notes, fmt.Sprintf("preset rust: %s has no Cargo.lock, but %s may be its workspace root: make the lock file's directory writable for the first build", cwd, d))
			return nil
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	*notes = append(*notes, fmt.Sprintf("preset rust: allowWrite += %s (the crate's lock file), missing: created empty (mode 0644 less the umask) when the command runs", lock))
	return []pathEntry{{path: lock, literal: true, optional: true, from: "preset rust", create: true, createFile: true}}
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return false
}

func entries(ss []string) []pathEntry {
	out := make([]pathEntry, len(ss))
	for i, s := range ss {
		out[i] = pathEntry{path: s}
	}
	return out
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

type resolver struct {
	cwd, home string
	// create receives the missing paths of entries marked create (a
	// preset's cache), which Build makes once every check has passed.
	create *[]string
	// createFile marks the paths in create that are files, not
	// directories.
	createFile map[string]bool
	// dirs maps directories to their resolved paths (see resolve).
	dirs map[string]string
	// names remembers resolve's lstat of a name in a resolved directory
	// (whether it is there), made with dirs: the built-in masks are
	// resolved more than once per plan (the defaults, then the masked
	// copies), each name costs one lstat.
	names map[string]bool
	// notes receives what was skipped.
	notes *[]string
	// protected are the names a writable root may not be, lie in, or
	// hold only as its own tail (set while resolving allowWrite).
	protected []Protected
	// grants, set while the grant lists are resolved, checks their
	// symlinks and records their literal paths (see links.go).
	grants *grantLog
	// writable, set while denyWrite is resolved, are the writable
	// roots: a denyWrite entry named through a symlink in one is
	// refused (see linkInWritable).
	writable []string
	// takesWrites, set while the deny lists are resolved, are the
	// writable roots and the discard regions: a directory a deny walk
	// cannot read there is denied whole (see walk.go).
	takesWrites []string
}

// protectedRoot names the protected name that making w writable would
// expose, or "": w is one (~/.bashrc), lies inside one (.git/hooks/x), or
// ends where one begins (.git holds hooks and config; .claude holds
// commands and agents), so the search inside writable roots, which looks
// for whole names, would not find it.
func protectedRoot(w string, names []Protected) string {
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(w), "/"), "/")
	for _, pn := range names {
		nc := strings.Split(pn.Name, "/")
		if pn.OnlyIfFile {
			if comps[len(comps)-1] == pn.Name {
				if st, err := os.Lstat(w); err == nil && !st.IsDir() {
					return pn.Name
				}
			}
			continue
		}
		for i := range comps {
			// nc matched from comps[i]: wholly (w is or lies in the
			// name) or up to w's end (w holds the rest of the name).
			j := 0
			for j < len(nc) && i+j < len(comps) && comps[i+j] == nc[j] {
				j++
			}
			if j == len(nc) || (j > 0 && i+j == len(comps)) {
				return pn.Name
			}
		}
	}
	return ""
}

// defaults resolves the built-in credential locations, "~/" ones under
// each of the caller's homes (HOME and the passwd entry's, when they
// differ). A location that cannot be resolved (a directory on the way
// the caller cannot enter) is skipped with a note when it lies outside
// the places that take writes: the command, as the same user, cannot
// reach it either, nor change the directory's mode in a read-only view.
// Where writes go it could (see walk.go): the directory that stops the
// resolution is denied whole for the run, and a location that cannot be
// resolved for another reason (a path too long, a loop of links) is an
// error.
func (r resolver) defaults(list []string, homes ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	// unresolved handles d, under home h ("" for an absolute entry),
	// that failed to resolve with err.
	unresolved := func(d, h string, err error) error {
		where := ""
		p := d
		if h != "" {
			where = " under " + h
			p = filepath.Join(h, d[2:])
		}
		b := blocker(p)
		rb := resolvedOr(b)
		if !WithinAny(rb, r.takesWrites) {
			if h != "" {
				r.note(fmt.Sprintf("built-in denyRead %q%s skipped: %v (the command, as the same user, cannot reach it either)", d, where, errors.Unwrap(err)))
			} else {
				r.note(fmt.Sprintf("built-in denyRead %q skipped: %v", d, errors.Unwrap(err)))
			}
			return nil
		}
		if errors.Is(err, fs.ErrPermission) {
			r.note(fmt.Sprintf("built-in denyRead %q%s: %s cannot be entered, and lies where the command may write (it could open it again): denied whole for the run; make it readable (chmod u+rx %s) to deny only the credentials", d, where, rb, rb))
			out = append(out, rb)
			return nil
		}
		return fmt.Errorf("built-in denyRead %q%s: %v, and %s lies where the command may write, so it could reach what sbx cannot resolve; remove the links or the depth on the way, or make it not writable", d, where, errors.Unwrap(err), b)
	}
	for _, h := range homes {
		// "/" is a home too (a container user run with HOME=/, whose
		// tools keep /.aws and /.ssh).
		if h == "" || !filepath.IsAbs(h) || seen[filepath.Clean(h)] {
			continue
		}
		seen[filepath.Clean(h)] = true
		hr := r
		hr.home = filepath.Clean(h)
		for _, d := range list {
			if !strings.HasPrefix(d, "~/") {
				continue
			}
			got, err := hr.all("built-in denyRead", entries([]string{d}), false)
			if err != nil {
				if err := unresolved(d, hr.home, err); err != nil {
					return nil, err
				}
				continue
			}
			out = append(out, got...)
		}
	}
	if len(seen) == 0 {
		r.note("no home directory (HOME unset or relative, and none in /etc/passwd): the built-in ~/ credential locations are not masked")
	}
	for _, d := range list {
		if strings.HasPrefix(d, "~/") {
			continue
		}
		got, err := r.all("built-in denyRead", entries([]string{d}), false)
		if err != nil {
			if err := unresolved(d, "", err); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, got...)
	}
	return dedupe(out), nil
}

// maskedCopies lists in p.Filesystem.MaskedCopies the built-in masks of
// DefaultMaskedCopies that only the defaults deny: not re-opened by an
// allowRead, and not inside a denyRead of the user's or the managed
// settings (those hide the file whole). The paths stay in DenyRead: the
// real file is never readable; the sandbox decides whether it can show a
// masked copy in its place.
func (r resolver) maskedCopies(p *Policy, userDeny []string, allowed map[string]bool, homes, environ []string) error {
	quiet := r
	quiet.notes = nil // the full list's pass has said it already
	// What the other built-in entries and the moved stores deny stays
	// hidden whole, whatever name leads to it (~/.npmrc a link to
	// ~/.netrc, NETRC=~/.npmrc).
	var rest []string
	for _, d := range DefaultDenyRead {
		if _, ok := DefaultMaskedCopies[d]; !ok {
			rest = append(rest, d)
		}
	}
	others, err := quiet.defaults(rest, homes...)
	if err != nil {
		return err
	}
	for _, s := range movedStorePaths(environ) {
		others = append(others, s)
		if real, _, err := Resolve(s); err == nil {
			others = append(others, real)
		}
	}
	formats := map[string]string{}
	var order []string
	for d, format := range DefaultMaskedCopies {
		got, err := quiet.defaults([]string{d}, homes...)
		if err != nil {
			return err
		}
		for _, g := range got {
			if allowed[g] || WithinAny(g, userDeny) || WithinAny(g, others) || !slices.Contains(p.Filesystem.DenyRead, g) {
				continue
			}
			// Another default around it (a denied parent) keeps it
			// hidden whole.
			if slices.ContainsFunc(p.Filesystem.DenyRead, func(o string) bool { return o != g && Within(g, o) }) {
				continue
			}
			if f, dup := formats[g]; dup {
				if f != format {
					formats[g] = "" // two formats: every value masked
				}
				continue
			}
			formats[g] = format
			order = append(order, g)
		}
	}
	slices.Sort(order)
	for _, g := range order {
		p.Filesystem.MaskedCopies = append(p.Filesystem.MaskedCopies, MaskedCopy{Path: g, Format: formats[g]})
	}
	return nil
}

func (r resolver) note(s string) {
	if r.notes != nil {
		*r.notes = append(*r.notes, s)
	}
}

// resolve is Resolve for a clean absolute path, through remembered
// parent directories: each directory on the way is resolved once (and
// remembered), and a name in a resolved directory costs one lstat.
// Settings list many paths in few directories (500 denyRead entries in
// one), and most default entries name files that do not exist
// (~/.vault-token, ~/.config/gcloud/...): resolving each from / cost an
// lstat per component, several times over. Whatever is
// not a plain directory entry (a symlink, an error other than ENOENT or
// ENOTDIR) takes the full walk, so the answers are Resolve's.
func (r resolver) resolve(p string) (real string, exists bool, err error) {
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if r.dirs == nil || base == "" || dir == p {
		return Resolve(p)
	}
	realDir, ok := r.dirs[dir]
	if !ok {
		var dirExists bool
		if realDir, dirExists, err = r.resolve(dir); err != nil {
			return "", false, err
		}
		if !dirExists {
			// Resolve's answer too: the longest existing prefix
			// resolved, the rest appended.
			return filepath.Join(realDir, base), false, nil
		}
		r.dirs[dir] = realDir
	}
	full := filepath.Join(realDir, base)
	if there, ok := r.names[full]; ok {
		return full, there, nil
	}
	st, err := os.Lstat(full)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink == 0:
		r.remember(full, true)
		return full, true, nil
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR):
		r.remember(full, false)
		return full, false, nil
	}
	return Resolve(p)
}

// remember notes a plain answer of resolve's lstat (a symlink or an
// error is not one: those take Resolve's walk every time).
func (r resolver) remember(full string, there bool) {
	if r.names != nil {
		r.names[full] = there
	}
}

// all resolves every entry of one list; mustExist makes a missing path an
// error (allowWrite: there is nothing to make writable).
func (r resolver) all(key string, es []pathEntry, mustExist bool) ([]string, error) {
	var out []string
	for _, e := range es {
		abs, err := r.abs(e.path)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", key, e.path, err)
		}
		if alts := braceAlternatives(e.path); strings.HasPrefix(key, "deny") && !e.literal && len(alts) > 1 {
			// A deny with braces denies each alternative (see
			// braceAlternatives), and the text itself where it names a
			// path.
			sub := make([]pathEntry, 0, len(alts)+1)
			for _, a := range alts {
				ea := e
				ea.path = a
				sub = append(sub, ea)
			}
			if _, err := os.Lstat(abs); err == nil {
				el := e
				el.literal = true
				sub = append(sub, el)
			}
			got, err := r.all(key, sub, mustExist)
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
			continue
		}
		if !e.literal && needsGlob(e.path) {
			matches, isGlob, err := r.glob(key, e)
			if err != nil {
				return nil, err
			}
			if !isGlob {
				matches, abs = nil, matches[0]
			}
			for _, m := range matches {
				if err := r.checkDenyWriteLink(key, e, m); err != nil {
					return nil, err
				}
				if real, exists, err := r.resolve(m); err == nil && exists {
					if skip, err := r.grant(key, e, m, real, true); err != nil || skip {
						continue
					}
					if pn := protectedRoot(real, r.protected); pn != "" {
						r.note(fmt.Sprintf("%s %q: match %s would make the protected name %s writable: skipped", key, e.path, real, pn))
						continue
					}
					out = append(out, real)
				}
			}
			if isGlob {
				continue
			}
		}
		if err := r.checkDenyWriteLink(key, e, abs); err != nil {
			return nil, err
		}
		real, exists, err := r.resolve(abs)
		if err == nil && e.blind {
			if !WithinAny(real, r.takesWrites) {
				continue // the command cannot open it either (see walk.go)
			}
			r.note(fmt.Sprintf("%s: %s (from %s) cannot be read, and lies where the command may write (it could make it readable again): denied whole for the run; make it readable (chmod u+rx %s) to deny only what matches", key, real, e.from, real))
		}
		if err != nil {
			if e.optional {
				r.note(fmt.Sprintf("%s %s (from %s) skipped: %v", key, e.path, e.from, err))
				continue
			}
			return nil, fmt.Errorf("%s %q: %w", key, e.path, err)
		}
		if skip, err := r.grant(key, e, abs, real, false); err != nil {
			return nil, err
		} else if skip {
			continue
		}
		if pn := protectedRoot(real, r.protected); pn != "" {
			msg := fmt.Sprintf("%s %s would make the protected name %s writable; make a directory around it writable instead (protected names stay read-only there)", key, e.path, pn)
			if e.optional {
				r.note(msg + " (from " + e.from + "): skipped")
				continue
			}
			return nil, errors.New(msg)
		}
		if mustExist && !exists && key == "allowWrite" && r.create != nil && !e.create && !e.optional && isDir(filepath.Dir(real)) {
			// A directory whose parent exists (--allow-write target
			// before a first build, or a settings file's, such as the
			// output directory sbx learn saw a run create) is created,
			// like a preset's cache: the entry has passed every check a
			// grant does (trust, masks, protected names), and an empty
			// directory where writes are granted gives nothing more. A
			// deeper missing path stays an error, as it is more likely a
			// typo.
			e.create = true
			r.note(fmt.Sprintf("allowWrite %s: missing, created mode 0700 when the command runs", real))
		}
		if mustExist && !exists && e.create && r.create != nil {
			*r.create = append(*r.create, real)
			if e.createFile {
				if r.createFile == nil {
					r.createFile = map[string]bool{}
				}
				r.createFile[real] = true
			}
			out = append(out, real)
			continue
		}
		if mustExist && !exists {
			if e.optional {
				r.note(fmt.Sprintf("%s %s (from %s) skipped: it does not exist", key, e.path, e.from))
				continue
			}
			return nil, fmt.Errorf("%s %q: %s does not exist; create it first or fix the path", key, e.path, abs)
		}
		out = append(out, real)
	}
	return dedupe(out), nil
}

// checkDenyWriteLink refuses a denyWrite entry (or glob match) lit that
// is, or lies under, a symlink in a writable root: the rule lands on the
// link's target, and the command could replace the link itself (or the
// directory it stands for) with a file of its own at the named path.
func (r resolver) checkDenyWriteLink(key string, e pathEntry, lit string) error {
	if key != "denyWrite" || len(r.writable) == 0 {
		return nil
	}
	if l := linkInWritable(lit, r.writable); l != "" {
		return fmt.Errorf("denyWrite %q (from %s): %s is a symlink inside a writable place, which the command could replace; name the real path, or remove the link", e.path, e.from, l)
	}
	return nil
}

// linkInWritable returns the first symlink, from p up, that lies in a
// writable root (its directory resolves into one), or "".
func linkInWritable(p string, writable []string) string {
	for q := filepath.Clean(p); q != "/" && q != "."; q = filepath.Dir(q) {
		if st, err := os.Lstat(q); err == nil && st.Mode()&os.ModeSymlink != 0 && WithinAny(resolvedOr(filepath.Dir(q)), writable) {
			return q
		}
	}
	return ""
}

func (r resolver) abs(p string) (string, error) {
	switch {
	case (p == "~" || strings.HasPrefix(p, "~/")) && r.home == "":
		return "", errors.New("HOME is not set and the caller has no home in /etc/passwd; write the absolute path")
	case p == "~":
		p = r.home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(r.home, p[2:])
	case strings.HasPrefix(p, "~"):
		return "", errors.New("~user paths are not supported; write the absolute path")
	case !filepath.IsAbs(p):
		p = filepath.Join(r.cwd, p)
	}
	return filepath.Clean(p), nil
}

// Resolve returns p with every symlink resolved. For a path that does not
// exist, the longest existing prefix is resolved and the rest appended, so
// a rule on a future file still lands on the right directory.
func Resolve(p string) (real string, exists bool, err error) {
	real, err = filepath.EvalSymlinks(p)
	if err == nil {
		return real, true, nil
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscallENOTDIR) {
		return "", false, fmt.Errorf("resolving %s: %w", p, err)
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || base == "" {
		return p, false, nil
	}
	parent, _, err := Resolve(dir)
	if err != nil {
		return "", false, err
	}
	return filepath.Join(parent, base), false, nil
}

// Within reports whether p is root or lies below it (both clean, absolute).
func Within(p, root string) bool {
	if root == "/" {
		return true
	}
	// p == root, or p starts with root+"/" (without making that string:
	// Within runs for every pair of paths a plan compares).
	return p == root || (len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root)
}

// WithinAny reports whether p lies within any of roots.
func WithinAny(p string, roots []string) bool {
	for _, r := range roots {
		if Within(p, r) {
			return true
		}
	}
	return false
}

// FilterEnv computes the command's environment from the caller's.
// Order: start from environ (nothing with clearEnv, except pass entries);
// drop DefaultDeniedEnv unless kept by pass; drop unset; apply set (K=V).
// pass and unset entries may be globs. It returns the environment and the
// names it removed.
func FilterEnv(environ []string, clearEnv bool, pass, unset, set []string) (env, removed []string, err error) {
	for _, pat := range append(append([]string{}, pass...), unset...) {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return nil, nil, fmt.Errorf("environment name pattern %q is malformed; use a name or a glob like AWS_*", pat)
		}
	}
	passM, unsetM := newNameMatcher(pass), newNameMatcher(unset)
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		keep := passM.match(k)
		switch {
		case clearEnv && !keep:
			continue
		case !keep && defaultDeniedEnv().match(k):
			removed = append(removed, k)
			continue
		case unsetM.match(k):
			removed = append(removed, k)
			continue
		}
		env = append(env, kv)
	}
	for _, kv := range set {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return nil, nil, fmt.Errorf("--set-env %q: use KEY=VALUE", kv)
		}
		out := env[:0]
		for _, e := range env {
			if ek, _, _ := strings.Cut(e, "="); ek != k {
				out = append(out, e)
			}
		}
		env = append(out, kv)
	}
	return env, removed, nil
}

// nameMatcher answers path.Match(pattern, name) for any of its patterns,
// without running path.Match for the common shapes: a plain name is a
// set lookup, "*SUFFIX" and "PREFIX*" are string compares (a '*' never
// matches '/', as in path.Match). Every other pattern goes to path.Match.
// Checking every variable of an environment against DefaultDeniedEnv
// with path.Match alone took 0.15 ms of each run.
type nameMatcher struct {
	exact    map[string]bool
	suffixes []string // from "*SUFFIX"
	prefixes []string // from "PREFIX*"
	globs    []string
}

func newNameMatcher(pats []string) nameMatcher {
	m := nameMatcher{exact: make(map[string]bool, len(pats))}
	for _, p := range pats {
		switch {
		case !strings.ContainsAny(p, `*?[\`):
			m.exact[p] = true
		case len(p) > 1 && p[0] == '*' && !strings.ContainsAny(p[1:], `*?[\`):
			m.suffixes = append(m.suffixes, p[1:])
		case len(p) > 1 && p[len(p)-1] == '*' && !strings.ContainsAny(p[:len(p)-1], `*?[\`):
			m.prefixes = append(m.prefixes, p[:len(p)-1])
		default:
			m.globs = append(m.globs, p)
		}
	}
	return m
}

func (m nameMatcher) match(name string) bool {
	if m.exact[name] {
		return true
	}
	for _, s := range m.suffixes {
		if strings.HasSuffix(name, s) && !strings.Contains(name[:len(name)-len(s)], "/") {
			return true
		}
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(name, p) && !strings.Contains(name[len(p):], "/") {
			return true
		}
	}
	for _, g := range m.globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

var defaultDeniedEnv = sync.OnceValue(func() nameMatcher { return newNameMatcher(DefaultDeniedEnv) })

// tlsTerminate resolves and checks network.tlsTerminate: the CA pair
// loads and matches, each extra CA file holds certificates. Every problem
// is one line naming the key and the file.
func (r resolver) tlsTerminate(t tlsSetting, file string) (*TLSTerminate, error) {
	out := &TLSTerminate{ExcludeDomains: t.ExcludeDomains}
	abs := func(key, p string) (string, error) {
		a, err := r.abs(p)
		if err != nil {
			return "", fmt.Errorf("settings %s: key \"network.tlsTerminate.%s\" %q: %w", file, key, p, err)
		}
		return a, nil
	}
	var err error
	if t.CACertPath != "" {
		if out.CACertPath, err = abs("caCertPath", t.CACertPath); err != nil {
			return nil, err
		}
		if out.CAKeyPath, err = abs("caKeyPath", t.CAKeyPath); err != nil {
			return nil, err
		}
		ca, err := tls.LoadX509KeyPair(out.CACertPath, out.CAKeyPath)
		if err != nil {
			return nil, fmt.Errorf("settings %s: key \"network.tlsTerminate\": caCertPath %s / caKeyPath %s: %v; give a PEM CA certificate and its own key", file, out.CACertPath, out.CAKeyPath, err)
		}
		if leaf, err := x509.ParseCertificate(ca.Certificate[0]); err != nil || !leaf.IsCA {
			return nil, fmt.Errorf("settings %s: key \"network.tlsTerminate.caCertPath\" %s: not a CA certificate (needs basicConstraints CA:TRUE)", file, out.CACertPath)
		}
	}
	for _, e := range t.ExtraCACertPaths {
		a, err := abs("extraCaCertPaths", e)
		if err != nil {
			return nil, err
		}
		if _, err := CACertificates(a); err != nil {
			return nil, fmt.Errorf("settings %s: key \"network.tlsTerminate.extraCaCertPaths\": %v", file, err)
		}
		out.ExtraCACertPaths = append(out.ExtraCACertPaths, a)
	}
	return out, nil
}

// CACertificates reads the CERTIFICATE blocks of a PEM file, and only
// those: a private key in the same file is never passed on.
func CACertificates(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %v", path, unwrapPathErr(err))
	}
	var out []byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
				return nil, fmt.Errorf("%s: a CERTIFICATE block does not parse: %v", path, err)
			}
			out = append(out, pem.EncodeToMemory(blk)...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block", path)
	}
	return out, nil
}

// resolvedOr is p with its symlinks resolved, or p.
func resolvedOr(p string) string {
	if r, _, err := Resolve(p); err == nil {
		return r
	}
	return p
}

// UndeclaredRegions are the places --undeclared-writes discard overlays:
// HOME, the working directory's tree, and /var/tmp, each when it exists
// and the caller could write it by DAC (access(2) W_OK), resolved.
// Writes elsewhere stay refused: the rest of the system is not the
// caller's to write anyway.
func UndeclaredRegions(home, cwd string) []string {
	var out []string
	for _, d := range []string{home, cwd, "/var/tmp"} {
		if d == "" || d == "/" || !filepath.IsAbs(d) {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil || Within(real, "/tmp") || Within(real, "/proc") || Within(real, "/dev") {
			continue
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() || syscallAccess(real) != nil {
			continue
		}
		out = append(out, real)
	}
	return dedupe(out)
}

// claudeDir is the --claude-settings DIR, a working tree of its own; ""
// without --claude-settings.
func claudeDir(in Input) string {
	if !in.ClaudeSettings {
		return ""
	}
	return in.ClaudeDir
}

// claudeProject sets ClaudeDir to the root of the project that holds it
// (the working directory when no DIR was given) and claudeDirs to the
// directories whose scopes are read (see ClaudeProject). A DIR the caller
// named must be a directory, and its project must hold a settings file:
// a mistyped DIR would otherwise run without the rules it was meant to
// bring.
func (in *Input) claudeProject() error {
	start := in.ClaudeDir
	if start == "" {
		start = in.Cwd
	}
	if in.ClaudeDirGiven {
		st, err := os.Stat(start)
		switch {
		case err != nil:
			return fmt.Errorf("--claude-settings %s: %v; name the project's directory", start, unwrapPathErr(err))
		case !st.IsDir():
			return fmt.Errorf("--claude-settings %s: not a directory; name the project's directory", start)
		}
	}
	home := in.Home
	if home == "" || !filepath.IsAbs(home) {
		home = in.PasswdHome
	}
	root, dirs, found := ClaudeProject(start, home)
	if in.ClaudeDirGiven && !found {
		return fmt.Errorf("--claude-settings %s: no .claude/settings.json or .claude/settings.local.json there or above it up to the project root %s; name the project's directory", start, root)
	}
	in.ClaudeDir, in.claudeDirs = root, dirs
	return nil
}

// claudeProjectNote says which project --claude-settings chose and which
// directories' scopes it read, for --dry-run.
func claudeProjectNote(root string, dirs []string) string {
	n := "Claude Code project: " + root
	if len(dirs) > 1 {
		n += " (scopes read from " + strings.Join(dirs, ", ") + "; the root's scalars win, arrays merge)"
	}
	return n
}

// hostNetBypass refuses --net host where a settings file's network rule
// would silently stop holding: the host's network is unfiltered, so a
// deny (deniedDomains, deniedResolvedAddresses) or any rule of the
// managed settings would do nothing. Managed rules are the
// administrator's and a flag may not step around them; a user's deny is
// a rule the caller wrote and would lose without a word. An allow list
// alone only narrows what --net host widens on purpose: it is a note.
func hostNetBypass(p *Policy, m *merged) error {
	from := func(list, entry string) string {
		if f := m.src[list][entry]; len(f) > 0 {
			return f[0]
		}
		return "a settings file"
	}
	if mn := p.Network.Managed; mn != nil {
		rule := ""
		switch {
		case mn.DomainsOnly:
			rule = "allowManagedDomainsOnly"
		case len(mn.DeniedDomains) > 0:
			rule = "deniedDomains " + mn.DeniedDomains[0]
		case len(mn.AllowedDomains) > 0:
			rule = "allowedDomains " + mn.AllowedDomains[0]
		case len(mn.DeniedResolvedAddresses) > 0:
			rule = "deniedResolvedAddresses " + mn.DeniedResolvedAddresses[0]
		}
		if rule != "" {
			return fmt.Errorf("--net host would bypass the managed settings' network rule (%s); the managed settings decide the network: drop --net host", rule)
		}
	}
	if d := p.Network.DeniedDomains; len(d) > 0 {
		return fmt.Errorf("--net host would ignore deniedDomains %s of %s (the host's network is unfiltered); drop --net host or the deny", d[0], from("deniedDomains", d[0]))
	}
	if d := p.Network.DeniedResolvedAddresses; len(d) > 0 {
		return fmt.Errorf("--net host would ignore deniedResolvedAddresses %s of %s (the host's network is unfiltered); drop --net host or the deny", d[0], from("deniedResolvedAddresses", d[0]))
	}
	if a := p.Network.AllowedDomains; len(a) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("--net host: allowedDomains of %s do nothing, the host's network is unfiltered", from("allowedDomains", a[0])))
	}
	return nil
}

// ProtectedRoot names the protected name (ProtectedNames) that making w
// writable would expose, or "": w is one, lies inside one, or ends where
// one begins (.git). Build refuses such an allowWrite; sbx learn never
// writes one.
func ProtectedRoot(w string, allowGitConfig bool) string {
	return protectedRoot(w, ProtectedNames(allowGitConfig))
}
