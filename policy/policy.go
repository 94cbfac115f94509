package policy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Policy is the merged, validated result of defaults, settings files and
// flags. Paths in it are absolute and symlink-resolved. It is built once by
// Build and treated as immutable afterwards.
type Policy struct {
	Filesystem Filesystem `json:"filesystem"`
	Network    Network    `json:"network"`

	AllowPty                     bool `json:"allowPty"`
	WeakerNested                 bool `json:"enableWeakerNestedSandbox"`
	AllowNestedUserNamespaces    bool `json:"allowNestedUserNamespaces"`
	EnableWeakerNetworkIsolation bool `json:"enableWeakerNetworkIsolation"`
	AllowAppleEvents             bool `json:"allowAppleEvents"`

	// IgnoreViolations maps a command substring ("*" for every command) to
	// path substrings whose violations are not reported.
	IgnoreViolations map[string][]string `json:"ignoreViolations,omitempty"`

	// Credentials is srt's credentials section: secrets kept out of the
	// sandbox (deny) or replaced there by sentinels that the proxy swaps
	// back on the way out (mask). It holds rules, never values.
	Credentials *Credentials `json:"credentials,omitempty"`

	// Commands is the raw "commands" section for the command gate (package
	// check); nil when absent.
	Commands json.RawMessage `json:"commands,omitempty"`

	// ObserveFiles is --observe-files: which file-system calls the
	// supervisor observes, so that the ones the sandbox refuses are
	// reported ("writes", "reads", "all"; "" none). It costs a round trip
	// through the supervisor for every observed call.
	ObserveFiles string `json:"observeFiles,omitempty"`

	// Process is what to run and how.
	Process Process `json:"process"`

	// Limits bound what the run may take of the host (limits.go).
	Limits Limits `json:"limits"`

	// Notes are human-readable remarks about accepted-but-ignored keys.
	Notes []string `json:"notes,omitempty"`

	// Sources say where each list entry came from (--dry-run).
	Sources []Source `json:"sources,omitempty"`
}

// Source is where one entry of one list came from: a settings file and
// key, a flag ("--allow-write"), a preset ("preset go") or "built-in".
type Source struct {
	List  string `json:"list"`
	Entry string `json:"entry"`
	From  string `json:"from"`
}

// ManagedNetwork is what the managed layer says about the network, which
// the live sources (--control-fd lines, --ask-fd answers) can never
// undo: its denies stay, and with DomainsOnly its allow list is the only
// one.
type ManagedNetwork struct {
	AllowedDomains          []string `json:"allowedDomains,omitempty"`
	DeniedDomains           []string `json:"deniedDomains,omitempty"`
	DeniedResolvedAddresses []string `json:"deniedResolvedAddresses,omitempty"`
	DomainsOnly             bool     `json:"allowManagedDomainsOnly,omitempty"`
}

// Apply is u, one --control-fd line's lists, with the managed lists kept
// in force: the managed denies are added, and with DomainsOnly the
// managed allow list replaces the line's. m may be nil.
func (m *ManagedNetwork) Apply(u NetworkUpdate) NetworkUpdate {
	if m == nil {
		return u
	}
	u.DeniedDomains = dedupe(append(append([]string(nil), u.DeniedDomains...), m.DeniedDomains...))
	u.DeniedResolvedAddresses = dedupe(append(append([]string(nil), u.DeniedResolvedAddresses...), m.DeniedResolvedAddresses...))
	if m.DomainsOnly {
		u.AllowedDomains = append([]string(nil), m.AllowedDomains...)
	}
	return u
}

