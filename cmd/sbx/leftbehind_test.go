//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// What a run leaves behind is input to the host: a set-id binary written
// into a shared tree runs with its owner's rights for any local user. The
// filter refuses a set-id bit in every mode argument (chmod and its kin,
// creat, mknod, an open that creates), in the full sandbox, with the
// calls observed, and in the weaker mode; a plain chmod still works.
func TestSetIDBitsRefused(t *testing.T) {
	for _, mode := range [][]string{nil, {"--observe-files", "writes"}, {"--weaker-nested"}} {
		t.Run(strings.Join(append([]string{"mode"}, mode...), " "), func(t *testing.T) {
			d := t.TempDir()
			w := filepath.Join(d, "w")
			if err := os.Mkdir(w, 0o755); err != nil {
				t.Fatal(err)
			}
			script := "cp /usr/bin/id w/x; chmod 6755 w/x; chmod u+s w/x; chmod g+s w/x\n" +
				"cp /usr/bin/id w/y; chmod 755 w/y && echo chmod-ok\n" +
				probes([]string{"setid", "w"})
			flags := append(append([]string{"--allow-write", w, "--violations", filepath.Join(d, "v.jsonl")}, mode...), probeDir()...)
			r := sh(t, runOpts{dir: d}, script, flags...)
			if r.code != 0 || !strings.Contains(r.stdout, "chmod-ok") {
				t.Fatalf("the plain chmod did not work: %s", r)
			}
			// Every set-id attempt is refused; the allowed ones ran.
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				name, res, ok := strings.Cut(line, ": ")
				if !ok || name == "chmod-ok" {
					continue
				}
				allowed := name == "chmod 0750" || name == "chmod 01777" || strings.HasPrefix(name, "mkdir") || strings.HasPrefix(name, "openat2")
				if allowed && !strings.HasPrefix(res, "OK") || !allowed && res != "EPERM" {
					t.Errorf("%s: %s", name, res)
				}
			}
			if !strings.Contains(r.stdout, "fchmodat2 04755: EPERM") || !strings.Contains(r.stdout, "chmod 0750: OK mode 0750") {
				t.Errorf("the probe did not run every call:\n%s", r.stdout)
			}
			// What the host finds afterwards: no set-id bit anywhere.
			filepath.Walk(w, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					t.Errorf("%s left with mode %v", p, info.Mode())
				}
				return nil
			})
			if fi, err := os.Stat(filepath.Join(w, "y")); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("w/y: %v %v", fi, err)
			}
			// The full sandbox records each refusal (the weaker mode has no
			// supervisor listening).
			v, _ := os.ReadFile(filepath.Join(d, "v.jsonl"))
			if len(mode) == 0 || mode[0] != "--weaker-nested" {
				if !strings.Contains(string(v), `mode 06755 (setuid, setgid)`) || !strings.Contains(string(v), `fchmodat2`) {
					t.Errorf("no set-id record:\n%s", v)
				}
			}
		})
	}
}

