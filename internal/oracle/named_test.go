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
	{"scopes/user-deny-of-the-project-from-a-subdirectory", Case{Claude: true, Cwd: "work/src", Layers: []Layer{
		{Source: SrcUser, DenyRead: []string{"."}}}},
		[]Probe{p("list", "work/src"), p("read", "work/src/a.go"), p("list", "work"), p("read", "work/README.md")}},
	{"scopes/deny-of-the-working-directory-itself", Case{Claude: true, Cwd: "work/src", Layers: []Layer{
		{Source: SrcUser, DenyRead: []string{"./src"}}}},
		[]Probe{p("list", "work/src"), p("read", "work/src/a.go"), p("read", "work/README.md")}},

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

	// What a previous run leaves behind (docs/settings.md "Paths and
	// globs"). As the caller, a directory a deny walk cannot list where
	// writes go is denied whole, so the next run's command cannot
	// restore its mode and read what the walk did not see; as root, the
	// walk lists it and denies the match itself. The chmod probes come
	// first.
	{"left/unreadable-in-writable-deny-read-glob", Case{Prep: "mkdir @T/work/left && echo FAKE-KEY > @T/work/left/new.pem && chmod 000 @T/work/left",
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyRead: []string{"./**/*.pem"}}}},
		[]Probe{p("read", "work/left/new.pem"), p("list", "work/left"), p("create", "work/left/new.txt"), p("read", "work/README.md")}},
	{"left/unreadable-in-writable-read-rule", Case{Prep: "chmod 000 @T/work/a/b",
		Layers: []Layer{{Source: SrcClaude, AllowWrite: []string{"."}, ReadDeny: []string{"./**/*.pem"}}}},
		[]Probe{p("read", "work/a/b/key.pem"), p("read", "work/a/b/.bashrc"), p("read", "work/a/key.pem"), p("read", "work/README.md")}},
	{"left/unreadable-in-writable-deny-write-glob", Case{Prep: "chmod 000 @T/work/a/b",
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyWrite: []string{"./**/*.pem"}}}},
		[]Probe{p("write", "work/a/b/key.pem"), p("create", "work/a/b/new.txt"), p("write", "work/README.md")}},
	{"left/unreadable-below-the-search-depth", Case{Prep: "mkdir -p @T/work/src/sub/deep/left && echo FAKE-KEY > @T/work/src/sub/deep/left/new.pem && chmod 000 @T/work/src/sub/deep/left",
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyRead: []string{"./**/*.pem"}}}},
		[]Probe{p("read", "work/src/sub/deep/left/new.pem"), p("read", "work/src/sub/deep/x.txt")}},
	{"left/unreadable-in-writable-no-deny-walk", Case{Extra: []Node{{Path: "work/src/sub/deep/left", Kind: "dir", Mode: "000"}},
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyRead: []string{"./secret"}}}},
		[]Probe{p("list", "work/src/sub/deep/left"), p("create", "work/src/sub/deep/left/new.txt"), p("read", "work/secret/key")}},
	{"left/unreadable-within-the-search-depth", Case{Extra: []Node{{Path: "work/gen/left/.git/hooks/pre-commit", Kind: "file"}, {Path: "work/gen/left", Kind: "dir", Mode: "000"}},
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}}}},
		[]Probe{p("write", "work/gen/left/.git/hooks/pre-commit"), p("create", "work/gen/left/new.txt"), p("create", "work/gen/new.txt")}},
	{"left/unreadable-outside-writable", Case{Extra: []Node{{Path: "outside/left/key.pem", Kind: "file"}, {Path: "outside/left/notes.txt", Kind: "file"}, {Path: "outside/left", Kind: "dir", Mode: "000"}},
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyRead: []string{"@T/outside/**/*.pem"}}}},
		[]Probe{p("read", "outside/left/key.pem"), p("read", "outside/left/notes.txt"), p("read", "outside/o.txt")}},
	{"left/list-only-directory", Case{Extra: []Node{{Path: "work/left/key.pem", Kind: "file"}, {Path: "work/left", Kind: "dir", Mode: "311"}},
		Layers: []Layer{{Source: SrcFlags, DenyRead: []string{"./**/*.pem"}}}},
		[]Probe{p("read", "work/left/key.pem"), p("read", "work/README.md")}},
	{"left/unreadable-on-the-way-to-a-mask", Case{Prep: "chmod 000 @T/home/.config",
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"~"}}}},
		[]Probe{p("read", "home/.config/gh/hosts.yml"), p("read", "home/notes.txt")}},
	{"left/deep-tree-deny-read", Case{Extra: []Node{{Path: "work/gen/deep", Kind: "deep", Levels: 18}},
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyRead: []string{"./**/*.pem"}}}},
		[]Probe{p("list", "deepest:work/gen/deep"), p("list", "work/gen/deep"), p("read", "work/gen/g.txt")}},
	{"left/deep-tree-read-only", Case{Extra: []Node{{Path: "outside/deep", Kind: "deep", Levels: 18}},
		Layers: []Layer{{Source: SrcFlags, DenyRead: []string{"@T/outside/**/*.pem"}}}},
		[]Probe{p("list", "deepest:outside/deep"), p("read", "outside/o.txt")}},
	{"left/deep-tree-no-deny", Case{Extra: []Node{{Path: "work/gen/deep", Kind: "deep", Levels: 18}},
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}}}},
		[]Probe{p("list", "deepest:work/gen/deep"), p("create", "work/gen/deep/new.txt")}},
	{"left/moved-by-previous-run", Case{Prep: "mkdir -p @T/work/gen/x/y && mv @T/work/gen/g.txt @T/work/gen/x/y/moved.pem",
		Layers: []Layer{{Source: SrcFlags, AllowWrite: []string{"."}, DenyRead: []string{"./**/*.pem"}}}},
		[]Probe{p("read", "work/gen/x/y/moved.pem"), p("read", "work/README.md")}},
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
			if o.prepArgs != nil && o.want.Refuse == "" && !strings.HasPrefix(o.prepOut, "exit 0 ") {
				t.Errorf("the previous run failed, so the tree is not the one the case means: %s", o.prepOut)
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