// Filesystem is the file access part of a Policy.
type Filesystem struct {
	// Disabled drops every filesystem rule, the mandatory ones too
	// (filesystem.disabled). The mount view then is the host's, read-write.
	Disabled bool `json:"disabled,omitempty"`
	// Placeholders are empty files Build made in the working tree for
	// the run (a new crate's Cargo.lock); RemovePlaceholders takes away
	// those still empty after it.
	Placeholders []string `json:"-"`

	AllowRead  []string `json:"allowRead"`
	DenyRead   []string `json:"denyRead"`
	AllowWrite []string `json:"allowWrite"`
	DenyWrite  []string `json:"denyWrite"`
	// MaskedCopies are the built-in credential locations of DenyRead
	// that hold configuration besides secrets (DefaultMaskedCopies:
	// ~/.npmrc, ~/.pypirc), denied only by default. Where a copy can be
	// bound over the file (Linux, the full sandbox), the command sees a
	// copy with the secret values masked instead of nothing; elsewhere
	// the file stays hidden whole.
	MaskedCopies []MaskedCopy `json:"maskedCopies,omitempty"`

	// DiscardWrites are directories that look writable in the sandbox
	// through an overlay whose upper layer is private to the run: what is
	// written there is gone when the run ends, and reported (--discard-writes,
	// filesystem.discardWrites).
	DiscardWrites []string `json:"discardWrites,omitempty"`
	// SaveChanges is --save-changes: the discard overlays' changes are
	// kept there (a new directory, made 0700) instead of discarded.
	SaveChanges string `json:"saveChanges,omitempty"`

	AllowGitConfig bool `json:"allowGitConfig"`
	// AllowProtected are entries of ProtectedNames the user lets be
	// written on purpose (filesystem.allowProtected, --allow-protected),
	// each exactly as the list spells it.
	AllowProtected []string `json:"allowProtected,omitempty"`
	// SearchDepth is how deep below each writable root existing protected
	// names are searched (mandatoryDenySearchDepth), as srt's ripgrep
	// --max-depth counts: 1 is the root's own entries, 3 finds a/b/.bashrc
	// and a/b/.git/hooks.
	SearchDepth int `json:"mandatoryDenySearchDepth"`
	// ScanCache is the directory of the protected-name search's cache
	// (Input.ScanCache); it is always in DenyWrite.
	ScanCache string `json:"scanCache,omitempty"`
}

// Network is the egress part of a Policy. The launcher enforces "no
// network" by itself; the domain rules are enforced by package netproxy.
type Network struct {
	// Mode is "none", "filtered" or "host".
	Mode           string   `json:"mode"`
	AllowedDomains []string `json:"allowedDomains"`
	// TrustedDomains are the allowedDomains of the layers the user
	// vouches for (the command line, files outside the working tree,
	// trusted project files; see trust.go): credentials are injected
	// toward them when an entry names no injectHosts.
	TrustedDomains          []string          `json:"trustedDomains,omitempty"`
	DeniedDomains           []string          `json:"deniedDomains"`
	DeniedDomainReasons     map[string]string `json:"deniedDomainReasons,omitempty"`
	DeniedResolvedAddresses []string          `json:"deniedResolvedAddresses,omitempty"`
	StrictAllowlist         bool              `json:"strictAllowlist,omitempty"`
	AllowUnixSockets        []string          `json:"allowUnixSockets"`
	AllowAllUnixSockets     bool              `json:"allowAllUnixSockets"`
	AllowLocalBinding       bool              `json:"allowLocalBinding"`
	// Capture is network.capture / --capture (sbx's own, on unless
	// turned off): in filtered mode, TCP and DNS from clients that
	// ignore the proxy variables reach the proxy through a TUN device
	// (package capture).
	Capture         bool     `json:"capture"`
	AllowMachLookup []string `json:"allowMachLookup,omitempty"`
	Publish         []string `json:"publish,omitempty"`
	// TLSTerminate is network.tlsTerminate / --tls-terminate: HTTPS
	// CONNECTs to allowed hosts are terminated in the proxy; nil is off.
	TLSTerminate *TLSTerminate `json:"tlsTerminate,omitempty"`
	// ParentProxy is network.parentProxy: the upstream proxy allowed
	// traffic leaves through. nil: sbx's own HTTP(S)_PROXY and NO_PROXY
	// decide (see sandbox).
	ParentProxy *ParentProxy `json:"parentProxy,omitempty"`
	// MITMProxy is network.mitmProxy: its domains go to an upstream
	// proxy on a Unix socket.
	MITMProxy *MITMProxy `json:"mitmProxy,omitempty"`
	// Managed is the managed layer's network lists, kept in force by the
	// live sources; nil without a managed layer.
	Managed *ManagedNetwork `json:"managed,omitempty"`
}

