// Package launch runs a command under Seatbelt on macOS: Input maps a
// Policy onto the profile generator's input (package darwin, which stays
// free of sbx's policy types), and Launch (macOS only) starts sbx's proxy
// on the host's loopback in filtered mode, generates the profile, runs
// the command with sandbox-exec and records the denials it reads back
// from the system log. It is the macOS counterpart of package sandbox,
// the Linux supervisor; what both use lives in netproxy (the proxy, its
// client environment, its denial records).
package launch

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"runtime"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/policy"
)

// Input maps the Policy onto the Seatbelt generator's input, with a
// fresh per-run message tag. proxyPorts are the loopback ports of sbx's
// proxy (filtered mode).
func Input(p *policy.Policy, proxyPorts []int) darwin.Input {
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
		AllowProtected:         p.Filesystem.AllowProtected,
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