// git runs the hooks of core.hooksPath, not .git/hooks, when it is set
// (husky's `git config core.hooksPath .husky`): that directory is
// protected as .git/hooks is, whether the repository's config, the
// user's ~/.gitconfig (absolute, or relative to each repository) or a
// config an earlier run wrote names it, and whether it exists or not.
// Elsewhere the same writes work.
func TestHooksPathProtected(t *testing.T) {
	git := func(t *testing.T, dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	type setup struct {
		name string
		// prepare makes the tree; hooks is the hooks directory relative
		// to the repository, home's .gitconfig content.
		local, global string
		hooks         string
		missing       bool
	}
	for _, c := range []setup{
		{name: "husky", local: ".husky", hooks: ".husky"},
		{name: "husky-missing", local: ".husky", hooks: ".husky", missing: true},
		{name: "nested", local: "tools/git-hooks", hooks: "tools/git-hooks", missing: true},
		{name: "global-relative", global: ".githooks", hooks: ".githooks"},
		{name: "global-home", global: "~/githooks", hooks: "HOME/githooks", missing: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			home := filepath.Join(d, "home")
			repo := filepath.Join(home, "repo")
			if err := os.MkdirAll(repo, 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, repo, "init", "-q")
			if c.local != "" {
				git(t, repo, "config", "core.hooksPath", c.local)
			}
			if c.global != "" {
				writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = x\n[core]\n\thooksPath = \""+c.global+"\" ; set by the test\n")
			}
			hooks := filepath.Join(repo, c.hooks)
			if strings.HasPrefix(c.hooks, "HOME/") {
				hooks = filepath.Join(home, strings.TrimPrefix(c.hooks, "HOME/"))
			}
			if !c.missing {
				if err := os.MkdirAll(hooks, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			marker := filepath.Join(d, "hook-ran")
			hook := "#!/bin/sh\ntouch " + q(marker) + "\n"
			env := []string{"PATH=/usr/bin:/bin", "HOME=" + home}
			script := "mkdir -p " + q(hooks) + "; printf %s " + q(hook) + " > " + q(filepath.Join(hooks, "pre-commit")) + " && echo planted; " +
				"mkdir -p other && echo ok > other/pre-commit && echo other-ok"
			r := sh(t, runOpts{dir: repo, env: env}, script, "--allow-write", home)
			if strings.Contains(r.stdout, "planted") || !strings.Contains(r.stdout, "other-ok") {
				t.Fatalf("want the hook refused and the other write done: %s", r)
			}
			if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
				t.Fatalf("%s/pre-commit was written", hooks)
			}
			// Nothing of the protection is left on the host.
			if _, err := os.Lstat(hooks); c.missing && err == nil {
				t.Errorf("%s left behind", hooks)
			}
		})
	}
	// Without core.hooksPath the directory is an ordinary one.
	d := t.TempDir()
	git(t, d, "init", "-q")
	r := sh(t, runOpts{dir: d, env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}}, "mkdir .husky && echo x > .husky/pre-commit && echo ok", "--allow-write", d)
	if !strings.Contains(r.stdout, "ok") {
		t.Fatalf("without core.hooksPath .husky is writable: %s", r)
	}
}

// An earlier run that was allowed to change .git/config set core.hooksPath;
// the next run cannot fill the directory it names.
func TestHooksPathFromEarlierRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	d := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", d).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	r := sh(t, runOpts{dir: d, env: env}, "git config core.hooksPath hooks2 && mkdir hooks2 && echo ok", "--allow-write", d, "--allow-git-config")
	wantCode(t, r, 0)
	r = sh(t, runOpts{dir: d, env: env}, "echo 'touch marker' > hooks2/pre-commit && echo planted", "--allow-write", d)
	if strings.Contains(r.stdout, "planted") {
		t.Fatalf("the second run wrote the hooks an earlier run pointed git at: %s", r)
	}
}

// protectedTable is the list of protected names as this test knows it,
// written out here (not read from policy.ProtectedNames, which it pins):
// kind "f" a file, "d" a directory, "g" a .git file; stub where a missing
// one is pinned: H HOME, R a repository root, C the working directory,
// L beside a lefthook configuration, "" nowhere.
var protectedTable = []struct{ name, kind, stub string }{
	{".bashrc", "f", "H"}, {".bash_profile", "f", "H"}, {".bash_login", "f", "H"}, {".bash_logout", "f", "H"},
	{".profile", "f", "H"}, {".zshrc", "f", "H"}, {".zprofile", "f", "H"}, {".zshenv", "f", "H"},
	{".zlogin", "f", "H"}, {".zlogout", "f", "H"}, {".gitconfig", "f", "H"}, {".ripgreprc", "f", "H"},
	{".git/hooks", "d", "HRC"}, {".git/modules", "d", "HRC"}, {".git/worktrees", "d", "HRC"}, {".git/config", "f", "HRC"},
	{".git", "g", ""}, {".gitmodules", "f", ""},
	{".husky", "d", ""}, {".pre-commit-config.yaml", "f", ""},
	{"lefthook.yml", "f", ""}, {".lefthook.yml", "f", ""}, {"lefthook.yaml", "f", ""}, {".lefthook.yaml", "f", ""},
	{"lefthook-local.yml", "f", "L"}, {".lefthook-local.yml", "f", "L"}, {"lefthook-local.yaml", "f", "L"}, {".lefthook-local.yaml", "f", "L"},
	{".lefthook", "d", "L"}, {".lefthook-local", "d", "L"},
	{".vscode", "d", "HRC"}, {".idea", "d", "RC"}, {".zed", "d", "RC"}, {".claude", "d", "HRC"}, {".mcp.json", "f", "RC"},
	{".cursor", "d", ""}, {".gemini", "d", ""},
	{".envrc", "f", ""}, {"mise.toml", "f", ""}, {".mise.toml", "f", ""}, {"mise.local.toml", "f", ""}, {".mise.local.toml", "f", ""},
	{".tool-versions", "f", ""},
	{".npmrc", "f", ""}, {".yarnrc.yml", "f", ""}, {".yarnrc", "f", ""}, {".pnpmfile.cjs", "f", ""},
	{".cargo/config.toml", "f", ""}, {".cargo/config", "f", ""},
}

