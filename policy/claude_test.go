package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// permTree builds, below a fresh temporary directory:
//
//	home/.ssh/id_rsa  home/notes.txt
//	proj/.claude/     proj/src/a.ts  proj/outside/o.pem
//	proj/app/         (the working directory)
//	  .env key.pem docs/readme.md nested/secrets (a file)
//	  secrets/inner.pem secrets/.env
//	  src/main.go src/util.ts src/deep/.env src/deep/cert.pem src/deep/x/y.ts
//	  link -> ../outside
//
// and returns a function expanding $HOME, $PROJ and $APP in a path.
func permTree(t *testing.T) (home, proj, app string, expand func(string) string) {
	t.Helper()
	tmp := t.TempDir()
	home = filepath.Join(tmp, "home")
	proj = filepath.Join(tmp, "proj")
	app = filepath.Join(proj, "app")
	for _, d := range []string{
		"home/.ssh", "proj/.claude", "proj/src", "proj/outside",
		"proj/app/docs", "proj/app/nested", "proj/app/secrets", "proj/app/src/deep/x",
	} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		"home/.ssh/id_rsa", "home/notes.txt", "proj/src/a.ts", "proj/outside/o.pem",
		"proj/app/.env", "proj/app/key.pem", "proj/app/docs/readme.md", "proj/app/nested/secrets",
		"proj/app/secrets/inner.pem", "proj/app/secrets/.env",
		"proj/app/src/main.go", "proj/app/src/util.ts", "proj/app/src/deep/.env",
		"proj/app/src/deep/cert.pem", "proj/app/src/deep/x/y.ts",
	} {
		if err := os.WriteFile(filepath.Join(tmp, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(app, "link")); err != nil {
		t.Fatal(err)
	}
	expand = strings.NewReplacer("$HOME", home, "$PROJ", proj, "$APP", app).Replace
	return home, proj, app, expand
}

func expandAll(expand func(string) string, ps []string) []string {
	var out []string
	for _, p := range ps {
		out = append(out, expand(p))
	}
	return out
}

func TestExpandPermPattern(t *testing.T) {
	home, proj, app, expand := permTree(t)
	for _, tc := range []struct {
		spec string
		want []string
	}{
		// Path forms.
		{"//etc/passwd", []string{"/etc/passwd"}},
		{"//", []string{"/"}},
		{"~", []string{"$HOME"}},
		{"~/.ssh/id_rsa", []string{"$HOME/.ssh/id_rsa"}},
		{"~/*.txt", []string{"$HOME/notes.txt"}},
		{"/", []string{"$PROJ"}},
		{"/src/*.ts", []string{"$PROJ/src/a.ts"}},
		{"./", []string{"$APP"}},
		{"./src/main.go", []string{"$APP/src/main.go"}},
		{"src/main.go", []string{"$APP/src/main.go"}},
		{"../outside/*.pem", []string{"$PROJ/outside/o.pem"}},
		{"./src/../docs/readme.md", []string{"$APP/docs/readme.md"}},

		// Literal paths are kept whether or not they exist.
		{"./missing/file", []string{"$APP/missing/file"}},
		{"src/deep", []string{"$APP/src/deep"}},

		// A trailing /** with no other glob is the directory.
		{"./src/**", []string{"$APP/src"}},
		{"./missing/**", []string{"$APP/missing"}},
		{"~/.ssh/**", []string{"$HOME/.ssh"}},
		{"**", []string{"$APP"}},

		// * stays within one component.
		{"./src/*.ts", []string{"$APP/src/util.ts"}},
		{"./*/*.go", []string{"$APP/src/main.go"}},
		// ** leading, middle, trailing.
		{"./**/*.ts", []string{"$APP/src/deep/x/y.ts", "$APP/src/util.ts"}},
		{"src/**/*.ts", []string{"$APP/src/deep/x/y.ts", "$APP/src/util.ts"}},
		{"src/**/y.ts", []string{"$APP/src/deep/x/y.ts"}},
		{"./src/*/**", []string{"$APP/src/deep"}},
		{"./s?c/d[a-e]ep/x/*", []string{"$APP/src/deep/x/y.ts"}},

		// Unanchored (no slash) vs anchored.
		{".env", []string{"$APP/.env", "$APP/secrets/.env", "$APP/src/deep/.env"}},
		{"./.env", []string{"$APP/.env"}},
		{"*.pem", []string{"$APP/key.pem", "$APP/secrets/inner.pem", "$APP/src/deep/cert.pem"}},
		{"./*.pem", []string{"$APP/key.pem"}},
		{"nothere.txt", []string{"$APP/nothere.txt"}},

		// A matched directory covers its subtree; nothing below it is
		// listed, and symlinks are entries, never descended into.
		{"*", []string{"$APP/.env", "$APP/docs", "$APP/key.pem", "$APP/link", "$APP/nested", "$APP/secrets", "$APP/src"}},
		{"s*", []string{"$APP/nested/secrets", "$APP/secrets", "$APP/src"}},
		{"secrets", []string{"$APP/nested/secrets", "$APP/secrets"}},

		// A trailing / matches directories (and symlinks to them) only.
		{"secrets/", []string{"$APP/secrets"}},
		{"link/", []string{"$APP/link"}},
		{"./secrets/", []string{"$APP/secrets"}},
		{"./nested/secrets/", nil},
		{"./*/", []string{"$APP/docs", "$APP/link", "$APP/nested", "$APP/secrets", "$APP/src"}},

		// No match.
		{"./*.zzz", nil},
		{"./missing/*.ts", nil},
	} {
		got, err := expandPermPattern(tc.spec, proj, app, home, false, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if want := expandAll(expand, tc.want); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.spec, got, want)
		}
	}
}

