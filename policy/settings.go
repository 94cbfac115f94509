package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sbx-sh/sbx/internal/settingsfile"
)

// layer is what one settings file says. Pointers distinguish "absent"
// from the zero value so later files only override what they set.
type layer struct {
	file    string
	managed bool
	// repo: the file lies in the working tree (see trust.go); set by
	// Build after reading.
	repo bool
	// trusted: the user vouches for the layer: it is not the working
	// tree's, or the tree is trusted (--trust-project-settings,
	// trustedProjectDirs); set by checkTrust.
	trusted bool
	// flags: the command-line layer (its list entries name their flag).
	flags bool
	// label names a layer derived from a flag ("--allow-registry npm").
	label string
	// base anchors this file's relative filesystem paths ("" the
	// working directory): --claude-settings DIR for Claude's scopes.
	base string
	// scope is the directory whose .claude/ holds a Claude Code project
	// or local scope file ("" any other layer; see ClaudeProject).
	scope string
	// fsKeys: the file sets a filesystem key or a permission rule that
	// makes a filesystem entry (a managed one then keeps a non-managed
	// filesystem.disabled from dropping its rules).
	fsKeys bool
	// weakens are the keys a file in the working tree may not set
	// without trust (see trust.go), in file order.
	weakens []weakening
	// trustedDirs is trustedProjectDirs: working trees whose files the
	// user trusts (honoured only from a file outside every working tree).
	trustedDirs []string

	allowRead, denyRead, allowWrite, denyWrite []pathEntry
	discardWrites                              []pathEntry
	allowGitConfig, fsDisabled                 *bool
	allowProtected                             []string
	searchDepth                                *int

	allowedDomains, deniedDomains, deniedResolved []string
	deniedReasons                                 map[string]string
	strictAllowlist                               *bool
	allowUnixSockets, allowMachLookup             []string
	tlsTerminate                                  *tlsSetting
	parentProxy                                   *ParentProxy
	mitmProxy                                     *MITMProxy
	allowAllUnixSockets, allowLocalBinding        *bool
	capture                                       *bool
	managedDomainsOnly, managedReadOnly           bool

	allowPty, weakerNested, weakerNetIso, appleEvents *bool
	ignoreViolations                                  map[string][]string
	commands                                          json.RawMessage
	presets                                           []string
	credentials                                       *Credentials
	limits                                            *Limits

	// sandboxEnabled is Claude Code's sandbox.enabled (the harness's
	// switch); --claude-settings refuses to run when it merges to false.
	sandboxEnabled *bool

	notes []string
}

type pathEntry struct {
	path    string
	literal bool
	// optional: a missing path is skipped with a note instead of being
	// an error (paths that Claude Code permission rules name).
	optional bool
	// from names where the entry came from, for notes.
	from string
	// create: a missing path is created (mode 0700) for a real run;
	// with createFile, as an empty file (mode 0644) in such a directory.
	create, createFile bool
	// managed: the entry came from the managed layer (see merge.go).
	managed bool
	// untrusted: the entry came from a working tree's file the user
	// has not trusted (see trust.go): it may narrow, never re-open.
	untrusted bool
	// scope: the entry came from a Claude Code project scope of this
	// directory (see ClaudeProject); "" for any other source.
	scope string
	// blind: a directory a deny rule's walk could not read, denied
	// whole only where writes go (see walk.go).
	blind bool
}

// tlsSetting is network.tlsTerminate as one file wrote it.
type tlsSetting struct {
	CACertPath       string   `json:"caCertPath"`
	CAKeyPath        string   `json:"caKeyPath"`
	ExcludeDomains   []string `json:"excludeDomains"`
	ExtraCACertPaths []string `json:"extraCaCertPaths"`
}

// readCtx is what reading a settings file needs beyond the file.
type readCtx struct {
	cwd, home string
	// claude: the file is one of Claude Code's own scopes
	// (--claude-settings): it may lack a "sandbox" object.
	claude bool
	// base anchors the file's relative paths (--claude-settings DIR);
	// "" is cwd.
	base string
}

// keyKind says what sbx does with a settings key.
type keyKind int

const (
	honoured keyKind = iota
	ignoredHelper
	harness
	refused
)