// Every protected name is pinned by a real run: an existing one, below a
// writable root, cannot be changed; a missing one is pinned exactly where
// it acts (HOME, a repository root, the working directory, beside
// lefthook's configuration) and nowhere else, so a writable directory
// that is none of those sees no placeholder at all. The list must match
// policy.ProtectedNames and docs/settings.md entry for entry.
func TestProtectedNamesTable(t *testing.T) {
	var names []string
	for _, pn := range policy.ProtectedNames(false) {
		names = append(names, pn.Name)
	}
	var table []string
	for _, e := range protectedTable {
		table = append(table, e.name)
	}
	slices.Sort(names)
	slices.Sort(table)
	if strings.Join(names, " ") != strings.Join(table, " ") {
		t.Errorf("policy.ProtectedNames and this table differ:\n%q\n%q", names, table)
	}
	doc, err := os.ReadFile("../../docs/settings.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "| `"+n+"` |") {
			t.Errorf("docs/settings.md has no row for %s", n)
		}
	}
	env := func(home string) []string {
		return append(hermeticEnv(), "HOME="+home, "XDG_CACHE_HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
	}
	// tryWrite is a script line that changes or makes p (a file in it,
	// for a directory) and prints "WROTE p" if that worked.
	tryWrite := func(p, kind string) string {
		target := p
		if kind == "d" {
			target = p + "/x"
		}
		return "(mkdir -p " + q(filepath.Dir(target)) + " && echo evil >> " + q(target) + ") 2>/dev/null && echo " + q("WROTE "+p) + "\n"
	}
	t.Run("existing", func(t *testing.T) {
		w := t.TempDir()
		var script strings.Builder
		for i, e := range protectedTable {
			// Each in a directory of its own, two levels down: no stub
			// is involved, only the search.
			dir := filepath.Join(w, "a", fmt.Sprint(i))
			p := filepath.Join(dir, e.name)
			switch e.kind {
			case "d":
				writeFile(t, filepath.Join(p, "keep"), "orig")
			case "g":
				writeFile(t, p, "gitdir: /nonexistent\n")
			default:
				writeFile(t, p, "orig")
			}
			script.WriteString(tryWrite(p, e.kind))
		}
		script.WriteString("echo fine > " + q(filepath.Join(w, "a", "normal")) + " && echo ok\n")
		r := sh(t, runOpts{dir: t.TempDir(), env: env(t.TempDir())}, script.String(), "--allow-write", w)
		if strings.Contains(r.stdout, "WROTE") || !strings.HasSuffix(r.stdout, "ok\n") {
			t.Fatalf("an existing protected name was changed: %s", r)
		}
	})
	t.Run("missing", func(t *testing.T) {
		d := t.TempDir()
		home := filepath.Join(d, "home")  // HOME, a writable root
		repo := filepath.Join(d, "repo")  // a repository root, a writable root
		cwd := filepath.Join(d, "cwd")    // the working directory, not a repository
		out := filepath.Join(d, "out")    // a writable root that is none of those
		hook := filepath.Join(d, "hooky") // a repository with lefthook.yml
		for _, p := range []string{home, filepath.Join(repo, ".git"), cwd, out, filepath.Join(hook, ".git")} {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(hook, "lefthook.yml"), "pre-commit: {}\n")
		before := map[string][]string{}
		for _, p := range []string{home, repo, cwd, out, hook} {
			before[p] = snapshot(t, p)
		}
		var script strings.Builder
		// What a file watcher in out sees while the command runs.
		script.WriteString("echo placeholders: $(ls -A " + q(out) + ")\n")
		want := ""
		for _, e := range protectedTable {
			if e.kind == "g" {
				continue // never stubbed: a .git directory is the repository itself
			}
			for _, place := range []struct {
				dir, code string
			}{{home, "H"}, {repo, "R"}, {cwd, "C"}, {out, ""}, {hook, "L"}} {
				p := filepath.Join(place.dir, e.name)
				if place.dir == hook && !strings.Contains(e.stub, "L") {
					continue
				}
				script.WriteString(tryWrite(p, e.kind))
				pinned := place.code != "" && strings.Contains(e.stub, place.code)
				if !pinned {
					want += "WROTE " + p + "\n"
				}
			}
		}
		r := sh(t, runOpts{dir: cwd, env: env(home)}, script.String(), "--allow-write", home, "--allow-write", repo, "--allow-write", cwd, "--allow-write", out, "--allow-write", hook)
		first, rest, _ := strings.Cut(r.stdout, "\n")
		if first != "placeholders:" {
			t.Errorf("a watcher of a plain writable directory sees placeholders: %q", first)
		}
		if rest != want {
			t.Errorf("writes of missing names: got\n%s\nwant\n%s\n%s", rest, want, r.stderr)
		}
		// The stubs are gone; what the command wrote is its own.
		for p, b := range before {
			for _, n := range snapshot(t, p) {
				if !slices.Contains(b, n) && !strings.Contains(want, p+n) && !strings.Contains(want, p+n+"/") && !strings.Contains(n, "/") {
					t.Errorf("left behind in %s: %s", p, n)
				}
			}
		}
	})
}

