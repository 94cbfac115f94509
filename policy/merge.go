package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Composition: how the layers add up (written once, here).
//
// Layers, lowest precedence first: settings files (Claude's user,
// project and local scopes, then each --settings in order), the layers
// derived from flags (--allow-registry, presets), the command-line flags,
// and last the managed layer. A scalar is the last layer's that sets it,
// so the managed layer's wins over every other, flags included. Every
// list is the union of every layer's; nothing replaces a list. Where the
// managed layer speaks, nothing else can undo it: its denies cannot be
// re-opened (non-managed grants equal to or inside a managed denyRead or
// denyWrite are dropped, with a note), a non-managed filesystem.disabled
// is ignored when the managed layer sets any filesystem key, and its
// allowManaged…Only keys make its allow lists the only ones.

// flagNames names the flag behind each list or scalar of the
// command-line layer, for notes and --dry-run's sources.
var flagNames = map[string]string{
	"allowRead": "--allow-read", "denyRead": "--deny-read", "allowWrite": "--allow-write",
	"denyWrite": "--deny-write", "discardWrites": "--discard-writes",
	"allowedDomains": "--allow-domain", "deniedDomains": "--deny-domain",
	"allowUnixSockets": "--allow-unix-socket", "allowGitConfig": "--allow-git-config", "allowProtected": "--allow-protected",
	"allowPty": "--allow-pty", "enableWeakerNestedSandbox": "--weaker-nested",
	"allowAllUnixSockets": "--allow-all-unix-sockets", "allowLocalBinding": "--allow-local-binding",
	"capture": "--capture",
}

// source names where layer l's list (or scalar) came from.
func (l *layer) source(list string) string {
	switch {
	case l.flags:
		if f, ok := flagNames[list]; ok {
			return f
		}
		return "command line"
	case l.label != "":
		return l.label
	}
	switch list {
	case "allowedDomains", "deniedDomains", "deniedResolvedAddresses", "allowUnixSockets", "allowAllUnixSockets", "allowLocalBinding", "strictAllowlist", "capture":
		list = "network." + list
	case "allowRead", "denyRead", "allowWrite", "denyWrite", "discardWrites", "allowGitConfig", "allowProtected", "disabled":
		list = "filesystem." + list
	}
	return l.file + " " + list
}