// Keys documents every settings key sbx knows, by its dotted name in an
// srt-shaped file (Claude Code files use the same names under "sandbox").
// docs/settings.md's settings table is written from the same facts.
var Keys = map[string]string{
	"network.allowedDomains":               "honoured: egress allow-list (enforced by the proxy)",
	"network.deniedDomains":                "honoured: checked first",
	"network.deniedDomainReasons":          "honoured: text shown on refusal",
	"network.strictAllowlist":              "honoured: sbx never asks interactively anyway",
	"network.deniedResolvedAddresses":      "honoured: extra CIDRs refused after resolution",
	"network.allowUnixSockets":             "honoured: socket paths the command may connect to",
	"network.allowAllUnixSockets":          "honoured: every Unix socket",
	"network.allowLocalBinding":            "honoured: bind/listen on the sandbox's loopback",
	"network.capture":                      "honoured (sbx's own): false turns off the capture of clients that ignore the proxy variables",
	"network.allowMachLookup":              "honoured on macOS; no meaning on Linux",
	"network.httpProxyPort":                "refused: sbx's own proxy is the only way out",
	"network.socksProxyPort":               "refused: sbx's own proxy is the only way out",
	"network.parentProxy":                  "honoured: {http, https, noProxy}; unset, sbx's own HTTP_PROXY/HTTPS_PROXY/NO_PROXY",
	"network.mitmProxy":                    "honoured: {socketPath, domains}: those domains go to the proxy on that Unix socket, after sbx's own lists",
	"network.tlsTerminate":                 "honoured: HTTPS to allowed hosts terminated in the proxy (caCertPath, caKeyPath, excludeDomains, extraCaCertPaths)",
	"network.allowManagedDomainsOnly":      "honoured from --managed-settings only",
	"filesystem.allowRead":                 "honoured",
	"filesystem.denyRead":                  "honoured",
	"filesystem.allowWrite":                "honoured",
	"filesystem.denyWrite":                 "honoured",
	"filesystem.allowGitConfig":            "honoured",
	"filesystem.allowProtected":            "honoured: sbx's own: protected names (as the list spells them) that may be written",
	"filesystem.discardWrites":             "honoured: sbx's own: writable through a throwaway overlay, every change reported (--discard-writes)",
	"filesystem.disabled":                  "honoured: drops every filesystem rule (loudly)",
	"filesystem.allowManagedReadPathsOnly": "honoured from --managed-settings only",
	"ignoreViolations":                     "honoured",
	"enableWeakerNestedSandbox":            "honoured: Landlock + seccomp only",
	"enableWeakerNetworkIsolation":         "honoured on macOS; no meaning on Linux",
	"allowPty":                             "honoured",
	"allowAppleEvents":                     "honoured on macOS; no meaning on Linux",
	"mandatoryDenySearchDepth":             "honoured: 1-10, default 3, counted as srt counts it (ripgrep --max-depth)",
	"allowNestedUserNamespaces":            "refused: nested user namespaces are not supported",
	"trustedProjectDirs":                   "honoured from a file outside the working tree (user scope, --settings elsewhere, managed): directories whose settings files may configure credentials and weaker modes (see --trust-project-settings); refused inside the working tree",
	"credentials":                          "honoured: envVars and files (deny, mask), allowPlaintextInject, awsPairs and sigv4 (SigV4 requests re-signed with the real keys)",
	"commands":                             "honoured: the command gate (sbx check)",
	"presets":                              "honoured: sbx's own: toolchain caches made writable (node, go, python, rust, dotnet, java; --preset)",
	"ripgrep":                              "ignored with a note: sbx runs no helper binaries",
	"seccomp":                              "ignored with a note: sbx runs no helper binaries",
	"bwrapPath":                            "ignored with a note: sbx runs no helper binaries",
	"socatPath":                            "ignored with a note: sbx runs no helper binaries",
	"javaAgentJarPath":                     "ignored with a note: sbx runs no helper binaries",
	"$schema":                              "ignored: editor hint",
	"sandbox.enabled":                      "the harness's (Claude Code): not sbx's concern",
	"sandbox.autoAllowBashIfSandboxed":     "the harness's (Claude Code): not sbx's concern",
	"sandbox.excludedCommands":             "the harness's (Claude Code): not sbx's concern",
	"sandbox.allowUnsandboxedCommands":     "the harness's (Claude Code): not sbx's concern",
}

