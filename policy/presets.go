package policy

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Toolchain presets (--preset NAME, repeatable) make one ecosystem's
// caches writable, because everything outside the declared writable paths
// is read-only and every toolchain's first run would otherwise fail on its
// cache. A preset only makes directories writable: it never opens the
// network; that is --allow-registry's job, whose domains RegistryDomains
// lists. A cache directory that does not exist yet is created by the
// caller, with mode 0700, before the sandbox starts.
//
// The directories are resolved the way each tool resolves them on Linux:
// the tool's environment variable first, then its documented default,
// using XDG_CACHE_HOME and XDG_DATA_HOME where the tool does. Resolution is
// pure: nothing is read from the filesystem and no tool is run, so a
// location set only in a tool's own configuration (.npmrc, `go env -w`,
// pip.conf, Maven's settings.xml, …) is not seen; make it writable with
// --allow-write. An environment value that is not an absolute path is
// ignored and the next candidate used, as the XDG specification requires
// and as go refuses such values ("~" is not expanded either: a shell has
// already expanded it when it was meant). The paths are cleaned but not
// resolved through symlinks; Build does that for every writable path.

// PresetNames are the preset names, in the order they are documented.
// RegistryDomains accepts the same names, and RegistryNames.
var PresetNames = []string{"node", "go", "python", "rust", "dotnet", "java"}

// PresetDir is one cache location a preset makes writable.
type PresetDir struct {
	Preset string // the preset's name, e.g. "go"
	Path   string // absolute and cleaned; not resolved through symlinks
	// Why says how Path was found: the cache's name, then the variable
	// that named it, the variable it was built from, or the default used,
	// e.g. "Go module cache (GOMODCACHE)", "Go build cache
	// ($XDG_CACHE_HOME/go-build)" or "npm cache (default ~/.npm)", followed
	// by any variable that was ignored because its value is not absolute.
	Why string
	// File says Path is a file (a lock file the tool creates empty),
	// not a directory; a missing one is created empty.
	File bool
}

// presetStep is one candidate for a cache location, tried in order.
type presetStep struct {
	env   string // environment variable; "" for the home-based default
	under string // joined to the variable's value, or to the home directory
	list  bool   // env is a path list (GOPATH); its first entry is used
	file  bool   // the location is a file, not a directory
}

// presetCache is one cache location of a preset: its name for Why and
// the candidates, most specific first.
type presetCache struct {
	what  string
	steps []presetStep
}