// readLayers reads every layer in precedence order (see above), marks
// the ones in the working tree and applies the trust boundary.
func readLayers(in Input, home string) (layers []*layer, notes []string, err error) {
	ctx := readCtx{cwd: in.Cwd, home: home}
	managedFiles, err := managedScope(in.ManagedSettings, in.ClaudeSettings)
	if err != nil {
		return nil, nil, err
	}
	userScope := ""
	if in.ClaudeSettings {
		dirs := in.claudeDirs
		if dirs == nil {
			dirs = []string{in.ClaudeDir}
		}
		scopes, sn, scope, err := ClaudeScopes(dirs, home, in.Environ)
		if err != nil {
			return nil, nil, err
		}
		notes = sn
		userScope = claudeUserScope(home, in.Environ)
		for _, f := range scopes {
			// Claude's scopes anchor their relative paths at the
			// directory whose .claude holds them (the user scope at
			// the project root).
			sctx := ctx
			sctx.claude, sctx.base = true, in.ClaudeDir
			if d := scope[f]; d != "" {
				sctx.base = d
			}
			l, err := readLayer(f, false, sctx)
			if err != nil {
				return nil, nil, err
			}
			l.scope = scope[f]
			layers = append(layers, l)
		}
		ctx.claude = true
	}
	for _, f := range in.Settings {
		l, err := readLayer(f, false, ctx)
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, l)
	}
	for _, name := range dedupe(in.AllowRegistry) {
		doms, err := RegistryDomains(name)
		if err != nil {
			return nil, nil, fmt.Errorf("--allow-registry: %w", err)
		}
		layers = append(layers, &layer{file: "--allow-registry " + name, label: "--allow-registry " + name, allowedDomains: doms})
		notes = append(notes, fmt.Sprintf("--allow-registry %s: allowedDomains += %s", name, strings.Join(doms, ", ")))
	}
	fl, err := flagLayer(in)
	if err != nil {
		return nil, nil, err
	}
	layers = append(layers, fl)
	mctx := ctx
	if in.ClaudeSettings {
		mctx.base = in.ClaudeDir
	}
	for _, f := range managedFiles {
		l, err := readLayer(f, true, mctx)
		if err != nil {
			return nil, nil, err
		}
		// Managed wins over the caller's environment too: its ~ denies
		// hold at the home /etc/passwd gives as well as at $HOME, as the
		// built-in masks do.
		if ph := in.PasswdHome; ph != "" && filepath.IsAbs(ph) && filepath.Clean(ph) != filepath.Clean(home) {
			pctx := mctx
			pctx.home = ph
			l2, err := readLayer(f, true, pctx)
			if err != nil {
				return nil, nil, err
			}
			l.denyRead = append(l.denyRead, atHome(l2.denyRead, ph)...)
			l.denyWrite = append(l.denyWrite, atHome(l2.denyWrite, ph)...)
		}
		layers = append(layers, l)
	}
	trees := []string{in.Cwd}
	if in.ClaudeSettings {
		trees = append(trees, in.ClaudeDir)
	}
	classify(layers, workTrees(home, trees...), userScope)
	if err := checkTrust(layers, in.TrustProjectSettings, resolver{cwd: in.Cwd, home: home}); err != nil {
		return nil, nil, err
	}
	if err := untrustedReach(layers); err != nil {
		return nil, nil, err
	}
	return layers, notes, nil
}

// atHome returns es with ~ written out as home.
func atHome(es []pathEntry, home string) []pathEntry {
	out := make([]pathEntry, 0, len(es))
	for _, e := range es {
		if e.path == "~" || strings.HasPrefix(e.path, "~/") {
			e.path = filepath.Join(home, e.path[1:])
		}
		out = append(out, e)
	}
	return out
}

// flagLayer is the command line as a layer. An empty value (a variable
// that was not set: --allow-write "$OUT") or one with a NUL byte is
// refused: a path flag would otherwise name the working directory.
func flagLayer(in Input) (*layer, error) {
	for _, f := range []struct {
		flag string
		vals []string
	}{
		{"--allow-read", in.AllowRead}, {"--deny-read", in.DenyRead}, {"--allow-write", in.AllowWrite},
		{"--deny-write", in.DenyWrite}, {"--discard-writes", in.DiscardWrites},
		{"--allow-domain", in.AllowDomains}, {"--deny-domain", in.DenyDomains},
		{"--allow-unix-socket", in.AllowUnixSockets}, {"--preset", in.Presets},
		{"--allow-protected", in.AllowProtected},
	} {
		for _, v := range f.vals {
			if strings.TrimSpace(v) == "" || strings.ContainsRune(v, 0) {
				return nil, fmt.Errorf("%s %q: the value is empty or contains a NUL byte (an unset variable?); give a path or pattern, or leave the flag out", f.flag, v)
			}
		}
	}
	l := &layer{file: "command line", flags: true}
	l.allowRead = flagEntries(in.AllowRead, "--allow-read")
	l.denyRead = flagEntries(in.DenyRead, "--deny-read")
	l.allowWrite = flagEntries(in.AllowWrite, "--allow-write")
	l.denyWrite = flagEntries(in.DenyWrite, "--deny-write")
	l.discardWrites = flagEntries(in.DiscardWrites, "--discard-writes")
	l.allowedDomains = in.AllowDomains
	l.deniedDomains = in.DenyDomains
	l.allowUnixSockets = in.AllowUnixSockets
	setTrue := func(b bool) *bool {
		if b {
			return &b
		}
		return nil
	}
	l.allowGitConfig = setTrue(in.AllowGitConfig)
	for _, name := range in.AllowProtected {
		if err := CheckProtectedName(name); err != nil {
			return nil, fmt.Errorf("--allow-protected: %w", err)
		}
	}
	l.allowProtected = in.AllowProtected
	l.allowPty = setTrue(in.AllowPty || in.Tty) // --tty's pty lives in the private devpts
	l.weakerNested = setTrue(in.WeakerNested)
	l.allowAllUnixSockets = setTrue(in.AllowAllUnixSockets)
	l.allowLocalBinding = setTrue(in.AllowLocalBinding)
	if in.Capture != "" {
		on := in.Capture == "on"
		l.capture = &on
	}
	l.presets = in.Presets
	return l, nil
}

