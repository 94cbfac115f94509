//go:build linux

package main

import (
	"os"
	"os/exec"
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

// TestRustRecipeFreshCrate runs the README's cargo recipe as written on a
// fresh crate (no Cargo.lock, no target/) with Debian's cargo, a fresh
// CARGO_HOME and --fail-on-violation --observe-files writes: it must pass
// on the first try, leaving the lock file and the build in the crate.
// That takes the three things the rust preset and --allow-write do:
// creating the missing target/ the flag names, creating and opening the
// crate's missing Cargo.lock, and cargo's package cache lock files in
// CARGO_HOME.
func TestRustRecipeFreshCrate(t *testing.T) {
	cargo := "/usr/bin/cargo"
	if _, err := os.Stat(cargo); err != nil {
		t.Skip("no /usr/bin/cargo (Debian's cargo package)")
	}
	base := hostTempDir(t)
	home, cargoHome, crate := filepath.Join(base, "home"), filepath.Join(base, "cargo-home"), filepath.Join(base, "demo")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(hermeticEnv(), "HOME="+home, "CARGO_HOME="+cargoHome, "CARGO_TERM_COLOR=never", "RUSTC=/usr/bin/rustc", "RUSTDOC=/usr/bin/rustdoc")
	cmd := exec.Command(cargo, "new", "--offline", "--vcs", "none", "--lib", crate)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo new: %v\n%s", err, out)
	}
	// A run that never fills the lock file leaves none behind.
	r := sbx(t, runOpts{dir: crate, env: env}, "--preset", "rust", "--", "true")
	if _, err := os.Lstat(filepath.Join(crate, "Cargo.lock")); r.code != 0 || err == nil {
		t.Errorf("a run that did not build left an empty Cargo.lock (%v): %s", err, r)
	}
	r = sbx(t, runOpts{dir: crate, env: env}, "--preset", "rust", "--allow-write", "target", "--fail-on-violation", "--observe-files", "writes", "--", cargo, "test", "--offline")
	if r.code != 0 || !strings.Contains(r.stdout, "test result: ok") {
		t.Fatalf("sbx --preset rust --allow-write target -- cargo test on a fresh crate: %s", r)
	}
	if b, err := os.ReadFile(filepath.Join(crate, "Cargo.lock")); err != nil || !strings.Contains(string(b), "[[package]]") {
		t.Errorf("Cargo.lock after the run: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(crate, "target")); err != nil || !fi.IsDir() {
		t.Errorf("target/ after the run: %v", err)
	}
	// A second run finds everything in place and still passes; the lock
	// file now exists and stays read-only.
	r = sbx(t, runOpts{dir: crate, env: env}, "--preset", "rust", "--allow-write", "target", "--fail-on-violation", "--observe-files", "writes", "--", cargo, "test", "--offline")
	if r.code != 0 {
		t.Errorf("second run: %s", r)
	}
	// A deeper missing --allow-write path is still refused (a typo).
	r = sbx(t, runOpts{dir: crate, env: env}, "--allow-write", "tagret/debug", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("--allow-write of a path two levels missing: %s", r)
	}
	if _, err := os.Stat(filepath.Join(crate, "tagret")); err == nil {
		t.Errorf("a refused --allow-write created tagret/")
	}
}