// presetCaches lists, for every preset, its caches in output order.
var presetCaches = map[string][]presetCache{
	"node": {
		{"npm cache", []presetStep{{env: "npm_config_cache"}, {env: "NPM_CONFIG_CACHE"}, {under: ".npm"}}},
		{"yarn v1 cache", []presetStep{{env: "YARN_CACHE_FOLDER"}, {env: "XDG_CACHE_HOME", under: "yarn"}, {under: ".cache/yarn"}}},
		{"yarn berry global folder", []presetStep{{env: "YARN_GLOBAL_FOLDER"}, {env: "XDG_DATA_HOME", under: "yarn/berry"}, {under: ".yarn/berry"}}},
		// pnpm's store is <pnpm home>/store, and its home is PNPM_HOME
		// before the XDG default (pnpm's config/src/dirs.ts getDataDir).
		{"pnpm store", []presetStep{{env: "npm_config_store_dir"}, {env: "PNPM_HOME", under: "store"}, {env: "XDG_DATA_HOME", under: "pnpm/store"}, {under: ".local/share/pnpm/store"}}},
		{"pnpm cache", []presetStep{{env: "XDG_CACHE_HOME", under: "pnpm"}, {under: ".cache/pnpm"}}},
		{"node-gyp headers", []presetStep{{env: "XDG_CACHE_HOME", under: "node-gyp"}, {under: ".cache/node-gyp"}}},
		{"node-gyp headers", []presetStep{{env: "npm_config_devdir"}}},
	},
	"go": {
		// GOCACHE=off is handled in PresetDirs.
		{"Go build cache", []presetStep{{env: "GOCACHE"}, {env: "XDG_CACHE_HOME", under: "go-build"}, {under: ".cache/go-build"}}},
		{"Go module cache", []presetStep{{env: "GOMODCACHE"}, {env: "GOPATH", under: "pkg/mod", list: true}, {under: "go/pkg/mod"}}},
		{"Go checksum database", []presetStep{{env: "GOPATH", under: "pkg/sumdb", list: true}, {under: "go/pkg/sumdb"}}},
		// The go command counts into os.UserConfigDir()/go/telemetry/local
		// on every run; only the counters, never the mode file beside it.
		{"Go telemetry counters", []presetStep{{env: "XDG_CONFIG_HOME", under: "go/telemetry/local"}, {under: ".config/go/telemetry/local"}}},
	},
	"python": {
		{"pip cache", []presetStep{{env: "PIP_CACHE_DIR"}, {env: "XDG_CACHE_HOME", under: "pip"}, {under: ".cache/pip"}}},
		{"uv cache", []presetStep{{env: "UV_CACHE_DIR"}, {env: "XDG_CACHE_HOME", under: "uv"}, {under: ".cache/uv"}}},
		{"Poetry cache", []presetStep{{env: "POETRY_CACHE_DIR"}, {env: "XDG_CACHE_HOME", under: "pypoetry"}, {under: ".cache/pypoetry"}}},
	},
	"rust": {
		{"Cargo registry", []presetStep{{env: "CARGO_HOME", under: "registry"}, {under: ".cargo/registry"}}},
		{"Cargo git checkouts", []presetStep{{env: "CARGO_HOME", under: "git"}, {under: ".cargo/git"}}},
		// Cargo's package cache locks: empty files it opens O_RDWR|O_CREAT
		// and flocks on every build, even one without dependencies.
		{"Cargo package cache lock", []presetStep{{env: "CARGO_HOME", under: ".package-cache", file: true}, {under: ".cargo/.package-cache", file: true}}},
		{"Cargo package cache lock", []presetStep{{env: "CARGO_HOME", under: ".package-cache-mutate", file: true}, {under: ".cargo/.package-cache-mutate", file: true}}},
	},
	"dotnet": {
		{"NuGet global packages", []presetStep{{env: "NUGET_PACKAGES"}, {under: ".nuget/packages"}}},
		// .NET's LocalApplicationData is $XDG_DATA_HOME, else ~/.local/share.
		{"NuGet HTTP cache", []presetStep{{env: "NUGET_HTTP_CACHE_PATH"}, {env: "XDG_DATA_HOME", under: "NuGet/v3-cache"}, {under: ".local/share/NuGet/v3-cache"}}},
	},
	"java": {
		// Maven 3 always uses ~/.m2; Maven 4 and the Maven wrapper honour
		// MAVEN_USER_HOME, so both are listed. Only the download areas:
		// settings.xml, extensions.xml, gradle.properties and init.d run
		// code or change builds outside the sandbox later.
		{"Maven repository", []presetStep{{env: "MAVEN_USER_HOME", under: "repository"}}},
		{"Maven repository", []presetStep{{under: ".m2/repository"}}},
		{"Maven wrapper", []presetStep{{env: "MAVEN_USER_HOME", under: "wrapper"}, {under: ".m2/wrapper"}}},
		{"Gradle caches", []presetStep{{env: "GRADLE_USER_HOME", under: "caches"}, {under: ".gradle/caches"}}},
		{"Gradle wrapper", []presetStep{{env: "GRADLE_USER_HOME", under: "wrapper"}, {under: ".gradle/wrapper"}}},
		{"Gradle native", []presetStep{{env: "GRADLE_USER_HOME", under: "native"}, {under: ".gradle/native"}}},
		{"Gradle daemon", []presetStep{{env: "GRADLE_USER_HOME", under: "daemon"}, {under: ".gradle/daemon"}}},
	},
}

// registryDomains lists, for every preset name, its public registries.
var registryDomains = map[string][]string{
	"node":   {"registry.npmjs.org", "registry.yarnpkg.com"},
	"go":     {"proxy.golang.org", "sum.golang.org"},
	"python": {"pypi.org", "files.pythonhosted.org"},
	"rust":   {"index.crates.io", "static.crates.io", "crates.io"},
	"dotnet": {"api.nuget.org"},
	"java":   {"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org"},
}

// RegistryNames are the registries' own names, which --allow-registry
// takes as well as the ecosystems' (PresetNames), in the order they are
// documented; registryEcosystem maps each to its ecosystem. A registry
// name opens its ecosystem's whole list: npm and yarn share one registry
// (registry.yarnpkg.com serves the npm registry), and Maven Central is
// where Gradle builds fetch their dependencies, as the Gradle plugin
// portal and distribution server are where its builds start. The Go
// module proxy is "goproxy" (or "go", the ecosystem's name).
var RegistryNames = []string{"npm", "yarn", "pypi", "crates", "nuget", "maven", "gradle", "goproxy"}

var registryEcosystem = map[string]string{
	"npm": "node", "yarn": "node", "pypi": "python", "crates": "rust",
	"nuget": "dotnet", "maven": "java", "gradle": "java", "goproxy": "go",
}

