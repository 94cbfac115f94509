//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoSettingsCannotReachHostLoopback: a settings file in the
// working tree (a --settings file there, or Claude Code's project scope)
// that lists localhost or a loopback address in any spelling is refused
// with exit 125 before anything runs, and the server the test starts on
// the host's 127.0.0.1 sees nothing; the same file trusted
// (--trust-project-settings) reaches it, so the refusal is the only
// thing between the two.
func TestRepoSettingsCannotReachHostLoopback(t *testing.T) {
	curl := needTool(t, "curl")
	s, c := httpServer(t, false)
	hp := hostPort(t, s.URL)
	port := hp[strings.LastIndexByte(hp, ':')+1:]
	for _, tc := range []struct{ entry, url string }{
		{"localhost", "http://localhost:" + port + "/"},
		{"LocalHost.:" + port, "http://localhost:" + port + "/"},
		{"127.0.0.1", s.URL + "/"},
		{"127.1:" + port, s.URL + "/"},
		{"2130706433", s.URL + "/"},
		{"0x7f.1", s.URL + "/"},
		{"[::ffff:127.0.0.1]:" + port, s.URL + "/"},
	} {
		t.Run(tc.entry, func(t *testing.T) {
			d := composeTree(t)
			file := filepath.Join(d, "repo.json")
			writeFile(t, file, `{"network": {"allowedDomains": ["`+tc.entry+`"]}, "filesystem": {}}`)
			before := c.n.Load()
			args := []string{"--settings", file, "--", curl, "-sS", "--max-time", "10", tc.url}
			r := sbx(t, runOpts{dir: d}, args...)
			wantCode(t, r, 125)
			if c.n.Load() != before {
				t.Fatalf("the host's loopback server saw a request: %s", r)
			}
			line := strings.TrimSpace(r.stderr)
			if strings.Count(line, "\n") != 0 || !strings.Contains(line, file) || !strings.Contains(line, "--trust-project-settings") {
				t.Fatalf("want one line naming %s and --trust-project-settings: %s", file, r)
			}
			r = sbx(t, runOpts{dir: d}, append([]string{"--trust-project-settings"}, args...)...)
			wantCode(t, r, 0)
			if !strings.Contains(r.stdout, "hello from the host") || c.n.Load() != before+1 {
				t.Fatalf("trusted, the entry should reach the server (else this test proves nothing): %s", r)
			}
		})
	}
	// Claude Code's project scope, the repository's own file.
	d := composeTree(t)
	writeFile(t, filepath.Join(d, ".claude", "settings.json"), `{"sandbox": {"network": {"allowedDomains": ["localhost:`+port+`"]}}}`)
	env := append(hermeticEnv(), "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR=")
	before := c.n.Load()
	r := sbx(t, runOpts{dir: d, env: env}, "--claude-settings", "--", curl, "-sS", "--max-time", "10", "http://localhost:"+port+"/")
	wantCode(t, r, 125)
	if c.n.Load() != before || !strings.Contains(r.stderr, filepath.Join(d, ".claude", "settings.json")) {
		t.Fatalf("the project scope reached the host or the error does not name it: %s", r)
	}
}
