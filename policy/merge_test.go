package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sourceOf(p *Policy, list, entry string) string {
	for _, s := range p.Sources {
		if s.List == list && s.Entry == entry {
			return s.From
		}
	}
	return ""
}

// TestListsAddUp: every list is the union of every source, in every
// combination: permission rules and sandbox.filesystem keys of one
// Claude Code file, another settings file, the flags and the managed
// layer. Each entry also names where it came from.
func TestListsAddUp(t *testing.T) {
	type src struct {
		name string
		// set adds entry dir (a directory name under cwd) for list to
		// the run's files and flags.
		set func(list, dir string, b *combo)
	}
	rule := map[string]string{"denyRead": `"deny": ["Read(./%s)"]`, "denyWrite": `"deny": ["Edit(./%s)"]`, "allowWrite": `"allow": ["Edit(./%s)"]`}
	srcs := []src{
		{"rule", func(list, dir string, b *combo) { b.perms = append(b.perms, fmt.Sprintf(rule[list], dir)) }},
		{"sandbox", func(list, dir string, b *combo) { b.sandbox[list] = append(b.sandbox[list], dir) }},
		{"srt", func(list, dir string, b *combo) { b.srt[list] = append(b.srt[list], dir) }},
		{"flag", func(list, dir string, b *combo) { b.flags[list] = append(b.flags[list], dir) }},
		{"managed", func(list, dir string, b *combo) { b.managed[list] = append(b.managed[list], dir) }},
	}
	for _, list := range []string{"denyRead", "denyWrite", "allowWrite"} {
		for mask := 1; mask < 1<<len(srcs); mask++ {
			in := input(t)
			b := &combo{sandbox: map[string][]string{}, srt: map[string][]string{}, flags: map[string][]string{}, managed: map[string][]string{}}
			var want []string
			for i, s := range srcs {
				if mask&(1<<i) == 0 {
					continue
				}
				dir := "d-" + s.name
				os.MkdirAll(filepath.Join(in.Cwd, dir), 0o755)
				s.set(list, dir, b)
				want = append(want, dir)
			}
			b.apply(t, &in)
			p, err := Build(in)
			if err != nil {
				t.Fatalf("%s %b: %v", list, mask, err)
			}
			got := map[string][]string{"denyRead": p.Filesystem.DenyRead, "denyWrite": p.Filesystem.DenyWrite, "allowWrite": p.Filesystem.AllowWrite}[list]
			for _, d := range want {
				abs := filepath.Join(in.Cwd, d)
				if !slices.Contains(got, abs) {
					t.Errorf("%s from %v: %s missing in %v", list, want, d, got)
				}
				if sourceOf(p, list, abs) == "" || sourceOf(p, list, abs) == "built-in" {
					t.Errorf("%s %s: no source (%v)", list, d, p.Sources)
				}
			}
		}
	}
}

// combo is one generated set of layers.
type combo struct {
	perms                        []string
	sandbox, srt, flags, managed map[string][]string
}

