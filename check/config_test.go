package check

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	c := Default()
	if c.Enabled() {
		t.Error("Default().Enabled() = true")
	}
	if c.MaxLength() != DefaultMaxLength {
		t.Errorf("MaxLength() = %d", c.MaxLength())
	}
	for _, r := range commandRules {
		if !c.RuleOn(r) {
			t.Errorf("rule %s is off by default", r)
		}
	}
	if c.RuleOn("nonsense") {
		t.Error(`RuleOn("nonsense") = true`)
	}
	if !slices.Equal(c.Prefixes(), DefaultPrefixes()) {
		t.Errorf("Prefixes() = %v", c.Prefixes())
	}
	n := 0
	for _, l := range deniedLists {
		n += len(l.words)
	}
	if got := len(c.DeniedWords()); got != n {
		t.Errorf("%d denied words, want %d (a word in two lists?)", got, n)
	}
}

func TestZeroConfigActsAsDefault(t *testing.T) {
	var zero Config
	root := t.TempDir()
	for _, cmd := range []string{"npm run dev", "npm install", "rm -rf /"} {
		if got, want := rulesOf(zero.Check(root, cmd)), rulesOf(Default().Check(root, cmd)); !slices.Equal(got, want) {
			t.Errorf("zero Config on %q: %v, want %v", cmd, got, want)
		}
	}
	if zero.Enabled() {
		t.Error("zero Config is enabled")
	}
}

func TestParseConfigEmpty(t *testing.T) {
	for _, raw := range []string{"", "  ", "null", "{}", " { } "} {
		c, err := ParseConfig(json.RawMessage(raw))
		if err != nil {
			t.Errorf("ParseConfig(%q): %v", raw, err)
			continue
		}
		if c.Enabled() || c.MaxLength() != DefaultMaxLength || !slices.Equal(c.Prefixes(), DefaultPrefixes()) {
			t.Errorf("ParseConfig(%q) is not the default", raw)
		}
	}
	if _, err := ParseConfig(nil); err != nil {
		t.Errorf("ParseConfig(nil): %v", err)
	}
}

// A full commands section: every key, every rule on.
const exampleSettings = `{"commands": {"enabled": true, "maxLength": 300,
  "charset": "^[A-Za-z0-9_./:@%+=,\\-\\\\ \"']+$",
  "rules": {"length": true, "charset": true, "metachars": true, "structure": true, "prefix": true, "deniedWords": true, "paths": true},
  "allowedPrefixes": ["npm run <script> [-- ...]", "Bash(git:*)"], "replaceDefaultPrefixes": false,
  "deniedWords": ["foo"], "allowWords": ["git"]},
  "network": {"allowedDomains": ["example.com"]}, "filesystem": {}, "sandbox": {"enabled": true}}`