func TestExpandPermPatternErrors(t *testing.T) {
	home, proj, app, _ := permTree(t)
	for _, tc := range []struct{ spec, want string }{
		{"~bob/x", "~user paths are not supported; write //absolute/path"},
		{"./[abc", `malformed glob "[abc"; fix the brackets or escape them with \`},
		{"./*/../x", `".." after a glob is not supported; remove it`},
	} {
		got, err := expandPermPattern(tc.spec, proj, app, home, false, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %q, %v; want error %q", tc.spec, got, err, tc.want)
		}
	}
}

func TestPermMatchCap(t *testing.T) {
	home, proj, app, expand := permTree(t)
	old := permMatchCap
	t.Cleanup(func() { permMatchCap = old })
	permMatchCap = 3
	got, err := expandPermPattern("*.pem", proj, app, home, false, nil)
	want := expandAll(expand, []string{"$APP/key.pem", "$APP/secrets/inner.pem", "$APP/src/deep/cert.pem"})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("at the cap: got %q, %v; want %q", got, err, want)
	}
	permMatchCap = 2
	_, err = parsePermissions("s.json", json.RawMessage(`{"deny": ["Read(*.pem)"]}`), proj, app, home)
	wantErr := `settings s.json: key "permissions.deny": rule "Read(*.pem)": matches more than 2 paths; name a directory instead, e.g. Read(./dir/**)`
	if err == nil || err.Error() != wantErr {
		t.Errorf("over the cap: got %v; want %q", err, wantErr)
	}
}

func TestParsePermissions(t *testing.T) {
	home, proj, app, expand := permTree(t)
	const file = "/p/.claude/settings.json"
	n := func(s string) string { return file + ": " + s }
	for _, tc := range []struct {
		name, json string
		want       permRules
	}{
		{"edit allow", `{"allow": ["Edit(./src/**)", "Edit(/src/*.ts)"]}`,
			permRules{allowWrite: []string{"$APP/src", "$PROJ/src/a.ts"}}},
		{"read deny", `{"deny": ["Read(./secrets/**)", "Read(~/.ssh/**)"]}`,
			permRules{denyRead: []string{"$APP/secrets", "$HOME/.ssh"}}},
		{"edit deny", `{"deny": ["Edit(//etc/**)", "Edit(.env)"]}`,
			permRules{denyWrite: []string{"/etc", "$APP/.env", "$APP/secrets/.env", "$APP/src/deep/.env"}}},
		{"write multiedit notebookedit like edit", `{"allow": ["Write(./docs/**)", "MultiEdit(./src/main.go)", "NotebookEdit(./nb.ipynb)"], "deny": ["Write(./key.pem)", "MultiEdit(./docs/readme.md)", "NotebookEdit"]}`,
			permRules{
				allowWrite: []string{"$APP/docs", "$APP/src/main.go", "$APP/nb.ipynb"},
				denyWrite:  []string{"$APP/key.pem", "$APP/docs/readme.md", "/"},
			}},
		{"bare read and edit deny", `{"deny": ["Read", "Edit"]}`,
			permRules{denyRead: []string{"/"}, denyWrite: []string{"/"}}},
		{"deduplicated", `{"deny": ["Read(./.env)", "Read(.env)", "Read(//etc)", "Read(//etc/)"]}`,
			permRules{denyRead: []string{"$APP/.env", "$APP/secrets/.env", "$APP/src/deep/.env", "/etc"}}},
		{"deny matching nothing", `{"deny": ["Read(./*.zzz)"], "allow": ["Edit(./*.zzz)"]}`,
			permRules{notes: []string{n(`permissions.deny "Read(./*.zzz)": matches nothing now; files created later are not covered`)}}},
		{"read allow", `{"allow": ["Read(./src/**)", "Read"]}`,
			permRules{notes: []string{
				n(`permissions.allow "Read(./src/**)": reads are allowed by default; a Read allow rule does not widen the sandbox (use sandbox.filesystem.allowRead to re-open a denied path)`),
				n(`permissions.allow "Read": reads are allowed by default; a Read allow rule does not widen the sandbox (use sandbox.filesystem.allowRead to re-open a denied path)`),
			}}},
		{"ask", `{"ask": ["Edit(./src/**)", "Read(./.env)", "Bash(git push)"]}`,
			permRules{denyRead: []string{"$APP/.env"}, denyWrite: []string{"$APP/src"}, notes: []string{
				n(`permissions.ask "Edit(./src/**)": sbx cannot ask: applied as a deny rule`),
				n(`permissions.ask "Read(./.env)": sbx cannot ask: applied as a deny rule`),
				n(`permissions.ask "Bash(git push)": not a filesystem rule; not sbx's`),
			}}},
		{"other tools", `{"allow": ["Bash(npm test)", "Bash(echo ( hi)", "WebFetch(domain:example.com)", "WebFetch", "WebSearch", "mcp__github__create_issue", "Task(explore)"], "deny": ["WebFetch(domain:evil.com)", "Grep(*.pem)"]}`,
			permRules{notes: []string{
				n(`permissions.allow "Bash(npm test)": not a filesystem rule; not sbx's`),
				n(`permissions.allow "Bash(echo ( hi)": not a filesystem rule; not sbx's`),
				n(`permissions.allow "WebFetch(domain:example.com)": not a filesystem rule; not sbx's: it does NOT open the network for the sandboxed command; list example.com in sandbox.network.allowedDomains or pass --allow-domain example.com`),
				n(`permissions.allow "WebFetch": not a filesystem rule; not sbx's`),
				n(`permissions.allow "WebSearch": not a filesystem rule; not sbx's`),
				n(`permissions.allow "mcp__github__create_issue": not a filesystem rule; not sbx's`),
				n(`permissions.allow "Task(explore)": not a filesystem rule; not sbx's`),
				n(`permissions.deny "WebFetch(domain:evil.com)": not a filesystem rule; not sbx's`),
				n(`permissions.deny "Grep(*.pem)": not a filesystem rule; not sbx's`),
			}}},
		{"other keys", `{"defaultMode": "acceptEdits", "disableBypassPermissionsMode": "disable", "allow": []}`,
			permRules{notes: []string{
				n(`"permissions.defaultMode" is Claude Code's, not sbx's: ignored`),
				n(`"permissions.disableBypassPermissionsMode" is Claude Code's, not sbx's: ignored`),
			}}},
		{"additionalDirectories", `{"additionalDirectories": ["../outside", "~/notes", "//tmp/x/", "/srv/data"], "allow": ["Edit(../outside/**)"]}`,
			permRules{
				allowWrite: []string{"$PROJ/outside", "$HOME/notes", "/tmp/x", "/srv/data"},
				notes: []string{
					n(`"permissions.additionalDirectories" entry "../outside": Claude Code lets sandboxed commands write there: added to allowWrite as $PROJ/outside`),
					n(`"permissions.additionalDirectories" entry "~/notes": Claude Code lets sandboxed commands write there: added to allowWrite as $HOME/notes`),
					n(`"permissions.additionalDirectories" entry "//tmp/x/": Claude Code lets sandboxed commands write there: added to allowWrite as /tmp/x`),
					n(`"permissions.additionalDirectories" entry "/srv/data": Claude Code lets sandboxed commands write there: added to allowWrite as /srv/data`),
				},
			}},
		{"empty", `{}`, permRules{}},
	} {
		got, err := parsePermissions(file, json.RawMessage(tc.json), proj, app, home)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := permRules{
			allowWrite: expandAll(expand, tc.want.allowWrite),
			denyRead:   expandAll(expand, tc.want.denyRead),
			denyWrite:  expandAll(expand, tc.want.denyWrite),
			notes:      expandAll(expand, tc.want.notes),
			fileRules:  got.fileRules, // counted, not compared here
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", tc.name, got, want)
		}
	}
}

func TestParsePermissionsErrors(t *testing.T) {
	home, proj, app, _ := permTree(t)
	const file = "s.json"
	for _, tc := range []struct{ json, want string }{
		{`[]`, `settings s.json: key "permissions": must be a JSON object`},
		{`null`, `settings s.json: key "permissions": must be a JSON object`},
		{`{"allow": "Edit(x)"}`, `settings s.json: key "permissions.allow": must be an array of strings, each a rule string such as "Edit(src/**)"`},
		{`{"deny": null}`, `settings s.json: key "permissions.deny": must be an array of strings, each a rule string such as "Edit(src/**)"`},
		{`{"ask": ["Read", 3]}`, `settings s.json: key "permissions.ask": entry 2 (3) is not a string; each entry must be a rule string such as "Edit(src/**)"`},
		{`{"deny": [""]}`, `settings s.json: key "permissions.deny": entry 1 "" is empty or contains a NUL byte; each entry must be a rule string such as "Edit(src/**)"`},
		{`{"additionalDirectories": [{}]}`, `settings s.json: key "permissions.additionalDirectories": entry 1 ({}) is not a string; each entry must be a directory path`},
		{`{"additionalDirectories": ["//"]}`, `settings s.json: key "permissions.additionalDirectories": entry "//" would make the whole filesystem writable; list directories in sandbox.filesystem.allowWrite instead`},
		{`{"additionalDirectories": ["~bob"]}`, `settings s.json: key "permissions.additionalDirectories": entry "~bob": ~user paths are not supported; write the absolute path`},
		{`{"allow": ["Edit"]}`, `settings s.json: key "permissions.allow": rule "Edit": would make the whole filesystem writable; list directories in sandbox.filesystem.allowWrite instead`},
		{`{"allow": ["Write"]}`, `settings s.json: key "permissions.allow": rule "Write": would make the whole filesystem writable; list directories in sandbox.filesystem.allowWrite instead`},
		{`{"allow": ["Edit(//**)"]}`, `settings s.json: key "permissions.allow": rule "Edit(//**)": would make the whole filesystem writable; list directories in sandbox.filesystem.allowWrite instead`},
		{`{"deny": ["Read()"]}`, `settings s.json: key "permissions.deny": rule "Read()": empty pattern; write Read(pattern), or a bare Read for every use`},
		{`{"deny": ["Read(./x"]}`, `settings s.json: key "permissions.deny": rule "Read(./x": unbalanced parentheses (it must end with ")"); write Tool or Tool(pattern), e.g. Read(./secret/**)`},
		{`{"deny": ["Read./x)"]}`, `settings s.json: key "permissions.deny": rule "Read./x)": unbalanced parentheses; write Tool or Tool(pattern), e.g. Read(./secret/**)`},
		{`{"deny": ["Edit(./a)b)"]}`, `settings s.json: key "permissions.deny": rule "Edit(./a)b)": unbalanced parentheses in the pattern; write Edit(path), e.g. Edit(./secret/**)`},
		{`{"ask": ["Edit(./a(b)"]}`, `settings s.json: key "permissions.ask": rule "Edit(./a(b)": unbalanced parentheses in the pattern; write Edit(path), e.g. Edit(./secret/**)`},
		{`{"allow": ["(x)"]}`, `settings s.json: key "permissions.allow": rule "(x)": no tool name; write Tool or Tool(pattern), e.g. Read(./secret/**)`},
		{`{"allow": ["Read (x)"]}`, `settings s.json: key "permissions.allow": rule "Read (x)": tool name "Read " is malformed; write Tool or Tool(pattern), e.g. Read(./secret/**)`},
		{`{"deny": ["Read(~bob/x)"]}`, `settings s.json: key "permissions.deny": rule "Read(~bob/x)": ~user paths are not supported; write //absolute/path`},
		{`{"deny": ["Read(./[x)"]}`, `settings s.json: key "permissions.deny": rule "Read(./[x)": malformed glob "[x"; fix the brackets or escape them with \`},
	} {
		got, err := parsePermissions(file, json.RawMessage(tc.json), proj, app, home)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %#v, %v\nwant error %q", tc.json, got, err, tc.want)
		}
		if _, ok := err.(*SettingsError); err != nil && !ok {
			t.Errorf("%s: error is %T, want *SettingsError", tc.json, err)
		}
	}
}

func TestClaudeProjectRoot(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"/home/u/proj/.claude/settings.json", "/home/u/proj"},
		{"/home/u/proj/.claude/settings.local.json", "/home/u/proj"},
		{"/home/u/.claude/settings.json", "/home/u"},
		{"/home/u/proj/sbx.json", "/home/u/proj"},
		{"/etc/claude-code/managed-settings.json", "/etc/claude-code"},
		{"/home/u/proj/.claude/sub/settings.json", "/home/u/proj/.claude/sub"},
		{".claude/settings.json", "."},
		{"settings.json", "."},
	} {
		if got := claudeProjectRoot(tc.file); got != tc.want {
			t.Errorf("claudeProjectRoot(%q) = %q, want %q", tc.file, got, tc.want)
		}
	}
}
