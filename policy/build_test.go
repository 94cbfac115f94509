package policy

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// input is a minimal Build input in a temporary working directory.
func input(t *testing.T) Input {
	t.Helper()
	return Input{Argv: []string{"true"}, Cwd: t.TempDir(), Home: t.TempDir(), Environ: []string{"PATH=/usr/bin:/bin"}}
}

func TestBuildHomes(t *testing.T) {
	// HOME and the passwd entry's home differ: the credential locations
	// under both are masked (HOME=/elsewhere must not uncover ~/.ssh).
	in := input(t)
	in.PasswdHome = t.TempDir()
	for _, h := range []string{in.Home, in.PasswdHome} {
		if err := os.MkdirAll(filepath.Join(h, ".ssh"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{in.Home, in.PasswdHome} {
		if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(h, ".ssh")) {
			t.Errorf("%s/.ssh not denied: %v", h, p.Filesystem.DenyRead)
		}
	}

	// No home at all: it runs, says so, and a "~/" path of the user's
	// is an error naming it.
	in = input(t)
	in.Home = ""
	p, err = Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "no home directory") {
		t.Errorf("no note about the missing home: %q", p.Notes)
	}
	in.DenyRead = []string{"~/x"}
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), `"~/x"`) || !strings.Contains(err.Error(), "HOME is not set") {
		t.Errorf("~/x without a home: %v", err)
	}

	// HOME unset: the passwd home stands in, for "~/" paths too.
	in = input(t)
	in.PasswdHome, in.Home = in.Home, ""
	in.DenyRead = []string{"~/x"}
	if p, err = Build(in); err != nil || !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.PasswdHome, "x")) {
		t.Errorf("~/x with HOME unset: %v %v", err, p)
	}
}

func TestBuildManagedScalarsWin(t *testing.T) {
	in := input(t)
	user := filepath.Join(in.Cwd, "user.json")
	managed := filepath.Join(in.Cwd, "managed.json")
	os.WriteFile(user, []byte(`{"sandbox": {"allowPty": true, "filesystem": {"denyRead": ["a"]}}}`), 0o644)
	os.WriteFile(managed, []byte(`{"sandbox": {"allowPty": false, "filesystem": {"denyRead": ["b"]}}}`), 0o644)
	in.Settings, in.ManagedSettings = []string{user}, managed
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.AllowPty {
		t.Error("the managed layer's allowPty false should win over a settings file")
	}
	for _, n := range []string{"a", "b"} {
		if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, n)) {
			t.Errorf("arrays should merge: %v", p.Filesystem.DenyRead)
		}
	}
}

func TestBuildClaudeSettings(t *testing.T) {
	in := input(t)
	in.ClaudeSettings, in.ClaudeDir = true, in.Cwd
	in.ManagedSettings = t.TempDir() // no managed files in it
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(in.Home, ".claude", "settings.json"), `{"model": "x", "permissions": {"deny": ["Edit(/docs/**)"]}}`)
	write(filepath.Join(in.Cwd, ".claude", "settings.json"), `{"permissions": {"allow": ["Edit(src/**)"]}}`)
	write(filepath.Join(in.Cwd, ".claude", "settings.local.json"), `{"permissions": {"deny": ["Read(./.env)"]}}`)
	os.MkdirAll(filepath.Join(in.Cwd, "src"), 0o755)
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	// "/docs" in the user scope is relative to that file's project
	// root: the home directory (which holds .claude/).
	if !slices.Contains(p.Filesystem.DenyWrite, filepath.Join(in.Home, "docs")) {
		t.Errorf("user scope Edit deny: %v", p.Filesystem.DenyWrite)
	}
	if !slices.Contains(p.Filesystem.AllowWrite, filepath.Join(in.Cwd, "src")) {
		t.Errorf("project scope Edit allow: %v", p.Filesystem.AllowWrite)
	}
	if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(in.Cwd, ".env")) {
		t.Errorf("local scope Read deny: %v", p.Filesystem.DenyRead)
	}
	// An Edit allow of a missing path is skipped with a note, not an error.
	write(filepath.Join(in.Cwd, ".claude", "settings.json"), `{"permissions": {"allow": ["Edit(./missing)"]}}`)
	if p, err = Build(in); err != nil || !strings.Contains(strings.Join(p.Notes, "\n"), "missing") {
		t.Errorf("missing Edit allow: %v %q", err, p.Notes)
	}
	// sandbox.enabled false refuses, naming the file.
	write(filepath.Join(in.Cwd, ".claude", "settings.local.json"), `{"sandbox": {"enabled": false}}`)
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "settings.local.json") {
		t.Errorf("sandbox.enabled false: %v", err)
	}
}