func (b *combo) apply(t *testing.T, in *Input) {
	t.Helper()
	out := t.TempDir() // outside the working tree
	if len(b.perms) > 0 || len(b.sandbox) > 0 {
		perms := map[string][]json.RawMessage{}
		for _, p := range b.perms {
			k, v, _ := strings.Cut(p, ": ")
			perms[strings.Trim(k, `"`)] = append(perms[strings.Trim(k, `"`)], json.RawMessage(strings.Trim(v, "[]")))
		}
		pj, _ := json.Marshal(perms)
		fj, _ := json.Marshal(b.sandbox)
		f := filepath.Join(in.Cwd, "claude.json")
		mustWrite(t, f, fmt.Sprintf(`{"permissions": %s, "sandbox": {"filesystem": %s}}`, pj, fj))
		in.Settings = append(in.Settings, f)
	}
	if len(b.srt) > 0 {
		fj, _ := json.Marshal(b.srt)
		f := filepath.Join(out, "srt.json")
		mustWrite(t, f, fmt.Sprintf(`{"network": {}, "filesystem": %s}`, fj))
		in.Settings = append(in.Settings, f)
	}
	abs := func(ds []string) []string {
		var o []string
		for _, d := range ds {
			o = append(o, filepath.Join(in.Cwd, d))
		}
		return o
	}
	in.DenyRead, in.DenyWrite, in.AllowWrite = b.flags["denyRead"], b.flags["denyWrite"], b.flags["allowWrite"]
	if len(b.managed) > 0 {
		m := map[string][]string{}
		for k, v := range b.managed {
			m[k] = abs(v)
		}
		fj, _ := json.Marshal(m)
		f := filepath.Join(out, "managed.json")
		mustWrite(t, f, fmt.Sprintf(`{"sandbox": {"filesystem": %s}}`, fj))
		in.ManagedSettings = f
	}
}

// TestListsAddUpInOneFile is the issue's own three cases.
func TestListsAddUpInOneFile(t *testing.T) {
	in := input(t)
	for _, d := range []string{"secret", "gen", "out"} {
		os.MkdirAll(filepath.Join(in.Cwd, d), 0o755)
	}
	f := filepath.Join(in.Cwd, "s.json")
	mustWrite(t, f, `{"permissions": {"deny": ["Read(./secret/**)", "Edit(./gen/x)"], "allow": ["Edit(./out/**)"]},
		"sandbox": {"filesystem": {"denyRead": ["~/.aws/credentials"], "allowWrite": ["./gen"], "denyWrite": ["./out/y"]}}}`)
	in.Settings = []string{f}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		list string
		got  []string
		want string
	}{
		{"denyRead", p.Filesystem.DenyRead, filepath.Join(in.Cwd, "secret")},
		{"denyRead", p.Filesystem.DenyRead, filepath.Join(in.Home, ".aws/credentials")},
		{"allowWrite", p.Filesystem.AllowWrite, filepath.Join(in.Cwd, "out")},
		{"allowWrite", p.Filesystem.AllowWrite, filepath.Join(in.Cwd, "gen")},
		{"denyWrite", p.Filesystem.DenyWrite, filepath.Join(in.Cwd, "gen/x")},
		{"denyWrite", p.Filesystem.DenyWrite, filepath.Join(in.Cwd, "out/y")},
	} {
		if !slices.Contains(c.got, c.want) {
			t.Errorf("%s lacks %s: %v", c.list, c.want, c.got)
		}
	}
}

func managedInput(t *testing.T, managed string) Input {
	t.Helper()
	in := input(t)
	f := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, f, managed)
	in.ManagedSettings = f
	return in
}