func flagEntries(ss []string, flag string) []pathEntry {
	out := entries(ss)
	for i := range out {
		out[i].from = flag
	}
	return out
}

// merged is the layers added up: the path lists still to resolve, and
// what Build needs besides the Policy fields mergeLayers fills in.
type merged struct {
	allowRead, denyRead, allowWrite, denyWrite, discardWrites []pathEntry
	presets                                                   []string
	creds                                                     *Credentials
	tls                                                       *tlsSetting
	tlsFrom                                                   string
	sandboxEnabled                                            *bool
	enabledFrom                                               string
	domainsOnly, readOnly                                     bool
	// tlsManaged: the managed layer set network.tlsTerminate, whose
	// excludeDomains (tlsManagedExclude) are then the only ones.
	tlsManaged        bool
	tlsManagedExclude []string
	// plainManaged: a managed layer set allowPlaintextInject.
	plainManaged bool
	// tlsTrusted: a trusted layer set network.tlsTerminate;
	// tlsUntrusted the first untrusted layer that did (see
	// untrustedTermination).
	tlsTrusted   bool
	tlsUntrusted *layer

	// carve and carveW are the managed denyRead and denyWrite entries,
	// resolved (on the first resolve), which no other source re-opens;
	// carveOpen the managed allowRead entries, which re-open parts of
	// a managed denyRead (grants there are kept).
	carve, carveW, carveOpen []string
	carved                   bool
	// src maps list → entry → where it came from.
	src map[string]map[string][]string
	// trustedDeny holds the resolved denyRead entries a trusted source
	// listed (see trust.go); the grants' trust is in the grant log.
	trustedDeny map[string]bool
	// scopeDeny maps a resolved denyRead entry an untrusted Claude Code
	// project scope listed to the directories whose scopes listed it
	// (see ClaudeProject): another directory's grant may not re-open it.
	scopeDeny map[string][]string
	notes     *[]string
}

// boolScalar is one boolean key: where it lands and how a layer sets it.
type boolScalar struct {
	name string
	dst  *bool
	get  func(*layer) *bool
}