func TestBuildPresetsAndReads(t *testing.T) {
	in := input(t)
	cache := filepath.Join(in.Cwd, "caches", "gocache")
	in.Environ = append(in.Environ, "GOCACHE="+cache, "GOMODCACHE="+filepath.Join(in.Cwd, "mod"), "GOPATH="+filepath.Join(in.Cwd, "gopath"))
	// The user's file (outside the working tree: a repository's may not
	// name presets without trust, see TestTrustBoundaryIndirectRoutes).
	settings := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(settings, []byte(`{"network": {}, "filesystem": {}, "presets": ["go"]}`), 0o644)
	in.Settings = []string{settings}

	// A dry run creates nothing.
	in.DryRun = true
	if _, err := Build(in); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("a dry run created the cache")
	}
	in.DryRun = false
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(cache); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache not created 0700: %v %v", st, err)
	}
	for _, w := range []string{cache, filepath.Join(in.Cwd, "mod"), filepath.Join(in.Cwd, "gopath", "pkg", "sumdb")} {
		if !slices.Contains(p.Filesystem.AllowWrite, w) {
			t.Errorf("%s not writable: %v", w, p.Filesystem.AllowWrite)
		}
	}
	if p.Network.Mode != "none" {
		t.Errorf("a preset opened the network: %v", p.Network)
	}

	os.WriteFile(settings, []byte(`{"network": {}, "filesystem": {}, "presets": ["cobol"]}`), 0o644)
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "cobol") {
		t.Errorf("unknown preset in settings: %v", err)
	}
	in.Settings = nil
	in.AllowRegistry = []string{"go"}
	in.Reads = "declared"
	if p, err = Build(in); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Network.AllowedDomains, "proxy.golang.org") || p.Network.Mode != "filtered" {
		t.Errorf("--allow-registry go: %v", p.Network)
	}
	if !slices.Contains(p.Filesystem.DenyRead, "/") || !slices.Contains(p.Filesystem.AllowRead, "/usr") || !slices.Contains(p.Filesystem.AllowRead, "/etc") {
		t.Errorf("--reads declared: deny %v allow %v", p.Filesystem.DenyRead, p.Filesystem.AllowRead)
	}
	in.Reads = "some"
	if _, err := Build(in); err == nil {
		t.Error("--reads some accepted")
	}
}

func TestBuildHomeRootAndNoEarlyCreate(t *testing.T) {
	// HOME=/ is a home: /.ssh and /.aws are masked.
	in := input(t)
	in.Home = "/"
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/.ssh", "/.aws", "/.docker/config.json"} {
		if !slices.Contains(p.Filesystem.DenyRead, want) {
			t.Errorf("HOME=/: %s not denied: %v", want, p.Filesystem.DenyRead)
		}
	}
	// A preset's cache is created only once every check has passed.
	in = input(t)
	cache := filepath.Join(in.Cwd, "gocache")
	in.Environ = append(in.Environ, "GOCACHE="+cache)
	in.Presets = []string{"go"}
	in.NetMode = "bogus"
	if _, err := Build(in); err == nil {
		t.Fatal("--net bogus accepted")
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("a failed Build created the cache")
	}
	// The dry run's policy lists it, and creates nothing.
	in.NetMode, in.DryRun = "", true
	if p, err = Build(in); err != nil || !slices.Contains(p.Filesystem.AllowWrite, cache) {
		t.Fatalf("dry run: %v %v", err, p.Filesystem.AllowWrite)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("a dry run created the cache")
	}
}

func TestProtectedRoot(t *testing.T) {
	names := ProtectedNames(false)
	for w, want := range map[string]string{
		"/p/.bashrc":          ".bashrc",
		"/p/.git":             ".git/hooks",
		"/p/.git/hooks":       ".git/hooks",
		"/p/.git/hooks/x":     ".git/hooks",
		"/p/.git/config":      ".git/config",
		"/p/.claude":          ".claude",
		"/p/.claude/agents/a": ".claude",
		"/p/.git/modules/s":   ".git/modules",
		"/p/.config/git":      "",
		"/p/.vscode/x":        ".vscode",
		"/p/.git/objects":     "",
		"/p/src":              "",
		"/p/.claude-x":        "",
		"/":                   "",
	} {
		if got := protectedRoot(w, names); got != want {
			t.Errorf("protectedRoot(%s) = %q, want %q", w, got, want)
		}
	}
	if got := protectedRoot("/p/.git/config", ProtectedNames(true)); got != ".git/hooks" && got != "" {
		t.Errorf("with allowGitConfig: %q", got)
	}
}

