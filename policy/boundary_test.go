package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The trust boundary and "managed wins", composed: each test stacks a
// user's (or managed) file with a repository's and checks what the
// repository's file may not do: route the user's token, choose where
// traffic leaves, re-open what the user denies, replace the user's
// command gate. The generated cases of internal/oracle cover the
// filesystem half (allowRead from a layer in the tree) as well.

// mustFail builds in and wants an error holding every one of want, on
// one line.
func mustFail(t *testing.T, in Input, want ...string) {
	t.Helper()
	_, err := Build(in)
	if err == nil {
		t.Fatalf("built; want an error with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error on more than one line: %q", err)
	}
}

// treeSettings is an Input whose --settings file, in srt's shape with
// body, lies in the working tree (the repository's), and that file.
func treeSettings(t *testing.T, body string) (Input, string) {
	t.Helper()
	in := input(t)
	f := filepath.Join(in.Cwd, "s.json")
	mustWrite(t, f, srtFile(body))
	in.Settings = []string{f}
	return in, f
}

func mustBuild(t *testing.T, in Input) *Policy {
	t.Helper()
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const maskToken = `"credentials": {"envVars": [{"name": "MYTOKEN", "mode": "mask"}]}`

func TestUntrustedDomainsGetNoCredentials(t *testing.T) {
	in := input(t)
	user := filepath.Join(t.TempDir(), "user.json")
	mustWrite(t, user, srtFile(`"network": {"allowedDomains": ["good.test"]}, `+maskToken))
	repo := filepath.Join(in.Cwd, ".sbx.json")
	mustWrite(t, repo, srtFile(`"network": {"allowedDomains": ["evil.test"]}`))
	in.AllowDomains = []string{"flag.test"}
	in.AllowRegistry = []string{"npm"}
	for _, order := range [][]string{{user, repo}, {repo, user}} {
		in.Settings = order
		p := mustBuild(t, in)
		if !slices.Contains(p.Network.AllowedDomains, "evil.test") {
			t.Errorf("the repository's domain is not reachable: %v", p.Network.AllowedDomains)
		}
		if slices.Contains(p.Network.TrustedDomains, "evil.test") {
			t.Errorf("the repository's domain would get the token: %v", p.Network.TrustedDomains)
		}
		for _, d := range []string{"good.test", "flag.test", "registry.npmjs.org"} {
			if !slices.Contains(p.Network.TrustedDomains, d) {
				t.Errorf("%s is not an injection target: %v", d, p.Network.TrustedDomains)
			}
		}
		if !slices.ContainsFunc(p.Notes, func(n string) bool {
			return strings.Contains(n, repo) && strings.Contains(n, "no injected credentials")
		}) {
			t.Errorf("no note names the repository's domains: %q", p.Notes)
		}
	}
	in.TrustProjectSettings = true
	if p := mustBuild(t, in); !slices.Contains(p.Network.TrustedDomains, "evil.test") {
		t.Errorf("trusted, the repository's domain is no injection target: %v", p.Network.TrustedDomains)
	}
}

func TestRoutingNeedsTrust(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "m.sock")
	ln := listenUnix(t, sock)
	defer ln.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	mustWrite(t, ca, "not read before the trust check")
	for key, body := range map[string]string{
		"network.parentProxy":  `"network": {"parentProxy": {"http": "http://127.0.0.1:3128"}}`,
		"network.mitmProxy":    `"network": {"mitmProxy": {"socketPath": "` + sock + `", "domains": ["a.test"]}}`,
		"network.tlsTerminate": `"network": {"tlsTerminate": {"extraCaCertPaths": ["` + ca + `"]}}`,
		"allowUnixSockets":     `"network": {"allowUnixSockets": ["` + sock + `"]}`,
	} {
		t.Run(key, func(t *testing.T) {
			in, f := treeSettings(t, body)
			mustFail(t, in, f, key, "--trust-project-settings")
			in.TrustProjectSettings = true
			if _, err := Build(in); err != nil && strings.Contains(err.Error(), "--trust-project-settings") {
				t.Errorf("trusted, still refused: %v", err)
			}
		})
	}
	// tlsTerminate's excludeDomains turns tunnels opaque (no
	// same-target check, no injection): trust too.
	in := input(t)
	f := filepath.Join(in.Cwd, "s.json")
	mustWrite(t, f, srtFile(`"network": {"tlsTerminate": {"excludeDomains": ["*"]}}`))
	in.Settings = []string{f}
	mustFail(t, in, f, "network.tlsTerminate", "--trust-project-settings")
	// And when the managed settings terminate, no other file's
	// excludeDomains turns it off.
	in = input(t)
	m := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, m, `{"sandbox": {"network": {"allowedDomains": ["a.test"], "tlsTerminate": {"excludeDomains": ["b.test"]}}}}`)
	u := filepath.Join(t.TempDir(), "u.json")
	mustWrite(t, u, srtFile(`"network": {"tlsTerminate": {"excludeDomains": ["*"]}}`))
	in.ManagedSettings, in.Settings = m, []string{u}
	p := mustBuild(t, in)
	if tt := p.Network.TLSTerminate; tt == nil || !slices.Equal(tt.ExcludeDomains, []string{"b.test"}) {
		t.Errorf("managed termination undone: %+v", tt)
	}
}