// mergeLayers adds up layers (in precedence order) into p and the
// returned lists.
func mergeLayers(layers []*layer, p *Policy, r resolver) (*merged, error) {
	m := &merged{tlsFrom: "command line", src: map[string]map[string][]string{}, trustedDeny: map[string]bool{}, scopeDeny: map[string][]string{}, notes: &p.Notes}
	managedFS, hasManaged := false, false
	for _, l := range layers {
		m.domainsOnly = m.domainsOnly || l.managedDomainsOnly
		m.readOnly = m.readOnly || l.managedReadOnly
		if l.managed {
			hasManaged = true
			managedFS = managedFS || l.fsKeys
		}
	}
	bools := []boolScalar{
		{"allowGitConfig", &p.Filesystem.AllowGitConfig, func(l *layer) *bool { return l.allowGitConfig }},
		{"disabled", &p.Filesystem.Disabled, func(l *layer) *bool { return l.fsDisabled }},
		{"strictAllowlist", &p.Network.StrictAllowlist, func(l *layer) *bool { return l.strictAllowlist }},
		{"allowAllUnixSockets", &p.Network.AllowAllUnixSockets, func(l *layer) *bool { return l.allowAllUnixSockets }},
		{"allowLocalBinding", &p.Network.AllowLocalBinding, func(l *layer) *bool { return l.allowLocalBinding }},
		{"capture", &p.Network.Capture, func(l *layer) *bool { return l.capture }},
		{"allowPty", &p.AllowPty, func(l *layer) *bool { return l.allowPty }},
		{"enableWeakerNestedSandbox", &p.WeakerNested, func(l *layer) *bool { return l.weakerNested }},
		{"enableWeakerNetworkIsolation", &p.EnableWeakerNetworkIsolation, func(l *layer) *bool { return l.weakerNetIso }},
		{"allowAppleEvents", &p.AllowAppleEvents, func(l *layer) *bool { return l.appleEvents }},
	}
	setBy := make([]string, len(bools))
	if hasManaged {
		p.Network.Managed = &ManagedNetwork{DomainsOnly: m.domainsOnly}
	}
	paths := func(list string, dst *[]pathEntry, l *layer, es []pathEntry) {
		for _, e := range es {
			e.managed, e.untrusted, e.scope = l.managed, !l.trusted, l.scope
			if e.from == "" {
				e.from = l.source(list)
			}
			*dst = append(*dst, e)
		}
	}
	strs := func(list string, dst *[]string, l *layer, ss []string) {
		for _, s := range ss {
			m.add(list, s, l.source(list))
		}
		*dst = append(*dst, ss...)
	}
	var untrustedDomains []string // sources of allowedDomains of untrusted layers
	var routedBy []routeFrom      // the layers that set a parent or MITM proxy
	gateFrom := ""                // the last trusted layer that set commands
	for _, l := range layers {
		p.Notes = append(p.Notes, l.notes...)
		if !m.readOnly || l.managed {
			paths("allowRead", &m.allowRead, l, l.allowRead)
		}
		paths("denyRead", &m.denyRead, l, l.denyRead)
		paths("allowWrite", &m.allowWrite, l, l.allowWrite)
		paths("denyWrite", &m.denyWrite, l, l.denyWrite)
		paths("discardWrites", &m.discardWrites, l, l.discardWrites)
		if !m.domainsOnly || l.managed {
			strs("allowedDomains", &p.Network.AllowedDomains, l, l.allowedDomains)
			if l.trusted {
				p.Network.TrustedDomains = append(p.Network.TrustedDomains, l.allowedDomains...)
			} else if len(l.allowedDomains) > 0 {
				untrustedDomains = append(untrustedDomains, l.source("allowedDomains"))
			}
		} else if len(l.allowedDomains) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("allowManagedDomainsOnly: allowedDomains of %s dropped (%s)", l.source("allowedDomains"), strings.Join(l.allowedDomains, ", ")))
		}
		strs("deniedDomains", &p.Network.DeniedDomains, l, l.deniedDomains)
		strs("deniedResolvedAddresses", &p.Network.DeniedResolvedAddresses, l, l.deniedResolved)
		strs("allowUnixSockets", &p.Network.AllowUnixSockets, l, l.allowUnixSockets)
		p.Network.AllowMachLookup = append(p.Network.AllowMachLookup, l.allowMachLookup...)
		if l.managed {
			mn := p.Network.Managed
			mn.AllowedDomains = append(mn.AllowedDomains, l.allowedDomains...)
			mn.DeniedDomains = append(mn.DeniedDomains, l.deniedDomains...)
			mn.DeniedResolvedAddresses = append(mn.DeniedResolvedAddresses, l.deniedResolved...)
		}
		for k, v := range l.deniedReasons {
			if p.Network.DeniedDomainReasons == nil {
				p.Network.DeniedDomainReasons = map[string]string{}
			}
			p.Network.DeniedDomainReasons[k] = v
		}
		for k, v := range l.ignoreViolations {
			if p.IgnoreViolations == nil {
				p.IgnoreViolations = map[string][]string{}
			}
			p.IgnoreViolations[k] = append(p.IgnoreViolations[k], v...)
		}
		if l.commands != nil {
			// The section is a whole (the last layer's): an untrusted
			// file may bring a gate where no trusted one did, which
			// only narrows, but may not replace a trusted gate.
			if !l.trusted && gateFrom != "" {
				return nil, &SettingsError{File: l.file, Key: "commands", Problem: fmt.Sprintf("a file in the working tree may not replace the command gate %s set; %s", gateFrom, trustHint)}
			}
			p.Commands = l.commands
			if l.trusted {
				gateFrom = l.file
			}
		}
		m.presets = append(m.presets, l.presets...)
		strs("allowProtected", &p.Filesystem.AllowProtected, l, l.allowProtected)
		if l.mitmProxy != nil {
			mp := *l.mitmProxy
			var err error
			if mp.SocketPath, err = r.abs(mp.SocketPath); err != nil {
				return nil, fmt.Errorf("network.mitmProxy.socketPath: %w", err)
			}
			if st, serr := statSocket(mp.SocketPath); serr != nil || !st {
				return nil, fmt.Errorf("settings %s: key \"network.mitmProxy.socketPath\": %s is not a Unix socket; start the proxy first or fix the path", l.file, mp.SocketPath)
			}
			p.Network.MITMProxy = &mp
			routedBy = append(routedBy, routeFrom{l, "network.mitmProxy"})
		}
		if l.parentProxy != nil {
			p.Network.ParentProxy = l.parentProxy // a scalar: the last layer's
			routedBy = append(routedBy, routeFrom{l, "network.parentProxy"})
		}
		m.addObjects(l)
		if l.sandboxEnabled != nil {
			m.sandboxEnabled, m.enabledFrom = l.sandboxEnabled, l.file
		}
		setBools(p, l, bools, setBy, managedFS)
		if l.searchDepth != nil {
			p.Filesystem.SearchDepth = *l.searchDepth
		}
	}
	// Managed wins: a parent resolves the names it is handed, past the
	// managed deniedResolvedAddresses, so only the managed settings may
	// choose one when they deny addresses.
	if mn := p.Network.Managed; mn != nil && len(mn.DeniedResolvedAddresses) > 0 {
		for _, r := range routedBy {
			if !r.l.managed {
				return nil, &SettingsError{File: r.l.file, Key: r.key, Problem: "the managed settings set network.deniedResolvedAddresses, which a proxy that resolves names for sbx would get past; only the managed settings may set it"}
			}
		}
	}
	// Managed wins: termination the managed settings ask for is not
	// turned off for hosts another file excludes.
	if m.tlsManaged && len(m.tls.ExcludeDomains) > len(m.tlsManagedExclude) {
		p.Notes = append(p.Notes, "managed settings terminate TLS: tlsTerminate.excludeDomains of other files ignored")
		m.tls.ExcludeDomains = m.tlsManagedExclude
	}
	if m.creds != nil && len(untrustedDomains) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("credentials: the allowedDomains of %s (in the working tree) are reachable but get no injected credentials; name them in injectHosts or trust the file (--trust-project-settings)", strings.Join(untrustedDomains, ", ")))
	}
	if m.domainsOnly {
		p.Notes = append(p.Notes, "allowManagedDomainsOnly: only the managed settings' allowedDomains are honoured (--control-fd lines and --ask-fd answers add nothing)")
	}
	if m.readOnly {
		p.Notes = append(p.Notes, "allowManagedReadPathsOnly: only the managed settings' allowRead paths are honoured")
	}
	return m, nil
}

