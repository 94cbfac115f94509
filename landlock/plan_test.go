package landlock

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// rulesOf maps each rule's path to its access (and notes which are
// marked not-a-directory).
func rulesOf(rs Ruleset) (map[string]uint64, map[string]bool) {
	acc, notDir := map[string]uint64{}, map[string]bool{}
	for _, r := range rs.Rules {
		acc[r.Path] |= r.Access
		notDir[r.Path] = r.NotDir
	}
	return acc, notDir
}

// tcp is rs's TCP part, for messages.
func tcp(rs Ruleset) string {
	return fmt.Sprintf("restrict %v connectAny %v connect %v bindAny %v bind %v notes %q", rs.RestrictTCP, rs.ConnectAny, rs.ConnectPorts, rs.BindAny, rs.BindPorts, rs.Notes)
}

// TestPlan pins the Landlock statement Plan derives from a policy, mode
// by mode (package doc): reads split around denied paths, writes only on
// the writable roots (not those inside a denyWrite), discard regions,
// the sandbox's /tmp and /dev/shm (full mode only), the device nodes,
// the pty with allowPty, /proc under strict reads, and the TCP rules.
func TestPlan(t *testing.T) {
	tree := t.TempDir()
	for _, d := range []string{"w/d/sub", "w2", "disc", "ro/secret", "ro/open"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, inDeny, disc := filepath.Join(tree, "w"), filepath.Join(tree, "w/d/sub"), filepath.Join(tree, "disc")
	secret, open := filepath.Join(tree, "ro/secret"), filepath.Join(tree, "ro/open")
	wSecret := filepath.Join(tree, "w2", "s")
	if err := os.Mkdir(wSecret, 0o755); err != nil {
		t.Fatal(err)
	}
	base := func() *policy.Policy {
		p := &policy.Policy{}
		p.Filesystem.AllowWrite = []string{w, inDeny, filepath.Join(tree, "w2")}
		p.Filesystem.DenyWrite = []string{filepath.Join(tree, "w/d")}
		p.Filesystem.DenyRead = []string{secret, wSecret}
		p.Filesystem.DiscardWrites = []string{disc}
		p.Network.Mode = "filtered"
		return p
	}
	opts := Options{ProxyPorts: []uint16{3128, 1080}, BindPorts: []uint16{8080}}

	t.Run("full", func(t *testing.T) {
		rs := Plan(base(), opts)
		acc, notDir := rulesOf(rs)
		for _, p := range []string{w, filepath.Join(tree, "w2"), disc, "/tmp", "/dev/shm"} {
			if acc[p] != Read|Write {
				t.Errorf("%s: access %#x, want read and write", p, acc[p])
			}
		}
		if acc[inDeny]&Write != 0 {
			t.Errorf("an allowWrite inside a denyWrite is writable: %#x", acc[inDeny])
		}
		if acc["/"]&accessReadFile != 0 {
			t.Errorf("/ is granted read whole despite a denied path: %#x", acc["/"])
		}
		if acc[secret] != 0 || acc[open] != Read || acc[filepath.Join(tree, "ro")] != accessReadDir {
			t.Errorf("the read split around %s: secret %#x, sibling %#x, parent %#x", secret, acc[secret], acc[open], acc[filepath.Join(tree, "ro")])
		}
		// A denied path whose parent is writable is left to the mount view.
		if !slices.ContainsFunc(rs.Notes, func(n string) bool { return strings.Contains(n, wSecret) && strings.Contains(n, "mount view") }) {
			t.Errorf("no note for %s: %q", wSecret, rs.Notes)
		}
		for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"} {
			if acc[d] != Device || !notDir[d] {
				t.Errorf("%s: access %#x notDir %v, want the device right on a file", d, acc[d], notDir[d])
			}
		}
		if _, ok := acc["/dev/pts"]; ok {
			t.Error("/dev/pts granted without allowPty")
		}
		if !rs.RestrictTCP || rs.ConnectAny || rs.BindAny || !slices.Equal(rs.ConnectPorts, opts.ProxyPorts) || !slices.Equal(rs.BindPorts, opts.BindPorts) {
			t.Errorf("TCP: %s", tcp(rs))
		}
	})
	t.Run("weaker", func(t *testing.T) {
		p := base()
		p.Network.AllowLocalBinding = true
		rs := Plan(p, Options{Weaker: true, ProxyPorts: opts.ProxyPorts})
		acc, _ := rulesOf(rs)
		if acc["/tmp"]&Write != 0 || acc["/dev/shm"]&Write != 0 {
			t.Errorf("the weaker mode has no private /tmp, yet /tmp is writable (%#x) or /dev/shm (%#x)", acc["/tmp"], acc["/dev/shm"])
		}
		// With no mount view the weaker mode always splits, also around
		// a denied path whose parent is writable (sbx refuses an existing
		// one there before planning: the writable root's own rule would
		// grant it); the full mode leaves that one to the mount view.
		only := base()
		only.Filesystem.DenyRead = []string{wSecret}
		if weak, _ := rulesOf(Plan(only, Options{Weaker: true})); weak["/"]&accessReadFile != 0 {
			t.Errorf("weaker mode: / granted read whole around %s: %#x", wSecret, weak["/"])
		}
		if full, _ := rulesOf(Plan(only, Options{})); full["/"] != Read {
			t.Errorf("full mode: / split around %s, whose parent is writable: %#x", wSecret, full["/"])
		}
		if !rs.RestrictTCP || !rs.BindAny || !slices.Equal(rs.ConnectPorts, opts.ProxyPorts) || len(rs.Notes) == 0 {
			t.Errorf("allowLocalBinding in the weaker mode: bind free, connect to the proxy only: %s", tcp(rs))
		}
	})
	t.Run("full allowLocalBinding, host network, capture", func(t *testing.T) {
		p := base()
		p.Network.AllowLocalBinding = true
		if rs := Plan(p, opts); rs.RestrictTCP {
			t.Errorf("allowLocalBinding in the full mode restricts TCP: %s", tcp(rs))
		}
		p = base()
		p.Network.Mode = "host"
		if rs := Plan(p, opts); rs.RestrictTCP {
			t.Errorf("host network restricts TCP: %s", tcp(rs))
		}
		if rs := Plan(base(), Options{Capture: true, ProxyPorts: opts.ProxyPorts}); !rs.RestrictTCP || !rs.ConnectAny || len(rs.ConnectPorts) != 0 {
			t.Errorf("capture: connect any, bind held: %s", tcp(rs))
		}
	})
	t.Run("pty, strict reads, disabled", func(t *testing.T) {
		p := base()
		p.AllowPty = true
		p.Filesystem.DenyRead = []string{"/"}
		acc, notDir := rulesOf(Plan(p, opts))
		if acc["/dev/pts"] != Device|accessReadDir || acc["/dev/ptmx"] != Device || !notDir["/dev/ptmx"] {
			t.Errorf("allowPty: /dev/pts %#x, /dev/ptmx %#x", acc["/dev/pts"], acc["/dev/ptmx"])
		}
		if _, ok := acc["/"]; ok || acc["/proc"] != Read {
			t.Errorf("strict reads: / %#x (want none), /proc %#x (want read)", acc["/"], acc["/proc"])
		}
		p = base()
		p.Filesystem.Disabled = true
		rs := Plan(p, opts)
		if len(rs.Rules) != 1 || rs.Rules[0] != (Rule{Path: "/", Access: Read | Write | Device}) {
			t.Errorf("disabled: %+v", rs.Rules)
		}
	})
}