func kindOf(key string) (keyKind, bool) {
	d, ok := Keys[key]
	if !ok {
		return 0, false
	}
	switch {
	case strings.HasPrefix(d, "refused"):
		return refused, true
	case strings.HasPrefix(d, "ignored"):
		return ignoredHelper, true
	case strings.HasPrefix(d, "the harness's"):
		return harness, true
	}
	return honoured, true
}

// SettingsError is a problem with one settings file. Its message is one
// line naming the file, the key and what to do.
type SettingsError struct {
	File, Key, Problem string
}

func (e *SettingsError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("settings %s: %s", e.File, e.Problem)
	}
	return fmt.Sprintf("settings %s: key %q: %s", e.File, e.Key, e.Problem)
}

// readLayer loads and strictly validates one settings file.
func readLayer(file string, managed bool, ctx readCtx) (*layer, error) {
	data, err := settingsfile.Read(file)
	switch {
	case errors.Is(err, settingsfile.ErrNotRegular), errors.Is(err, settingsfile.ErrTooLarge):
		return nil, &SettingsError{File: file, Problem: fmt.Sprintf("%v; a settings file must be a regular file of at most 1 MiB: point the path at one", err)}
	case err != nil:
		return nil, &SettingsError{File: file, Problem: fmt.Sprintf("cannot read: %v; check the path and permissions", unwrapPathErr(err))}
	}
	return parseLayer(file, data, managed, ctx)
}

// jsonErrorAt is where in data the decoder's err lies, as "line L,
// column C" (both from 1, the column in characters): the byte a syntax or
// type error names, or the end for a document cut short; at, the
// decoder's offset, when err says nothing more.
func jsonErrorAt(data []byte, err error, at int64) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		at = max(se.Offset-1, 0)
	case errors.As(err, &te):
		at = max(te.Offset-1, 0)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		at = int64(len(data))
	}
	return position(data, int(at))
}