// routeFrom is a layer that set a key choosing where traffic leaves.
type routeFrom struct {
	l   *layer
	key string
}

// addObjects merges l's credentials and network.tlsTerminate objects
// into m: arrays add up, later scalars win.
func (m *merged) addObjects(l *layer) {
	if c := l.credentials; c != nil {
		if m.creds == nil {
			m.creds = &Credentials{}
		}
		m.creds.EnvVars = append(m.creds.EnvVars, c.EnvVars...)
		for _, f := range c.Files {
			f.managed = l.managed
			m.creds.Files = append(m.creds.Files, f)
		}
		switch {
		case l.managed && c.plainSet:
			// Managed wins, a false too.
			if m.creds.AllowPlaintextInject && !c.AllowPlaintextInject {
				*m.notes = append(*m.notes, fmt.Sprintf("managed settings %s set credentials.allowPlaintextInject false: other files' true ignored", l.file))
			}
			m.creds.AllowPlaintextInject, m.plainManaged = c.AllowPlaintextInject, true
		case !m.plainManaged:
			m.creds.AllowPlaintextInject = m.creds.AllowPlaintextInject || c.AllowPlaintextInject
		}
		m.creds.AWSPairs = append(m.creds.AWSPairs, c.AWSPairs...)
		m.creds.SigV4 = c.SigV4 // a scalar object: the last layer's
	}
	if l.tlsTerminate != nil {
		m.tlsFrom = l.file
		if l.trusted {
			m.tlsTrusted = true
		} else if m.tlsUntrusted == nil {
			m.tlsUntrusted = l
		}
		if l.managed {
			m.tlsManaged = true
			m.tlsManagedExclude = append(m.tlsManagedExclude, l.tlsTerminate.ExcludeDomains...)
		}
		t := *l.tlsTerminate
		if m.tls == nil {
			m.tls = &t
		} else {
			// Arrays merge, later scalars win.
			mt := *m.tls
			if t.CACertPath != "" {
				mt.CACertPath, mt.CAKeyPath = t.CACertPath, t.CAKeyPath
			}
			mt.ExcludeDomains = append(mt.ExcludeDomains, t.ExcludeDomains...)
			mt.ExtraCACertPaths = append(mt.ExtraCACertPaths, t.ExtraCACertPaths...)
			m.tls = &mt
		}
	}
}