// TestManagedWins: no other source removes or re-opens what the managed
// layer denies, or flips a boolean it sets.
func TestManagedWins(t *testing.T) {
	mk := func(t *testing.T) Input {
		in := managedInput(t, `{"sandbox": {"enableWeakerNestedSandbox": false,
			"network": {"allowLocalBinding": false, "allowAllUnixSockets": false}, "filesystem": {"denyRead": ["SECRET"]}}}`)
		return in
	}
	t.Run("grants inside a managed deny", func(t *testing.T) {
		in := mk(t)
		sec := filepath.Join(in.Cwd, "SECRET")
		os.MkdirAll(filepath.Join(sec, "sub"), 0o755)
		// The managed file's relative "SECRET" is anchored at cwd too.
		b, _ := os.ReadFile(in.ManagedSettings)
		mustWrite(t, in.ManagedSettings, strings.Replace(string(b), `"SECRET"`, `"`+sec+`"`, 1))
		f := filepath.Join(in.Cwd, ".claude", "settings.json")
		mustWrite(t, f, `{"permissions": {"allow": ["Edit(./SECRET/**)"], "additionalDirectories": ["./SECRET/sub"]}, "sandbox": {"filesystem": {"allowRead": ["./SECRET"], "disabled": false}}}`)
		in.Settings = []string{f}
		in.AllowWrite = []string{sec, filepath.Join(sec, "sub")}
		in.AllowRead = []string{filepath.Join(sec, "sub")}
		in.DiscardWrites = []string{filepath.Join(sec, "sub")}
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range [][]string{p.Filesystem.AllowWrite, p.Filesystem.AllowRead, p.Filesystem.DiscardWrites} {
			for _, e := range l {
				if Within(e, sec) {
					t.Errorf("%s re-opens the managed deny: %v", e, l)
				}
			}
		}
		if !slices.Contains(p.Filesystem.DenyRead, sec) || !strings.Contains(strings.Join(p.Notes, "\n"), "re-open a managed deny") {
			t.Errorf("deny %v notes %q", p.Filesystem.DenyRead, p.Notes)
		}
	})
	t.Run("grants inside a managed allowRead carve-out stay", func(t *testing.T) {
		in := input(t)
		os.MkdirAll(filepath.Join(in.Home, "proj", "out"), 0o755)
		f := filepath.Join(t.TempDir(), "managed.json")
		mustWrite(t, f, `{"sandbox": {"filesystem": {"denyRead": ["~"], "allowRead": ["~/proj"]}}}`)
		in.ManagedSettings = f
		in.AllowWrite = []string{filepath.Join(in.Home, "proj", "out")}
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(p.Filesystem.AllowWrite, filepath.Join(in.Home, "proj", "out")) {
			t.Errorf("a grant inside the managed carve-out was dropped: %v %q", p.Filesystem.AllowWrite, p.Notes)
		}
		in.AllowWrite = []string{in.Home}
		if p, err = Build(in); err != nil || slices.Contains(p.Filesystem.AllowWrite, in.Home) {
			t.Errorf("a grant of the managed deny itself was kept: %v %v", err, p.Filesystem.AllowWrite)
		}
	})
	t.Run("a preset inside a managed deny", func(t *testing.T) {
		in := managedInput(t, `{"sandbox": {"filesystem": {"denyRead": ["~/.cache"]}}}`)
		in.Presets = []string{"go"}
		in.DryRun = true
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Filesystem.AllowWrite {
			if Within(e, filepath.Join(in.Home, ".cache")) {
				t.Errorf("preset re-opens %s", e)
			}
		}
	})
	t.Run("disabled", func(t *testing.T) {
		in := mk(t)
		f := filepath.Join(t.TempDir(), "u.json")
		mustWrite(t, f, `{"network": {}, "filesystem": {"disabled": true}}`)
		in.Settings = []string{f}
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		if p.Filesystem.Disabled || !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, "SECRET")) {
			t.Errorf("a non-managed filesystem.disabled dropped the managed rules: %v %v", p.Filesystem.Disabled, p.Filesystem.DenyRead)
		}
		// Without a managed filesystem key it is honoured.
		in2 := managedInput(t, `{"sandbox": {"allowPty": true}}`)
		in2.Settings = []string{f}
		if p, err := Build(in2); err != nil || !p.Filesystem.Disabled {
			t.Errorf("disabled without managed filesystem keys: %v", err)
		}
	})
	t.Run("booleans", func(t *testing.T) {
		in := mk(t)
		in.WeakerNested, in.AllowLocalBinding, in.AllowAllUnixSockets = true, true, true
		f := filepath.Join(t.TempDir(), "u.json")
		mustWrite(t, f, `{"network": {"allowLocalBinding": true}, "filesystem": {}}`)
		in.Settings = []string{f}
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		if p.WeakerNested || p.Network.AllowLocalBinding || p.Network.AllowAllUnixSockets {
			t.Errorf("a flag flipped a managed false: %+v %+v", p.WeakerNested, p.Network)
		}
		notes := strings.Join(p.Notes, "\n")
		for _, f := range []string{"--weaker-nested", "--allow-local-binding", "--allow-all-unix-sockets"} {
			if !strings.Contains(notes, f) {
				t.Errorf("no note names %s: %s", f, notes)
			}
		}
	})
	t.Run("domains only", func(t *testing.T) {
		in := managedInput(t, `{"sandbox": {"network": {"allowManagedDomainsOnly": true, "allowedDomains": ["ok.test"], "deniedDomains": ["bad.test"]}}}`)
		in.AllowRegistry = []string{"node"}
		in.AllowDomains = []string{"flag.test"}
		in.Presets = []string{"node"}
		in.DryRun = true
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Network.AllowedDomains, []string{"ok.test"}) {
			t.Errorf("allowedDomains %v", p.Network.AllowedDomains)
		}
		m := p.Network.Managed
		if m == nil || !m.DomainsOnly || !slices.Equal(m.DeniedDomains, []string{"bad.test"}) || !slices.Equal(m.AllowedDomains, []string{"ok.test"}) {
			t.Errorf("managed network %+v", m)
		}
	})
}