// position is byte offset at of data as "line L, column C".
func position(data []byte, at int) string {
	at = min(max(at, 0), len(data))
	before := data[:at]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// NetworkUpdate is the network part of one settings object sent on
// --control-fd: the lists that may change while the sandbox runs.
type NetworkUpdate struct {
	AllowedDomains, DeniedDomains, DeniedResolvedAddresses []string
	DeniedDomainReasons                                    map[string]string
}

// ParseNetworkUpdate reads one --control-fd line: a settings object
// (srt's shape, whose "filesystem" may be left out, or Claude Code's),
// validated like a settings file. Only its network lists are returned;
// the rest cannot change a running sandbox and is ignored.
func ParseNetworkUpdate(name string, line []byte) (NetworkUpdate, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err == nil && top != nil {
		if _, ok := top["network"]; ok {
			if _, ok := top["filesystem"]; !ok {
				top["filesystem"] = json.RawMessage("{}")
				line, _ = json.Marshal(top)
			}
		}
	}
	l, err := parseLayer(name, line, false, readCtx{cwd: "/", home: "/"})
	if err != nil {
		return NetworkUpdate{}, err
	}
	return NetworkUpdate{AllowedDomains: l.allowedDomains, DeniedDomains: l.deniedDomains,
		DeniedResolvedAddresses: l.deniedResolved, DeniedDomainReasons: l.deniedReasons}, nil
}

// parseLayer strictly validates one settings object read from file.
func parseLayer(file string, data []byte, managed bool, ctx readCtx) (*layer, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		return nil, &SettingsError{File: file, Problem: fmt.Sprintf("invalid JSON at %s: %v; it must be one JSON object", jsonErrorAt(data, err, dec.InputOffset()), err)}
	}
	if dec.More() {
		return nil, &SettingsError{File: file, Problem: "trailing data after the JSON object at " + position(data, int(dec.InputOffset()))}
	}
	if k := duplicateKey(data); k != "" {
		return nil, &SettingsError{File: file, Key: k, Problem: "appears twice in one object; the later would silently replace the earlier: keep one"}
	}
	if top == nil && !ctx.claude {
		return nil, &SettingsError{File: file, Problem: "empty settings; it must be a JSON object with \"network\" and \"filesystem\" (srt) or \"sandbox\" (Claude Code)"}
	}
	l := &layer{file: file, managed: managed, base: ctx.base}
	anchor := ctx.cwd
	if ctx.base != "" {
		anchor = ctx.base
	}
	_, hasSandbox := top["sandbox"]
	_, hasPerms := top["permissions"]
	_, hasNet := top["network"]
	_, hasFS := top["filesystem"]
	if (hasPerms || hasSandbox) && (hasNet || hasFS) {
		// Half srt, half Claude Code: either reading would drop the
		// other half's rules.
		return nil, &SettingsError{File: file, Problem: "mixes srt's top-level \"network\"/\"filesystem\" with Claude Code's \"sandbox\"/\"permissions\"; in a Claude Code file put them under \"sandbox\", or split the file"}
	}
	// A file with srt's top-level "network" or "filesystem" is srt's,
	// also beside --claude-settings: read as Claude Code's, those keys
	// would be ignored (they are not under "sandbox") and its rules lost.
	if hasSandbox || hasPerms || (ctx.claude && !hasNet && !hasFS) {
		// Claude Code shape: the sandbox object holds our keys, and the
		// permission rules Read(…) and Edit(…) merge into the
		// filesystem lists; the rest of the file is the harness's.
		keys := make([]string, 0, len(top))
		for k := range top {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k != "sandbox" && k != "permissions" {
				l.notes = append(l.notes, fmt.Sprintf("%s: top-level key %q is Claude Code's, not sbx's: ignored", file, k))
			}
		}
		if hasPerms {
			pr, err := parsePermissions(file, top["permissions"], claudeProjectRoot(file), anchor, ctx.home)
			if err != nil {
				return nil, err
			}
			l.notes = append(l.notes, pr.notes...)
			// Lists only ever add up (merge.go): the sandbox object
			// read below appends to these.
			l.allowWrite = append(l.allowWrite, ruleEntries(pr.allowWrite, file)...)
			l.denyRead = append(l.denyRead, ruleEntries(pr.denyRead, file)...)
			l.denyWrite = append(l.denyWrite, ruleEntries(pr.denyWrite, file)...)
			l.denyRead = append(l.denyRead, blindEntries(pr.blindRead, file)...)
			l.denyWrite = append(l.denyWrite, blindEntries(pr.blindWrite, file)...)
			l.fsKeys = l.fsKeys || len(pr.allowWrite)+len(pr.denyRead)+len(pr.denyWrite)+pr.fileRules > 0
		}
		if !hasSandbox {
			return l, nil
		}
		obj, err := object(file, "sandbox", top["sandbox"])
		if err != nil {
			return nil, err
		}
		return l, l.parse(obj, "sandbox.")
	}
	for _, req := range []string{"network", "filesystem"} {
		if _, ok := top[req]; !ok {
			return nil, &SettingsError{File: file, Key: req, Problem: "missing; srt settings need both \"network\" and \"filesystem\" objects (they may be empty: {})"}
		}
	}
	return l, l.parse(top, "")
}

// ruleEntries are the paths a permission rule produced: already expanded
// (literal) and skipped with a note when missing.
func ruleEntries(paths []string, file string) []pathEntry {
	out := make([]pathEntry, len(paths))
	for i, p := range paths {
		out[i] = pathEntry{path: p, literal: true, optional: true, from: file + " permissions"}
	}
	return out
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func object(file, key string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, &SettingsError{File: file, Key: key, Problem: "must be a JSON object"}
	}
	return m, nil
}