// setBools applies l's boolean keys to p. setBy[i] names the unmanaged
// layer that last set bools[i] (for the note when a managed layer
// overrides it); a filesystem.disabled of an unmanaged layer is ignored
// when the managed settings set filesystem rules (managedFS).
func setBools(p *Policy, l *layer, bools []boolScalar, setBy []string, managedFS bool) {
	for i, b := range bools {
		v := b.get(l)
		if v == nil {
			continue
		}
		if b.name == "disabled" && *v && !l.managed && managedFS {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: filesystem.disabled ignored: the managed settings set filesystem rules, which nothing else can drop", l.file))
			continue
		}
		if l.managed && *b.dst != *v && setBy[i] != "" {
			p.Notes = append(p.Notes, fmt.Sprintf("managed settings %s set %s %v: %s (%v) ignored", l.file, b.name, *v, setBy[i], *b.dst))
		}
		*b.dst = *v
		if !l.managed {
			setBy[i] = l.source(b.name)
		} else {
			setBy[i] = ""
		}
	}
}

// add records that entry of list came from from.
func (m *merged) add(list, entry, from string) {
	byEntry := m.src[list]
	if byEntry == nil {
		byEntry = map[string][]string{}
		m.src[list] = byEntry
	}
	for _, f := range byEntry[entry] {
		if f == from {
			return
		}
	}
	byEntry[entry] = append(byEntry[entry], from)
}

