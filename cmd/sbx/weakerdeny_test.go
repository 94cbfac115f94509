//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// In the weaker mode Landlock is the only filesystem enforcer, and it
// grants a writable root whole: a read-denied path inside one would be
// read. sbx refuses such a policy (exit 125, one line, nothing run)
// rather than run it as if the deny held; a deny outside the writable
// places still holds.
func TestWeakerRefusesDenyReadInWritable(t *testing.T) {
	const secret = "FAKE-WEAKER-SECRET-5150"
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	writeFile(t, filepath.Join(dir, "proj", "secret", "key"), secret)
	writeFile(t, filepath.Join(dir, "proj", "notes.txt"), "plain")
	writeFile(t, filepath.Join(home, ".ssh", "id_rsa"), secret)
	settings := filepath.Join(dir, "settings.json")
	writeFile(t, settings, `{"network": {}, "filesystem": {"allowWrite": ["`+filepath.Join(dir, "proj")+`"], "denyRead": ["`+filepath.Join(dir, "proj", "secret")+`"], "denyWrite": []}}`)
	proj := filepath.Join(dir, "proj")
	env := append(hermeticEnv(), "HOME="+home)
	marker := filepath.Join(dir, "ran")
	for _, flags := range [][]string{
		{"--allow-write", ".", "--deny-read", "./secret"},
		{"--allow-write", ".", "--deny-read", "./secret/key"},
		{"--settings", settings},
		{"--allow-write", home}, // the built-in ~/.ssh mask
	} {
		args := append([]string{"--weaker-nested"}, flags...)
		r := sh(t, runOpts{dir: proj, env: env}, "touch "+marker+"; cat secret/key "+home+"/.ssh/id_rsa", args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 125 || len(lines) != 1 || !strings.Contains(r.stderr, "--weaker-nested cannot hide") {
			t.Errorf("%q: want exit 125 with one line naming the path: %s", args, r)
		}
		if strings.Contains(r.stdout, secret) {
			t.Errorf("%q: the denied file was read: %s", args, r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%q: the command ran", args)
		}
	}
	// A deny beside the writable place holds, and the place is writable.
	w := filepath.Join(proj, "out")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	r := sh(t, runOpts{dir: proj, env: env}, "echo made > out/f; cat out/f; cat notes.txt; cat secret/key",
		"--weaker-nested", "--allow-write", "./out", "--deny-read", "./secret")
	if strings.Contains(r.stdout, secret) || !strings.Contains(r.stdout, "made\nplain") {
		t.Fatalf("a deny outside the writable place should hold and the rest work: %s", r)
	}
}