// MITMProxy is srt's network.mitmProxy; SocketPath is absolute.
type MITMProxy struct {
	SocketPath string   `json:"socketPath"`
	Domains    []string `json:"domains"`
}

// ParentProxy is srt's network.parentProxy.
type ParentProxy struct {
	HTTP    string   `json:"http,omitempty"`
	HTTPS   string   `json:"https,omitempty"`
	NoProxy []string `json:"noProxy,omitempty"`
}

// MarshalJSON shows the URLs without their passwords (--dry-run).
func (pp ParentProxy) MarshalJSON() ([]byte, error) {
	type plain ParentProxy
	c := plain(pp)
	c.HTTP, c.HTTPS = RedactURL(c.HTTP), RedactURL(c.HTTPS)
	return json.Marshal(c)
}

// RedactURL replaces a URL's password with "xxxxx".
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return s
}

// TLSTerminate is srt's network.tlsTerminate. Paths are absolute; an
// empty CACertPath means an ephemeral CA made for the run.
type TLSTerminate struct {
	CACertPath       string   `json:"caCertPath,omitempty"`
	CAKeyPath        string   `json:"caKeyPath,omitempty"`
	ExcludeDomains   []string `json:"excludeDomains,omitempty"`
	ExtraCACertPaths []string `json:"extraCaCertPaths,omitempty"`
}

