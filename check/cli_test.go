package check

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMainAcceptable(t *testing.T) {
	root, _ := newRoot(t)
	for _, args := range [][]string{
		{"--root", root, "--", "npm run dev"},
		{"--root", root, "--json", "--", "npm run build -- --watch"},
		{"--root=" + root, "go build ./cmd/server"},
		{"--root", root, "--env", "PORT=3000", "--env", "NODE_ENV=dev", "--cwd", "src/Api", "--", "dotnet watch --project src/Api"},
	} {
		code, out, errs := runMain(args...)
		if code != ExitOK || out != "" || errs != "" {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 0 and silence", args, code, out, errs)
		}
	}
}

func TestMainRefused(t *testing.T) {
	root, _ := newRoot(t)
	code, out, errs := runMain("--root", root, "--", "npm run dev && git pull")
	if code != ExitRefused || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{"charset at 12:", "metachars at 12:", "structure at 12:", "prefix at 0:", "deniedWords at 15:"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	// A newline in the command stays inside its line.
	code, out, _ = runMain("--root", root, "--", "npm run dev\nrm x")
	if code != ExitRefused {
		t.Fatalf("exit %d", code)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.Contains(l, " at ") {
			t.Errorf("line %q does not look like a finding", l)
		}
	}
}

func TestMainJSON(t *testing.T) {
	root, _ := newRoot(t)
	code, out, errs := runMain("--root", root, "--json", "--env", "LD_PRELOAD=x.so", "--cwd", "link", "--", "npm run x -- git pull")
	if code != ExitRefused || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, out)
	}
	if len(raw) != 3 {
		t.Fatalf("got %d findings, want 3: %s", len(raw), out)
	}
	for _, f := range raw {
		if len(f) != 4 {
			t.Errorf("finding %v: want exactly rule, token, position, message", f)
		}
		for _, k := range []string{"rule", "token", "message"} {
			if _, ok := f[k].(string); !ok {
				t.Errorf("finding %v: %s is not a string", f, k)
			}
		}
		if _, ok := f["position"].(float64); !ok {
			t.Errorf("finding %v: position is not a number", f)
		}
	}
	want := []Finding{
		{Rule: RuleDeniedWords, Token: "git", Pos: 13},
		{Rule: RuleEnv, Token: "LD_PRELOAD", Pos: -1},
		{Rule: RuleCwd, Token: "link", Pos: -1},
	}
	var got []Finding
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got[i].Rule != w.Rule || got[i].Token != w.Token || got[i].Pos != w.Pos || got[i].Message == "" {
			t.Errorf("finding %d = %+v, want %+v", i, got[i], w)
		}
	}
}

func TestMainBadInput(t *testing.T) {
	root, _ := newRoot(t)
	dir := t.TempDir()
	unknownKey := writeFile(t, dir, "unknown.json", `{"commands": {"maxLen": 10}}`)
	badType := writeFile(t, dir, "type.json", `{"commands": {"enabled": "yes"}}`)
	notJSON := writeFile(t, dir, "bad.json", `{"commands": `)
	file := writeFile(t, dir, "file", "x")
	tests := []struct {
		args []string
		want string // stderr names this
	}{
		{[]string{"--bogus", "--", "npm run dev"}, "bogus"},
		{[]string{"--settings"}, "settings"},
		{[]string{}, "missing COMMAND STRING"},
		{[]string{"--"}, "missing COMMAND STRING"},
		{[]string{"--", "npm", "run", "dev"}, "quote the whole command"},
		{[]string{"--settings", filepath.Join(dir, "missing.json"), "--", "npm run dev"}, "missing.json"},
		{[]string{"--settings", unknownKey, "--", "npm run dev"}, `unknown key "maxLen"`},
		{[]string{"--settings", badType, "--", "npm run dev"}, "commands.enabled"},
		{[]string{"--settings", notJSON, "--", "npm run dev"}, "bad.json"},
		{[]string{"--root", filepath.Join(dir, "nope"), "--", "npm run dev"}, "--root"},
		{[]string{"--root", file, "--", "npm run dev"}, "not a directory"},
		{[]string{"--env", "NOEQUALS", "--", "npm run dev"}, "KEY=VALUE"},
		{[]string{"--env", "A=1", "--env", "A=2", "--", "npm run dev"}, "twice"},
		{[]string{"--json=maybe", "--", "npm run dev"}, "json"},
		{[]string{"--confirm", "ADD x"}, "give both"},
		{[]string{"--name", "x"}, "give both"},
		{[]string{"--confirm", "ADD x", "--name", "x", "--verb", "insert"}, "unknown verb"},
		{[]string{"--confirm", "ADD x", "--name", "x", "--verb", "ADD"}, "unknown verb"},
		{[]string{"--confirm", "ADD ", "--name", "", "--verb", "add"}, "empty name"},
		{[]string{"--confirm", "ADD x", "--name", "x", "--verb", "add", "--", "npm run dev"}, "drop the COMMAND STRING"},
		{[]string{"--confirm", "ADD x", "--name", "x", "--verb", "add", "--env", "A=b"}, "drop the COMMAND STRING"},
	}
	for _, tc := range tests {
		args := append([]string{"--root", root}, tc.args...)
		if strings.HasPrefix(strings.Join(tc.args, " "), "--root") {
			args = tc.args
		}
		code, out, errs := runMain(args...)
		if code != ExitBadInput {
			t.Errorf("Main(%q) = %d, want %d (stdout %q)", args, code, ExitBadInput, out)
			continue
		}
		if out != "" {
			t.Errorf("Main(%q): stdout %q, want nothing", args, out)
		}
		if strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") || !strings.HasPrefix(errs, "sbx check: ") {
			t.Errorf("Main(%q): stderr %q, want one line starting with 'sbx check: '", args, errs)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("Main(%q): stderr %q does not mention %q", args, errs, tc.want)
		}
	}
}