func TestManagedNetworkApply(t *testing.T) {
	u := NetworkUpdate{AllowedDomains: []string{"a.test"}, DeniedDomains: []string{"x.test"}}
	for _, c := range []struct {
		m           *ManagedNetwork
		allow, deny []string
	}{
		{nil, []string{"a.test"}, []string{"x.test"}},
		{&ManagedNetwork{DeniedDomains: []string{"bad.test"}}, []string{"a.test"}, []string{"x.test", "bad.test"}},
		{&ManagedNetwork{DomainsOnly: true, AllowedDomains: []string{"ok.test"}, DeniedDomains: []string{"bad.test"}}, []string{"ok.test"}, []string{"x.test", "bad.test"}},
		{&ManagedNetwork{DomainsOnly: true}, nil, []string{"x.test"}},
	} {
		got := c.m.Apply(u)
		if !slices.Equal(got.AllowedDomains, c.allow) || !slices.Equal(got.DeniedDomains, c.deny) {
			t.Errorf("%+v: got %+v", c.m, got)
		}
	}
}

// forbidden are settings a file in the working tree may not hold without
// trust, each in srt's shape.
var forbidden = map[string]string{
	"credentials mask":      `"credentials": {"envVars": [{"name": "GITHUB_TOKEN", "mode": "mask"}]}`,
	"credentials plaintext": `"credentials": {"allowPlaintextInject": true}`,
	"credentials aws":       `"credentials": {"awsPairs": [{"accessKeyIdVar": "A", "secretAccessKeyVar": "B"}]}`,
	"credentials sigv4":     `"credentials": {"sigv4": {"presigned": "passthrough"}}`,
	"ignoreViolations":      `"ignoreViolations": {"*": ["/"]}`,
	"filesystem.disabled":   `"filesystem": {"disabled": true}, "network": {}`,
	"weaker nested":         `"enableWeakerNestedSandbox": true`,
	"weaker network":        `"enableWeakerNetworkIsolation": true`,
	"allowAllUnixSockets":   `"network": {"allowAllUnixSockets": true}, "filesystem": {}`,
	"allowUnixSockets":      `"network": {"allowUnixSockets": ["/run/docker.sock"]}, "filesystem": {}`,
	"parentProxy":           `"network": {"parentProxy": {"https": "http://127.0.0.1:3128"}}, "filesystem": {}`,
}

func srtFile(body string) string {
	s := "{" + body
	if !strings.Contains(body, `"network"`) {
		s += `, "network": {}`
	}
	if !strings.Contains(body, `"filesystem"`) {
		s += `, "filesystem": {}`
	}
	return s + "}"
}