// Process describes the command and its execution context.
type Process struct {
	Argv    []string      `json:"argv"`
	Dir     string        `json:"dir"`
	Env     []string      `json:"-"`
	EnvKeys []string      `json:"envKeys"`
	Removed []string      `json:"envRemoved,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	KeepFDs []int         `json:"keepFds,omitempty"`
	// ControlFD is --control-fd (0: none).
	ControlFD int `json:"controlFd,omitempty"`
	// Tty: the command gets a pseudo-terminal of its own in the
	// sandbox's private devpts, as its controlling terminal and session
	// leader, relayed by sbx to the caller's terminal (--tty; or
	// allowPty with a terminal on standard input and output, on Linux
	// outside the weaker mode).
	Tty bool `json:"tty,omitempty"`
	// AskFD is --ask-fd (0: none); AskTimeout how long an answer may take.
	AskFD      int           `json:"askFd,omitempty"`
	AskTimeout time.Duration `json:"askTimeout,omitempty"`
	Home       string        `json:"home"`
	UID        int           `json:"uid"`
	GID        int           `json:"gid"`
	// Self is the resolved path of the sbx executable; it is always
	// write-protected so a sandboxed command cannot rewrite its sandbox.
	Self string `json:"self,omitempty"`
}

// Protected is one name that stays read-only inside writable places.
type Protected struct {
	// Name is a relative path such as ".bashrc" or ".git/hooks".
	Name string
	// Dir says the name is a directory (created missing as a directory).
	Dir bool
	// OnlyIfFile restricts protection to a non-directory (".git" as a
	// file pointing elsewhere).
	OnlyIfFile bool
	// Stub says where a missing one is pinned with a stub (a placeholder
	// a file watcher sees for the length of the run): only where the
	// host's tools act on it. An existing one is read-only wherever the
	// search finds it.
	Stub StubWhere
	// StubWith pins a missing one also in a directory that holds one of
	// these names (lefthook-local.yml beside lefthook.yml).
	StubWith []string
	// Why is what the host runs or loads from it, for the docs.
	Why string
}

// StubWhere is the set of directories where a missing protected name is
// pinned. Each is looked at where the search starts (each writable root,
// the working directory, HOME when it lies in a writable place), never
// deeper.
type StubWhere uint8

const (
	// StubHome: the caller's HOME (shell start-up files, ~/.gitconfig).
	StubHome StubWhere = 1 << iota
	// StubRepo: a repository's working-tree root (a directory holding
	// .git); the .git pieces are pinned inside its .git.
	StubRepo
	// StubCwd: the working directory, where the user's editor and shell
	// open the project.
	StubCwd
	// StubProject is a project root: the working directory or a
	// repository root.
	StubProject = StubRepo | StubCwd
)

// ProtectedNames returns the names that stay read-only inside writable
// places unless explicitly allowed. allowGitConfig drops .git/config.
//
// Where they are enforced: every existing match found up to
// Filesystem.SearchDepth path components below each writable root and the
// working directory (default 3, srt's mandatoryDenySearchDepth, counted as
// srt counts it: a/b/.bashrc is at depth 3; a nested name such as
// .git/hooks is found when its first component is) is read-only. A
// missing one is pinned with a stub only where it acts (Protected.Stub):
// HOME, a repository root, the working directory; elsewhere (a build
// output directory, a toolchain cache) nothing appears.
// The depth is bounded because the search runs on every start and must
// stay cheap in trees of 100k files; directories created during the run
// are not covered. docs/settings.md lists each entry with its reason.
func ProtectedNames(allowGitConfig bool) []Protected {
	const (
		shell = "the shell runs it at start-up"
		git   = "git runs or reads it in this repository (hooks, core.fsmonitor, core.hooksPath, filters, aliases)"
	)
	out := []Protected{
		// Shell start-up files: they act only in HOME.
		{Name: ".bashrc", Stub: StubHome, Why: shell}, {Name: ".bash_profile", Stub: StubHome, Why: shell},
		{Name: ".bash_login", Stub: StubHome, Why: shell}, {Name: ".bash_logout", Stub: StubHome, Why: shell},
		{Name: ".profile", Stub: StubHome, Why: shell},
		{Name: ".zshrc", Stub: StubHome, Why: shell}, {Name: ".zprofile", Stub: StubHome, Why: shell},
		{Name: ".zshenv", Stub: StubHome, Why: shell}, {Name: ".zlogin", Stub: StubHome, Why: shell},
		{Name: ".zlogout", Stub: StubHome, Why: shell},
		{Name: ".gitconfig", Stub: StubHome, Why: "git reads it in every repository (core.fsmonitor, core.hooksPath, aliases, credential helpers)"},
		{Name: ".ripgreprc", Stub: StubHome, Why: "ripgrep's configuration (srt's list)"},
		// git: pinned inside a repository's .git, and a missing .git in
		// the working directory or HOME is pinned too (a ~/.git would make
		// every directory below HOME part of a repository).
		{Name: ".git/hooks", Dir: true, Stub: StubProject | StubHome, Why: git},
		{Name: ".git/modules", Dir: true, Stub: StubProject | StubHome, Why: "the git directories of submodules, each with a config and hooks"},
		{Name: ".git/worktrees", Dir: true, Stub: StubProject | StubHome, Why: "the git directories of worktrees, each with a config"},
		{Name: ".git", OnlyIfFile: true, Why: "a .git file sends git to another git directory, with its config and hooks"},
		{Name: ".gitmodules", Why: "git submodule update (and submodule.recurse) clones and checks out what it names"},
		// Hook managers: what the installed hook runs.
		{Name: ".husky", Dir: true, Why: "husky's hooks (core.hooksPath .husky/_ runs .husky/<hook>)"},
		{Name: ".pre-commit-config.yaml", Why: "the pre-commit hook runs the commands it lists"},
		{Name: "lefthook.yml", Why: lefthookWhy}, {Name: ".lefthook.yml", Why: lefthookWhy},
		{Name: "lefthook.yaml", Why: lefthookWhy}, {Name: ".lefthook.yaml", Why: lefthookWhy},
		{Name: "lefthook-local.yml", StubWith: lefthookMain, Why: lefthookLocalWhy},
		{Name: ".lefthook-local.yml", StubWith: lefthookMain, Why: lefthookLocalWhy},
		{Name: "lefthook-local.yaml", StubWith: lefthookMain, Why: lefthookLocalWhy},
		{Name: ".lefthook-local.yaml", StubWith: lefthookMain, Why: lefthookLocalWhy},
		{Name: ".lefthook", Dir: true, StubWith: lefthookMain, Why: "lefthook's scripts directory: the hook runs the scripts the config names"},
		{Name: ".lefthook-local", Dir: true, StubWith: lefthookMain, Why: "lefthook's local scripts directory"},
		// Editors and agents: a project root, and HOME where the tool
		// keeps code it loads there.
		{Name: ".vscode", Dir: true, Stub: StubProject | StubHome, Why: "VS Code applies a trusted folder's settings and tasks; ~/.vscode/extensions holds the extensions it loads"},
		{Name: ".idea", Dir: true, Stub: StubProject, Why: "JetBrains IDEs load the project's run configurations and startup tasks"},
		{Name: ".zed", Dir: true, Stub: StubProject, Why: "Zed applies the project's settings (language server binaries) and tasks"},
		{Name: ".claude", Dir: true, Stub: StubProject | StubHome, Why: "Claude Code's settings hold hooks it runs; commands, agents and skills"},
		{Name: ".mcp.json", Stub: StubProject, Why: "Claude Code starts the MCP servers it lists"},
		{Name: ".cursor", Dir: true, Why: "Cursor's mcp.json (servers it starts once approved) and rules"},
		{Name: ".gemini", Dir: true, Why: "Gemini CLI's settings.json (MCP servers it starts)"},
		// Shells entering the directory.
		{Name: ".envrc", Why: "direnv runs it on cd once allowed (at once under a whitelisted prefix)"},
		{Name: "mise.toml", Why: miseWhy}, {Name: ".mise.toml", Why: miseWhy},
		{Name: "mise.local.toml", Why: miseWhy}, {Name: ".mise.local.toml", Why: miseWhy},
		{Name: ".tool-versions", Why: "mise and asdf install and put on PATH the tools it names"},
		// Package managers: configuration every command reads.
		{Name: ".npmrc", Why: "npm, pnpm and yarn 1 read it on every command (node-options, script-shell, git)"},
		{Name: ".yarnrc.yml", Why: "yarn 2+ runs the yarnPath and plugins it names on every command"},
		{Name: ".yarnrc", Why: "yarn 1 runs the yarn-path it names"},
		{Name: ".pnpmfile.cjs", Why: "pnpm runs its hooks on every install"},
		{Name: ".cargo/config.toml", Why: cargoWhy}, {Name: ".cargo/config", Why: cargoWhy},
	}
	if !allowGitConfig {
		out = append(out, Protected{Name: ".git/config", Stub: StubProject | StubHome, Why: git})
	}
	return out
}

// Protected is the list of protected names this filesystem policy
// enforces: ProtectedNames without .git/config under allowGitConfig and
// without each AllowProtected entry.
func (f Filesystem) Protected() []Protected {
	all := ProtectedNames(f.AllowGitConfig)
	if len(f.AllowProtected) == 0 {
		return all
	}
	out := all[:0:0]
	for _, pn := range all {
		if !slices.Contains(f.AllowProtected, pn.Name) {
			out = append(out, pn)
		}
	}
	return out
}

// CheckProtectedName refuses a name that is not an entry of the list of
// protected names, with the nearest entry when one is close.
func CheckProtectedName(name string) error {
	best, bestD := "", 3
	for _, pn := range ProtectedNames(false) {
		if pn.Name == name {
			return nil
		}
		if d := editDistance(strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/"), "~/"), pn.Name); d < bestD {
			best, bestD = pn.Name, d
		}
	}
	hint := ""
	if best != "" {
		hint = fmt.Sprintf("did you mean %s? ", best)
	}
	return fmt.Errorf("%q is not a protected name; %sgive a name exactly as the list of protected names spells it (docs/settings.md)", name, hint)
}

// editDistance is the optimal string alignment distance of a and b.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range b {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

const (
	lefthookWhy      = "lefthook's configuration: the hook runs the commands it lists"
	lefthookLocalWhy = "lefthook merges it into its configuration (pinned beside lefthook's configuration)"
	miseWhy          = "mise reads it on cd: tools, env, hooks, tasks (it asks before trusting a new file)"
	cargoWhy         = "cargo reads it here and in every directory below (rustc-wrapper, target runners, aliases)"
)

// lefthookMain are lefthook's configuration files: where one is, the
// local override is pinned when missing.
var lefthookMain = []string{"lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml"}

// DefaultSearchDepth is srt's default mandatoryDenySearchDepth.
const DefaultSearchDepth = 3

// MaskedCopy is a file the command sees as a copy with its secret
// values masked: Format names its syntax ("npmrc", "pypirc").
type MaskedCopy struct {
	Path   string `json:"path"`
	Format string `json:"format"`
}

// Credentials is srt's credentials section, validated.
type Credentials struct {
	EnvVars []CredentialRule `json:"envVars,omitempty"`
	Files   []CredentialRule `json:"files,omitempty"`
	// AllowPlaintextInject lets the proxy substitute on plain HTTP too
	// (otherwise only on terminated HTTPS).
	AllowPlaintextInject bool `json:"allowPlaintextInject,omitempty"`
	// AWSPairs are masked AWS identities whose SigV4 requests the proxy
	// re-signs (the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
	// AWS_SESSION_TOKEN trio is paired when those are masked).
	AWSPairs []AWSPair `json:"awsPairs,omitempty"`
	// SigV4 says what to do with SigV4 requests that cannot be re-signed.
	SigV4 SigV4 `json:"sigv4"`
	// plainSet: the file wrote allowPlaintextInject (a managed false
	// then wins over another file's true).
	plainSet bool
}

// AWSPair names the variables of one AWS identity.
type AWSPair struct {
	AccessKeyIDVar     string `json:"accessKeyIdVar"`
	SecretAccessKeyVar string `json:"secretAccessKeyVar"`
	SessionTokenVar    string `json:"sessionTokenVar,omitempty"`
}

// SigV4 is srt's credentials.sigv4: "deny" (the default) or
// "passthrough" for streaming uploads, presigned URLs and SigV4A.
type SigV4 struct {
	Streaming string `json:"streaming"`
	Presigned string `json:"presigned"`
	SigV4A    string `json:"sigv4a"`
}

// CredentialRule is one envVars or files entry. Name is the variable, or
// Path the absolute file.
type CredentialRule struct {
	Name             string   `json:"name,omitempty"`
	Path             string   `json:"path,omitempty"`
	Mode             string   `json:"mode"`                       // "deny" or "mask"
	Extract          string   `json:"extract,omitempty"`          // a regular expression with a capture group
	OnExtractNoMatch string   `json:"onExtractNoMatch,omitempty"` // "warn", "deny" (default) or "error"
	Decode           string   `json:"decode,omitempty"`           // "" or "jwt"
	MaskClaims       []string `json:"maskClaims,omitempty"`
	InjectHosts      []string `json:"injectHosts,omitempty"` // default: allowedDomains
	// managed: the rule came from the managed layer (a files deny is
	// then a managed deny, which no other layer's mask re-opens).
	managed bool
}