func TestMainSettings(t *testing.T) {
	root, _ := newRoot(t)
	dir := t.TempDir()
	settings := writeFile(t, dir, "settings.json", `{"network": {"allowedDomains": []},
		"commands": {"allowedPrefixes": ["Bash(git:*)"], "allowWords": ["git"]}}`)
	if code, out, errs := runMain("--settings", settings, "--root", root, "--", "git status"); code != ExitOK || out != "" || errs != "" {
		t.Errorf("git status with Bash(git:*): %d %q %q", code, out, errs)
	}
	if code, _, _ := runMain("--root", root, "--", "git status"); code != ExitRefused {
		t.Errorf("git status without settings: %d, want refused", code)
	}
	// "enabled" does not matter to sbx check.
	off := writeFile(t, dir, "off.json", `{"commands": {"enabled": false}}`)
	if code, _, _ := runMain("--settings", off, "--root", root, "--", "npm install"); code != ExitRefused {
		t.Errorf("enabled=false switched sbx check off: %d", code)
	}
}

func TestMainHelp(t *testing.T) {
	for _, h := range []string{"-h", "--help"} {
		code, out, errs := runMain(h)
		if code != ExitOK || !strings.Contains(out, "usage:") || errs != "" {
			t.Errorf("Main(%s) = %d, %q, %q", h, code, out, errs)
		}
	}
}

func TestMainDefaultRoot(t *testing.T) {
	root, _ := newRoot(t)
	t.Chdir(root)
	if code, out, _ := runMain("--", "npm run x -- src/Api"); code != ExitOK {
		t.Errorf("inside the working directory: %d %s", code, out)
	}
	if code, _, _ := runMain("--", "npm run x -- link/secret"); code != ExitRefused {
		t.Errorf("escape from the working directory: %d", code)
	}
}

func TestMainConfirm(t *testing.T) {
	tests := []struct {
		verb, name, confirm string
		code                int
	}{
		{"add", "web", "ADD web", ExitOK},
		{"remove", "web", "REMOVE web", ExitOK},
		{"add", "my task", "ADD my task", ExitOK},
		{"add", "web", "REMOVE web", ExitRefused},
		{"remove", "web", "ADD web", ExitRefused},
		{"add", "web", "add web", ExitRefused},
		{"add", "web", "ADD Web", ExitRefused},
		{"add", "web", "ADD  web", ExitRefused},
		{"add", "web", "ADD web ", ExitRefused},
		{"add", "web", " ADD web", ExitRefused},
		{"add", "web", "ADD web\n", ExitRefused},
		{"add", "web", "ADD", ExitRefused},
		{"add", "web", "", ExitRefused},
		{"add", "web", "ADD <web>", ExitRefused},
		{"add", "web", "ADD webs", ExitRefused},
		{"add", " web", "ADD  web", ExitBadInput},
		{"add", "we\tb", "ADD we\tb", ExitBadInput},
		{"Add", "web", "ADD web", ExitBadInput},
	}
	for _, tc := range tests {
		code, out, _ := runMain("--verb", tc.verb, "--name", tc.name, "--confirm", tc.confirm)
		if code != tc.code {
			t.Errorf("confirm %q for %s %q: exit %d, want %d (%s)", tc.confirm, tc.verb, tc.name, code, tc.code, out)
		}
		if code == ExitOK && out != "" {
			t.Errorf("confirm accepted but printed %q", out)
		}
	}
	code, out, _ := runMain("--json", "--verb", "add", "--name", "web", "--confirm", "ADD wbe")
	var fs []Finding
	if code != ExitRefused || json.Unmarshal([]byte(out), &fs) != nil || len(fs) != 1 ||
		fs[0].Rule != RuleConfirm || fs[0].Pos != 5 || !strings.Contains(fs[0].Message, `"ADD web"`) {
		t.Errorf("--json confirm mismatch: %d %s", code, out)
	}
}

func TestCheckConfirm(t *testing.T) {
	if fs, err := CheckConfirm(VerbRemove, "api", "REMOVE api"); err != nil || len(fs) != 0 {
		t.Errorf("REMOVE api: %v %v", fs, err)
	}
	fs, err := CheckConfirm(VerbAdd, "api", "ADD ap")
	if err != nil || len(fs) != 1 || fs[0].Pos != 6 || fs[0].Token != "ADD ap" {
		t.Errorf("ADD ap: %v %v", fs, err)
	}
	for _, bad := range [][2]string{{"", "x"}, {"delete", "x"}, {"add", ""}, {"add", "x "}, {"add", "a\x00"}} {
		if _, err := CheckConfirm(bad[0], bad[1], "ADD x"); err == nil {
			t.Errorf("CheckConfirm(%q, %q): no error", bad[0], bad[1])
		}
	}
}

// TestMainConfirmWithoutVerb is the exact surface:
// sbx check --confirm 'ADD <name>' --name NAME.
func TestMainConfirmWithoutVerb(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--confirm", "ADD build", "--name", "build"}, 0},
		{[]string{"--confirm", "REMOVE build", "--name", "build"}, 0},
		{[]string{"--confirm", "ADD build", "--name", "other"}, 1},
		{[]string{"--confirm", "add build", "--name", "build"}, 1},
		{[]string{"--confirm", "ADD  build", "--name", "build"}, 1},
	} {
		var out, errb strings.Builder
		if got := Main(c.args, &out, &errb); got != c.code {
			t.Errorf("Main(%q) = %d, want %d (stderr %q)", c.args, got, c.code, errb.String())
		}
	}
}
