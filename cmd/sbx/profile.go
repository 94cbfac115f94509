package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/policy"
)

// darwinInput maps the Policy onto the Seatbelt generator's input.
func darwinInput(p *policy.Policy) darwin.Input {
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

func printProfile(p *policy.Policy, stdout, stderr io.Writer) int {
	prof, err := darwin.Profile(darwinInput(p))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprint(stdout, prof)
	return 0
}
