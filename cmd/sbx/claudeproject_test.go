//go:build linux

package main

// The project --claude-settings reads follows the working directory: an
// agent starts in the project's root and its shell then cds below it.
// Each test runs the real binary from a subdirectory and asserts on what
// the command could read or write.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitProject makes a git checkout in a host temp dir with root's
// .claude/settings.json holding settings and a secret in secrets/, and
// returns its path and an environment whose HOME lies elsewhere.
func gitProject(t *testing.T, settings string) (string, []string) {
	t.Helper()
	d := hostTempDir(t)
	if err := os.Mkdir(filepath.Join(d, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, ".claude", "settings.json"), settings)
	writeFile(t, filepath.Join(d, "secrets", "prod.env"), "S3CRET")
	writeFile(t, filepath.Join(d, "src", "pkg", "main.c"), "CODE")
	writeFile(t, filepath.Join(d, "README"), "OPEN")
	return d, append(hermeticEnv(), "HOME="+hostTempDir(t))
}

func TestClaudeSettingsFromSubdirectory(t *testing.T) {
	d, env := gitProject(t, `{"permissions": {"deny": ["Read(./secrets/**)"], "allow": ["Edit(src/**)"]}}`)
	script := `cat ` + d + `/secrets/prod.env 2>/dev/null; cat ` + d + `/README; echo x > ` + d + `/src/out && echo wrote; true`
	for _, sub := range []string{"", "src", "src/pkg"} {
		dir := filepath.Join(d, sub)
		for _, flags := range [][]string{{"--claude-settings"}, {"--claude-settings=" + dir}} {
			r := sh(t, runOpts{dir: dir, env: env}, script, flags...)
			wantCode(t, r, 0)
			if strings.Contains(r.stdout, "S3CRET") {
				t.Errorf("from %q with %q the project's deny rule was lost: %s", sub, flags, r)
			}
			if !strings.Contains(r.stdout, "OPEN") || !strings.Contains(r.stdout, "wrote") {
				t.Errorf("from %q with %q the allowed path failed: %s", sub, flags, r)
			}
		}
	}
	// Control: without the settings the secret is readable from there.
	r := sh(t, runOpts{dir: filepath.Join(d, "src"), env: env}, `cat ../secrets/prod.env`)
	if r.stdout != "S3CRET" {
		t.Fatalf("control: %s", r)
	}
	// --dry-run names the project it chose and the directories read.
	r = sbx(t, runOpts{dir: filepath.Join(d, "src", "pkg"), env: env}, "--claude-settings", "--dry-run", "--", "true")
	wantCode(t, r, 0)
	if notes := dryRunNotes(t, r.stdout); !strings.Contains(notes, "Claude Code project: "+d+" (scopes read from "+filepath.Join(d, "src", "pkg")+", "+filepath.Join(d, "src")+", "+d) {
		t.Errorf("--dry-run does not name the project %s:\n%s", d, notes)
	}
}

