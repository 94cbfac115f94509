//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const fakeNpmrc = "registry=http://127.0.0.1:1/\nfund=false\n//registry.npmjs.org/:_authToken=FAKE-TOKEN-123\n_auth=RkFLRQ==\n"

// maskedHome is a fake HOME holding an .npmrc and a .pypirc with fake
// secrets and a .netrc (credentials only).
func maskedHome(t *testing.T) (root, home string, env []string) {
	t.Helper()
	root = t.TempDir()
	os.Chmod(root, 0o755)
	home = filepath.Join(root, "home")
	writeFile(t, filepath.Join(home, ".npmrc"), fakeNpmrc)
	writeFile(t, filepath.Join(home, ".pypirc"), "[pypi]\nusername = __token__\npassword = pypi-FAKE-PYPI\n")
	writeFile(t, filepath.Join(home, ".yarnrc.yml"), "npmRegistryServer: \"http://127.0.0.1:1/\"\nnpmAuthToken: FAKE-YARN-TOKEN\n")
	writeFile(t, filepath.Join(home, ".yarnrc"), "registry \"http://127.0.0.1:1/\"\n\"//registry.yarnpkg.com/:_authToken\" FAKE-YARN1-TOKEN\n")
	writeFile(t, filepath.Join(home, ".netrc"), "machine 127.0.0.1 login me password FAKE-NETRC\n")
	// sbx's own scan cache outside HOME, so HOME holds only these.
	return root, home, append(hermeticEnv(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(root, "cache"), "npm_config_cache="+filepath.Join(root, "npmcache"))
}

// TestNpmrcMaskedCopy: the user's ~/.npmrc and ~/.pypirc are seen as
// copies whose secret values are masked, their configuration kept (npm
// reads the registry from it); ~/.netrc stays hidden whole; the real
// file on the host is untouched and nothing is left next to it.
func TestNpmrcMaskedCopy(t *testing.T) {
	root, home, env := maskedHome(t)
	before, _ := os.ReadDir(home)
	st0, _ := os.Stat(filepath.Join(home, ".npmrc"))
	r := sh(t, runOpts{dir: root, env: env}, `echo NPMRC; cat ~/.npmrc; echo PYPIRC; cat ~/.pypirc; echo YARNRC; cat ~/.yarnrc.yml; echo YARNRC1; cat ~/.yarnrc; echo NETRC; cat ~/.netrc 2>/dev/null; echo END`)
	wantCode(t, r, 0)
	for _, secret := range []string{"FAKE-TOKEN-123", "RkFLRQ==", "pypi-FAKE-PYPI", "FAKE-YARN-TOKEN", "FAKE-YARN1-TOKEN", "FAKE-NETRC"} {
		if strings.Contains(r.stdout, secret) || strings.Contains(r.stderr, secret) {
			t.Fatalf("the command saw %s: %s", secret, r)
		}
	}
	for _, kept := range []string{"registry=http://127.0.0.1:1/\nfund=false\n", "//registry.npmjs.org/:_authToken=SBX_MASKED\n", "[pypi]\nusername = __token__\npassword = SBX_MASKED\n", "npmRegistryServer: \"http://127.0.0.1:1/\"\nnpmAuthToken: SBX_MASKED\n", "registry \"http://127.0.0.1:1/\"\n\"//registry.yarnpkg.com/:_authToken\" SBX_MASKED\n", "NETRC\nEND"} {
		if !strings.Contains(r.stdout, kept) {
			t.Fatalf("want %q in the sandbox's view: %s", kept, r)
		}
	}
	after, _ := os.ReadDir(home)
	st1, _ := os.Stat(filepath.Join(home, ".npmrc"))
	if len(after) != len(before) || !st1.ModTime().Equal(st0.ModTime()) {
		t.Fatalf("the run left something in HOME: %v then %v", before, after)
	}
	// The copy is read-only.
	r = sh(t, runOpts{dir: root, env: env}, `echo x >> ~/.npmrc && echo WROTE; true`, "--allow-write", home)
	if strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the masked copy is writable: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".npmrc")); string(b) != fakeNpmrc {
		t.Fatalf("the real file changed: %q", b)
	}
	if _, err := exec.LookPath("npm"); err == nil {
		r = sh(t, runOpts{dir: root, env: env}, `npm config get registry; npm config get fund`, "--allow-write", filepath.Join(root, "npmcache"))
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, "http://127.0.0.1:1/\nfalse\n") {
			t.Fatalf("npm does not read the user's configuration: %s", r)
		}
	}
}

// TestNpmrcMaskedCopyOnlyByDefault: --allow-read ~/.npmrc still gives the
// real file; the user's own --deny-read, a ~/.npmrc that is a link to
// ~/.netrc and --weaker-nested hide it whole.
func TestNpmrcMaskedCopyOnlyByDefault(t *testing.T) {
	root, home, env := maskedHome(t)
	npmrc := filepath.Join(home, ".npmrc")
	r := sh(t, runOpts{dir: root, env: env}, `cat ~/.npmrc`, "--allow-read", npmrc)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "FAKE-TOKEN-123") {
		t.Fatalf("--allow-read ~/.npmrc: want the real file: %s", r)
	}
	r = sh(t, runOpts{dir: root, env: env}, `cat ~/.npmrc 2>/dev/null; echo END`, "--deny-read", npmrc)
	if strings.Contains(r.stdout, "registry=") || strings.Contains(r.stdout, "FAKE") {
		t.Fatalf("--deny-read ~/.npmrc: want it hidden whole: %s", r)
	}
	// No mount view to bind a copy in: hidden whole.
	r = sh(t, runOpts{dir: root, env: env}, `cat ~/.npmrc 2>/dev/null; echo END`, "--weaker-nested")
	if strings.Contains(r.stdout, "registry=") || strings.Contains(r.stdout, "FAKE") || !strings.Contains(r.stdout, "END") {
		t.Fatalf("--weaker-nested: want ~/.npmrc hidden whole: %s", r)
	}
	// A link to a credentials-only file: hidden whole, not masked as if
	// it were npm's configuration.
	os.Remove(npmrc)
	if err := os.Symlink(".netrc", npmrc); err != nil {
		t.Fatal(err)
	}
	r = sh(t, runOpts{dir: root, env: env}, `cat ~/.npmrc 2>/dev/null; cat ~/.netrc 2>/dev/null; echo END`)
	if strings.Contains(r.stdout, "FAKE-NETRC") || strings.Contains(r.stdout, "machine") {
		t.Fatalf("~/.npmrc -> ~/.netrc: want it hidden whole: %s", r)
	}
	// Another name of the same file: hidden whole.
	os.Remove(npmrc)
	writeFile(t, npmrc, fakeNpmrc)
	if err := os.Link(npmrc, filepath.Join(root, "other-name")); err != nil {
		t.Fatal(err)
	}
	r = sh(t, runOpts{dir: root, env: env}, `cat ~/.npmrc 2>/dev/null; echo END`)
	if strings.Contains(r.stdout, "registry=") || strings.Contains(r.stdout, "FAKE") {
		t.Fatalf("a hard-linked ~/.npmrc: want it hidden whole: %s", r)
	}
}