func TestExampleSettings(t *testing.T) {
	c, err := FromSettings([]byte(exampleSettings))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Enabled() {
		t.Error("enabled: true not honoured")
	}
	root := t.TempDir()
	tests := []struct {
		cmd   string
		rules []string
	}{
		{"git status", nil},
		{"git push --force", nil}, // Bash(...) restricts the command, not its arguments
		{"GIT log", nil},
		{"npm run dev", nil},
		{"npm run x -- foo", []string{D}},
		{"npm run x -- Foo.exe", []string{D}},
		{"gitk", []string{P}},
		{"git status; rm x", []string{C, M, S, P, D}},
	}
	for _, tc := range tests {
		if got := rulesOf(c.Check(root, tc.cmd)); !slices.Equal(got, tc.rules) {
			t.Errorf("Check(%q) = %v, want %v", tc.cmd, got, tc.rules)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		raw  string
		want string // the error names this
	}{
		{`[]`, "want a JSON object"},
		{`true`, "want a JSON object"},
		{`{`, "invalid JSON"},
		{`{} x`, "data after"},
		{`{"enabled": true, "enabled": false}`, `duplicate key "enabled"`},
		{`{"enable": true}`, `unknown key "enable"`},
		{`{"Enabled": true}`, `unknown key "Enabled"`},
		{`{"enabled": "yes"}`, "commands.enabled"},
		{`{"enabled": null}`, "commands.enabled: null"},
		{`{"maxLength": "300"}`, "commands.maxLength"},
		{`{"maxLength": 3.5}`, "commands.maxLength"},
		{`{"maxLength": 0}`, "commands.maxLength: 0 is out of range"},
		{`{"maxLength": -1}`, "commands.maxLength"},
		{`{"maxLength": 1000000}`, "commands.maxLength"},
		{`{"charset": 5}`, "commands.charset"},
		{`{"charset": ""}`, "commands.charset: empty"},
		{`{"charset": "[a-"}`, "commands.charset"},
		{`{"rules": []}`, "commands.rules"},
		{`{"rules": {"paths": "no"}}`, "commands.rules: paths"},
		{`{"rules": {"paths": null}}`, "commands.rules: paths: null"},
		{`{"rules": {"path": false}}`, `unknown rule "path"`},
		{`{"rules": {"paths": false, "paths": true}}`, `duplicate key "paths"`},
		{`{"allowedPrefixes": "npm run <script>"}`, "commands.allowedPrefixes"},
		{`{"allowedPrefixes": [1]}`, "commands.allowedPrefixes"},
		{`{"allowedPrefixes": [null]}`, "commands.allowedPrefixes: item 0 is null"},
		{`{"allowedPrefixes": ["make test", "make (a|"]}`, `commands.allowedPrefixes[1] "make (a|"`},
		{`{"allowedPrefixes": ["Read(x)"]}`, "unsupported tool"},
		{`{"allowedPrefixes": ["Bash(git:*)"]}`, `"git" is a denied word`},
		{`{"allowedPrefixes": ["make (test|rm)"]}`, `"rm" is a denied word`},
		{`{"replaceDefaultPrefixes": 1}`, "commands.replaceDefaultPrefixes"},
		{`{"replaceDefaultPrefixes": true}`, "allowedPrefixes is empty"},
		{`{"replaceDefaultPrefixes": true, "allowedPrefixes": []}`, "allowedPrefixes is empty"},
		{`{"deniedWords": "foo"}`, "commands.deniedWords"},
		{`{"deniedWords": ["a b"]}`, "commands.deniedWords[0]"},
		{`{"deniedWords": ["ok", ""]}`, "commands.deniedWords[1]"},
		{`{"deniedWords": ["a/b"]}`, "commands.deniedWords[0]"},
		{`{"deniedWords": ["x."]}`, "commands.deniedWords[0]"},
		{`{"allowWords": ["gti"]}`, `commands.allowWords[0]: "gti" is not a denied word`},
		{`{"allowWords": ["x y"]}`, "commands.allowWords[0]"},
		{`{"deniedWords": ["foo"], "allowWords": ["FOO"]}`, "also in deniedWords"},
	}
	for _, tc := range tests {
		_, err := ParseConfig(json.RawMessage(tc.raw))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%s) = %v, want error containing %q", tc.raw, err, tc.want)
		}
	}
}

func TestParseConfigValues(t *testing.T) {
	c, err := ParseConfig(json.RawMessage(`{"maxLength": 20, "charset": "[a-z ]+",
		"allowedPrefixes": ["make (test|lint)", "Bash(git:*)"], "replaceDefaultPrefixes": true,
		"deniedWords": ["Terraform"], "allowWords": ["GIT", "rm"]}`))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tests := []struct {
		cmd   string
		rules []string
	}{
		{"make test", nil},
		{"git status", nil},
		{"npm run dev", []string{P}},                             // defaults replaced
		{"make Test", []string{C}},                               // custom charset, still anchored
		{"make test terraform", []string{P, D}},                  // added word
		{"git rm x", nil},                                        // allowed word
		{"make lint " + strings.Repeat("x", 20), []string{L, P}}, // custom length
	}
	for _, tc := range tests {
		if got := rulesOf(c.Check(root, tc.cmd)); !slices.Equal(got, tc.rules) {
			t.Errorf("Check(%q) = %v, want %v", tc.cmd, got, tc.rules)
		}
	}
	if slices.Contains(c.DeniedWords(), "git") || !slices.Contains(c.DeniedWords(), "terraform") {
		t.Errorf("DeniedWords() = %v", c.DeniedWords())
	}
}

