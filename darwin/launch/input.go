package launch

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"runtime"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/policy"
)

// DarwinInput maps the Policy onto the Seatbelt generator's input, with a
// fresh per-run message tag. proxyPorts are the loopback ports of sbx's
// proxy (filtered mode).
func DarwinInput(p *policy.Policy, proxyPorts []int) darwin.Input {
	tmp := []string{"/private/tmp"}
	if runtime.GOOS == "darwin" {
		tmp = append(tmp, os.TempDir())
	}
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	return darwin.Input{
		AllowRead: p.Filesystem.AllowRead, DenyRead: p.Filesystem.DenyRead,
		AllowWrite: p.Filesystem.AllowWrite, DenyWrite: p.Filesystem.DenyWrite,
		TempDirs:               tmp,
		AllowGitConfig:         p.Filesystem.AllowGitConfig,
		ProxyPorts:             proxyPorts,
		AllowLocalBinding:      p.Network.AllowLocalBinding,
		AllowUnixSockets:       p.Network.AllowUnixSockets,
		AllowAllUnixSockets:    p.Network.AllowAllUnixSockets,
		AllowPty:               p.AllowPty,
		AllowMachLookup:        p.Network.AllowMachLookup,
		WeakerNetworkIsolation: p.EnableWeakerNetworkIsolation,
		AllowAppleEvents:       p.AllowAppleEvents,
		Tag:                    "sbx-" + hex.EncodeToString(tag[:]),
	}
}