// parse walks obj, whose keys are named prefix+key in errors.
func (l *layer) parse(obj map[string]json.RawMessage, prefix string) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := obj[k]
		switch k {
		case "network", "filesystem":
			sub, err := object(l.file, prefix+k, raw)
			if err != nil {
				return err
			}
			subKeys := make([]string, 0, len(sub))
			for sk := range sub {
				subKeys = append(subKeys, sk)
			}
			sort.Strings(subKeys)
			for _, sk := range subKeys {
				if err := l.leaf(k+"."+sk, prefix+k+"."+sk, sub[sk]); err != nil {
					return err
				}
			}
		default:
			key := k
			if prefix != "" {
				if _, ok := Keys["sandbox."+k]; ok {
					key = "sandbox." + k
				}
			}
			if err := l.leaf(key, prefix+k, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// leaf handles one key; key is the canonical name, shown the name as in the file.
func (l *layer) leaf(key, shown string, raw json.RawMessage) error {
	kind, known := kindOf(key)
	if !known {
		return &SettingsError{File: l.file, Key: shown, Problem: "unknown key; remove it or fix the spelling (docs/settings.md lists every key)"}
	}
	switch kind {
	case refused:
		return &SettingsError{File: l.file, Key: shown, Problem: Keys[key] + "; remove the key"}
	case ignoredHelper, harness:
		if key == "sandbox.enabled" {
			b, err := l.boolean(shown, raw)
			if err != nil {
				return err
			}
			l.sandboxEnabled = b
		}
		l.notes = append(l.notes, fmt.Sprintf("%s: %q %s", l.file, shown, strings.TrimPrefix(strings.TrimPrefix(Keys[key], "ignored with a note: "), "ignored: ")))
		return nil
	}
	var err error
	switch key {
	case "network.allowedDomains":
		err = l.addStrings(&l.allowedDomains, shown, raw)
	case "network.deniedDomains":
		err = l.addStrings(&l.deniedDomains, shown, raw)
	case "network.deniedResolvedAddresses":
		err = l.addStrings(&l.deniedResolved, shown, raw)
	case "network.deniedDomainReasons":
		err = l.decode(shown, raw, &l.deniedReasons, "an object of domain → reason strings")
	case "network.strictAllowlist":
		l.strictAllowlist, err = l.boolean(shown, raw)
	case "network.allowUnixSockets":
		err = l.addStrings(&l.allowUnixSockets, shown, raw)
	case "network.allowMachLookup":
		err = l.addStrings(&l.allowMachLookup, shown, raw)
	case "network.allowAllUnixSockets":
		l.allowAllUnixSockets, err = l.boolean(shown, raw)
	case "network.tlsTerminate":
		var t tlsSetting
		if err = l.decode(shown, raw, &t, "an object with caCertPath, caKeyPath, excludeDomains, extraCaCertPaths"); err == nil {
			if (t.CACertPath == "") != (t.CAKeyPath == "") {
				return &SettingsError{File: l.file, Key: shown, Problem: "caCertPath and caKeyPath go together; give both, or neither for a CA made for the run"}
			}
			l.tlsTerminate = &t
		}
	case "network.mitmProxy":
		var m MITMProxy
		if err = l.decode(shown, raw, &m, "an object with socketPath and domains"); err == nil {
			if m.SocketPath == "" || len(m.Domains) == 0 {
				return &SettingsError{File: l.file, Key: shown, Problem: "needs socketPath and at least one domains entry"}
			}
			l.mitmProxy = &m
		}
	case "network.parentProxy":
		var pp struct {
			HTTP    string          `json:"http"`
			HTTPS   string          `json:"https"`
			NoProxy json.RawMessage `json:"noProxy"`
		}
		if err = l.decode(shown, raw, &pp, "an object with http, https and noProxy"); err == nil {
			out := &ParentProxy{HTTP: pp.HTTP, HTTPS: pp.HTTPS}
			if len(pp.NoProxy) > 0 {
				var one string
				if json.Unmarshal(pp.NoProxy, &one) == nil {
					out.NoProxy = strings.Split(one, ",")
				} else if err = l.decode(shown+".noProxy", pp.NoProxy, &out.NoProxy, "a string (comma-separated) or an array of strings"); err != nil {
					return err
				}
			}
			l.parentProxy = out
		}
	case "network.allowLocalBinding":
		l.allowLocalBinding, err = l.boolean(shown, raw)
	case "network.capture":
		l.capture, err = l.boolean(shown, raw)
	case "network.allowManagedDomainsOnly", "filesystem.allowManagedReadPathsOnly":
		var b *bool
		if b, err = l.boolean(shown, raw); err == nil && b != nil && *b {
			if !l.managed {
				l.notes = append(l.notes, fmt.Sprintf("%s: %q is honoured only from --managed-settings: ignored here", l.file, shown))
			} else if key == "network.allowManagedDomainsOnly" {
				l.managedDomainsOnly = true
			} else {
				l.managedReadOnly = true
			}
		}
	case "filesystem.allowRead":
		err = l.addPaths(&l.allowRead, shown, raw)
	case "filesystem.denyRead":
		err = l.addPaths(&l.denyRead, shown, raw)
	case "filesystem.allowWrite":
		err = l.addPaths(&l.allowWrite, shown, raw)
	case "filesystem.discardWrites":
		err = l.addPaths(&l.discardWrites, shown, raw)
	case "filesystem.denyWrite":
		err = l.addPaths(&l.denyWrite, shown, raw)
	case "filesystem.allowGitConfig":
		l.allowGitConfig, err = l.boolean(shown, raw)
	case "filesystem.allowProtected":
		if l.allowProtected, err = l.strings(shown, raw); err == nil {
			for _, name := range l.allowProtected {
				if perr := CheckProtectedName(name); perr != nil {
					return &SettingsError{File: l.file, Key: shown, Problem: perr.Error()}
				}
			}
		}
	case "filesystem.disabled":
		l.fsDisabled, err = l.boolean(shown, raw)
	case "mandatoryDenySearchDepth":
		var n int
		if err = l.decode(shown, raw, &n, "an integer from 1 to 10"); err == nil {
			if n < 1 || n > 10 {
				return &SettingsError{File: l.file, Key: shown, Problem: fmt.Sprintf("%d is out of range; use an integer from 1 to 10", n)}
			}
			l.searchDepth = &n
		}
	case "ignoreViolations":
		err = l.decode(shown, raw, &l.ignoreViolations, "an object of command substring → array of path substrings")
	case "enableWeakerNestedSandbox":
		l.weakerNested, err = l.boolean(shown, raw)
	case "enableWeakerNetworkIsolation":
		l.weakerNetIso, err = l.boolean(shown, raw)
	case "allowPty":
		l.allowPty, err = l.boolean(shown, raw)
	case "allowAppleEvents":
		l.appleEvents, err = l.boolean(shown, raw)
	case "presets":
		if l.presets, err = l.strings(shown, raw); err == nil {
			for _, name := range l.presets {
				if _, perr := PresetDirs(name, nil, ""); perr != nil {
					return &SettingsError{File: l.file, Key: shown, Problem: perr.Error()}
				}
			}
		}
	case "credentials":
		l.credentials, err = parseCredentials(l.file, shown, raw)
	case "limits":
		l.limits, err = parseLimits(l.file, shown, raw)
	case "trustedProjectDirs":
		err = l.addStrings(&l.trustedDirs, shown, raw)
	case "commands":
		if _, err = object(l.file, shown, raw); err == nil {
			l.commands = raw
		}
	default:
		return &SettingsError{File: l.file, Key: shown, Problem: "known but not handled (a bug in sbx; please report it)"}
	}
	if err == nil {
		// A filesystem rule in any form: a managed one keeps a
		// non-managed filesystem.disabled from dropping it.
		l.fsKeys = l.fsKeys || strings.HasPrefix(key, "filesystem.") || key == "mandatoryDenySearchDepth" ||
			(key == "credentials" && l.credentials != nil && len(l.credentials.Files) > 0)
		l.noteWeakening(key, shown)
	}
	return err
}

// addStrings appends the array of strings raw to *dst: a list key adds
// to what the same file said elsewhere, never replaces it.
func (l *layer) addStrings(dst *[]string, shown string, raw json.RawMessage) error {
	s, err := l.strings(shown, raw)
	*dst = append(*dst, s...)
	return err
}

// addPaths appends the paths in raw to *dst (see addStrings), each
// anchored at the file's base and named by the file and key it came from.
func (l *layer) addPaths(dst *[]pathEntry, shown string, raw json.RawMessage) error {
	es, err := l.paths(shown, raw)
	for _, e := range es {
		if l.base != "" && !filepath.IsAbs(e.path) && !strings.HasPrefix(e.path, "~") {
			e.path = filepath.Join(l.base, e.path)
		}
		e.from = l.file + " " + shown
		*dst = append(*dst, e)
	}
	return err
}

func (l *layer) decode(shown string, raw json.RawMessage, v any, want string) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &SettingsError{File: l.file, Key: shown, Problem: "must be " + want}
	}
	return nil
}