// PresetDirs resolves the cache directories of the named preset from the
// caller's environment (environ is a KEY=VALUE list, as from os.Environ;
// the first entry of a repeated name counts, as with getenv) and home
// directory. environ should be the environment the command will run with.
// If home is "", "/" or not absolute, the home-based defaults are skipped
// but environment variables are still honoured, so the result may be
// empty. Duplicate paths are listed once, where they first occur. An
// unknown name is an error that lists the known ones.
//
// The caches, in output order (a "~" default applies when the variables
// before it are unset or not absolute):
//
//   - node: npm cache npm_config_cache, NPM_CONFIG_CACHE or ~/.npm; yarn v1
//     cache YARN_CACHE_FOLDER, $XDG_CACHE_HOME/yarn or ~/.cache/yarn; yarn
//     berry global folder YARN_GLOBAL_FOLDER, $XDG_DATA_HOME/yarn/berry or
//     ~/.yarn/berry; pnpm store npm_config_store_dir, $PNPM_HOME/store,
//     $XDG_DATA_HOME/pnpm/store or ~/.local/share/pnpm/store; pnpm cache
//     $XDG_CACHE_HOME/pnpm or ~/.cache/pnpm; node-gyp headers
//     $XDG_CACHE_HOME/node-gyp or ~/.cache/node-gyp, and npm_config_devdir
//     too when it is set.
//   - go: build cache GOCACHE, $XDG_CACHE_HOME/go-build or
//     ~/.cache/go-build (none when GOCACHE=off); module cache GOMODCACHE,
//     $GOPATH/pkg/mod or ~/go/pkg/mod; checksum database $GOPATH/pkg/sumdb
//     or ~/go/pkg/sumdb; telemetry counters $XDG_CONFIG_HOME/go/telemetry/local
//     or ~/.config/go/telemetry/local. Only GOPATH's first entry is used,
//     as go does.
//   - python: pip PIP_CACHE_DIR, $XDG_CACHE_HOME/pip or ~/.cache/pip; uv
//     UV_CACHE_DIR, $XDG_CACHE_HOME/uv or ~/.cache/uv; Poetry
//     POETRY_CACHE_DIR, $XDG_CACHE_HOME/pypoetry or ~/.cache/pypoetry.
//   - rust: $CARGO_HOME/registry and $CARGO_HOME/git, and the lock files
//     $CARGO_HOME/.package-cache and .package-cache-mutate, CARGO_HOME
//     defaulting to ~/.cargo (never the whole of it: it holds config and
//     installed binaries).
//   - dotnet: NuGet global packages NUGET_PACKAGES or ~/.nuget/packages;
//     NuGet HTTP cache NUGET_HTTP_CACHE_PATH, $XDG_DATA_HOME/NuGet/v3-cache
//     or ~/.local/share/NuGet/v3-cache.
//   - java: repository of MAVEN_USER_HOME when set, and ~/.m2/repository;
//     the Maven wrapper's dists; Gradle's caches, wrapper, native and
//     daemon under GRADLE_USER_HOME or ~/.gradle (never its init.d or
//     gradle.properties, which run code in later builds).
func PresetDirs(name string, environ []string, home string) ([]PresetDir, error) {
	caches, ok := presetCaches[name]
	if !ok {
		return nil, fmt.Errorf("preset %q is unknown; use one of %s", name, strings.Join(PresetNames, ", "))
	}
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if _, seen := env[k]; ok && k != "" && !seen {
			env[k] = v
		}
	}
	home = filepath.Clean(home)
	if home == "/" || !filepath.IsAbs(home) {
		home = ""
	}
	var out []PresetDir
	seen := map[string]bool{}
	for _, c := range caches {
		if name == "go" && c.what == "Go build cache" && env["GOCACHE"] == "off" {
			continue
		}
		p, why, file := resolveCache(c, env, home)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, PresetDir{Preset: name, Path: p, Why: why, File: file})
	}
	return out, nil
}

// resolveCache returns the first of c's candidates that applies, its Why
// and whether it is a file, or "" when none does.
func resolveCache(c presetCache, env map[string]string, home string) (string, string, bool) {
	var ignored []string
	why := func(source string) string {
		if len(ignored) > 0 {
			source += "; " + strings.Join(ignored, " and ") + " not absolute, ignored"
		}
		return c.what + " (" + source + ")"
	}
	for _, s := range c.steps {
		if s.env == "" {
			if home == "" {
				continue
			}
			return filepath.Join(home, s.under), why("default ~/" + s.under), s.file
		}
		v, ok := env[s.env]
		if !ok || v == "" {
			continue
		}
		source := s.env
		if s.list {
			entries := filepath.SplitList(v)
			v = entries[0]
			if len(entries) > 1 {
				source += "[0]"
			}
		}
		if !filepath.IsAbs(v) {
			ignored = append(ignored, s.env)
			continue
		}
		if s.under != "" {
			source = "$" + source + "/" + s.under
		}
		return filepath.Join(v, s.under), why(source), s.file
	}
	return "", "", false
}

// RegistryDomains returns the public registry domains of an ecosystem,
// for --allow-registry NAME; the names are PresetNames (the ecosystems)
// and RegistryNames (the registries, each giving its ecosystem's
// domains). The slice is the caller's to keep. Nothing here contacts the
// domains. An unknown name is an error that lists both kinds.
func RegistryDomains(name string) ([]string, error) {
	eco := name
	if e, ok := registryEcosystem[name]; ok {
		eco = e
	}
	d, ok := registryDomains[eco]
	if !ok {
		return nil, fmt.Errorf("registry %q is unknown; use an ecosystem (%s) or a registry (%s)",
			name, strings.Join(PresetNames, ", "), strings.Join(RegistryNames, ", "))
	}
	return append([]string(nil), d...), nil
}
