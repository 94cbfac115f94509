package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// no checkout. A file counts by its resolved path, so a symlink in the
// tree to a file elsewhere is the file elsewhere, and a symlink outside
// to a file in the tree is the tree's. The user scope
// (~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json) is the
// user's wherever it lies, and so is the managed layer.

// weakening is one key a repository layer may not set without trust.
type weakening struct {
	key, why string
}

const (
	whySecrets = "a file in the working tree may not configure credential injection"
	whyWeaken  = "a file in the working tree may not switch enforcement off or weaken it"
)

// noteWeakening records key (shown as in the file) when the value just
// parsed widens the flow of secrets or weakens enforcement.
func (l *layer) noteWeakening(key, shown string) {
	add := func(why string) { l.weakens = append(l.weakens, weakening{shown, why}) }
	isTrue := func(b *bool) bool { return b != nil && *b }
	switch key {
	case "filesystem.disabled":
		if isTrue(l.fsDisabled) {
			add(whyWeaken)
		}
	case "ignoreViolations":
		if len(l.ignoreViolations) > 0 {
			add(whyWeaken)
		}
	case "enableWeakerNestedSandbox":
		if isTrue(l.weakerNested) {
			add(whyWeaken)
		}
	case "enableWeakerNetworkIsolation":
		if isTrue(l.weakerNetIso) {
			add(whyWeaken)
		}
	case "network.allowAllUnixSockets":
		if isTrue(l.allowAllUnixSockets) {
			add(whyWeaken)
		}
	case "credentials":
		if c := l.credentials; c != nil && secretFlow(c) {
			add(whySecrets)
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
		if top := gitTop(rd); top != "" && (rhome == "" || !Within(rhome, top)) {
			rd = top
		}
		out = append(out, rd)
	}
	return dedupe(out)
}

// gitTop is the nearest directory at or above dir (resolved, clean) that
// holds a .git entry (a repository's directory, or a worktree's file),
// or "".
func gitTop(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == "/" {
			return ""
		}
	}
}

// classify marks the layers that lie in a working tree. userScope is
// the Claude user scope file ("" none), always the user's.
func classify(layers []*layer, trees []string, userScope string) {
	ru := ""
	if userScope != "" {
		ru = resolvedOr(userScope)
	}
	for _, l := range layers {
		if l.managed || l.flags || len(trees) == 0 {
			continue
		}
		abs, err := filepath.Abs(l.file)
		if err != nil {
			continue
		}
		real := resolvedOr(abs)
		l.repo = real != ru && WithinAny(real, trees)
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
		if !l.repo || len(l.weakens) == 0 || trustAll {
			continue
		}
		abs, _ := filepath.Abs(l.file)
		real := resolvedOr(abs)
		if WithinAny(real, trusted) {
			continue
		}
		w := l.weakens[0]
		dir := filepath.Dir(real)
		if filepath.Base(dir) == ".claude" {
			dir = filepath.Dir(dir)
		}
		return &SettingsError{File: l.file, Key: w.key, Problem: fmt.Sprintf("%s; review it, then pass --trust-project-settings (or list %s in sandbox.trustedProjectDirs in ~/.claude/settings.json)", w.why, dir)}
	}
	return nil
}