// What the command leaves where the host's git and make look by
// themselves: a repository it made in a writable root (git init, or a
// bare HEAD + objects + refs layout whose config names core.fsmonitor)
// and a FIFO in place of a Makefile. The after-run check moves the
// repositories aside and removes the FIFO, records each, and
// --fail-on-violation counts them; the host's git status then runs
// nothing. What was there before the run is left alone.
func TestAfterRunCheck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, mode := range [][]string{nil, {"--weaker-nested"}} {
		t.Run(strings.Join(append([]string{"mode"}, mode...), " "), func(t *testing.T) { afterRunCase(t, mode) })
	}
}

func afterRunCase(t *testing.T, mode []string) {
	d := t.TempDir()
	w, out, bare := filepath.Join(d, "w"), filepath.Join(d, "out"), filepath.Join(d, "bare")
	for _, p := range []string{w, out, bare} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The user's own FIFO, there before the run.
	if err := syscall.Mkfifo(filepath.Join(w, "mine.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(d, "fsmonitor-ran")
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch " + marker + "\"\n"
	script := "mkfifo Makefile && " +
		"cd " + q(out) + " && git init -q . && printf %s " + q(cfg) + " > .git/config && " +
		"cd " + q(bare) + " && mkdir objects refs && echo 'ref: refs/heads/main' > HEAD && printf %s " + q(cfg) + " > config && echo planted"
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + d, "GIT_CONFIG_NOSYSTEM=1"}
	vio := filepath.Join(d, "v.jsonl")
	r := sh(t, runOpts{dir: w, env: env}, script, append([]string{"--allow-write", w, "--allow-write", out, "--allow-write", bare, "--fail-on-violation", "--violations", vio}, mode...)...)
	if !strings.Contains(r.stdout, "planted") || r.code != 123 {
		t.Fatalf("want the layouts made and exit 123: %s", r)
	}
	for _, dir := range []string{out, bare} {
		cmd := exec.Command("git", "status")
		cmd.Dir, cmd.Env = dir, env
		_ = cmd.Run()
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the host's git status ran the planted core.fsmonitor")
	}
	if fi, err := os.Lstat(filepath.Join(w, "Makefile")); err == nil {
		t.Errorf("the FIFO is still there: %v", fi.Mode())
	}
	if fi, err := os.Lstat(filepath.Join(w, "mine.fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the user's own FIFO was touched: %v", err)
	}
	v, _ := os.ReadFile(vio)
	for _, want := range []string{out + "/.git", bare + "/HEAD", w + "/Makefile"} {
		if !strings.Contains(string(v), `"path":"`+want+`"`) {
			t.Errorf("no record for %s:\n%s", want, v)
		}
	}
	// A second run in the same tree finds nothing new: what the first
	// run moved aside, and the user's repository, stay as they are.
	r = sh(t, runOpts{dir: w, env: env}, "git -C "+q(out)+" --version >/dev/null; echo ok", append([]string{"--allow-write", w, "--allow-write", out, "--fail-on-violation"}, mode...)...)
	if r.code != 0 || strings.Contains(r.stderr, "after the run") {
		t.Fatalf("a clean run: %s", r)
	}
}

// The after-run check tells another run's stub from a planted repository:
// a run that ends while a second one, started later in the same
// directory, still holds its .git stub leaves that stub alone; a .git the
// command made to look like a stub (sticky, no write bit) is moved aside.
func TestAfterRunCheckStubs(t *testing.T) {
	d := t.TempDir()
	x, other := filepath.Join(d, "x"), filepath.Join(d, "other")
	for _, p := range []string{x, other} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func(dir string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
		cmd := exec.Command(sbxBin, "--allow-write", x, "--", "/bin/sh", "-c", "echo started; read line; echo done")
		cmd.Dir = dir
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(out)
		if l, _ := rd.ReadString('\n'); l != "started\n" {
			t.Fatalf("run in %s did not start: %q", dir, l)
		}
		return cmd, in, rd
	}
	first, firstIn, _ := start(other) // x is a writable root, no stub .git
	second, secondIn, _ := start(x)   // x is the working directory: .git pinned
	defer first.Process.Kill()
	defer second.Process.Kill()
	if fi, err := os.Lstat(filepath.Join(x, ".git")); err != nil || !fi.IsDir() {
		t.Fatalf("control: the second run's stub .git: %v", err)
	}
	firstIn.Write([]byte("\n"))
	firstIn.Close()
	if err := first.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(x, ".git.sbx-planted-*")); len(m) != 0 {
		t.Fatalf("the first run moved the second's stub aside: %q", m)
	}
	secondIn.Write([]byte("\n"))
	secondIn.Close()
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if after := snapshot(t, x); len(after) != 1 {
		t.Fatalf("left behind: %q", after)
	}
	// A look-alike: a .git with the stub's mode, no run holding it.
	r := sh(t, runOpts{dir: other}, "mkdir "+q(x+"/.git")+" && chmod 1555 "+q(x+"/.git")+" && echo made", "--allow-write", x)
	if !strings.Contains(r.stdout, "made") {
		t.Fatalf("%s", r)
	}
	if m, _ := filepath.Glob(filepath.Join(x, ".git.sbx-planted-*")); len(m) != 1 {
		t.Fatalf("a stub look-alike .git was not moved aside: %s", r)
	}
}

