//go:build linux

package oracle

import (
	"strings"
	"testing"
)

// named is one fixed oracle case for one documented filesystem rule: the
// layers, the probes that show the rule, and the model's answer is the
// expectation.
type named struct {
	name   string
	c      Case
	probes []Probe // relative to the tree
}

func p(op, path string) Probe { return Probe{Op: op, Path: path} }

// namedCases lists every filesystem rule of the composed policy (lists
// add up, globs, links, managed layers, trust; and what the oracle found
// beyond them) as a fixed case. Network, secrets and discard regions
// have named tests of their own in the packages that enforce them.
var namedCases = []named{
	// Lists that replace instead of adding up.
	{"lists/read-deny-rule-beside-denyRead", Case{Layers: []Layer{{Source: SrcClaude,
		ReadDeny: []string{"./secret/**"}, DenyRead: []string{"~/.aws/credentials"}}}},
		[]Probe{p("read", "work/secret/key"), p("read", "home/.aws/credentials"), p("read", "work/src/a.go")}},
	{"lists/edit-deny-rule-beside-allowWrite", Case{Layers: []Layer{{Source: SrcClaude,
		EditDeny: []string{"./src/**"}, AllowWrite: []string{"."}}}},
		[]Probe{p("write", "work/src/a.go"), p("write", "work/README.md")}},
	{"lists/edit-deny-rule-beside-denyWrite", Case{Layers: []Layer{{Source: SrcClaude,
		EditDeny: []string{"./src/**"}, AllowWrite: []string{"."}, DenyWrite: []string{"./gen"}}}},
		[]Probe{p("write", "work/src/a.go"), p("write", "work/gen/g.txt"), p("write", "work/README.md")}},
	{"lists/edit-allow-rule-beside-allowWrite", Case{Layers: []Layer{{Source: SrcClaude,
		EditAllow: []string{"./gen/**"}, AllowWrite: []string{"./src"}}}},
		[]Probe{p("write", "work/gen/g.txt"), p("write", "work/src/a.go"), p("write", "work/README.md")}},
	{"lists/additionalDirectories-beside-allowWrite", Case{Layers: []Layer{{Source: SrcClaude,
		AddDirs: []string{"./gen"}, AllowWrite: []string{"./src"}}}},
		[]Probe{p("write", "work/gen/g.txt"), p("write", "work/src/a.go")}},
	{"lists/scope-read-deny-rule-beside-denyRead", Case{Claude: true, Layers: []Layer{{Source: SrcProject,
		ReadDeny: []string{"./secret/**"}, DenyRead: []string{"./gen"}}}},
		[]Probe{p("read", "work/secret/key"), p("read", "work/gen/g.txt")}},
	{"scopes/project-rules-from-a-subdirectory", Case{Claude: true, Cwd: "work/src", Layers: []Layer{
		{Source: SrcProject, ReadDeny: []string{"./secret/**"}, EditAllow: []string{"src/**"}},
		{Source: SrcLocal, DenyRead: []string{"./gen"}}}},
		[]Probe{p("read", "work/secret/key"), p("read", "work/gen/g.txt"), p("write", "work/src/a.go"), p("read", "work/README.md")}},

	// Managed settings that do not win.
	{"managed/disabled-elsewhere-keeps-managed-denyRead", Case{Layers: []Layer{
		{Source: SrcSrt, Disabled: true},
		{Source: SrcManaged, DenyRead: []string{"@T/work/secret"}}}},
		[]Probe{p("read", "work/secret/key"), p("read", "work/src/a.go")}},
	{"managed/allow-write-flag-inside-managed-denyRead", Case{Layers: []Layer{
		{Source: SrcFlags, AllowWrite: []string{"./a/b"}},
		{Source: SrcManaged, DenyRead: []string{"@T/work/a"}}}},
		[]Probe{p("read", "work/a/b/key.pem"), p("write", "work/a/b/key.pem")}},
	{"managed/edit-allow-inside-managed-denyRead", Case{Layers: []Layer{
		{Source: SrcClaude, EditAllow: []string{"./a/b/**"}},
		{Source: SrcManaged, DenyRead: []string{"@T/work/a"}}}},
		[]Probe{p("read", "work/a/b/key.pem"), p("write", "work/a/b/key.pem")}},
	{"managed/additionalDirectories-inside-managed-denyRead", Case{Layers: []Layer{
		{Source: SrcClaude, AddDirs: []string{"./a/b"}},
		{Source: SrcManaged, DenyRead: []string{"@T/work/a"}}}},
		[]Probe{p("read", "work/a/b/key.pem"), p("write", "work/a/b/key.pem")}},
	{"managed/preset-inside-managed-denyRead", Case{Layers: []Layer{
		{Source: SrcFlags, Presets: []string{"go"}},
		{Source: SrcManaged, DenyRead: []string{"@T/tool"}}}},
		[]Probe{p("read", "tool/gocache/c.txt"), p("write", "tool/gocache/c.txt")}},
	{"managed/allow-read-inside-managed-denyRead", Case{Layers: []Layer{
		{Source: SrcFlags, AllowRead: []string{"./secret/key"}},
		{Source: SrcManaged, DenyRead: []string{"@T/work/secret"}}}},
		[]Probe{p("read", "work/secret/key")}},

	// Files from the checkout trusted for everything.
	{"trust/project-scope-ignoreViolations", Case{Claude: true, Layers: []Layer{{Source: SrcProject, IgnoreViolations: true}}}, nil},
	{"trust/settings-in-tree-disabled", Case{Layers: []Layer{{Source: SrcSrt, InTree: true, Disabled: true}}}, nil},
	{"trust/project-scope-credentials-inject", Case{Claude: true, Layers: []Layer{{Source: SrcProject,
		Raw: `{"sandbox": {"network": {"allowedDomains": ["example.test"]}, "credentials": {"envVars": [{"name": "GITHUB_TOKEN", "mode": "mask", "injectHosts": ["example.test"]}], "allowPlaintextInject": true}}}`}}}, nil},
	{"trust/settings-out-of-tree-disabled-runs", Case{Layers: []Layer{{Source: SrcSrt, Disabled: true}}},
		[]Probe{p("read", "home/.ssh/id_rsa")}},

	// Paths that do not mean what they say.
	{"paths/allow-read-symlink-to-ssh", Case{Layers: []Layer{{Source: SrcFlags, AllowRead: []string{"./lssh"}}}},
		[]Probe{p("read", "work/lssh/id_rsa")}},
	{"paths/reads-declared-allow-read-symlink-to-ssh", Case{Layers: []Layer{{Source: SrcFlags, AllowRead: []string{"./lssh"}, ReadsDeclared: true}}},
		[]Probe{p("read", "work/lssh/id_rsa")}},
	{"paths/allow-write-symlink-to-autostart", Case{Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"./lauto"}}}},
		[]Probe{p("create", "work/lauto/evil.desktop")}},
	{"paths/allow-read-home-symlink-to-ssh", Case{Layers: []Layer{{Source: SrcFlags, AllowRead: []string{"~/keys"}}}},
		[]Probe{p("read", "home/.ssh/id_rsa"), p("read", "home/keys/id_rsa")}},
	{"paths/allow-write-home-symlink-to-key", Case{Layers: []Layer{{Source: SrcSrt, AllowWrite: []string{"~/keys/id_rsa"}}}},
		[]Probe{p("read", "home/.ssh/id_rsa"), p("write", "home/.ssh/id_rsa")}},
	{"paths/allow-read-literal-mask-reopens", Case{Layers: []Layer{{Source: SrcFlags, AllowRead: []string{"~/.ssh"}}}},
		[]Probe{p("read", "home/.ssh/id_rsa"), p("read", "home/.aws/credentials")}},
	{"paths/glob-allow-read-through-symlink", Case{Layers: []Layer{{Source: SrcSrt, AllowRead: []string{"./s?c/**"}}}},
		[]Probe{p("read", "home/.ssh/id_rsa"), p("read", "work/src/lkey")}},
	{"paths/double-star-depth-flag", Case{Layers: []Layer{{Source: SrcFlags, DenyRead: []string{"./**/*.pem"}}}},
		[]Probe{p("read", "work/key.pem"), p("read", "work/a/key.pem"), p("read", "work/a/b/key.pem"), p("read", "work/a/b/c/key.pem"), p("read", "work/README.md")}},
	{"paths/double-star-depth-srt-denyWrite", Case{Layers: []Layer{{Source: SrcSrt, AllowWrite: []string{"."}, DenyWrite: []string{"./**/*.pem"}}}},
		[]Probe{p("write", "work/key.pem"), p("write", "work/a/b/key.pem"), p("write", "work/README.md")}},
	{"paths/unmatched-glob-beside-literal-file", Case{Layers: []Layer{{Source: SrcFlags, DenyRead: []string{"./secrets[prod]"}}}}, nil},
	{"paths/malformed-glob", Case{Layers: []Layer{{Source: SrcFlags, DenyRead: []string{"./a[b"}}}}, nil},
	{"paths/deny-write-missing-path", Case{Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyWrite: []string{"./.env"}}}},
		[]Probe{p("create", "work/.env"), p("create", "work/new.txt")}},
	{"paths/edit-deny-missing-under-edit-allow", Case{Layers: []Layer{{Source: SrcClaude,
		EditAllow: []string{"./a/**"}, EditDeny: []string{"./a/config.json"}}}},
		[]Probe{p("create", "work/a/config.json"), p("create", "work/a/other.json")}},
	{"paths/claude-settings-dir-anchors-rules", Case{Claude: true, Cwd: "outside", Layers: []Layer{{Source: SrcProject,
		ReadDeny: []string{"./secret/**"}}}},
		[]Probe{p("read", "work/secret/key")}},
	{"paths/claude-settings-dir-anchors-sandbox-paths", Case{Claude: true, Cwd: "outside", Layers: []Layer{{Source: SrcProject,
		AllowWrite: []string{"./gen"}}}},
		[]Probe{p("write", "work/gen/g.txt")}},

	// Found by the oracle: an srt-shaped --settings file next to
	// --claude-settings is read as a Claude Code file, and its top-level
	// "filesystem" and "network" are ignored (a note in --dry-run only).
	{"found/srt-settings-with-claude-settings", Case{Claude: true, Layers: []Layer{{Source: SrcSrt, DenyRead: []string{"./secret"}}}},
		[]Probe{p("read", "work/secret/key")}},

	// Found by the oracle: a writable root inside another is searched
	// for protected names only from the outer one when the outer one is
	// listed first, so a/b/c/.bashrc (depth 3 below ./a) stays writable
	// with --allow-write . --allow-write ./a, not with the reverse order.
	{"found/nested-writable-root-search-depth", Case{Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{".", "./a"}}}},
		[]Probe{p("write", "work/a/b/c/.bashrc"), p("write", "work/a/b/.bashrc"), p("write", "work/a/key.pem")}},

	// Found by the soak after the fixes were merged (seeds 3236, 1547, 1273).
	{"found/claude-dir-link-out-of-tree", Case{Cwd: "outside", Claude: true, Layers: []Layer{{Source: SrcUser, AllowRead: []string{"./src/lkey"}}}},
		[]Probe{p("read", "home/.ssh/id_rsa")}},
	{"found/missing-path-denied-read-and-write", Case{Claude: true, Layers: []Layer{{Source: SrcUser, AllowWrite: []string{"."}}, {Source: SrcProject, ReadDeny: []string{"./.env"}, EditDeny: []string{"./.env"}}}},
		[]Probe{p("create", "work/.env"), p("write", "work/src/a.go")}},

	{"found/allow-read-reopens-protected-name-writable", Case{Extra: []Node{{Path: "work/src/sub/.idea/f.txt", Kind: "file"}},
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, AllowRead: []string{"./src/**/*.txt"}, DenyRead: []string{"./s?c/**"}}}},
		[]Probe{p("write", "work/src/sub/.idea/f.txt"), p("read", "work/src/sub/.idea/f.txt"), p("write", "work/src/sub/deep/x.txt")}},

	{"found/stub-under-a-mask-a-missing-allowRead-names", Case{Claude: true, Layers: []Layer{
		{Source: SrcSrt, AllowRead: []string{"./a/config.json"}},
		{Source: SrcUser, ReadDeny: []string{"./a/**"}, AddDirs: []string{"./a"}},
		{Source: SrcProject, EditDeny: []string{"./a/config.json"}}}},
		[]Probe{p("create", "work/a/config.json"), p("read", "work/src/a.go")}},

	// Guards that pass today: the documented behaviour the fixes must keep.
	{"keep/protected-depth", Case{Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}}}},
		[]Probe{p("write", "work/a/b/.bashrc"), p("write", "work/a/b/c/.bashrc"), p("write", "work/.git/hooks/pre-commit"),
			p("write", "work/.git/config"), p("create", "work/.bashrc"), p("create", "work/.vscode/tasks.json"), p("write", "work/README.md")}},
	{"keep/mask-inside-writable", Case{Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"~"}}}},
		[]Probe{p("read", "home/.ssh/id_rsa"), p("write", "home/notes.txt"), p("write", "home/.bashrc"), p("create", "home/.profile")}},
	{"keep/allow-write-equal-to-denyRead-stays-hidden", Case{Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"./secret"}, DenyRead: []string{"./secret"}}}},
		[]Probe{p("read", "work/secret/key"), p("write", "work/secret/key")}},
}

