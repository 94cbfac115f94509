//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// The built-in tables, written out: a change to policy's lists that is
// not made here too fails TestBuiltinMasksHoldForReal, which then runs
// every entry through sbx.
var (
	pinnedDenyRead = []string{
		"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube",
		"~/.docker/config.json", "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc", "~/.yarnrc.yml", "~/.yarnrc",
		"~/.config/gh", "~/.config/hub", "~/.cargo/credentials", "~/.cargo/credentials.toml",
		"~/.gem/credentials", "~/.terraform.d/credentials.tfrc.json", "~/.vault-token",
		"~/.password-store", "~/.local/share/keyrings", "~/.config/op", "~/.claude/.credentials.json",
		"~/.config/git/credentials", "~/.claude.json", "~/.codex/auth.json", "~/.gemini",
		"~/.config/containers/auth.json", "~/.config/github-copilot",
		"~/.pgpass", "~/.my.cnf", "~/.mylogin.cnf",
		"~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.local/share/fish/fish_history",
		"~/.python_history", "~/.node_repl_history", "~/.psql_history", "~/.mysql_history",
		"~/.sqlite_history", "~/.rediscli_history", "~/.irb_history", "~/.lesshst",
		"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
		"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
	}
	// pinnedCopies are the entries of pinnedDenyRead the command sees as
	// copies with their secret values masked, and the line a secret
	// takes in each (planted with SECRET as its value).
	pinnedCopies = map[string]string{
		"~/.npmrc":      "//registry.npmjs.org/:_authToken=",
		"~/.pypirc":     "[pypi]\npassword = ",
		"~/.yarnrc.yml": "npmAuthToken: ",
		"~/.yarnrc":     "\"//registry.yarnpkg.com/:_authToken\" ",
	}
	// pinnedDirs are the entries of pinnedDenyRead that are directories.
	pinnedDirs = []string{"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube",
		"~/.password-store", "~/.local/share/keyrings", "~/.config/op", "~/.config/gh", "~/.config/hub",
		"~/.gemini", "~/.config/github-copilot"}
	pinnedDeniedEnv = []string{
		"GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_PAT",
		"GITLAB_TOKEN", "GL_TOKEN", "BITBUCKET_TOKEN",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AZURE_CLIENT_SECRET", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
		"NPM_TOKEN", "NODE_AUTH_TOKEN", "YARN_NPM_AUTH_TOKEN",
		"PYPI_TOKEN", "TWINE_PASSWORD", "CARGO_REGISTRY_TOKEN",
		"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
		"OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
		"DOCKER_AUTH_CONFIG", "DOCKER_PASSWORD", "VAULT_TOKEN",
		"SLACK_TOKEN", "SLACK_BOT_TOKEN", "STRIPE_SECRET_KEY",
		"DIGITALOCEAN_ACCESS_TOKEN", "HEROKU_API_KEY", "CLOUDFLARE_API_TOKEN",
		"SSH_AUTH_SOCK",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL",
		"ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL",
		"CI_JOB_TOKEN", "CI_JOB_JWT", "CI_JOB_JWT_V1", "CI_JOB_JWT_V2", "CI_REGISTRY_PASSWORD", "CI_DEPENDENCY_PROXY_PASSWORD",
		"*_API_KEY", "*_SECRET_ACCESS_KEY", "*_AUTH_TOKEN",
		"LD_PRELOAD", "LD_AUDIT",
		"DOCKER_CONFIG", "GNUPGHOME", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
		"KUBECONFIG", "CLAUDE_CONFIG_DIR", "GH_CONFIG_DIR", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR",
		"CODEX_HOME", "REGISTRY_AUTH_FILE", "PASSWORD_STORE_DIR", "OP_CONFIG_DIR",
		"NPM_CONFIG_USERCONFIG", "NETRC", "TF_CLI_CONFIG_FILE",
		"HISTFILE", "PSQL_HISTORY", "MYSQL_HISTFILE", "NODE_REPL_HISTORY", "PYTHON_HISTORY",
		"SQLITE_HISTORY", "REDISCLI_HISTFILE", "LESSHISTFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AZURE_FEDERATED_TOKEN_FILE", "DOCKER_CERT_PATH",
		"PGPASSFILE", "MYSQL_TEST_LOGIN_FILE",
	}
	// pinnedMoved: variable, the stores under its value ("." the value
	// itself; "+list" a ':' list), "scrub" when the value is removed.
	pinnedMoved = []string{
		"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR containers/auth.json",
		"DOCKER_CONFIG config.json scrub", "GNUPGHOME . scrub", "AWS_SHARED_CREDENTIALS_FILE . scrub",
		"AWS_CONFIG_FILE . scrub", "KUBECONFIG . +list scrub", "CLAUDE_CONFIG_DIR .credentials.json .claude.json scrub",
		"GH_CONFIG_DIR . scrub", "CLOUDSDK_CONFIG . scrub", "AZURE_CONFIG_DIR . scrub", "CODEX_HOME auth.json scrub",
		"REGISTRY_AUTH_FILE . scrub", "PASSWORD_STORE_DIR . scrub", "OP_CONFIG_DIR . scrub",
		"CARGO_HOME credentials credentials.toml", "NPM_CONFIG_USERCONFIG . scrub", "NETRC . scrub",
		"TF_CLI_CONFIG_FILE . scrub", "HISTFILE . scrub", "PSQL_HISTORY . scrub", "MYSQL_HISTFILE . scrub",
		"NODE_REPL_HISTORY . scrub", "PYTHON_HISTORY . scrub", "SQLITE_HISTORY . scrub",
		"REDISCLI_HISTFILE . scrub", "LESSHISTFILE . scrub",
		"GOOGLE_APPLICATION_CREDENTIALS . scrub", "AWS_WEB_IDENTITY_TOKEN_FILE . scrub",
		"AZURE_FEDERATED_TOKEN_FILE . scrub", "DOCKER_CERT_PATH . scrub", "PGPASSFILE . scrub",
		"MYSQL_TEST_LOGIN_FILE . scrub",
	}
)