// resolve is r.all entry by entry, so that each resolved path keeps where
// it came from; a non-managed grant (allowRead, allowWrite,
// discardWrites) equal to or inside a managed deny is dropped with a note.
func (m *merged) resolve(r resolver, key string, es []pathEntry, mustExist bool) ([]string, error) {
	if !m.carved {
		m.carved = true
		var mr, mw, ma []pathEntry
		for _, e := range m.allowRead {
			if e.managed {
				ma = append(ma, e)
			}
		}
		for _, e := range m.denyRead {
			if e.managed {
				mr = append(mr, e)
			}
		}
		for _, e := range m.denyWrite {
			if e.managed {
				mw = append(mw, e)
			}
		}
		cr := r
		cr.protected = nil
		var err error
		if m.carve, err = cr.all("denyRead", mr, false); err != nil {
			return nil, err
		}
		if m.carveW, err = cr.all("denyWrite", mw, false); err != nil {
			return nil, err
		}
		if m.carveOpen, err = cr.all("allowRead", ma, false); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, e := range es {
		got, err := r.all(key, []pathEntry{e}, mustExist)
		if err != nil {
			return nil, err
		}
		for _, g := range got {
			if !e.managed && m.reopens(key, g) {
				*m.notes = append(*m.notes, fmt.Sprintf("%s %s (from %s) dropped: it would re-open a managed deny, which no other source can", key, g, e.from))
				continue
			}
			m.add(key, g, e.from)
			if key == "denyRead" && !e.untrusted {
				m.trustedDeny[g] = true
			}
			if key == "denyRead" && e.untrusted && e.scope != "" {
				m.scopeDeny[g] = append(m.scopeDeny[g], e.scope)
			}
			out = append(out, g)
		}
	}
	return dedupe(out), nil
}

// untrustedReopen refuses an allowRead entry (resolved, after the
// grants that reach a mask through a symlink were dropped) that only
// untrusted sources spelled, when it equals or lies inside a built-in
// mask (defaults) or a path a trusted source denies, "/" aside (srt's
// allowRead re-opens inside a deny; a repository's file may not undo
// the user's). A mask counts as re-opened by the user only when a
// trusted grant spells it (a link to it is dropped, see links.go).
func (m *merged) untrustedReopen(allowRead, allowWrite, defaults, denyRead []string, g *grantLog, homes []string) error {
	if g == nil {
		return nil
	}
	spell := maskSpellings(defaults, homes)
	var denied []string
	for _, d := range denyRead {
		// A deny of "/" is strict reads (--reads declared, or a file's
		// "/" with allowRead beside it): under it a repository's file
		// may name what it reads, which reading everything would give
		// anyway; the masks and the user's other denies still hold.
		if m.trustedDeny[d] && d != "/" {
			denied = append(denied, d)
		}
	}
	// A directory's Claude Code scope may not re-open what another
	// directory's denies: a subdirectory's .claude/ cannot shadow the
	// project root's rules, nor the root a package's (see ClaudeProject).
	// It looks up a's own path and each directory above it, so its cost
	// follows the depth of a, not the number of denies.
	crossDeny := func(list, a string) string {
		scopes := g.scopes[list][a]
		if len(scopes) == 0 {
			return ""
		}
		for d := a; d != "/" && d != "."; d = filepath.Dir(d) {
			for _, t := range m.scopeDeny[d] {
				for _, s := range scopes {
					if t != s {
						return d
					}
				}
			}
		}
		return ""
	}
	refuse := func(a, d string) error {
		from := strings.Join(m.src["allowRead"][a], ", ")
		by := "a built-in credential mask"
		if s := m.src["denyRead"][d]; len(s) > 0 {
			by = strings.Join(s, ", ")
		}
		return fmt.Errorf("%s: allowRead %s would re-open %s, denied by %s; a file in the working tree may narrow what is denied, not undo it: %s", from, a, d, by, trustHint)
	}
	// A writable root re-opens reading inside a deny too (the mount
	// view binds it): a repository's may not undo a trusted deny that
	// way either (a mask it does not lift, see denials).
	// The first entry of denied (in its order) that holds a, or "".
	deniedSet := NewPathSet(denied)
	firstDenied := func(a string) string {
		d, first := "", -1
		Up(a, func(q string) bool {
			if i, ok := deniedSet[q]; ok && (first < 0 || i < first) {
				d, first = q, i
			}
			return true
		})
		return d
	}
	for _, a := range allowWrite {
		if _, ok := g.lits["allowWrite"][a]; !ok || len(g.trusted["allowWrite"][a]) > 0 {
			continue
		}
		if d := crossDeny("allowWrite", a); d != "" {
			from := strings.Join(m.src["allowWrite"][a], ", ")
			return fmt.Errorf("%s: allowWrite %s would re-open %s for reading, denied by %s; one directory's Claude Code settings may not undo another's: %s", from, a, d, strings.Join(m.src["denyRead"][d], ", "), trustHint)
		}
		if d := firstDenied(a); d != "" {
			from := strings.Join(m.src["allowWrite"][a], ", ")
			return fmt.Errorf("%s: allowWrite %s would re-open %s for reading, denied by %s; a file in the working tree may narrow what is denied, not undo it: %s", from, a, d, strings.Join(m.src["denyRead"][d], ", "), trustHint)
		}
	}
	for _, a := range allowRead {
		if _, ok := g.lits["allowRead"][a]; !ok {
			continue // not from an entry (--reads declared's runtime)
		}
		for _, d := range defaults {
			if Within(a, d) && !g.userGranted("allowRead", a, []string{d}, spell) {
				return refuse(a, d)
			}
		}
		if d := firstDenied(a); d != "" && len(g.trusted["allowRead"][a]) == 0 {
			return refuse(a, d)
		}
		if len(g.trusted["allowRead"][a]) == 0 {
			if d := crossDeny("allowRead", a); d != "" {
				return fmt.Errorf("%s: allowRead %s would re-open %s, denied by %s; one directory's Claude Code settings may not undo another's: %s", strings.Join(m.src["allowRead"][a], ", "), a, d, strings.Join(m.src["denyRead"][d], ", "), trustHint)
			}
		}
	}
	return nil
}

// reopens reports whether a grant of path in list would undo a managed
// deny: path lies in a managed denyRead (and not in a managed allowRead
// nested inside it), or, for a write grant, in a managed denyWrite.
func (m *merged) reopens(list, path string) bool {
	switch list {
	case "allowRead", "allowWrite", "discardWrites":
	default:
		return false
	}
	if (list == "allowWrite" || list == "discardWrites") && WithinAny(path, m.carveW) {
		return true
	}
	for _, d := range m.carve {
		if !Within(path, d) {
			continue
		}
		opened := false
		for _, a := range m.carveOpen {
			opened = opened || (a != d && Within(a, d) && Within(path, a))
		}
		if !opened {
			return true
		}
	}
	return false
}

// sources lists, for --dry-run, where each entry of p's lists came from;
// an entry no layer named is "built-in".
func (m *merged) sources(p *Policy) []Source {
	var out []Source
	for _, l := range []struct {
		name    string
		entries []string
	}{
		{"allowRead", p.Filesystem.AllowRead}, {"denyRead", p.Filesystem.DenyRead},
		{"allowWrite", p.Filesystem.AllowWrite}, {"denyWrite", p.Filesystem.DenyWrite},
		{"discardWrites", p.Filesystem.DiscardWrites},
		{"allowedDomains", p.Network.AllowedDomains}, {"deniedDomains", p.Network.DeniedDomains},
		{"deniedResolvedAddresses", p.Network.DeniedResolvedAddresses},
		{"allowUnixSockets", p.Network.AllowUnixSockets},
	} {
		seen := map[string]bool{}
		for _, e := range l.entries {
			if seen[e] {
				continue
			}
			seen[e] = true
			from := m.src[l.name][e]
			if len(from) == 0 {
				from = []string{"built-in"}
			}
			sort.Strings(from[1:])
			out = append(out, Source{List: l.name, Entry: e, From: strings.Join(from, "; ")})
		}
	}
	return out
}

// named are ss as path entries, each naming where it came from.
func (m *merged) named(list string, ss []string) []pathEntry {
	out := entries(ss)
	for i := range out {
		out[i].from = strings.Join(m.src[list][out[i].path], "; ")
	}
	return out
}

// statSocket reports whether p is a Unix socket.
func statSocket(p string) (bool, error) {
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return st.Mode()&os.ModeSocket != 0, nil
}