func TestManagedDeniedAddressesKeepTheProxyChoice(t *testing.T) {
	in := input(t)
	managed := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, managed, `{"sandbox": {"network": {"deniedResolvedAddresses": ["127.0.0.0/8"]}}}`)
	in.ManagedSettings = managed
	user := filepath.Join(t.TempDir(), "user.json")
	mustWrite(t, user, srtFile(`"network": {"parentProxy": {"http": "http://127.0.0.1:3128"}}`))
	in.Settings = []string{user}
	mustFail(t, in, user, "parentProxy", "managed")
	// The managed settings may choose one themselves.
	mustWrite(t, managed, `{"sandbox": {"network": {"deniedResolvedAddresses": ["127.0.0.0/8"], "parentProxy": {"http": "http://10.0.0.1:3128"}}}}`)
	in.Settings = nil
	mustBuild(t, in)
	// Without denied addresses, the user's file may.
	mustWrite(t, managed, `{"sandbox": {"network": {"deniedDomains": ["x.test"]}}}`)
	in.Settings = []string{user}
	mustBuild(t, in)
}

func TestUntrustedAllowReadReopens(t *testing.T) {
	setup := func(t *testing.T) (Input, string) {
		in := input(t)
		for _, d := range []string{".ssh", "private"} {
			if err := os.MkdirAll(filepath.Join(in.Home, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		mustWrite(t, filepath.Join(in.Home, "private", "notes"), "x")
		mustWrite(t, filepath.Join(in.Home, ".claude", "settings.json"), `{"sandbox": {"filesystem": {"denyRead": ["~/private"]}}}`)
		in.ClaudeSettings, in.ClaudeDir = true, in.Cwd
		return in, filepath.Join(in.Cwd, ".claude", "settings.json")
	}
	for _, c := range []struct {
		name, repo string
		refused    bool
	}{
		{"a built-in mask", `{"sandbox": {"filesystem": {"allowRead": ["~/.ssh"]}}}`, true},
		{"inside a built-in mask", `{"sandbox": {"filesystem": {"allowRead": ["~/.ssh/config"]}}}`, true},
		{"the user's deny", `{"sandbox": {"filesystem": {"allowRead": ["~/private"]}}}`, true},
		{"inside the user's deny", `{"sandbox": {"filesystem": {"allowRead": ["~/private/notes"]}}}`, true},
		{"its own deny", `{"sandbox": {"filesystem": {"denyRead": ["./a"], "allowRead": ["./a/b"]}}}`, false},
		{"around a mask (the mask stays)", `{"sandbox": {"filesystem": {"allowRead": ["~"]}}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, repo := setup(t)
			mustWrite(t, repo, c.repo)
			if !c.refused {
				mustBuild(t, in)
				return
			}
			mustFail(t, in, repo, "allowRead", "--trust-project-settings")
			in.TrustProjectSettings = true
			mustBuild(t, in)
			// The user naming the same grant makes it theirs.
			in.TrustProjectSettings = false
			var grant struct {
				Sandbox struct {
					Filesystem struct{ AllowRead []string } `json:"filesystem"`
				} `json:"sandbox"`
			}
			mustUnmarshal(t, c.repo, &grant)
			in.AllowRead = grant.Sandbox.Filesystem.AllowRead
			mustBuild(t, in)
		})
	}
}

func TestRepositoryMayNotReplaceTheGate(t *testing.T) {
	in := input(t)
	user := filepath.Join(t.TempDir(), "gate.json")
	mustWrite(t, user, srtFile(`"commands": {"enabled": true}`))
	repo := filepath.Join(in.Cwd, "gate.json")
	mustWrite(t, repo, srtFile(`"commands": {"deniedWords": ["terraform"]}`))
	in.Settings = []string{user, repo}
	mustFail(t, in, repo, "command gate", user)
	// A gate where the user has none only narrows; a later user file
	// replaces the repository's.
	in.Settings = []string{repo}
	mustBuild(t, in)
	in.Settings = []string{repo, user}
	mustBuild(t, in)
	in.Settings, in.TrustProjectSettings = []string{user, repo}, true
	mustBuild(t, in)
}

func TestDuplicateKeysRefused(t *testing.T) {
	for _, body := range []string{
		`{"network": {}, "filesystem": {"denyRead": ["./s"], "denyRead": []}}`,
		`{"network": {}, "filesystem": {}, "filesystem": {}}`,
		`{"sandbox": {"filesystem": {}}, "permissions": {"deny": ["Read(./s)"], "deny": []}}`,
	} {
		in := input(t)
		f := filepath.Join(t.TempDir(), "s.json")
		mustWrite(t, f, body)
		in.Settings = []string{f}
		mustFail(t, in, f, "twice")
	}
}

func TestEmptyFlagValues(t *testing.T) {
	for flag, set := range map[string]func(*Input){
		"--allow-read":        func(in *Input) { in.AllowRead = []string{""} },
		"--deny-read":         func(in *Input) { in.DenyRead = []string{""} },
		"--allow-write":       func(in *Input) { in.AllowWrite = []string{""} },
		"--deny-write":        func(in *Input) { in.DenyWrite = []string{" "} },
		"--discard-writes":    func(in *Input) { in.DiscardWrites = []string{""} },
		"--allow-domain":      func(in *Input) { in.AllowDomains = []string{""} },
		"--deny-domain":       func(in *Input) { in.DenyDomains = []string{""} },
		"--allow-unix-socket": func(in *Input) { in.AllowUnixSockets = []string{""} },
	} {
		in := input(t)
		set(&in)
		mustFail(t, in, flag, "empty")
	}
}

func TestDenyWriteThroughALinkInAWritableRoot(t *testing.T) {
	in := input(t)
	real := filepath.Join(in.Cwd, "real")
	mustWrite(t, filepath.Join(real, "cfg.json"), "{}")
	if err := os.Symlink(filepath.Join(real, "cfg.json"), filepath.Join(in.Cwd, "cfg.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(in.Cwd, "cfgdir")); err != nil {
		t.Fatal(err)
	}
	in.AllowWrite = []string{"."}
	for _, e := range []string{"./cfg.json", "./cfgdir/cfg.json", "./cfgdir/*.json"} {
		in.DenyWrite = []string{e}
		mustFail(t, in, "symlink inside a writable place", e)
	}
	// The real path is fine, and so is a link outside the writable root.
	in.DenyWrite = []string{"./real/cfg.json"}
	mustBuild(t, in)
	in.AllowWrite = []string{"./real"}
	in.DenyWrite = []string{"./cfg.json"}
	mustBuild(t, in)
}

func TestDeclaredReadsKeepManagedDenies(t *testing.T) {
	in := input(t)
	managed := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, managed, `{"sandbox": {"filesystem": {"denyRead": ["//"], "allowRead": ["//usr", "//bin", "//lib", "//lib64"]}}}`)
	in.ManagedSettings, in.Reads = managed, "declared"
	p := mustBuild(t, in)
	for _, a := range p.Filesystem.AllowRead {
		if Within(a, "/etc") || a == "/sbin" {
			t.Errorf("--reads declared re-opened %s under a managed deny of /", a)
		}
	}
}

func TestManagedHomeDeniesHoldAtBothHomes(t *testing.T) {
	in := input(t)
	in.PasswdHome = t.TempDir()
	for _, h := range []string{in.Home, in.PasswdHome} {
		mustWrite(t, filepath.Join(h, ".bashrc"), "x")
		mustWrite(t, filepath.Join(h, "notes"), "x")
	}
	managed := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, managed, `{"permissions": {"deny": ["Read(~/.bashrc)"]}, "sandbox": {"filesystem": {"denyRead": ["~/notes"]}}}`)
	in.ManagedSettings = managed
	p := mustBuild(t, in)
	for _, h := range []string{in.Home, in.PasswdHome} {
		for _, f := range []string{".bashrc", "notes"} {
			if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(h, f)) {
				t.Errorf("%s/%s not denied: %v", h, f, p.Filesystem.DenyRead)
			}
		}
	}
}

func TestDenyGlobMustListWhatItCouldMatch(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists every directory; run as an unprivileged user")
	}
	in := input(t)
	hid := filepath.Join(in.Cwd, "hid")
	mustWrite(t, filepath.Join(hid, "k.pem"), "x")
	shut := filepath.Join(in.Cwd, "shut")
	mustWrite(t, filepath.Join(shut, "k.pem"), "x")
	if err := os.Chmod(hid, 0o311); err != nil { // enterable, not listable
		t.Fatal(err)
	}
	if err := os.Chmod(shut, 0o000); err != nil { // neither: the command cannot reach it
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(hid, 0o755); os.Chmod(shut, 0o755) })
	in.DenyRead = []string{"./**/*.pem"}
	mustFail(t, in, hid, "cannot list")
	os.Chmod(hid, 0o755)
	p := mustBuild(t, in)
	if !slices.Contains(p.Filesystem.DenyRead, filepath.Join(hid, "k.pem")) {
		t.Errorf("listable again, k.pem not denied: %v", p.Filesystem.DenyRead)
	}
	// An allow pattern may skip what it cannot list.
	os.Chmod(hid, 0o311)
	in.DenyRead, in.AllowRead = nil, []string{"./**/*.pem"}
	mustBuild(t, in)
}

func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}

func TestProxyFlagsBesideNetNone(t *testing.T) {
	for flag, set := range map[string]func(*Input){
		"--allow-domain":   func(in *Input) { in.AllowDomains = []string{"a.test"} },
		"--allow-registry": func(in *Input) { in.AllowRegistry = []string{"npm"} },
		"--tls-terminate":  func(in *Input) { in.TLSTerminate = true },
	} {
		in := input(t)
		in.NetMode = "none"
		set(&in)
		mustFail(t, in, flag, "--net none")
		in.NetMode = "filtered"
		mustBuild(t, in)
	}
	// A settings file's domains under --net none: the caller runs offline.
	in := input(t)
	f := filepath.Join(t.TempDir(), "s.json")
	mustWrite(t, f, srtFile(`"network": {"allowedDomains": ["a.test"]}`))
	in.Settings, in.NetMode = []string{f}, "none"
	if p := mustBuild(t, in); p.Network.Mode != "none" {
		t.Errorf("mode %s", p.Network.Mode)
	}
}

// TestRepositoryWritesStayInTheTree: a repository's file may make its
// own tree writable, not a path outside it (~/.local/bin is code the
// host runs), in any spelling; nor make .git/config writable or search
// less deep for protected names.
func TestRepositoryWritesStayInTheTree(t *testing.T) {
	in := input(t)
	bin := filepath.Join(in.Home, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(in.Cwd, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	in.ClaudeSettings, in.ClaudeDir = true, in.Cwd
	proj := filepath.Join(in.Cwd, ".claude", "settings.json")
	for _, c := range []struct{ body, key string }{
		{`{"sandbox": {"filesystem": {"allowWrite": ["~/.local/bin"]}}}`, "allowWrite"},
		{`{"permissions": {"allow": ["Edit(~/.local/bin/**)"]}}`, "allowWrite"},
		{`{"permissions": {"additionalDirectories": ["~/.local/bin"]}}`, "allowWrite"},
		{`{"sandbox": {"filesystem": {"allowGitConfig": true}}}`, "allowGitConfig"},
		{`{"sandbox": {"filesystem": {"allowProtected": [".vscode"]}}}`, "allowProtected"},
		{`{"sandbox": {"mandatoryDenySearchDepth": 1}}`, "mandatoryDenySearchDepth"},
	} {
		mustWrite(t, proj, c.body)
		mustFail(t, in, proj, c.key, "--trust-project-settings")
		in.TrustProjectSettings = true
		mustBuild(t, in)
		in.TrustProjectSettings = false
	}
	// Inside the tree, or a deeper search: fine. The user's own grant of
	// the same path makes it theirs.
	for _, body := range []string{
		`{"sandbox": {"filesystem": {"allowWrite": ["./out"]}}}`,
		`{"permissions": {"allow": ["Edit(./out/**)"]}}`,
		`{"sandbox": {"mandatoryDenySearchDepth": 5}}`,
	} {
		mustWrite(t, proj, body)
		mustBuild(t, in)
	}
	mustWrite(t, proj, `{"sandbox": {"filesystem": {"allowWrite": ["~/.local/bin"]}}}`)
	in.AllowWrite = []string{bin}
	mustBuild(t, in)
}

// TestTrustBoundaryIndirectRoutes: less direct ways around the trust
// boundary: presets and macOS keys, a user scope inside the tree, a
// submodule taken for the end of the checkout.
func TestTrustBoundaryIndirectRoutes(t *testing.T) {
	t.Run("presets and macOS keys need trust", func(t *testing.T) {
		for key, body := range map[string]string{
			"presets":                 `"presets": ["go"]`,
			"allowAppleEvents":        `"allowAppleEvents": true`,
			"network.allowMachLookup": `"network": {"allowMachLookup": ["com.apple.*"]}`,
		} {
			in, f := treeSettings(t, body)
			mustFail(t, in, f, key, "--trust-project-settings")
			in.TrustProjectSettings = true
			mustBuild(t, in)
		}
		// --preset on the command line is the user's.
		in := input(t)
		in.Presets = []string{"go"}
		mustBuild(t, in)
	})
	t.Run("a user scope inside the tree is the tree's", func(t *testing.T) {
		in := input(t)
		conf := filepath.Join(in.Cwd, "conf")
		mustWrite(t, filepath.Join(conf, "settings.json"), `{"sandbox": {"filesystem": {"disabled": true}}}`)
		in.ClaudeSettings, in.ClaudeDir = true, in.Cwd
		in.Environ = append(in.Environ, "CLAUDE_CONFIG_DIR="+conf)
		mustFail(t, in, "filesystem.disabled", "--trust-project-settings")
		// Outside the tree it is the user's, as before.
		out := t.TempDir()
		mustWrite(t, filepath.Join(out, "settings.json"), `{"sandbox": {"filesystem": {"disabled": true}}}`)
		in.Environ[len(in.Environ)-1] = "CLAUDE_CONFIG_DIR=" + out
		mustBuild(t, in)
	})
	t.Run("a submodule does not end the checkout", func(t *testing.T) {
		in := input(t)
		super := filepath.Join(t.TempDir(), "super")
		sub := filepath.Join(super, "sub")
		if err := os.MkdirAll(filepath.Join(super, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/sub\n")
		f := filepath.Join(super, ".sbx.json")
		mustWrite(t, f, srtFile(`"filesystem": {"disabled": true}, "network": {}`))
		in.Cwd, in.Settings = sub, []string{f}
		mustFail(t, in, "filesystem.disabled", "--trust-project-settings")
	})
}

// TestManagedFilesystemRulesInAnyForm: a managed layer's filesystem
// rules keep a non-managed filesystem.disabled from dropping them in
// every form: a credentials file, the search depth, a permission rule
// that matches nothing yet (each left fsKeys false before).
func TestManagedFilesystemRulesInAnyForm(t *testing.T) {
	for _, managed := range []string{
		`{"sandbox": {"credentials": {"files": [{"path": "/etc/hostname", "mode": "deny"}]}}}`,
		`{"sandbox": {"mandatoryDenySearchDepth": 10}}`,
		`{"permissions": {"deny": ["Read(//nothing-here-yet/**/*.key)"]}}`,
	} {
		in := input(t)
		m := filepath.Join(t.TempDir(), "managed.json")
		mustWrite(t, m, managed)
		in.ManagedSettings = m
		f := filepath.Join(t.TempDir(), "u.json")
		mustWrite(t, f, srtFile(`"filesystem": {"disabled": true}, "network": {}`))
		in.Settings = []string{f}
		if p := mustBuild(t, in); p.Filesystem.Disabled {
			t.Errorf("managed %s: a user's filesystem.disabled dropped it", managed)
		}
	}
}

// TestWritableRootsInsideDenies: composed layers. A repository's
// writable root inside a trusted deny re-opens reading (the mount view
// binds it): refused, as its allowRead is. Under
// allowManagedReadPathsOnly a non-managed writable root inside a deny is
// dropped, as a non-managed allowRead is. A mask of a file inside a
// managed deny (a denyRead, or a managed credentials.files deny) would
// hand the command a copy: refused.
func TestWritableRootsInsideDenies(t *testing.T) {
	setup := func(t *testing.T) Input {
		in := input(t)
		mustWrite(t, filepath.Join(in.Cwd, "secret", "sub", "x.txt"), "x")
		return in
	}
	t.Run("a repository's allowWrite inside the user's deny", func(t *testing.T) {
		for _, body := range []string{
			`{"sandbox": {"filesystem": {"allowWrite": ["./secret/sub"]}}}`,
			`{"permissions": {"allow": ["Edit(./secret/sub/**)"]}}`,
			`{"permissions": {"additionalDirectories": ["./secret/sub"]}}`,
		} {
			in := setup(t)
			in.DenyRead = []string{"./secret"}
			in.ClaudeSettings, in.ClaudeDir = true, in.Cwd
			proj := filepath.Join(in.Cwd, ".claude", "settings.json")
			mustWrite(t, proj, body)
			mustFail(t, in, proj, "allowWrite", "--trust-project-settings")
			in.TrustProjectSettings = true
			mustBuild(t, in)
		}
	})
	t.Run("allowManagedReadPathsOnly drops a writable root inside a deny", func(t *testing.T) {
		in := setup(t)
		m := filepath.Join(t.TempDir(), "managed.json")
		mustWrite(t, m, `{"sandbox": {"filesystem": {"allowManagedReadPathsOnly": true}}}`)
		in.ManagedSettings = m
		in.DenyRead, in.AllowWrite = []string{"./secret"}, []string{"./secret/sub", "."}
		p := mustBuild(t, in)
		if slices.Contains(p.Filesystem.AllowWrite, filepath.Join(in.Cwd, "secret", "sub")) || !slices.Contains(p.Filesystem.AllowWrite, in.Cwd) {
			t.Errorf("allowWrite %v", p.Filesystem.AllowWrite)
		}
	})
	t.Run("a mask inside a managed deny", func(t *testing.T) {
		for _, managed := range []string{
			`{"sandbox": {"filesystem": {"denyRead": ["./secret"]}}}`,
			`{"sandbox": {"credentials": {"files": [{"path": "./secret/sub/x.txt", "mode": "deny"}]}}}`,
		} {
			in := setup(t)
			m := filepath.Join(t.TempDir(), "managed.json")
			mustWrite(t, m, managed)
			u := filepath.Join(t.TempDir(), "u.json")
			mustWrite(t, u, srtFile(`"credentials": {"files": [{"path": "`+filepath.Join(in.Cwd, "secret", "sub", "x.txt")+`", "mode": "mask", "extract": "(ZZZ)", "onExtractNoMatch": "warn"}]}`))
			in.ManagedSettings, in.Settings = m, []string{u}
			mustFail(t, in, "credentials.files", "managed")
		}
	})
}

func TestManagedPlaintextInjectFalseWins(t *testing.T) {
	in := input(t)
	m := filepath.Join(t.TempDir(), "managed.json")
	mustWrite(t, m, `{"sandbox": {"credentials": {"allowPlaintextInject": false}}}`)
	u := filepath.Join(t.TempDir(), "u.json")
	mustWrite(t, u, srtFile(`"credentials": {"allowPlaintextInject": true, "envVars": [{"name": "MYTOK", "mode": "mask"}]}`))
	in.ManagedSettings, in.Settings = m, []string{u}
	if p := mustBuild(t, in); p.Credentials == nil || p.Credentials.AllowPlaintextInject {
		t.Errorf("a managed false lost: %+v", p.Credentials)
	}
	// Without the managed key, the user's true stands.
	mustWrite(t, m, `{"sandbox": {"credentials": {}}}`)
	if p := mustBuild(t, in); p.Credentials == nil || !p.Credentials.AllowPlaintextInject {
		t.Errorf("the user's true lost: %+v", p.Credentials)
	}
}

// TestCAKeyWithAnotherLinkRefused: the deny of a CA key is by path, so a
// second hard link beside it would stay readable in the sandbox.
func TestCAKeyWithAnotherLinkRefused(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, kp := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	mustWrite(t, cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	mustWrite(t, kp, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})))
	in := input(t)
	f := filepath.Join(t.TempDir(), "s.json")
	mustWrite(t, f, srtFile(`"network": {"allowedDomains": ["a.test"], "tlsTerminate": {"caCertPath": "`+cert+`", "caKeyPath": "`+kp+`"}}`))
	in.Settings = []string{f}
	if p := mustBuild(t, in); !slices.Contains(p.Filesystem.DenyRead, kp) {
		t.Fatalf("the key is not denied: %v", p.Filesystem.DenyRead)
	}
	if err := os.Link(kp, filepath.Join(dir, "backup.key")); err != nil {
		t.Fatal(err)
	}
	mustFail(t, in, "caKeyPath", "hard links")
}

// TestTrustCheckVariants: the trust checks against spellings that might
// slip past them: keys a decoder folds together, a link in the tree with
// .. after it, --set-env of a masked variable in the weaker mode.
func TestTrustCheckVariants(t *testing.T) {
	t.Run("keys that a decoder folds together are duplicates", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(t.TempDir(), "s.json")
		mustWrite(t, f, `{"network": {}, "filesystem": {"denyRead": [{"path": "/etc/hostname", "PATH": "/nothing"}]}}`)
		in.Settings = []string{f}
		mustFail(t, in, f, "PATH", "twice")
	})
	t.Run("a link in the tree and .. after it", func(t *testing.T) {
		in := input(t)
		if err := os.MkdirAll(filepath.Join(in.Cwd, "a", "b", "c"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(in.Cwd, "a", "b", "c"), filepath.Join(in.Cwd, "deep")); err != nil {
			t.Fatal(err)
		}
		evil := filepath.Join(in.Cwd, "a", "evil.json")
		mustWrite(t, evil, srtFile(`"filesystem": {"disabled": true}, "network": {}`))
		// deep/../../evil.json is a/evil.json to the kernel, and
		// outside the tree to filepath.Clean.
		in.Settings = []string{filepath.Join(in.Cwd, "deep") + "/../../evil.json"}
		mustFail(t, in, "filesystem.disabled", "--trust-project-settings")
	})
	t.Run("--set-env of a masked variable in the weaker mode", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(t.TempDir(), "s.json")
		mustWrite(t, f, srtFile(`"credentials": {"envVars": [{"name": "MYTOK", "mode": "mask"}]}`))
		in.Settings, in.SetEnv, in.WeakerNested = []string{f}, []string{"MYTOK=s3cret"}, true
		mustFail(t, in, "--set-env MYTOK", "--weaker-nested")
		in.WeakerNested = false
		mustBuild(t, in)
	})
}
