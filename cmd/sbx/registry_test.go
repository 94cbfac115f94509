//go:build linux

package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestAllowRegistryNames: --allow-registry takes a registry's own name
// (npm, pypi) as well as its ecosystem's (node, python), and both open the
// same domains; an unknown name is refused (exit 125, nothing run) with
// both kinds of name listed.
func TestAllowRegistryNames(t *testing.T) {
	domains := func(args ...string) []string {
		t.Helper()
		r := sbx(t, runOpts{}, append(args, "--dry-run", "--", "true")...)
		if r.code != 0 {
			t.Fatalf("sbx %q --dry-run: %s", args, r)
		}
		var dry struct {
			Policy struct {
				Network struct {
					AllowedDomains []string `json:"allowedDomains"`
				} `json:"network"`
			} `json:"policy"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &dry); err != nil {
			t.Fatalf("--dry-run: %v\n%s", err, r.stdout)
		}
		return dry.Policy.Network.AllowedDomains
	}
	byRegistry := domains("--allow-registry", "npm", "--allow-registry", "pypi")
	byEcosystem := domains("--allow-registry", "node", "--allow-registry", "python")
	want := []string{"registry.npmjs.org", "registry.yarnpkg.com", "pypi.org", "files.pythonhosted.org"}
	if !reflect.DeepEqual(byRegistry, want) || !reflect.DeepEqual(byEcosystem, want) {
		t.Errorf("npm+pypi: %q, node+python: %q; want both %q", byRegistry, byEcosystem, want)
	}

	r := sbx(t, runOpts{}, "--allow-registry", "npmjs", "--", "sh", "-c", "echo ran")
	if r.code != 125 || strings.Contains(r.stdout, "ran") ||
		!strings.Contains(r.stderr, `registry "npmjs" is unknown; use an ecosystem (node, go, python, rust, dotnet, java) or a registry (npm, yarn, pypi, crates, nuget, maven, gradle, goproxy)`) {
		t.Errorf("an unknown registry: %s", r)
	}
}