func TestTrustBoundary(t *testing.T) {
	for name, body := range forbidden {
		t.Run(name, func(t *testing.T) {
			in := input(t)
			// A --settings file in the working tree: refused, one line
			// naming the file and the way out.
			f := filepath.Join(in.Cwd, "sbx.json")
			mustWrite(t, f, srtFile(body))
			in.Settings = []string{f}
			_, err := Build(in)
			if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "--trust-project-settings") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("in the tree: %v", err)
			}
			// The same reached through a link outside: still the tree's.
			link := filepath.Join(t.TempDir(), "l.json")
			os.Symlink(f, link)
			in.Settings = []string{link}
			if _, err := Build(in); err == nil {
				t.Errorf("a link to a file in the tree passed")
			}
			// Trusted by the flag.
			in.Settings = []string{f}
			in.TrustProjectSettings = true
			if _, err := Build(in); err != nil {
				t.Errorf("with --trust-project-settings: %v", err)
			}
			in.TrustProjectSettings = false
			// Outside the tree: the user's.
			g := filepath.Join(t.TempDir(), "sbx.json")
			mustWrite(t, g, srtFile(body))
			in.Settings = []string{g}
			if _, err := Build(in); err != nil {
				t.Errorf("outside the tree: %v", err)
			}
			// A link in the tree to that file: the tree's (the
			// repository chose where it points, or an earlier run
			// made it), and so is a file under a linked directory.
			os.Symlink(g, filepath.Join(in.Cwd, "link.json"))
			in.Settings = []string{filepath.Join(in.Cwd, "link.json")}
			if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "link.json") {
				t.Errorf("a link in the tree to a file outside: %v", err)
			}
			os.Symlink(filepath.Dir(g), filepath.Join(in.Cwd, "linkdir"))
			in.Settings = []string{filepath.Join(in.Cwd, "linkdir", "sbx.json")}
			if _, err := Build(in); err == nil {
				t.Errorf("a file under a linked directory in the tree passed")
			}
			// The project scope of --claude-settings, in Claude's shape.
			in = input(t)
			in.ClaudeSettings, in.ClaudeDir = true, in.Cwd
			proj := filepath.Join(in.Cwd, ".claude", "settings.local.json")
			mustWrite(t, proj, `{"sandbox": `+srtFile(body)+`}`)
			if _, err := Build(in); err == nil || !strings.Contains(err.Error(), proj) {
				t.Errorf("local scope: %v", err)
			}
			// ... trusted by the user scope's trustedProjectDirs.
			mustWrite(t, filepath.Join(in.Home, ".claude", "settings.json"), `{"sandbox": {"trustedProjectDirs": ["`+in.Cwd+`"]}}`)
			if _, err := Build(in); err != nil {
				t.Errorf("trusted by the user scope: %v", err)
			}
		})
	}
	t.Run("the --claude-settings DIR is a working tree too", func(t *testing.T) {
		in := input(t)
		dir := t.TempDir()
		in.ClaudeSettings, in.ClaudeDir = true, dir
		mustWrite(t, filepath.Join(dir, ".claude", "settings.local.json"), `{"sandbox": {"ignoreViolations": {"*": ["/"]}}}`)
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "ignoreViolations") {
			t.Errorf("got %v", err)
		}
		f := filepath.Join(dir, "s.json")
		mustWrite(t, f, srtFile(forbidden["ignoreViolations"]))
		in.ClaudeSettings, in.Settings = false, []string{f}
		if _, err := Build(in); err != nil {
			t.Errorf("without --claude-settings DIR is not the tree: %v", err)
		}
	})
	t.Run("a subdirectory of a checkout is in the checkout", func(t *testing.T) {
		in := input(t)
		// The working directory's parent holds .git: a file there is
		// the repository's.
		top := filepath.Join(t.TempDir(), "repo")
		in.Cwd = filepath.Join(top, "sub")
		if err := os.MkdirAll(filepath.Join(top, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(in.Cwd, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(top, "sbx.json")
		mustWrite(t, f, srtFile(forbidden["ignoreViolations"]))
		in.Settings = []string{f}
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "--trust-project-settings") {
			t.Errorf("a file at the checkout's top, run from a subdirectory: %v", err)
		}
	})
	t.Run("narrowing is fine", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(in.Cwd, "sbx.json")
		mustWrite(t, f, `{"network": {"allowedDomains": ["a.test"], "allowAllUnixSockets": false}, "filesystem": {"denyRead": ["x"], "disabled": false},
			"credentials": {"envVars": [{"name": "X", "mode": "deny"}]}, "enableWeakerNestedSandbox": false}`)
		in.Settings = []string{f}
		if _, err := Build(in); err != nil {
			t.Error(err)
		}
	})
	t.Run("a repository file may not trust itself", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(in.Cwd, "sbx.json")
		mustWrite(t, f, `{"network": {}, "filesystem": {}, "trustedProjectDirs": ["`+in.Cwd+`"]}`)
		in.Settings = []string{f}
		in.TrustProjectSettings = true
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "trustedProjectDirs") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("the user scope is the user's in HOME", func(t *testing.T) {
		in := input(t)
		in.Cwd = in.Home
		in.ClaudeSettings, in.ClaudeDir = true, in.Home
		mustWrite(t, filepath.Join(in.Home, ".claude", "settings.json"), `{"sandbox": `+srtFile(forbidden["ignoreViolations"])+`}`)
		if _, err := Build(in); err != nil {
			t.Error(err)
		}
	})
}