func movedShape(m policy.MovedStore) string {
	f := []string{m.Var}
	for _, u := range m.Under {
		if u == "" {
			u = "."
		}
		f = append(f, u)
	}
	if m.List {
		f = append(f, "+list")
	}
	if m.Scrub {
		f = append(f, "scrub")
	}
	return strings.Join(f, " ")
}

// TestBuiltinMasksHoldForReal: one sbx run with a fake HOME that holds
// every built-in credential location, every store moved by a variable
// (each variable pointing outside HOME), and every scrubbed variable
// set: the command reads none of the stores and sees none of the
// variables, while a plain file of the same HOME and an ordinary
// variable come through (so a broken probe cannot pass). --dry-run of
// the same run lists every mask, the /etc ones too. --pass-env brings
// a store variable back on purpose; its store stays masked.
func TestBuiltinMasksHoldForReal(t *testing.T) {
	if !slices.Equal(policy.DefaultDenyRead, pinnedDenyRead) {
		t.Fatalf("policy.DefaultDenyRead changed; pin it here:\n got %q\nwant %q", policy.DefaultDenyRead, pinnedDenyRead)
	}
	if len(policy.DefaultMaskedCopies) != len(pinnedCopies) {
		t.Fatalf("policy.DefaultMaskedCopies changed; pin it here: got %q", policy.DefaultMaskedCopies)
	}
	for d := range pinnedCopies {
		if _, ok := policy.DefaultMaskedCopies[d]; !ok {
			t.Fatalf("policy.DefaultMaskedCopies lost %s", d)
		}
	}
	if !slices.Equal(policy.DefaultDeniedEnv, pinnedDeniedEnv) {
		t.Fatalf("policy.DefaultDeniedEnv changed; pin it here:\n got %q\nwant %q", policy.DefaultDeniedEnv, pinnedDeniedEnv)
	}
	var moved []string
	for _, m := range policy.MovedStores {
		moved = append(moved, movedShape(m))
		if m.Scrub != slices.Contains(pinnedDeniedEnv, m.Var) {
			t.Errorf("%s: Scrub %v, but DefaultDeniedEnv says otherwise", m.Var, m.Scrub)
		}
	}
	if !slices.Equal(moved, pinnedMoved) {
		t.Fatalf("policy.MovedStores changed; pin it here:\n got %q\nwant %q", moved, pinnedMoved)
	}

	root := t.TempDir()
	os.Chmod(root, 0o755)
	home := filepath.Join(root, "home")
	stores := filepath.Join(root, "stores")
	var secrets []string // paths whose content must stay unread
	plant := func(p string, dir bool) {
		if dir {
			p = filepath.Join(p, "secret")
		}
		writeFile(t, p, "SECRET-"+p+"\n")
		secrets = append(secrets, p)
	}
	var copies []string // masked copies: seen, their SECRET value not
	for _, d := range pinnedDenyRead {
		if rest, ok := strings.CutPrefix(d, "~/"); ok {
			plant(filepath.Join(home, rest), slices.Contains(pinnedDirs, d))
			if line, ok := pinnedCopies[d]; ok {
				p := filepath.Join(home, rest)
				writeFile(t, p, "visible-config=COPY-"+rest+"\n"+line+"SECRET-"+p+"\n")
				copies = append(copies, "COPY-"+rest)
			}
		}
	}
	writeFile(t, filepath.Join(home, "visible.txt"), "VISIBLE-HOME\n")
	env := append(hermeticEnv(), "HOME="+home, "SBX_ORDINARY=ordinary-value")
	for _, m := range policy.MovedStores {
		val := filepath.Join(stores, m.Var)
		if m.List {
			val = filepath.Join(stores, m.Var, "a") + ":" + filepath.Join(stores, m.Var, "b")
			plant(filepath.Join(stores, m.Var, "a"), false)
			plant(filepath.Join(stores, m.Var, "b"), false)
		}
		for _, u := range m.Under {
			if u != "" || !m.List {
				plant(filepath.Join(val, u), false)
			}
		}
		var prefix string
		switch m.Var {
		case "XDG_CONFIG_HOME":
			prefix = "~/.config/"
		case "XDG_DATA_HOME":
			prefix = "~/.local/share/"
		}
		for _, d := range pinnedDenyRead {
			if rest, ok := strings.CutPrefix(d, prefix); ok && prefix != "" {
				plant(filepath.Join(val, rest), slices.Contains(pinnedDirs, d))
			}
		}
		env = append(env, m.Var+"="+val)
	}
	var scrubbed []string
	for _, v := range pinnedDeniedEnv {
		name := strings.ReplaceAll(v, "*", "SBXFAKE")
		scrubbed = append(scrubbed, name)
		if !strings.Contains(strings.Join(env, "\n"), "\n"+name+"=") {
			val := "fake-secret-" + name
			if strings.HasPrefix(name, "LD_") {
				val = "" // harmless to the dynamic loader
			}
			env = append(env, name+"="+val)
		}
	}
	var script strings.Builder
	for _, s := range secrets {
		fmt.Fprintf(&script, "grep -qs SECRET %s && echo READ %s\n", q(s), q(s))
	}
	for d := range pinnedCopies {
		fmt.Fprintf(&script, "cat %s\n", q(filepath.Join(home, d[2:])))
	}
	script.WriteString("cat \"$HOME/visible.txt\"; env\n")

	// The plan lists every mask.
	r := sbx(t, runOpts{dir: root, env: env}, "--dry-run", "--", "true")
	wantCode(t, r, 0)
	var plan struct {
		Policy struct {
			Filesystem struct{ DenyRead []string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("--dry-run: %v", err)
	}
	for _, d := range pinnedDenyRead {
		if strings.HasPrefix(d, "/") {
			if _, err := os.Lstat(d); err == nil && !slices.Contains(plan.Policy.Filesystem.DenyRead, d) {
				t.Errorf("%s is not masked", d)
			}
		}
	}
	for _, s := range secrets {
		if !slices.ContainsFunc(plan.Policy.Filesystem.DenyRead, func(d string) bool { return policy.Within(s, d) }) {
			t.Errorf("%s is under no mask", s)
		}
	}

	r = sbx(t, runOpts{dir: root, env: env}, "--", "/bin/sh", "-c", script.String())
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "VISIBLE-HOME") || !strings.Contains(r.stdout, "SBX_ORDINARY=ordinary-value") {
		t.Fatalf("the probe sees nothing at all (it proves nothing): %s", r)
	}
	for _, c := range copies {
		if !strings.Contains(r.stdout, c) {
			t.Errorf("the masked copy's configuration line %s is not seen", c)
		}
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "READ ") {
			t.Errorf("the command read a masked store: %s", line)
		}
		k, _, _ := strings.Cut(line, "=")
		if slices.Contains(scrubbed, k) {
			t.Errorf("the command sees %s", k)
		}
	}
	// On purpose: the variable comes back, the store stays masked.
	r = sbx(t, runOpts{dir: root, env: env}, "--pass-env", "DOCKER_CONFIG", "--", "/bin/sh", "-c", "echo DC=$DOCKER_CONFIG; grep -qs SECRET \"$DOCKER_CONFIG/config.json\" && echo READ; true")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "DC="+filepath.Join(stores, "DOCKER_CONFIG")) || strings.Contains(r.stdout, "READ") {
		t.Fatalf("--pass-env DOCKER_CONFIG: want the value and its store masked: %s", r)
	}
}