// pendingFix are named cases that wait for a fix, by the fix; -pending
// runs them anyway. Empty: every rule and the two bugs the oracle found
// besides are fixed (an entry is added only with a known, open bug).
var pendingFix = map[string]string{}

func TestOracleNamed(t *testing.T) {
	for _, n := range namedCases {
		t.Run(n.name, func(t *testing.T) {
			if why, ok := pendingFix[n.name]; ok && !*pending {
				t.Skip("pending fix: " + why)
			}
			c := n.c
			c.Name = n.name
			c.Probes = n.probes
			o := runCase(t, &c)
			if o.want.Refuse == "" && len(n.probes) > 0 && len(o.want.OK) == 0 {
				t.Fatalf("the model has no answer for any probe")
			}
			if len(o.misses) > 0 {
				t.Error(o.report())
			}
		})
	}
}

// TestOracleMalformed: every malformed layer the generator draws makes
// sbx exit 125 with one line on stderr, and run nothing.
func TestOracleMalformed(t *testing.T) {
	for _, l := range malformed {
		t.Run(strings.ReplaceAll(string(l.Source)+" "+l.Raw, "/", "_"), func(t *testing.T) {
			if why, ok := pendingMalformed[l.Raw]; ok && !*pending {
				t.Skip("pending fix: " + why)
			}
			o := runCase(t, &Case{Layers: []Layer{l}})
			if o.want.Refuse == "" {
				t.Fatal("the model does not refuse a malformed layer")
			}
			if len(o.misses) > 0 {
				t.Error(o.report())
			}
		})
	}
}

// pendingMalformed are the malformed layers sbx still runs on this branch.
var pendingMalformed = map[string]string{}