// TestClaudeSettingsDirAnchors: --claude-settings DIR from elsewhere
// anchors the scopes' relative rules and paths at DIR.
func TestClaudeSettingsDirAnchors(t *testing.T) {
	in := input(t)
	dir := t.TempDir()
	for _, d := range []string{"secrets", "gen", "cache"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	mustWrite(t, filepath.Join(dir, ".claude", "settings.json"), `{"permissions": {"deny": ["Read(./secrets/**)"], "allow": ["Edit(gen)"]},
		"sandbox": {"filesystem": {"denyRead": ["cache"], "allowWrite": ["./gen"]}}}`)
	in.ClaudeSettings, in.ClaudeDir = true, dir
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"secrets", "cache"} {
		if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(dir, w)) {
			t.Errorf("denyRead lacks DIR/%s: %v", w, p.Filesystem.DenyRead)
		}
	}
	if !slices.Contains(p.Filesystem.AllowWrite, filepath.Join(dir, "gen")) {
		t.Errorf("allowWrite %v", p.Filesystem.AllowWrite)
	}
}

// TestSources: --dry-run's sources name the file, flag or preset.
func TestSources(t *testing.T) {
	in := input(t)
	os.MkdirAll(filepath.Join(in.Cwd, "w"), 0o755)
	os.MkdirAll(filepath.Join(in.Home, ".ssh"), 0o700)
	f := filepath.Join(t.TempDir(), "s.json")
	mustWrite(t, f, `{"network": {"allowedDomains": ["a.test"]}, "filesystem": {"denyWrite": ["w/x"]}}`)
	in.Settings = []string{f}
	in.AllowWrite = []string{"w"}
	in.DenyDomains = []string{"b.test"}
	in.AllowRegistry = []string{"node"}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]string{
		{"allowWrite", filepath.Join(in.Cwd, "w"), "--allow-write"},
		{"denyWrite", filepath.Join(in.Cwd, "w/x"), f + " filesystem.denyWrite"},
		{"denyRead", filepath.Join(in.Home, ".ssh"), "built-in"},
		{"allowedDomains", "a.test", f + " network.allowedDomains"},
		{"allowedDomains", "registry.npmjs.org", "--allow-registry node"},
		{"deniedDomains", "b.test", "--deny-domain"},
	} {
		if got := sourceOf(p, c[0], c[1]); got != c[2] {
			t.Errorf("%s %s: from %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
