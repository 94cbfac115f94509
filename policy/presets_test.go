package policy

import (
	"reflect"
	"strings"
	"testing"
)

// presetWant builds the expected result of one preset from path, why pairs.
func presetWant(preset string, pathWhy ...string) []PresetDir {
	var out []PresetDir
	for i := 0; i < len(pathWhy); i += 2 {
		out = append(out, PresetDir{Preset: preset, Path: pathWhy[i], Why: pathWhy[i+1]})
	}
	return out
}

// cargoLocks are the rust preset's two lock files in CARGO_HOME dir,
// found from source ("default ~/.cargo" or "$CARGO_HOME").
func cargoLocks(dir, source string) []PresetDir {
	var out []PresetDir
	for _, f := range []string{".package-cache", ".package-cache-mutate"} {
		out = append(out, PresetDir{Preset: "rust", Path: dir + "/" + f, Why: "Cargo package cache lock (" + source + "/" + f + ")", File: true})
	}
	return out
}

func TestPresetDirs(t *testing.T) {
	const home = "/home/u"
	tests := []struct {
		name    string
		preset  string
		environ []string
		home    string
		want    []PresetDir
	}{
		// Defaults under the home directory, empty environment.
		{"node defaults", "node", nil, home, presetWant("node",
			"/home/u/.npm", "npm cache (default ~/.npm)",
			"/home/u/.cache/yarn", "yarn v1 cache (default ~/.cache/yarn)",
			"/home/u/.yarn/berry", "yarn berry global folder (default ~/.yarn/berry)",
			"/home/u/.local/share/pnpm/store", "pnpm store (default ~/.local/share/pnpm/store)",
			"/home/u/.cache/pnpm", "pnpm cache (default ~/.cache/pnpm)",
			"/home/u/.cache/node-gyp", "node-gyp headers (default ~/.cache/node-gyp)",
		)},
		{"go defaults", "go", nil, home, presetWant("go",
			"/home/u/.cache/go-build", "Go build cache (default ~/.cache/go-build)",
			"/home/u/go/pkg/mod", "Go module cache (default ~/go/pkg/mod)",
			"/home/u/go/pkg/sumdb", "Go checksum database (default ~/go/pkg/sumdb)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},
		{"python defaults", "python", nil, home, presetWant("python",
			"/home/u/.cache/pip", "pip cache (default ~/.cache/pip)",
			"/home/u/.cache/uv", "uv cache (default ~/.cache/uv)",
			"/home/u/.cache/pypoetry", "Poetry cache (default ~/.cache/pypoetry)",
		)},
		{"rust defaults", "rust", nil, home, append(presetWant("rust",
			"/home/u/.cargo/registry", "Cargo registry (default ~/.cargo/registry)",
			"/home/u/.cargo/git", "Cargo git checkouts (default ~/.cargo/git)",
		), cargoLocks("/home/u/.cargo", "default ~/.cargo")...)},
		{"dotnet defaults", "dotnet", nil, home, presetWant("dotnet",
			"/home/u/.nuget/packages", "NuGet global packages (default ~/.nuget/packages)",
			"/home/u/.local/share/NuGet/v3-cache", "NuGet HTTP cache (default ~/.local/share/NuGet/v3-cache)",
		)},
		{"java defaults", "java", nil, home, presetWant("java",
			"/home/u/.m2/repository", "Maven repository (default ~/.m2/repository)",
			"/home/u/.m2/wrapper", "Maven wrapper (default ~/.m2/wrapper)",
			"/home/u/.gradle/caches", "Gradle caches (default ~/.gradle/caches)",
			"/home/u/.gradle/wrapper", "Gradle wrapper (default ~/.gradle/wrapper)",
			"/home/u/.gradle/native", "Gradle native (default ~/.gradle/native)",
			"/home/u/.gradle/daemon", "Gradle daemon (default ~/.gradle/daemon)",
		)},
		{"home with trailing slash", "rust", nil, "/home/u/", append(presetWant("rust",
			"/home/u/.cargo/registry", "Cargo registry (default ~/.cargo/registry)",
			"/home/u/.cargo/git", "Cargo git checkouts (default ~/.cargo/git)",
		), cargoLocks("/home/u/.cargo", "default ~/.cargo")...)},

		// Every variable set; values are cleaned.
		{"node all variables", "node", []string{
			"npm_config_cache=/c/npm/", "NPM_CONFIG_CACHE=/c/NPM", "YARN_CACHE_FOLDER=/c/yarn",
			"YARN_GLOBAL_FOLDER=/c/berry", "npm_config_store_dir=/c/store", "PNPM_HOME=/c/pnpmhome",
			"XDG_CACHE_HOME=/x/cache", "XDG_DATA_HOME=/x/data", "npm_config_devdir=/c//gyp",
		}, home, presetWant("node",
			"/c/npm", "npm cache (npm_config_cache)",
			"/c/yarn", "yarn v1 cache (YARN_CACHE_FOLDER)",
			"/c/berry", "yarn berry global folder (YARN_GLOBAL_FOLDER)",
			"/c/store", "pnpm store (npm_config_store_dir)",
			"/x/cache/pnpm", "pnpm cache ($XDG_CACHE_HOME/pnpm)",
			"/x/cache/node-gyp", "node-gyp headers ($XDG_CACHE_HOME/node-gyp)",
			"/c/gyp", "node-gyp headers (npm_config_devdir)",
		)},
		{"node upper-case npm cache and PNPM_HOME", "node", []string{
			"NPM_CONFIG_CACHE=/c/NPM", "PNPM_HOME=/c/pnpmhome", "XDG_DATA_HOME=/x/data",
		}, home, presetWant("node",
			"/c/NPM", "npm cache (NPM_CONFIG_CACHE)",
			"/home/u/.cache/yarn", "yarn v1 cache (default ~/.cache/yarn)",
			"/x/data/yarn/berry", "yarn berry global folder ($XDG_DATA_HOME/yarn/berry)",
			"/c/pnpmhome/store", "pnpm store ($PNPM_HOME/store)",
			"/home/u/.cache/pnpm", "pnpm cache (default ~/.cache/pnpm)",
			"/home/u/.cache/node-gyp", "node-gyp headers (default ~/.cache/node-gyp)",
		)},
		{"go all variables", "go", []string{
			"GOCACHE=/c/gobuild", "GOMODCACHE=/c/gomod", "GOPATH=/c/gopath", "XDG_CACHE_HOME=/x/cache",
		}, home, presetWant("go",
			"/c/gobuild", "Go build cache (GOCACHE)",
			"/c/gomod", "Go module cache (GOMODCACHE)",
			"/c/gopath/pkg/sumdb", "Go checksum database ($GOPATH/pkg/sumdb)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},
		{"python all variables", "python", []string{
			"PIP_CACHE_DIR=/c/pip", "UV_CACHE_DIR=/c/uv", "POETRY_CACHE_DIR=/c/poetry", "XDG_CACHE_HOME=/x/cache",
		}, home, presetWant("python",
			"/c/pip", "pip cache (PIP_CACHE_DIR)",
			"/c/uv", "uv cache (UV_CACHE_DIR)",
			"/c/poetry", "Poetry cache (POETRY_CACHE_DIR)",
		)},
		{"rust all variables", "rust", []string{"CARGO_HOME=/c/cargo"}, home, append(presetWant("rust",
			"/c/cargo/registry", "Cargo registry ($CARGO_HOME/registry)",
			"/c/cargo/git", "Cargo git checkouts ($CARGO_HOME/git)",
		), cargoLocks("/c/cargo", "$CARGO_HOME")...)},
		{"dotnet all variables", "dotnet", []string{
			"NUGET_PACKAGES=/c/nuget", "NUGET_HTTP_CACHE_PATH=/c/http", "XDG_DATA_HOME=/x/data",
		}, home, presetWant("dotnet",
			"/c/nuget", "NuGet global packages (NUGET_PACKAGES)",
			"/c/http", "NuGet HTTP cache (NUGET_HTTP_CACHE_PATH)",
		)},
		{"java all variables", "java", []string{"MAVEN_USER_HOME=/c/m2", "GRADLE_USER_HOME=/c/gradle"}, home, presetWant("java",
			"/c/m2/repository", "Maven repository ($MAVEN_USER_HOME/repository)",
			"/home/u/.m2/repository", "Maven repository (default ~/.m2/repository)",
			"/c/m2/wrapper", "Maven wrapper ($MAVEN_USER_HOME/wrapper)",
			"/c/gradle/caches", "Gradle caches ($GRADLE_USER_HOME/caches)",
			"/c/gradle/wrapper", "Gradle wrapper ($GRADLE_USER_HOME/wrapper)",
			"/c/gradle/native", "Gradle native ($GRADLE_USER_HOME/native)",
			"/c/gradle/daemon", "Gradle daemon ($GRADLE_USER_HOME/daemon)",
		)},

		// XDG base directories honoured where the tool honours them.
		{"go XDG_CACHE_HOME", "go", []string{"XDG_CACHE_HOME=/x/cache"}, home, presetWant("go",
			"/x/cache/go-build", "Go build cache ($XDG_CACHE_HOME/go-build)",
			"/home/u/go/pkg/mod", "Go module cache (default ~/go/pkg/mod)",
			"/home/u/go/pkg/sumdb", "Go checksum database (default ~/go/pkg/sumdb)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},
		{"python XDG_CACHE_HOME", "python", []string{"XDG_CACHE_HOME=/x/cache/"}, home, presetWant("python",
			"/x/cache/pip", "pip cache ($XDG_CACHE_HOME/pip)",
			"/x/cache/uv", "uv cache ($XDG_CACHE_HOME/uv)",
			"/x/cache/pypoetry", "Poetry cache ($XDG_CACHE_HOME/pypoetry)",
		)},
		{"dotnet XDG_DATA_HOME", "dotnet", []string{"XDG_DATA_HOME=/x/data", "XDG_CACHE_HOME=/x/cache"}, home, presetWant("dotnet",
			"/home/u/.nuget/packages", "NuGet global packages (default ~/.nuget/packages)",
			"/x/data/NuGet/v3-cache", "NuGet HTTP cache ($XDG_DATA_HOME/NuGet/v3-cache)",
		)},
		{"rust ignores XDG", "rust", []string{"XDG_CACHE_HOME=/x/cache", "XDG_DATA_HOME=/x/data"}, home, append(presetWant("rust",
			"/home/u/.cargo/registry", "Cargo registry (default ~/.cargo/registry)",
			"/home/u/.cargo/git", "Cargo git checkouts (default ~/.cargo/git)",
		), cargoLocks("/home/u/.cargo", "default ~/.cargo")...)},

		// Go specifics.
		{"GOCACHE=off skipped", "go", []string{"GOCACHE=off", "XDG_CACHE_HOME=/x/cache"}, home, presetWant("go",
			"/home/u/go/pkg/mod", "Go module cache (default ~/go/pkg/mod)",
			"/home/u/go/pkg/sumdb", "Go checksum database (default ~/go/pkg/sumdb)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},
		{"GOPATH first entry", "go", []string{"GOPATH=/g/one:/g/two"}, home, presetWant("go",
			"/home/u/.cache/go-build", "Go build cache (default ~/.cache/go-build)",
			"/g/one/pkg/mod", "Go module cache ($GOPATH[0]/pkg/mod)",
			"/g/one/pkg/sumdb", "Go checksum database ($GOPATH[0]/pkg/sumdb)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},
		{"GOPATH first entry relative", "go", []string{"GOPATH=rel:/g/two"}, home, presetWant("go",
			"/home/u/.cache/go-build", "Go build cache (default ~/.cache/go-build)",
			"/home/u/go/pkg/mod", "Go module cache (default ~/go/pkg/mod; GOPATH not absolute, ignored)",
			"/home/u/go/pkg/sumdb", "Go checksum database (default ~/go/pkg/sumdb; GOPATH not absolute, ignored)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},

		// Values that are not absolute are ignored.
		{"relative values ignored", "go", []string{
			"GOCACHE=cache", "XDG_CACHE_HOME=~/.cache", "GOMODCACHE=./mod", "GOPATH=/g",
		}, home, presetWant("go",
			"/home/u/.cache/go-build", "Go build cache (default ~/.cache/go-build; GOCACHE and XDG_CACHE_HOME not absolute, ignored)",
			"/g/pkg/mod", "Go module cache ($GOPATH/pkg/mod; GOMODCACHE not absolute, ignored)",
			"/g/pkg/sumdb", "Go checksum database ($GOPATH/pkg/sumdb)",
			"/home/u/.config/go/telemetry/local", "Go telemetry counters (default ~/.config/go/telemetry/local)",
		)},
		{"relative npm cache falls through", "node", []string{
			"npm_config_cache=npm", "NPM_CONFIG_CACHE=/c/NPM", "npm_config_devdir=gyp", "PNPM_HOME=pnpm",
		}, home, presetWant("node",
			"/c/NPM", "npm cache (NPM_CONFIG_CACHE; npm_config_cache not absolute, ignored)",
			"/home/u/.cache/yarn", "yarn v1 cache (default ~/.cache/yarn)",
			"/home/u/.yarn/berry", "yarn berry global folder (default ~/.yarn/berry)",
			"/home/u/.local/share/pnpm/store", "pnpm store (default ~/.local/share/pnpm/store; PNPM_HOME not absolute, ignored)",
			"/home/u/.cache/pnpm", "pnpm cache (default ~/.cache/pnpm)",
			"/home/u/.cache/node-gyp", "node-gyp headers (default ~/.cache/node-gyp)",
		)},
		{"relative and empty values, no home", "python", []string{
			"PIP_CACHE_DIR=pip", "UV_CACHE_DIR=", "XDG_CACHE_HOME=/x/cache",
		}, "", presetWant("python",
			"/x/cache/pip", "pip cache ($XDG_CACHE_HOME/pip; PIP_CACHE_DIR not absolute, ignored)",
			"/x/cache/uv", "uv cache ($XDG_CACHE_HOME/uv)",
			"/x/cache/pypoetry", "Poetry cache ($XDG_CACHE_HOME/pypoetry)",
		)},

		// No usable home: only explicit variables count.
		{"home empty", "node", []string{"YARN_CACHE_FOLDER=/c/yarn"}, "", presetWant("node",
			"/c/yarn", "yarn v1 cache (YARN_CACHE_FOLDER)",
		)},
		{"home root", "java", []string{"GRADLE_USER_HOME=/c/gradle"}, "/", presetWant("java",
			"/c/gradle/caches", "Gradle caches ($GRADLE_USER_HOME/caches)",
			"/c/gradle/wrapper", "Gradle wrapper ($GRADLE_USER_HOME/wrapper)",
			"/c/gradle/native", "Gradle native ($GRADLE_USER_HOME/native)",
			"/c/gradle/daemon", "Gradle daemon ($GRADLE_USER_HOME/daemon)",
		)},
		{"home relative", "rust", nil, "home/u", nil},
		{"home empty, XDG set", "go", []string{"XDG_CACHE_HOME=/x/cache", "GOPATH=/g"}, "", presetWant("go",
			"/x/cache/go-build", "Go build cache ($XDG_CACHE_HOME/go-build)",
			"/g/pkg/mod", "Go module cache ($GOPATH/pkg/mod)",
			"/g/pkg/sumdb", "Go checksum database ($GOPATH/pkg/sumdb)",
		)},
		{"home empty, nothing set", "dotnet", nil, "", nil},

		// Duplicates are listed once, where they first occur.
		{"dedupe node", "node", []string{
			"npm_config_cache=/c/shared", "YARN_CACHE_FOLDER=/c/shared/", "XDG_CACHE_HOME=/x/cache",
			"npm_config_devdir=/x/cache/node-gyp",
		}, "", presetWant("node",
			"/c/shared", "npm cache (npm_config_cache)",
			"/x/cache/pnpm", "pnpm cache ($XDG_CACHE_HOME/pnpm)",
			"/x/cache/node-gyp", "node-gyp headers ($XDG_CACHE_HOME/node-gyp)",
		)},
		{"dedupe java", "java", []string{"MAVEN_USER_HOME=/home/u/.m2"}, home, presetWant("java",
			"/home/u/.m2/repository", "Maven repository ($MAVEN_USER_HOME/repository)",
			"/home/u/.m2/wrapper", "Maven wrapper ($MAVEN_USER_HOME/wrapper)",
			"/home/u/.gradle/caches", "Gradle caches (default ~/.gradle/caches)",
			"/home/u/.gradle/wrapper", "Gradle wrapper (default ~/.gradle/wrapper)",
			"/home/u/.gradle/native", "Gradle native (default ~/.gradle/native)",
			"/home/u/.gradle/daemon", "Gradle daemon (default ~/.gradle/daemon)",
		)},

		// The environment: first occurrence wins, malformed entries skipped.
		{"environ first occurrence", "rust", []string{"junk", "=/x", "CARGO_HOME=/c/one", "CARGO_HOME=/c/two"}, home, append(presetWant("rust",
			"/c/one/registry", "Cargo registry ($CARGO_HOME/registry)",
			"/c/one/git", "Cargo git checkouts ($CARGO_HOME/git)",
		), cargoLocks("/c/one", "$CARGO_HOME")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PresetDirs(tt.preset, tt.environ, tt.home)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PresetDirs(%q, %q, %q):\n got %s\nwant %s", tt.preset, tt.environ, tt.home, showPresetDirs(got), showPresetDirs(tt.want))
			}
		})
	}
}

// showPresetDirs prints one PresetDir a line, for readable failures.
func showPresetDirs(ds []PresetDir) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n  " + d.Preset + " " + d.Path + " " + d.Why)
	}
	return b.String()
}

func TestPresetNamesAllResolve(t *testing.T) {
	for _, name := range PresetNames {
		ds, err := PresetDirs(name, nil, "/home/u")
		if err != nil || len(ds) == 0 {
			t.Errorf("PresetDirs(%q) = %v, %v; want defaults", name, ds, err)
		}
		for _, d := range ds {
			if d.Preset != name || !strings.HasPrefix(d.Path, "/home/u/") || d.Why == "" {
				t.Errorf("PresetDirs(%q): bad entry %+v", name, d)
			}
		}
		if doms, err := RegistryDomains(name); err != nil || len(doms) == 0 {
			t.Errorf("RegistryDomains(%q) = %v, %v; want domains", name, doms, err)
		}
	}
	if len(presetCaches) != len(PresetNames) || len(registryDomains) != len(PresetNames) {
		t.Errorf("%d presets and %d registries for %d names", len(presetCaches), len(registryDomains), len(PresetNames))
	}
}

func TestPresetUnknown(t *testing.T) {
	for _, name := range []string{"", "Node", "ruby", "golang"} {
		ds, err := PresetDirs(name, nil, "/home/u")
		want := `preset "` + name + `" is unknown; use one of node, go, python, rust, dotnet, java`
		if err == nil || err.Error() != want || ds != nil {
			t.Errorf("PresetDirs(%q) = %v, %v; want error %q", name, ds, err, want)
		}
	}
}

func TestRegistryDomains(t *testing.T) {
	want := map[string][]string{
		"node":   {"registry.npmjs.org", "registry.yarnpkg.com"},
		"go":     {"proxy.golang.org", "sum.golang.org"},
		"python": {"pypi.org", "files.pythonhosted.org"},
		"rust":   {"index.crates.io", "static.crates.io", "crates.io"},
		"dotnet": {"api.nuget.org"},
		"java":   {"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org"},
	}
	for name, w := range want {
		got, err := RegistryDomains(name)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("RegistryDomains(%q) = %q, %v; want %q", name, got, err, w)
		}
	}
	// A registry's own name gives its ecosystem's domains.
	for reg, eco := range map[string]string{
		"npm": "node", "yarn": "node", "pypi": "python", "crates": "rust", "nuget": "dotnet",
		"maven": "java", "gradle": "java", "goproxy": "go",
	} {
		got, err := RegistryDomains(reg)
		if err != nil || !reflect.DeepEqual(got, want[eco]) {
			t.Errorf("RegistryDomains(%q) = %q, %v; want %s's %q", reg, got, err, eco, want[eco])
		}
	}
	if len(RegistryNames) != len(registryEcosystem) {
		t.Errorf("RegistryNames %q and registryEcosystem %v differ", RegistryNames, registryEcosystem)
	}
	// The result is the caller's: changing it changes nothing here.
	got, _ := RegistryDomains("go")
	got[0] = "evil.example"
	if again, _ := RegistryDomains("go"); again[0] != "proxy.golang.org" {
		t.Errorf("RegistryDomains shares its slice: got %q after a caller's change", again)
	}
}

func TestRegistryUnknown(t *testing.T) {
	for _, name := range []string{"", "NPM", "PYTHON", "npmjs", "golang"} {
		d, err := RegistryDomains(name)
		want := `registry "` + name + `" is unknown; use an ecosystem (node, go, python, rust, dotnet, java) or a registry (npm, yarn, pypi, crates, nuget, maven, gradle, goproxy)`
		if err == nil || err.Error() != want || d != nil {
			t.Errorf("RegistryDomains(%q) = %v, %v; want error %q", name, d, err, want)
		}
	}
}