// nameMatcher must answer exactly what path.Match answers for every
// pattern shape it short-cuts, including names with '/' (a '*' never
// spans one) and the empty remainder.
func TestNameMatcherAgreesWithPathMatch(t *testing.T) {
	pats := append([]string{"AWS_*", "*_TOKEN", "*", "A*B", "X?Y", "[AB]_KEY", `\*LIT`, "PLAIN", "*/", "/*"}, DefaultDeniedEnv...)
	names := []string{"", "AWS_", "AWS_KEY", "AWS", "aws_key", "AWS_/X", "GH_TOKEN", "_TOKEN", "TOKEN", "A/_TOKEN", "AB", "AXB", "A/B",
		"XZY", "A_KEY", "C_KEY", "*LIT", "PLAIN", "PLAINX", "/", "x/", "/x", "OPENAI_API_KEY", "SSH_AUTH_SOCK", "LD_PRELOAD"}
	for _, p := range pats {
		m := newNameMatcher([]string{p})
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := m.match(n); got != want {
				t.Errorf("pattern %q, name %q: matcher says %v, path.Match %v", p, n, got, want)
			}
		}
	}
	all := newNameMatcher(pats)
	for _, n := range names {
		want := false
		for _, p := range pats {
			if ok, _ := path.Match(p, n); ok {
				want = true
			}
		}
		if got := all.match(n); got != want {
			t.Errorf("all patterns, name %q: matcher says %v, path.Match %v", n, got, want)
		}
	}
}

func FuzzNameMatcher(f *testing.F) {
	f.Add("AWS_*", "AWS_KEY")
	f.Add("*_TOKEN", "A/_TOKEN")
	f.Fuzz(func(t *testing.T, p, n string) {
		if _, err := path.Match(p, ""); err != nil {
			return // FilterEnv refuses malformed patterns first
		}
		want, _ := path.Match(p, n)
		if got := newNameMatcher([]string{p}).match(n); got != want {
			t.Fatalf("pattern %q, name %q: matcher says %v, path.Match %v", p, n, got, want)
		}
	})
}

// resolver.resolve (one lstat for a missing name in a remembered
// directory) must answer what filepath.EvalSymlinks followed by Resolve
// (the resolver's way before it) answered,
// for names that exist, are missing, lie under a file, or go through
// symlinks, whatever the resolver already remembers.
func TestResolverResolveMatchesResolve(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "f"), nil, 0o644))
	must(os.Symlink("a", filepath.Join(root, "l")))
	must(os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "abs")))
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(os.Symlink("a/../f", filepath.Join(root, "lf")))
	real, err := filepath.EvalSymlinks(root)
	must(err)
	var paths []string
	for _, p := range []string{"a", "a/b", "a/x", "a/b/x", "a/x/y", "f", "f/x", "f/x/y", "l", "l/x", "l/b", "l/b/x",
		"abs", "abs/x", "dangling", "dangling/x", "dangling/x/y", "lf", "lf/x", "missing", "missing/x", "missing/x/y",
		"a/missing/x/y", "l/missing/x", "f/x/y/z", "abs/missing/x"} {
		paths = append(paths, filepath.Clean(filepath.Join(real, p)))
	}
	old := func(p string) (string, bool, error) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return real, true, nil
		}
		return Resolve(p)
	}
	for pass := 0; pass < 2; pass++ { // cold, then with every directory remembered
		r := resolver{dirs: map[string]string{}}
		for _, p := range paths {
			if pass == 1 {
				_, _, _ = r.resolve(p) // warm the remembered directories
			}
		}
		for _, p := range paths {
			got, gotOK, gotErr := r.resolve(p)
			want, wantOK, wantErr := old(p)
			if got != want || gotOK != wantOK || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("pass %d, %s: resolve = %q %v %v, Resolve = %q %v %v", pass, p, got, gotOK, gotErr, want, wantOK, wantErr)
			}
		}
	}
}

// passwdHome answers what the Split-based parser it replaced answered.
func TestPasswdHome(t *testing.T) {
	old := func(passwd string, uid int) string {
		for _, line := range strings.Split(passwd, "\n") {
			fields := strings.Split(line, ":")
			if len(fields) >= 7 && fields[2] == strconv.Itoa(uid) && filepath.IsAbs(fields[5]) {
				return filepath.Clean(fields[5])
			}
		}
		return ""
	}
	passwd := "root:x:0:0:root:/root:/bin/bash\n" +
		"short:x:10:10:gecos:/short\n" + // six fields: not an entry
		"rel:x:11:11::home/rel:/bin/sh\n" + // relative home: skipped
		"u100:x:100:100::/home/u100/:/bin/sh\n" +
		"u10:x:10:10::/home/u10:/bin/sh:extra\n" +
		"dup:x:100:100::/home/dup:/bin/sh\n" +
		"::::::\n" + "\n" + "noshell:x:12:12::/home/n:\n"
	for _, uid := range []int{0, 10, 11, 12, 100, 1, 99999} {
		if got, want := passwdHome(passwd, uid), old(passwd, uid); got != want {
			t.Errorf("uid %d: %q, want %q", uid, got, want)
		}
	}
	if got := passwdHome(passwd, 100); got != "/home/u100" {
		t.Errorf("uid 100: %q", got)
	}
}
