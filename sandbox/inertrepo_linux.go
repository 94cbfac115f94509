//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

// A repository the command made is left where it is when git would run
// nothing of it: what `git clone` and `git init` write and nothing more.
// Git runs a repository's code through its config (core.fsmonitor,
// core.hooksPath, core.sshCommand, filter and diff drivers, aliases,
// includes, …) and its hooks; so a git directory is inert when
//
//   - it is a directory (a .git file sends git elsewhere) that git takes
//     for one (HEAD, objects, refs: what clone and init make; anything
//     else is moved aside as before), holding no commondir (which sends git to another directory's config and hooks)
//     and no config.worktree;
//   - its hooks directory, if any, holds only git's *.sample templates,
//     which git never runs;
//   - its config, if any, is a regular file of at most maxInertConfig
//     bytes in which every line is blank, a comment, a section header or
//     a key=value of inertKeys, with no continuation lines, and no
//     section or key besides those.
//
// Anything else is moved aside as before. The test is an allow-list, so a
// key git learns to run later is refused until it is listed here.
const maxInertConfig = 64 << 10

// inertKeys are the config keys clone and init write, by section (the
// subsection, if any, is left out: remote "origin" is "remote"). None of
// them names a program: remote.*.uploadpack and receivepack, which do,
// are not here.
var inertKeys = map[string][]string{
	"core":       {"repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase", "precomposeunicode", "symlinks"},
	"remote":     {"url", "pushurl", "fetch", "tagopt", "promisor", "partialclonefilter", "mirror"},
	"branch":     {"remote", "merge", "rebase"},
	"extensions": {"objectformat", "refstorage"},
	"init":       {"defaultbranch"},
}

var (
	sectionLine = regexp.MustCompile(`^\[([A-Za-z0-9.-]+)(\s+"[^"\\\n]*")?\]$`)
	keyLine     = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*)\s*(=\s*([^\\"]*|"[^"\\]*"))?$`)
)

// inertRepo reports whether the git directory gitDir would make git run
// nothing (see above).
func inertRepo(gitDir string) bool {
	var st unix.Stat_t
	if unix.Lstat(gitDir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || !bareLayout(gitDir) {
		return false
	}
	for _, redirect := range []string{"commondir", "config.worktree"} {
		if exists(filepath.Join(gitDir, redirect)) {
			return false
		}
	}
	hooks := filepath.Join(gitDir, "hooks")
	if unix.Lstat(hooks, &st) == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
		entries, err := os.ReadDir(hooks)
		if err != nil {
			return false
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".sample") {
				return false
			}
		}
	}
	cfg := filepath.Join(gitDir, "config")
	if unix.Lstat(cfg, &st) != nil {
		return !exists(cfg) // none: nothing to obey
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxInertConfig {
		return false
	}
	fd, err := unix.Open(cfg, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), cfg)
	defer f.Close()
	b := make([]byte, maxInertConfig+1)
	n, _ := f.Read(b)
	if n > maxInertConfig {
		return false
	}
	return inertConfig(b[:n])
}

// inertConfig reports whether every line of a git config is one of
// inertKeys (see inertRepo).
func inertConfig(b []byte) bool {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxInertConfig+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			section = strings.ToLower(m[1])
			if _, ok := inertKeys[section]; !ok {
				return false
			}
			if m[2] != "" && section != "remote" && section != "branch" {
				return false
			}
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil || section == "" {
			return false
		}
		key := strings.ToLower(m[1])
		ok := false
		for _, k := range inertKeys[section] {
			ok = ok || k == key
		}
		if !ok {
			return false
		}
	}
	return sc.Err() == nil
}