// TestClaudeSettingsSubdirectoryCannotShadow: a .claude/ below the root
// is read too (a monorepo package keeps its own denies), but it may not
// re-open what the root denies, nor the root what it denies, and the
// root's scalars win.
func TestClaudeSettingsSubdirectoryCannotShadow(t *testing.T) {
	d, env := gitProject(t, `{"permissions": {"deny": ["Read(./secrets/**)"]}, "sandbox": {"enabled": true}}`)
	src := filepath.Join(d, "src")
	writeFile(t, filepath.Join(src, "fixtures", "token"), "PKGTOKEN")
	// The package's own deny holds when the command runs there.
	writeFile(t, filepath.Join(src, ".claude", "settings.json"), `{"permissions": {"deny": ["Read(./fixtures/**)"]}}`)
	r := sh(t, runOpts{dir: src, env: env}, `cat fixtures/token ../secrets/prod.env 2>/dev/null; cat ../README`, "--claude-settings")
	if strings.Contains(r.stdout, "PKGTOKEN") || strings.Contains(r.stdout, "S3CRET") || !strings.Contains(r.stdout, "OPEN") {
		t.Fatalf("a package's deny or the root's was lost: %s", r)
	}
	for name, settings := range map[string]string{
		"allowRead":   `{"sandbox": {"filesystem": {"allowRead": ["../secrets/prod.env"]}}}`,
		"allowWrite":  `{"sandbox": {"filesystem": {"allowWrite": ["../secrets"]}}}`,
		"Edit rule":   `{"permissions": {"allow": ["Edit(../secrets/**)"]}}`,
		"local scope": `{"sandbox": {"filesystem": {"allowRead": ["` + filepath.Join(d, "secrets") + `"]}}}`,
	} {
		file := "settings.json"
		if name == "local scope" {
			file = "settings.local.json"
		}
		os.RemoveAll(filepath.Join(src, ".claude"))
		writeFile(t, filepath.Join(src, ".claude", file), settings)
		r := sh(t, runOpts{dir: src, env: env}, `cat ../secrets/prod.env; echo ran`, "--claude-settings")
		if strings.Contains(r.stdout, "S3CRET") {
			t.Errorf("%s: a subdirectory's settings re-opened the root's deny: %s", name, r)
		}
		if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "--trust-project-settings") {
			t.Errorf("%s: want exit 125 naming --trust-project-settings, got %s", name, r)
		}
	}
	// The root may not re-open a package's deny either.
	os.RemoveAll(filepath.Join(src, ".claude"))
	writeFile(t, filepath.Join(src, ".claude", "settings.json"), `{"permissions": {"deny": ["Read(./fixtures/**)"]}}`)
	writeFile(t, filepath.Join(d, ".claude", "settings.local.json"), `{"sandbox": {"filesystem": {"allowRead": ["src/fixtures"]}}}`)
	r = sh(t, runOpts{dir: src, env: env}, `cat fixtures/token; echo ran`, "--claude-settings")
	if r.code != 125 || strings.Contains(r.stdout, "PKGTOKEN") {
		t.Errorf("the root's allowRead re-opened a package's deny: %s", r)
	}
	os.Remove(filepath.Join(d, ".claude", "settings.local.json"))
	// The root's scalars win: a package cannot switch the sandbox off
	// when the root says on, and its off alone stops the run.
	writeFile(t, filepath.Join(src, ".claude", "settings.json"), `{"sandbox": {"enabled": false}}`)
	r = sbx(t, runOpts{dir: src, env: env}, "--claude-settings", "--", "/bin/echo", "ran")
	if r.code != 0 || r.stdout != "ran\n" {
		t.Errorf("the root's sandbox.enabled true should win: %s", r)
	}
	writeFile(t, filepath.Join(d, ".claude", "settings.json"), `{"permissions": {"deny": ["Read(./secrets/**)"]}}`)
	r = sbx(t, runOpts{dir: src, env: env}, "--claude-settings", "--", "/bin/echo", "ran")
	if r.code != 125 || strings.Contains(r.stdout, "ran") {
		t.Errorf("a package's sandbox.enabled false should stop the run: %s", r)
	}
	// With trust, the user may re-open on purpose.
	os.RemoveAll(filepath.Join(src, ".claude"))
	writeFile(t, filepath.Join(src, ".claude", "settings.json"), `{"sandbox": {"filesystem": {"allowRead": ["../secrets/prod.env"]}}}`)
	r = sh(t, runOpts{dir: src, env: env}, `cat ../secrets/prod.env`, "--claude-settings", "--trust-project-settings")
	if r.code != 0 || r.stdout != "S3CRET" {
		t.Errorf("trusted: the re-open should hold: %s", r)
	}
}

// TestClaudeSettingsOutsideCheckout: without git, the root is the
// outermost directory (below HOME, owned by the caller, written by no one
// else) whose .claude/ holds settings.
func TestClaudeSettingsOutsideCheckout(t *testing.T) {
	d := hostTempDir(t)
	env := append(hermeticEnv(), "HOME="+hostTempDir(t))
	proj := filepath.Join(d, "proj")
	writeFile(t, filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"deny": ["Read(./secrets/**)"]}}`)
	writeFile(t, filepath.Join(proj, "secrets", "k"), "S3CRET")
	writeFile(t, filepath.Join(proj, "a", "b", "f"), "OPEN")
	r := sh(t, runOpts{dir: filepath.Join(proj, "a", "b"), env: env}, `cat f ../../secrets/k 2>/dev/null; true`, "--claude-settings")
	if r.code != 0 || r.stdout != "OPEN" {
		t.Fatalf("outside a checkout the project's deny was lost from a subdirectory: %s", r)
	}
	// A directory others may write (as /tmp is) supplies no rules: a
	// .claude/ there is not the caller's project.
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(d, 0o755)
	writeFile(t, filepath.Join(d, ".claude", "settings.json"), `{"sandbox": {"filesystem": {"allowWrite": ["proj/a"]}}}`)
	r = sbx(t, runOpts{dir: filepath.Join(proj, "a"), env: env}, "--claude-settings", "--dry-run", "--", "true")
	wantCode(t, r, 0)
	if notes := dryRunNotes(t, r.stdout); !strings.Contains(notes, "Claude Code project: "+proj+" ") {
		t.Errorf("want the project %s, not the world-writable parent:\n%s", proj, notes)
	}
}

// TestClaudeSettingsDirRefused: a DIR that does not exist, is no
// directory, or finds no settings fails closed with one line.
func TestClaudeSettingsDirRefused(t *testing.T) {
	d := hostTempDir(t)
	writeFile(t, filepath.Join(d, "file"), "x")
	for _, dir := range []string{"/nonexistent/proj", filepath.Join(d, "file"), d} {
		wantRefusedIn(t, d, dir, "--claude-settings="+dir)
	}
}

// dryRunNotes returns the policy notes of a --dry-run's JSON.
func dryRunNotes(t *testing.T, out string) string {
	t.Helper()
	var v struct {
		Policy struct {
			Notes []string `json:"notes"`
		} `json:"policy"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--dry-run output: %v", err)
	}
	return strings.Join(v.Policy.Notes, "\n")
}
