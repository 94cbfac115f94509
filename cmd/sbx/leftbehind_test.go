package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
