//go:build linux

package main

// sbx learn on real runtimes: each language of the runtime matrix
// (runtimes_test.go) learned, then replayed under --reads declared
// --fail-on-violation --observe-files all, which must be clean: exit 0,
// no records, no "sbx:" line. What a runtime reads at start (cgroup
// limits, the page size in /sys, its own installation outside /usr) is
// exactly what a learned policy misses when learning is wrong.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// learnReplayFlagsFormat are the runtimes whose policy is also learned
// in the flags format and replayed from its command line.
var learnReplayFlagsFormat = map[string]bool{"python": true, "node24": true}

func TestLearnRuntimeMatrix(t *testing.T) {
	for _, c := range runtimeCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(hostTempDir(t), c.fixture)
			copyTree(t, filepath.Join("testdata", "runtimes", c.fixture), dir)
			rc, skip := c.setup(t, dir)
			if skip != "" {
				t.Skipf("%s: %s", c.name, skip)
			}
			env := append(hermeticEnv(), rc.env...)
			if c.name == "rust" {
				// Debian's cargo with Debian's rustc. With rustup's
				// proxy first on PATH (root's ~/.cargo/bin), rustc
				// lists ~/.rustup/toolchains, whose other toolchains it
				// never reads: learning refuses that listing and
				// reports the --allow-read that would grant it, and the
				// replay fails on it, as it should.
				env = append(env, "PATH=/usr/bin:/bin")
			}
			formats := []string{"sbx"}
			if learnReplayFlagsFormat[c.name] {
				formats = append(formats, "flags")
			}
			for _, format := range formats {
				pol := filepath.Join(t.TempDir(), "learned")
				args := append([]string{"learn", "--format", format, "--output", pol}, rc.flags...)
				r := sbx(t, runOpts{dir: dir, env: env}, append(append(args, "--"), rc.clean...)...)
				if r.code != 0 {
					t.Fatalf("%s: learn: want exit 0: %s", format, r)
				}
				text, err := os.ReadFile(pol)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s policy:\n%s", format, text)
				replay := []string{"--settings", pol, "--reads", "declared"}
				if format == "flags" {
					replay = strings.Fields(string(text))
				}
				vf := filepath.Join(t.TempDir(), "v.jsonl")
				replay = append(replay, "--fail-on-violation", "--violations", vf, "--observe-files", "all")
				replay = append(append(append(replay, rc.flags...), "--"), rc.clean...)
				r = sbx(t, runOpts{dir: dir, env: env}, replay...)
				if recs := readRecords(t, vf); r.code != 0 || len(recs) != 0 || sbxLine(r.stderr) != "" {
					t.Fatalf("%s: replay: want exit 0, no records, no sbx: line; got %d records %+v\n%s", format, len(recs), recs, r)
				}
			}
		})
	}
}
