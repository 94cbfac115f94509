package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHostNetKeepsNetworkRules: --net host bypasses the proxy, so a
// network rule that a settings file states would stop holding without a
// word. A managed rule of any kind, and a deny of any file, refuse the
// run; an allow list alone (which --net host widens on purpose) is a
// note. Without --net host each of these files builds.
func TestHostNetKeepsNetworkRules(t *testing.T) {
	cases := []struct {
		name    string
		managed bool
		network string
		want    string // "" = builds, with the note
	}{
		{"managed allow list", true, `{"allowedDomains": ["ok.test"]}`, "managed settings' network rule (allowedDomains ok.test)"},
		{"managed deny", true, `{"deniedDomains": ["evil.test"]}`, "managed settings' network rule (deniedDomains evil.test)"},
		{"managed domains only", true, `{"allowManagedDomainsOnly": true}`, "allowManagedDomainsOnly"},
		{"managed resolved deny", true, `{"deniedResolvedAddresses": ["10.0.0.0/8"]}`, "deniedResolvedAddresses 10.0.0.0/8"},
		{"user deny", false, `{"deniedDomains": ["evil.test"]}`, "ignore deniedDomains evil.test of "},
		{"user resolved deny", false, `{"deniedResolvedAddresses": ["10.0.0.0/8"]}`, "ignore deniedResolvedAddresses 10.0.0.0/8"},
		{"user allow list", false, `{"allowedDomains": ["ok.test"]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input(t)
			f := filepath.Join(t.TempDir(), "s.json")
			mustWrite(t, f, srtFile(`"network": `+c.network))
			if c.managed {
				in.ManagedSettings = f
			} else {
				in.Settings = []string{f}
			}
			mustBuild(t, in) // the file alone is fine
			in.NetMode = "host"
			if c.want != "" {
				mustFail(t, in, c.want, "drop --net host")
				return
			}
			p := mustBuild(t, in)
			if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "do nothing") }) {
				t.Errorf("no note that the allow list does nothing: %q", p.Notes)
			}
		})
	}
}