// A protected name the user allows on purpose (--allow-protected NAME,
// filesystem.allowProtected) becomes writable in a writable root, and
// only that one: every entry of the list is allowed once (half by flag,
// half by a settings file of the user's) while the other half, in the
// same run, stays read-only. A name not on the list is refused with the
// nearest one; a file in the working tree needs trust to allow any.
func TestAllowProtected(t *testing.T) {
	env := func() []string {
		return append(hermeticEnv(), "HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
	}
	tryWrite := func(p, kind string) string {
		target := p
		if kind == "d" {
			target = p + "/x"
		}
		return "(mkdir -p " + q(filepath.Dir(target)) + " && echo evil >> " + q(target) + ") 2>/dev/null && echo " + q("WROTE "+p) + "\n"
	}
	for half := 0; half < 2; half++ {
		t.Run(fmt.Sprintf("half%d", half), func(t *testing.T) {
			w := t.TempDir()
			var script strings.Builder
			var flags, allowed []string
			want := ""
			for i, e := range protectedTable {
				dir := filepath.Join(w, "a", fmt.Sprint(i))
				p := filepath.Join(dir, e.name)
				switch e.kind {
				case "d":
					writeFile(t, filepath.Join(p, "keep"), "orig")
				case "g":
					writeFile(t, p, "gitdir: /nonexistent\n")
				default:
					writeFile(t, p, "orig")
				}
				script.WriteString(tryWrite(p, e.kind))
				if i%2 == half {
					allowed = append(allowed, e.name)
					want += "WROTE " + p + "\n"
				}
			}
			script.WriteString("echo ok\n")
			want += "ok\n"
			if half == 0 {
				for _, n := range allowed {
					flags = append(flags, "--allow-protected", n)
				}
			} else {
				// A settings file of the user's, outside the working tree.
				js, _ := json.Marshal(map[string]any{"network": map[string]any{}, "filesystem": map[string]any{"allowProtected": allowed}})
				f := filepath.Join(t.TempDir(), "s.json")
				writeFile(t, f, string(js))
				flags = []string{"--settings", f}
			}
			r := sh(t, runOpts{dir: t.TempDir(), env: env()}, script.String(), append(flags, "--allow-write", w)...)
			if r.stdout != want {
				t.Fatalf("writes: got\n%s\nwant\n%s\n%s", r.stdout, want, r.stderr)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ran")
		r := sh(t, runOpts{env: env()}, "touch "+q(marker), "--allow-protected", ".vscode/", "--allow-write", ".")
		wantCode(t, r, 125)
		if !strings.Contains(r.stderr, `".vscode/" is not a protected name; did you mean .vscode?`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("want one line with the nearest name: %s", r)
		}
		f := filepath.Join(t.TempDir(), "s.json")
		writeFile(t, f, `{"network": {}, "filesystem": {"allowProtected": [".npmrc", "Makefile"]}}`)
		r = sh(t, runOpts{env: env()}, "touch "+q(marker), "--settings", f, "--allow-write", ".")
		wantCode(t, r, 125)
		if !strings.Contains(r.stderr, f) || !strings.Contains(r.stderr, `"Makefile" is not a protected name`) {
			t.Errorf("want the file and the name: %s", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the command ran")
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		proj := t.TempDir()
		writeFile(t, filepath.Join(proj, ".envrc"), "orig")
		writeFile(t, filepath.Join(proj, ".claude", "settings.json"), `{"sandbox": {"filesystem": {"allowProtected": [".envrc"], "allowWrite": ["."]}}}`)
		script := "echo evil >> .envrc 2>/dev/null && echo WROTE; echo ran"
		r := sh(t, runOpts{dir: proj, env: env()}, script, "--claude-settings")
		wantCode(t, r, 125)
		if !strings.Contains(r.stderr, "allowProtected") || !strings.Contains(r.stderr, "--trust-project-settings") || r.stdout != "" {
			t.Errorf("want the key and the way out, nothing run: %s", r)
		}
		r = sh(t, runOpts{dir: proj, env: env()}, script, "--claude-settings", "--trust-project-settings")
		if r.stdout != "WROTE\nran\n" {
			t.Errorf("trusted: %s", r)
		}
		// Without the key the same tree keeps .envrc protected.
		writeFile(t, filepath.Join(proj, ".claude", "settings.json"), `{"sandbox": {"filesystem": {"allowWrite": ["."]}}}`)
		r = sh(t, runOpts{dir: proj, env: env()}, script, "--claude-settings")
		if r.stdout != "ran\n" {
			t.Errorf("control: %s", r)
		}
	})
}

// A .git file (a worktree's, a submodule's, a separate git directory's)
// sends git to the git directory its gitdir: names and on to that
// directory's commondir: core.hooksPath set in their config is protected
// in the working tree, and a git directory that lies in a writable place
// keeps its hooks and config read-only, pinned when missing (a dangling
// gitdir the command could create). A git directory's config that git
// would block on is refused before anything runs.
func TestHooksPathGitFile(t *testing.T) {
	env := func(home string) []string {
		return []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	}
	gitDir := func(t *testing.T, dir, config string) {
		writeFile(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(dir, "config"), config)
		for _, s := range []string{"objects", "refs/heads"} {
			if err := os.MkdirAll(filepath.Join(dir, s), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// plant writes a hook (touching marker) at each path and a control
	// file, and says which writes worked.
	plant := func(marker string, paths ...string) string {
		var b strings.Builder
		for _, p := range paths {
			b.WriteString("(mkdir -p " + q(filepath.Dir(p)) + " && printf '#!/bin/sh\\ntouch %s\\n' " + q(marker) + " > " + q(p) + ") 2>/dev/null && echo " + q("WROTE "+p) + "\n")
		}
		b.WriteString("echo x > control && echo ok\n")
		return b.String()
	}
	t.Run("worktree", func(t *testing.T) {
		d := t.TempDir()
		main, wt := filepath.Join(d, "main"), filepath.Join(d, "wt")
		gitDir(t, filepath.Join(main, ".git"), "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = githooks\n")
		wtGit := filepath.Join(main, ".git", "worktrees", "wt")
		writeFile(t, filepath.Join(wtGit, "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(wtGit, "commondir"), "../..\n")
		writeFile(t, filepath.Join(wtGit, "gitdir"), filepath.Join(wt, ".git")+"\n")
		writeFile(t, filepath.Join(wt, ".git"), "gitdir: "+wtGit+"\n")
		if _, err := exec.LookPath("git"); err == nil {
			// Control: git itself takes the hooks from wt/githooks.
			cmd := exec.Command("git", "rev-parse", "--git-path", "hooks")
			cmd.Dir, cmd.Env = wt, env(d)
			out, err := cmd.Output()
			if got := strings.TrimSpace(string(out)); err != nil || (got != "githooks" && got != filepath.Join(wt, "githooks")) {
				t.Fatalf("control: git's hooks path in the worktree: %q %v", got, err)
			}
		}
		marker := filepath.Join(d, "hook-ran")
		hook := filepath.Join(wt, "githooks", "pre-commit")
		r := sh(t, runOpts{dir: wt, env: env(d)}, plant(marker, hook), "--allow-write", wt)
		if r.stdout != "ok\n" {
			t.Fatalf("want the hook refused, the control written: %s", r)
		}
		if _, err := os.Lstat(filepath.Join(wt, "githooks")); err == nil {
			t.Error("the stub of githooks was left behind")
		}
	})
	t.Run("separate-gitdir-writable", func(t *testing.T) {
		d := t.TempDir()
		w := filepath.Join(d, "w")
		proj, gd, gone := filepath.Join(w, "proj"), filepath.Join(w, "gd"), filepath.Join(w, "gone")
		gitDir(t, gd, "[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
		writeFile(t, filepath.Join(proj, ".git"), "gitdir: ../gd\n")
		other := filepath.Join(w, "other")
		writeFile(t, filepath.Join(other, ".git"), "gitdir: "+gone+"\n")
		marker := filepath.Join(d, "hook-ran")
		script := plant(marker, filepath.Join(gd, "hooks", "post-checkout"), filepath.Join(gone, "hooks", "post-checkout"), filepath.Join(gd, "config")) +
			"echo '[core]fsmonitor = touch " + marker + "' >> " + q(filepath.Join(gd, "config")) + " 2>/dev/null && echo CONFIG\n"
		r := sh(t, runOpts{dir: proj, env: env(d)}, script, "--allow-write", w)
		if r.stdout != "ok\n" {
			t.Fatalf("want the git directories' hooks and config refused: %s", r)
		}
		if _, err := os.Lstat(gone); err == nil {
			t.Error("the stub of the dangling gitdir was left behind")
		}
		// Allowed path: the same tree's working files stay writable, and
		// so does a directory beside the git directory.
		r = sh(t, runOpts{dir: proj, env: env(d)}, "echo y > file && echo y > ../gd-notes && echo ok", "--allow-write", w)
		if r.stdout != "ok\n" {
			t.Fatalf("%s", r)
		}
	})
	t.Run("fifo-config", func(t *testing.T) {
		d := t.TempDir()
		proj, gd := filepath.Join(d, "proj"), filepath.Join(d, "gd")
		gitDir(t, gd, "")
		os.Remove(filepath.Join(gd, "config"))
		if err := syscall.Mkfifo(filepath.Join(gd, "config"), 0o644); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(proj, ".git"), "gitdir: ../gd\n")
		r := sh(t, runOpts{dir: proj, env: env(d)}, "echo ran", "--allow-write", proj)
		wantCode(t, r, 125)
		if r.stdout != "" || !strings.Contains(r.stderr, filepath.Join(gd, "config")) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("want one line naming the config, nothing run: %s", r)
		}
	})
}

// The after-run check sees below the top level what the command made
// there, from the notified calls rather than a walk of the tree: a
// repository planted two levels down (with a hook and a core.fsmonitor
// that would touch a marker), a bare layout three levels down, and a
// FIFO two levels down are neutralised and recorded; a deep repository
// and FIFO the user had before, and a directory the command made that is
// no repository, are left alone.
func TestAfterRunCheckDeep(t *testing.T) {
	d := t.TempDir()
	w := filepath.Join(d, "w")
	mine := filepath.Join(w, "old", "repo")
	for _, p := range []string{filepath.Join(mine, ".git", "hooks"), filepath.Join(w, "old", "pipes")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(w, "old", "pipes", "mine.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(d, "planted-ran")
	hook := "#!/bin/sh\ntouch " + marker + "\n"
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"touch " + marker + "\"\n"
	script := "mkdir -p sub/dir/.git/hooks sub/dir/.git/objects sub/dir/.git/refs && echo 'ref: refs/heads/main' > sub/dir/.git/HEAD && " +
		"printf %s " + q(cfg) + " > sub/dir/.git/config && printf %s " + q(hook) + " > sub/dir/.git/hooks/post-checkout && chmod 755 sub/dir/.git/hooks/post-checkout && " +
		"mkdir -p a/b/c/objects a/b/c/refs && echo 'ref: refs/heads/main' > a/b/c/HEAD && printf %s " + q(cfg) + " > a/b/c/config && " +
		"mkdir -p old/pipes/x && mkfifo old/pipes/x/Makefile && mkdir -p plain/dir && echo ok > plain/dir/file && echo planted"
	vio := filepath.Join(d, "v.jsonl")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + d, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	r := sh(t, runOpts{dir: w, env: env}, script, "--allow-write", w, "--fail-on-violation", "--violations", vio)
	if !strings.Contains(r.stdout, "planted") || r.code != 123 {
		t.Fatalf("want the layouts made and exit 123: %s", r)
	}
	v, _ := os.ReadFile(vio)
	for _, want := range []string{w + "/sub/dir/.git", w + "/a/b/c/HEAD", w + "/old/pipes/x/Makefile"} {
		if !strings.Contains(string(v), `"path":"`+want+`"`) {
			t.Errorf("no record for %s:\n%s", want, v)
		}
	}
	if _, err := os.Lstat(filepath.Join(w, "sub", "dir", ".git")); err == nil {
		t.Error("the planted repository is still in place")
	}
	if _, err := os.Lstat(filepath.Join(w, "a", "b", "c", "HEAD")); err == nil {
		t.Error("the bare layout is still in place")
	}
	if _, err := os.Lstat(filepath.Join(w, "old", "pipes", "x", "Makefile")); err == nil {
		t.Error("the FIFO is still in place")
	}
	if _, err := exec.LookPath("git"); err == nil {
		for _, dir := range []string{filepath.Join(w, "sub", "dir"), filepath.Join(w, "a", "b", "c")} {
			cmd := exec.Command("git", "status")
			cmd.Dir, cmd.Env = dir, env
			_ = cmd.Run()
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the host's git status ran the planted core.fsmonitor")
		}
	}
	// What the user had is theirs; a plain directory is no finding.
	if fi, err := os.Lstat(filepath.Join(w, "old", "pipes", "mine.fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the user's own FIFO was touched: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(mine, ".git")); err != nil || !fi.IsDir() {
		t.Errorf("the user's own repository was touched: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "plain", "dir", "file")); string(b) != "ok\n" || strings.Contains(string(v), "/plain") {
		t.Errorf("a plain directory: %q\n%s", b, v)
	}
}
