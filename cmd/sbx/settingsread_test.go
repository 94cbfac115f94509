//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileSettingsFile: a repository's settings file that is a link
// to /dev/zero or a FIFO, or is larger than 1 MiB, is refused with exit
// 125 and one line naming it, at once (no hang, no memory growth), both
// as Claude Code's project scope and as a --settings file; nothing runs.
func TestHostileSettingsFile(t *testing.T) {
	d := composeTree(t)
	marker := filepath.Join(d, "out", "ran")
	env := append(hermeticEnv(), "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR=")
	claude := filepath.Join(d, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(claude), 0o755)
	fifo := filepath.Join(d, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(d, "big.json")
	writeFile(t, big, `{"network": {}, "filesystem": {"denyRead": ["`+strings.Repeat("/x", 6<<20)+`"]}}`)
	for _, tc := range []struct {
		name, link string // link: what .claude/settings.json points to ("" none)
		args       []string
	}{
		{"claude scope to /dev/zero", "/dev/zero", []string{"--claude-settings"}},
		{"claude scope to a FIFO", fifo, []string{"--claude-settings"}},
		{"--settings FIFO", "", []string{"--settings", fifo}},
		{"--settings /dev/zero", "", []string{"--settings", "/dev/zero"}},
		{"--settings 12 MB", "", []string{"--settings", big}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(claude)
			if tc.link != "" {
				if err := os.Symlink(tc.link, claude); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(claude)
			}
			start := time.Now()
			r := sbx(t, runOpts{dir: d, env: env}, append(tc.args, "--allow-write", filepath.Join(d, "out"), "--", "/bin/sh", "-c", "touch "+q(marker))...)
			wantCode(t, r, 125)
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("refusing took %v", el)
			}
			named := claude
			if tc.link == "" {
				named = tc.args[1]
			}
			line := strings.TrimSpace(r.stderr)
			if strings.Contains(line, "\n") || !strings.Contains(line, named) || !strings.Contains(line, "regular file of at most 1 MiB") {
				t.Errorf("want one line naming %s: %s", named, r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// TestLargeSettingsFileIsLinear: a settings file just under the 1 MiB
// cap, of some 14,000 denyRead and allowRead entries (long temporary
// paths), is read and planned (--dry-run: the policy and the mount plan)
// within 10 s: 1.7 s at a load of 22 on two cores. The planners asked,
// for every entry, which other entries held it by a scan of the whole
// list: this file took 22 s with only the mount view's check fixed.
func TestLargeSettingsFileIsLinear(t *testing.T) {
	d := composeTree(t)
	var deny, allow []string
	size := 0
	for i := 0; size < 900<<10; i++ {
		p := fmt.Sprintf("%s/g/d%d", d, i)
		if i%2 == 0 {
			deny = append(deny, p)
		} else {
			allow = append(allow, fmt.Sprintf("%s/g/d%d/x", d, i-1))
		}
		size += len(p) + 8
	}
	b, _ := json.Marshal(map[string]any{"network": map[string]any{}, "filesystem": map[string]any{"denyRead": deny, "allowRead": allow}})
	f := filepath.Join(t.TempDir(), "many.json")
	writeFile(t, f, string(b))
	start := time.Now()
	r := sbx(t, runOpts{dir: d}, "--settings", f, "--dry-run", "--", "true")
	el := time.Since(start)
	wantCode(t, r, 0)
	t.Logf("%d entries, %d bytes: %v", len(deny)+len(allow), len(b), el)
	if el > 10*time.Second {
		t.Fatalf("%d entries took %v", len(deny)+len(allow), el)
	}
}