// Each rule can be switched off on its own, and the others keep working.
func TestRulesSwitchIndependently(t *testing.T) {
	root := t.TempDir()
	cmd := "npm run dev && rm -rf /etc " + strings.Repeat("x", 300)
	all := rulesOf(Default().Check(root, cmd))
	if !slices.Equal(all, commandRules) {
		t.Fatalf("the probe command should trip every rule, got %v", all)
	}
	for _, off := range commandRules {
		c, err := ParseConfig(json.RawMessage(`{"rules": {"` + off + `": false}}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.RuleOn(off) {
			t.Errorf("rule %s still on", off)
		}
		want := slices.DeleteFunc(slices.Clone(commandRules), func(r string) bool { return r == off })
		if got := rulesOf(c.Check(root, cmd)); !slices.Equal(got, want) {
			t.Errorf("with %s off: %v, want %v", off, got, want)
		}
	}
	none := `{"rules": {"length": false, "charset": false, "metachars": false, "structure": false, "prefix": false, "deniedWords": false, "paths": false}}`
	c, err := ParseConfig(json.RawMessage(none))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Check(root, cmd); len(got) > 0 {
		t.Errorf("all rules off: %v", got)
	}
	// The structural rules parse even when the character rules are off.
	c, err = ParseConfig(json.RawMessage(`{"rules": {"charset": false, "metachars": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rulesOf(c.Check(root, "npm run dev && npm run api")); !slices.Equal(got, []string{S, P}) {
		t.Errorf("structure without character rules: %v", got)
	}
}

func TestFromSettings(t *testing.T) {
	tests := []struct {
		file    string
		enabled bool
		wantErr string
	}{
		{`{}`, false, ""},
		{`{"network": {"x": 1}, "filesystem": [], "sandbox": true}`, false, ""},
		{`{"commands": {"enabled": true}}`, true, ""},
		{`{"sandbox": {"enabled": true, "commands": {"enabled": true}}}`, true, ""},
		{`{"sandbox": {"commands": {"enabled": true}}, "commands": {}}`, false, "both"},
		{`{"sandbox": {"commands": {"bogus": 1}}}`, false, `sandbox.commands: unknown key "bogus"`},
		{`{"commands": {"bogus": 1}}`, false, `commands: unknown key "bogus"`},
		{`{"commands": null}`, false, ""},
		{`{"commands": 3}`, false, "want a JSON object"},
		{`[]`, false, "settings: want a JSON object"},
		{`{"a": }`, false, "invalid JSON"},
		{``, false, "invalid JSON"},
	}
	for _, tc := range tests {
		c, err := FromSettings([]byte(tc.file))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("FromSettings(%s): %v", tc.file, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("FromSettings(%s) = %v, want error containing %q", tc.file, err, tc.wantErr)
		case err == nil && c.Enabled() != tc.enabled:
			t.Errorf("FromSettings(%s).Enabled() = %v", tc.file, c.Enabled())
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"commands": {"enabled": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadFile(good); err != nil || !c.Enabled() {
		t.Errorf("LoadFile(good) = %v, %v", c.Enabled(), err)
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := LoadFile(missing); err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadFile(missing) = %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"commands": {"x": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("LoadFile(bad) = %v", err)
	}
}

func TestDeniedWordLists(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	docWords := map[string]bool{}
	for _, w := range strings.Fields(string(doc)) {
		docWords[w] = true
	}
	seen := map[string]string{}
	for name, words := range DefaultDeniedWords() {
		for _, w := range words {
			if other, dup := seen[w]; dup {
				t.Errorf("%q is in both %s and %s", w, other, name)
			}
			seen[w] = name
			if !docWords[w] {
				t.Errorf("denied word %q (%s) is missing from the package documentation", w, name)
			}
			if _, err := normalizeWord(w); err != nil {
				t.Errorf("denied word %q: %v", w, err)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no denied words")
	}
}

func TestDeniedIn(t *testing.T) {
	denied := Default().denied
	tests := map[string][]string{
		"git":                     {"git"},
		"Git.EXE":                 {"git"},
		"git.":                    {"git"},
		"/usr/bin/git":            {"git"},
		`C:\Windows\cmd.exe`:      {"cmd"},
		"./cmd/server":            nil,
		"./cmd/":                  nil,
		"apt-get":                 {"apt-get"},
		"apt":                     {"apt"},
		"my-git-tool":             nil,
		".git":                    nil,
		"scripts/dev.sh":          nil,
		"--exec=git,curl:wget@sh": {"git", "curl", "wget", "sh"},
		"wsl.exe":                 {"wsl.exe"},
		"digit gitter":            nil,
	}
	for in, want := range tests {
		var got []string
		for _, h := range deniedIn(in, denied) {
			got = append(got, h.word)
		}
		if !slices.Equal(got, want) {
			t.Errorf("deniedIn(%q) = %v, want %v", in, got, want)
		}
	}
}

// LoadFile (sbx check --settings) refuses a FIFO or /dev/zero at once,
// as every settings reader does.
func TestLoadFileNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := LoadFile(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: LoadFile blocked", p)
		}
	}
}
