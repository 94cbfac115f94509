//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cacheEnv is the test environment with HOME at home and no
// XDG_CACHE_HOME: the scan cache lives in home/.cache/sbx.
func cacheEnv(home string) []string {
	var env []string
	for _, kv := range hermeticEnv() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// The sandboxed command runs as the caller, so it could write the scan
// cache a later run trusts, and hide a protected name it planted. The
// cache directory is denied writes even where the command may write
// everything around it.
func TestScanCacheIsReadOnlyInside(t *testing.T) {
	home := filepath.Join(hostTempDir(t), "home") // not in /tmp: a discard region cannot be there
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := cacheEnv(home)
	cache := filepath.Join(home, ".cache", "sbx")
	for _, flags := range [][]string{{"--allow-write", home}, {"--allow-write", home, "--allow-write", cache}, {"--discard-writes", home}} {
		r := sh(t, runOpts{env: env},
			`for f in scan-0 scan-1; do echo forged > "$HOME/.cache/sbx/$f" || echo refused; done; mkdir "$HOME/.cache/sbx/d" || echo refused; rm -rf "$HOME/.cache/sbx" || echo refused; echo ok > "$HOME/ok"`,
			flags...)
		if r.code != 0 || strings.Count(r.stdout, "refused") != 4 {
			t.Fatalf("%v: the cache was writable inside: %s", flags, r)
		}
		if st, err := os.Stat(cache); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Fatalf("%v: cache directory after the run: %v %v", flags, st, err)
		}
		if m, _ := filepath.Glob(filepath.Join(cache, "scan-[01]")); len(m) > 0 {
			t.Fatalf("%v: forged %v", flags, m)
		}
		if flags[0] == "--allow-write" {
			if b, err := os.ReadFile(filepath.Join(home, "ok")); err != nil || string(b) != "ok\n" {
				t.Fatalf("%v: the allowed write around the cache failed: %v %q", flags, err, b)
			}
		}
	}
}

// A protected name planted in a directory the cache remembers is found
// by the next run: the cache entry is keyed by the directory's ctime,
// which the planting moved.
func TestScanCacheSeesPlantedNames(t *testing.T) {
	base := t.TempDir()
	home, proj := filepath.Join(base, "home"), filepath.Join(base, "proj")
	dirs := []string{home, filepath.Join(proj, "sub", "deeper"), filepath.Join(proj, "other")}
	for i := 0; i < 40; i++ { // enough directories for a cache file
		dirs = append(dirs, filepath.Join(proj, "pkgs", "p"+strconv.Itoa(i)))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(base, 0o755)
	env := cacheEnv(home)
	// Directories are remembered once their ctime is 2 s old.
	time.Sleep(2200 * time.Millisecond)
	if r := sbx(t, runOpts{env: env, dir: proj}, "--allow-write", proj, "--", "/bin/true"); r.code != 0 {
		t.Fatal(r)
	}
	if m, _ := filepath.Glob(filepath.Join(home, ".cache", "sbx", "scan-*")); len(m) == 0 {
		t.Fatal("no scan cache was written")
	}
	hooks := filepath.Join(proj, "sub", ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	r := sh(t, runOpts{env: env, dir: proj}, `echo x > sub/.git/hooks/pre-commit || echo refused; echo ok > other/f`, "--allow-write", proj)
	if r.code != 0 || !strings.Contains(r.stdout, "refused") {
		t.Fatalf("a planted .git/hooks was writable on the next run: %s", r)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Fatal("pre-commit written")
	}
	if b, err := os.ReadFile(filepath.Join(proj, "other", "f")); err != nil || string(b) != "ok\n" {
		t.Fatalf("the allowed write failed: %v %q", err, b)
	}
}

// A HOME or XDG_CACHE_HOME that does not exist is never made for the
// cache: the run goes on without one.
func TestScanCacheMakesNoHome(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "missing", "home")
	env := cacheEnv(home)
	if r := sbx(t, runOpts{env: env}, "--", "/bin/true"); r.code != 0 {
		t.Fatal(r)
	}
	if r := sbx(t, runOpts{env: append(env, "XDG_CACHE_HOME="+filepath.Join(base, "xdg"))}, "--", "/bin/true"); r.code != 0 {
		t.Fatal(r)
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Fatalf("made on the host: %v", ents)
	}
}
