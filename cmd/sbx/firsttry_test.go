package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spawnWrapMimic does what nyc's spawn-wrap does when it wraps a child:
// make a shim directory .node-spawn-wrap-PID-HEX under its root, write an
// executable shim into it, run it, and remove the directory. Releases
// 1.4.2 and later take the root from SPAWN_WRAP_SHIM_ROOT before HOME;
// older ones (bundled in nyc 10) only from HOME (os.homedir()).
const spawnWrapMimic = `root=${ROOT:-$HOME}
d=$root/.node-spawn-wrap-$$-0123456789ab
mkdir "$d" || exit 10
printf '#!/bin/sh\necho shim ran\n' >"$d/node" && chmod +x "$d/node" || exit 11
"$d/node" || exit 12
rm -rf "$d"`

// TestPresetNodeSpawnWrap: under --preset node, nyc's spawn-wrap can make
// its shim directory. A spawn-wrap that honours SPAWN_WRAP_SHIM_ROOT gets
// the private /tmp from the preset alone; one that only knows HOME needs
// HOME's top level writable, which --discard-writes ~ gives without
// changing the host (the shims are made and removed in the overlay, so
// nothing is left to report either). HOME lies outside /tmp, so that the
// sandbox sees the host's.
func TestPresetNodeSpawnWrap(t *testing.T) {
	home := hostTempDir(t)
	env := append(hermeticEnv(), "HOME="+home)
	var clean []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SPAWN_WRAP_SHIM_ROOT=") {
			clean = append(clean, kv)
		}
	}
	env = clean
	strict := []string{"--fail-on-violation", "--observe-files", "writes"}

	// spawn-wrap 1.4.2 and later.
	r := sh(t, runOpts{env: env}, `ROOT=$SPAWN_WRAP_SHIM_ROOT; `+spawnWrapMimic, append([]string{"--preset", "node"}, strict...)...)
	if r.code != 0 || r.stdout != "shim ran\n" {
		t.Errorf("spawn-wrap with SPAWN_WRAP_SHIM_ROOT under --preset node: %s", r)
	}
	// Older spawn-wrap: HOME only. Without a discard region it is refused
	// (the control: the test can see the failure) ...
	r = sh(t, runOpts{env: env}, `ROOT=; `+spawnWrapMimic, append([]string{"--preset", "node"}, strict...)...)
	if r.code != 10 || !strings.Contains(r.stderr, ".node-spawn-wrap-") {
		t.Errorf("spawn-wrap into a read-only HOME: want exit 10 and the refused mkdir named, got %s", r)
	}
	// ... and with --discard-writes ~ it runs, and HOME is unchanged.
	r = sh(t, runOpts{env: env}, `ROOT=; `+spawnWrapMimic, append([]string{"--preset", "node", "--discard-writes", home}, strict...)...)
	if r.code != 0 || r.stdout != "shim ran\n" {
		t.Errorf("spawn-wrap into HOME under --preset node --discard-writes ~: %s", r)
	}
	ents, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".node-spawn-wrap-") {
			t.Errorf("a shim directory was left in HOME: %s", filepath.Join(home, e.Name()))
		}
	}
}