func (l *layer) boolean(shown string, raw json.RawMessage) (*bool, error) {
	var b bool
	if err := l.decode(shown, raw, &b, "true or false"); err != nil {
		return nil, err
	}
	return &b, nil
}

func (l *layer) strings(shown string, raw json.RawMessage) ([]string, error) {
	var s []string
	if err := l.decode(shown, raw, &s, "an array of strings"); err != nil {
		return nil, err
	}
	for _, e := range s {
		if strings.ContainsRune(e, 0) || strings.TrimSpace(e) == "" {
			return nil, &SettingsError{File: l.file, Key: shown, Problem: fmt.Sprintf("entry %q is empty or contains a NUL byte", e)}
		}
	}
	return s, nil
}

// paths accepts srt's (string | {path, literal})[].
func (l *layer) paths(shown string, raw json.RawMessage) ([]pathEntry, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &SettingsError{File: l.file, Key: shown, Problem: "must be an array of paths (strings or {\"path\": …, \"literal\": true})"}
	}
	out := make([]pathEntry, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, pathEntry{path: s})
			continue
		}
		var obj struct {
			Path    *string `json:"path"`
			Literal bool    `json:"literal"`
		}
		if err := l.decode(shown, it, &obj, "an array of paths (strings or {\"path\": …, \"literal\": true})"); err != nil || obj.Path == nil {
			return nil, &SettingsError{File: l.file, Key: shown, Problem: "each entry must be a path string or {\"path\": …, \"literal\": true}"}
		}
		out = append(out, pathEntry{path: *obj.Path, literal: obj.Literal})
	}
	for _, e := range out {
		if e.path == "" || strings.ContainsRune(e.path, 0) {
			return nil, &SettingsError{File: l.file, Key: shown, Problem: fmt.Sprintf("path %q is empty or contains a NUL byte", e.path)}
		}
	}
	return out, nil
}

