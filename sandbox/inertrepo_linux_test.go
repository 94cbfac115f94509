//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cloneConfig is what git clone writes.
const cloneConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	logallrefupdates = true
[remote "origin"]
	url = https://git.example/repo.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
	remote = origin
	merge = refs/heads/main
`

// TestInertRepo: a git directory as clone and init leave it stays; one
// with any key, hook or redirect that makes git run something is not
// inert, however it is spelt.
func TestInertRepo(t *testing.T) {
	mk := func(t *testing.T, config string, files map[string]string) string {
		g := filepath.Join(t.TempDir(), ".git")
		for p, c := range map[string]string{"HEAD": "ref: refs/heads/main\n", "hooks/pre-commit.sample": "#!/bin/sh\n", "objects/info/.keep": "", "refs/heads/.keep": ""} {
			writeTestFile(t, filepath.Join(g, p), c)
		}
		if config != "" {
			writeTestFile(t, filepath.Join(g, "config"), config)
		}
		for p, c := range files {
			writeTestFile(t, filepath.Join(g, p), c)
		}
		return g
	}
	for _, c := range []struct {
		name, config string
		files        map[string]string
		inert        bool
	}{
		{"clone", cloneConfig, nil, true},
		{"init", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n", nil, true},
		{"no config", "", nil, true},
		{"fsmonitor", cloneConfig + "[core]\n\tfsmonitor = touch /tmp/x\n", nil, false},
		{"fsmonitor, other case", cloneConfig + "[CORE]\n\tFsMonitor=touch /tmp/x\n", nil, false},
		{"hooksPath", cloneConfig + "[core]\n\thooksPath = .husky\n", nil, false},
		{"sshCommand", cloneConfig + "[core]\n\tsshCommand = sh -c x\n", nil, false},
		{"uploadpack", cloneConfig + "[remote \"origin\"]\n\tuploadpack = sh -c x\n", nil, false},
		{"include", cloneConfig + "[include]\n\tpath = ../evil\n", nil, false},
		{"includeIf", cloneConfig + "[includeIf \"gitdir:/\"]\n\tpath = ../evil\n", nil, false},
		{"filter driver", cloneConfig + "[filter \"x\"]\n\tclean = sh -c x\n", nil, false},
		{"alias", cloneConfig + "[alias]\n\tst = !sh -c x\n", nil, false},
		{"continuation", "[core]\n\tbare = false\\\n\tfsmonitor = x\n", nil, false},
		{"dotted section", "[core.x]\n\tbare = false\n", nil, false},
		{"subsection of core", "[core \"x\"]\n\tbare = false\n", nil, false},
		{"key before a section", "bare = false\n", nil, false},
		{"a hook", cloneConfig, map[string]string{"hooks/post-checkout": "#!/bin/sh\n"}, false},
		{"commondir", cloneConfig, map[string]string{"commondir": "../elsewhere\n"}, false},
		{"config.worktree", cloneConfig, map[string]string{"config.worktree": ""}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := inertRepo(mk(t, c.config, c.files)); got != c.inert {
				t.Errorf("inertRepo = %v, want %v", got, c.inert)
			}
		})
	}
	t.Run("not a repository", func(t *testing.T) {
		g := filepath.Join(t.TempDir(), ".git")
		if err := os.Mkdir(g, 0o755); err != nil {
			t.Fatal(err)
		}
		if inertRepo(g) {
			t.Error("an empty .git (a stub's look-alike) is inert")
		}
	})
	t.Run("a .git file", func(t *testing.T) {
		g := filepath.Join(t.TempDir(), ".git")
		writeTestFile(t, g, "gitdir: /elsewhere\n")
		if inertRepo(g) {
			t.Error("a .git file is inert")
		}
	})
	t.Run("a config too large", func(t *testing.T) {
		g := mk(t, "[core]\n"+strings.Repeat("\tbare = false\n", maxInertConfig/14+1), nil)
		if inertRepo(g) {
			t.Error("a config over the bound is inert")
		}
	})
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
