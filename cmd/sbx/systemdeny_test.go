//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedSystemDenies are the system paths denied for reading by
// default, as docs/settings.md lists them ("Policy semantics"), written
// here from the documentation: dropping one from policy.DefaultDenyRead
// fails TestDefaultDeniedSystemPaths.
var documentedSystemDenies = []string{
	"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
}

// TestDefaultDeniedSystemPathsDocumented: the test's list is the one the
// documentation gives, path for path.
func TestDefaultDeniedSystemPathsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/settings.md")
	if err != nil {
		t.Fatal(err)
	}
	var inDocs []string
	brace := regexp.MustCompile(`\{([^{}]*)\}`)
	for _, m := range regexp.MustCompile("`(/etc/[^`]+)`").FindAllStringSubmatch(string(b), -1) {
		paths := []string{m[1]}
		if g := brace.FindStringSubmatchIndex(m[1]); g != nil { // a{b,c}d: abd, acd
			paths = nil
			for _, alt := range strings.Split(m[1][g[2]:g[3]], ",") {
				paths = append(paths, m[1][:g[0]]+alt+m[1][g[1]:])
			}
		}
		for _, p := range paths {
			if !slices.Contains(inDocs, p) {
				inDocs = append(inDocs, p)
			}
		}
	}
	for _, p := range documentedSystemDenies {
		if !slices.Contains(inDocs, p) {
			t.Errorf("%s is not in docs/settings.md", p)
		}
	}
}

// TestDefaultDeniedSystemPaths: every documented system path is in the
// policy of a run with no flags (--dry-run), and each one this host has
// is, in a real run, an empty file of mode 000 that cannot be read
// (root could read the real one). One this host lacks is checked in the
// plan only: a real test of it would need it in /etc.
func TestDefaultDeniedSystemPaths(t *testing.T) {
	r := sbx(t, runOpts{}, "--dry-run", "--", "true")
	wantCode(t, r, 0)
	var plan struct {
		Policy struct {
			Filesystem struct {
				DenyRead []string `json:"denyRead"`
			} `json:"filesystem"`
		} `json:"policy"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("--dry-run output: %v: %s", err, r)
	}
	var present []string
	for _, p := range documentedSystemDenies {
		if !slices.Contains(plan.Policy.Filesystem.DenyRead, p) {
			t.Errorf("%s is not denied by default (--dry-run denyRead: %q)", p, plan.Policy.Filesystem.DenyRead)
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		t.Fatal("none of the documented system paths is on this host: nothing to run for real")
	}
	script := ""
	for _, p := range present {
		script += `printf '%s %s ' "` + p + `" "$(stat -c %s:%a ` + p + `)"; if cat ` + p + ` >/dev/null 2>&1; then echo READ; else echo denied; fi` + "\n"
	}
	r = sh(t, runOpts{}, script)
	wantCode(t, r, 0)
	for _, p := range present {
		if !strings.Contains(r.stdout, p+" 0:0 denied\n") {
			t.Errorf("%s: want an empty, mode-000, unreadable file in the sandbox: %s", p, r)
		}
	}
	t.Logf("run for real: %q; in the plan only (not on this host): %d", present, len(documentedSystemDenies)-len(present))
}

// TestDefaultDeniedSystemPathsPlanted: the documented system paths this
// host lacks (often /etc/sudoers and the SSH host keys) are run for real
// too: as root, in a private mount namespace whose /etc is an overlay
// that adds a fake of each, the sandbox shows each as an empty, mode-000,
// unreadable file. The host's /etc is never written. Unprivileged, an
// overlay of /etc needs a user namespace whose root sbx refuses to run
// as (it maps one id), so that run is root's; TestDefaultDeniedSystemPaths
// covers the paths the host has, as every user.
func TestDefaultDeniedSystemPathsPlanted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an overlay of /etc in a private mount namespace needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	dir := t.TempDir()
	upper, work := filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	var planted []string
	for _, p := range documentedSystemDenies {
		if _, err := os.Lstat(p); err == nil {
			continue // on the host: TestDefaultDeniedSystemPaths runs it
		}
		f := filepath.Join(upper, strings.TrimPrefix(p, "/etc/"))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("FAKE-"+filepath.Base(p)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, p)
	}
	if len(planted) == 0 {
		t.Skip("every documented system path is on this host")
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	script := ""
	for _, p := range planted {
		script += `printf '%s %s ' "` + p + `" "$(stat -c %s:%a ` + p + `)"; if cat ` + p + ` 2>/dev/null; then echo READ; else echo denied; fi` + "\n"
	}
	inner := "mount -t overlay overlay -o lowerdir=/etc,upperdir=" + upper + ",workdir=" + work + " /etc || exit 90\n" +
		"cat " + planted[0] + " >/dev/null || exit 91\n" + // the fake is there, outside the sandbox
		`exec "$0" -- /bin/sh -c "$1"`
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "/bin/sh", "-c", inner, sbxBin, script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range planted {
		if !strings.Contains(string(out), p+" 0:0 denied\n") {
			t.Errorf("%s: want an empty, mode-000, unreadable file in the sandbox: %s", p, out)
		}
	}
	if strings.Contains(string(out), "FAKE-") {
		t.Errorf("a planted file was read in the sandbox: %s", out)
	}
	t.Logf("planted and run for real: %q", planted)
}