var posixName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseCredentials reads and checks srt's credentials section. Every
// problem is one line naming the key and the file; no value of any
// variable is read here.
func parseCredentials(file, shown string, raw json.RawMessage) (*Credentials, error) {
	var c struct {
		EnvVars              []CredentialRule `json:"envVars"`
		Files                []CredentialRule `json:"files"`
		AllowPlaintextInject *bool            `json:"allowPlaintextInject"`
		AWSPairs             json.RawMessage  `json:"awsPairs"`
		SigV4                json.RawMessage  `json:"sigv4"`
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return nil, &SettingsError{File: file, Key: shown, Problem: fmt.Sprintf("must be an object with envVars, files, allowPlaintextInject (%v)", err)}
	}
	out := &Credentials{SigV4: SigV4{Streaming: "deny", Presigned: "deny", SigV4A: "deny"}}
	if c.AllowPlaintextInject != nil {
		out.AllowPlaintextInject, out.plainSet = *c.AllowPlaintextInject, true
	}
	if c.AWSPairs != nil {
		if err := json.Unmarshal(c.AWSPairs, &out.AWSPairs); err != nil {
			return nil, &SettingsError{File: file, Key: shown + ".awsPairs", Problem: "must be an array of {accessKeyIdVar, secretAccessKeyVar, sessionTokenVar}"}
		}
		for i, p := range out.AWSPairs {
			for _, v := range []string{p.AccessKeyIDVar, p.SecretAccessKeyVar} {
				if !posixName.MatchString(v) {
					return nil, &SettingsError{File: file, Key: fmt.Sprintf("%s.awsPairs[%d]", shown, i), Problem: fmt.Sprintf("variable name %q is not a name; accessKeyIdVar and secretAccessKeyVar are required", v)}
				}
			}
			if p.SessionTokenVar != "" && !posixName.MatchString(p.SessionTokenVar) {
				return nil, &SettingsError{File: file, Key: fmt.Sprintf("%s.awsPairs[%d].sessionTokenVar", shown, i), Problem: fmt.Sprintf("%q is not a variable name", p.SessionTokenVar)}
			}
		}
	}
	if c.SigV4 != nil {
		var sv map[string]string
		if err := json.Unmarshal(c.SigV4, &sv); err != nil {
			return nil, &SettingsError{File: file, Key: shown + ".sigv4", Problem: "must be an object of streaming, presigned, sigv4a: deny or passthrough"}
		}
		for k, v := range sv {
			if v != "deny" && v != "passthrough" {
				return nil, &SettingsError{File: file, Key: shown + ".sigv4." + k, Problem: fmt.Sprintf("%q: use deny or passthrough", v)}
			}
			switch k {
			case "streaming":
				out.SigV4.Streaming = v
			case "presigned":
				out.SigV4.Presigned = v
			case "sigv4a":
				out.SigV4.SigV4A = v
			default:
				return nil, &SettingsError{File: file, Key: shown + ".sigv4." + k, Problem: "unknown; the keys are streaming, presigned and sigv4a"}
			}
		}
	}
	check := func(kind string, i int, r *CredentialRule) error {
		key := fmt.Sprintf("%s.%s[%d]", shown, kind, i)
		bad := func(format string, a ...any) error {
			return &SettingsError{File: file, Key: key, Problem: fmt.Sprintf(format, a...)}
		}
		if kind == "envVars" {
			if !posixName.MatchString(r.Name) {
				return bad("name %q is not a variable name (letters, digits, _; not starting with a digit)", r.Name)
			}
			if r.Path != "" {
				return bad("envVars entries take name, not path")
			}
		} else {
			if r.Path == "" || r.Name != "" {
				return bad("files entries take path (and no name)")
			}
			if len(r.InjectHosts) > 0 {
				return bad("injectHosts belongs to envVars entries")
			}
		}
		switch r.Mode {
		case "deny", "mask":
		default:
			return bad("mode %q: use deny or mask", r.Mode)
		}
		if r.Extract != "" {
			re, err := regexp.Compile(r.Extract)
			if err != nil {
				return bad("extract is not a regular expression: %v", err)
			}
			if re.NumSubexp() < 1 {
				return bad("extract %q has no capture group; wrap the secret part in ( )", r.Extract)
			}
		}
		switch r.OnExtractNoMatch {
		case "", "warn", "deny", "error":
		default:
			return bad("onExtractNoMatch %q: use warn, deny or error", r.OnExtractNoMatch)
		}
		switch r.Decode {
		case "", "jwt":
		default:
			return bad("decode %q: the only decoder is jwt", r.Decode)
		}
		if len(r.MaskClaims) > 0 && r.Decode != "jwt" {
			return bad("maskClaims needs decode: jwt")
		}
		if r.Mode == "deny" && (r.Extract != "" || r.Decode != "" || len(r.MaskClaims) > 0 || len(r.InjectHosts) > 0) {
			return bad("mode deny takes no extract, decode, maskClaims or injectHosts")
		}
		return nil
	}
	for i := range c.EnvVars {
		if err := check("envVars", i, &c.EnvVars[i]); err != nil {
			return nil, err
		}
	}
	for i := range c.Files {
		if err := check("files", i, &c.Files[i]); err != nil {
			return nil, err
		}
	}
	// The variables of an AWS pair are masked, listed or not: their
	// values must not enter the sandbox.
	listed := map[string]bool{}
	for _, e := range c.EnvVars {
		listed[e.Name] = true
	}
	for _, p := range out.AWSPairs {
		for _, v := range []string{p.AccessKeyIDVar, p.SecretAccessKeyVar, p.SessionTokenVar} {
			if v != "" && !listed[v] {
				c.EnvVars = append(c.EnvVars, CredentialRule{Name: v, Mode: "mask"})
				listed[v] = true
			}
		}
	}
	out.EnvVars, out.Files = c.EnvVars, c.Files
	return out, nil
}
