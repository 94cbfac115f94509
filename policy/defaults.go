package policy

import (
	"path/filepath"
	"strings"
)

// DefaultDenyRead lists credential locations denied for reading by default.
// "~/" is the caller's home directory. An AllowRead entry naming one of
// them (or a path inside it) re-opens it.
var DefaultDenyRead = []string{
	"~/.ssh",
	"~/.aws",
	"~/.gnupg",
	"~/.config/gcloud",
	"~/.azure",
	"~/.kube",
	"~/.docker/config.json",
	"~/.netrc",
	"~/.git-credentials",
	"~/.npmrc",
	"~/.pypirc",
	"~/.yarnrc.yml",
	"~/.yarnrc",
	"~/.config/gh",
	"~/.config/hub",
	"~/.cargo/credentials",
	"~/.cargo/credentials.toml",
	"~/.gem/credentials",
	"~/.terraform.d/credentials.tfrc.json",
	"~/.vault-token",
	"~/.password-store",
	"~/.local/share/keyrings",
	"~/.config/op",
	"~/.claude/.credentials.json",
	// Stores added since: git's XDG credential store, the agents'
	// tokens (Claude Code's OAuth account, Codex, Gemini, Copilot), and
	// podman's / buildah's registry logins.
	"~/.config/git/credentials",
	"~/.claude.json",
	"~/.codex/auth.json",
	"~/.gemini",
	"~/.config/containers/auth.json",
	"~/.config/github-copilot",
	// Database clients' passwords (PostgreSQL, MySQL / MariaDB).
	"~/.pgpass",
	"~/.my.cnf",
	"~/.mylogin.cnf",
	// Shell and REPL histories: passwords typed on command lines
	// (mysql -pSECRET, export TOKEN=…, curl -u user:pass) and SQL with
	// data in it.
	"~/.bash_history",
	"~/.zsh_history",
	"~/.zhistory",
	"~/.local/share/fish/fish_history",
	"~/.python_history",
	"~/.node_repl_history",
	"~/.psql_history",
	"~/.mysql_history",
	"~/.sqlite_history",
	"~/.rediscli_history",
	"~/.irb_history",
	"~/.lesshst",
	"/etc/shadow",
	"/etc/gshadow",
	"/etc/shadow-",
	"/etc/gshadow-",
	"/etc/sudoers",
	"/etc/ssh/ssh_host_rsa_key",
	"/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key",
}

// DefaultMaskedCopies are the entries of DefaultDenyRead that hold the
// user's configuration besides secrets, and the format of each: where it
// can (Filesystem.MaskedCopies), the sandbox shows a copy with the
// secret values masked rather than hiding the file. ~/.netrc holds only
// credentials and stays hidden whole.
var DefaultMaskedCopies = map[string]string{
	"~/.npmrc":      "npmrc",
	"~/.pypirc":     "pypirc",
	"~/.yarnrc.yml": "yarnrc",
	"~/.yarnrc":     "yarnrc1",
}

// DefaultDeniedEnv lists environment variables removed before the command
// starts unless kept with --pass-env. Entries may be globs (path.Match).
var DefaultDeniedEnv = []string{
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
	// CI runners' own credentials: GitHub's OIDC and runtime tokens
	// (a job with id-token: write mints cloud credentials with them),
	// GitLab's job token and JWTs.
	"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL",
	"ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL",
	"CI_JOB_TOKEN", "CI_JOB_JWT", "CI_JOB_JWT_V1", "CI_JOB_JWT_V2", "CI_REGISTRY_PASSWORD", "CI_DEPENDENCY_PROXY_PASSWORD",
	"*_API_KEY", "*_SECRET_ACCESS_KEY", "*_AUTH_TOKEN",
	"LD_PRELOAD", "LD_AUDIT",
	// The variables that move a credential store (MovedStores, Scrub):
	// their values tell the command where the store is.
	"DOCKER_CONFIG", "GNUPGHOME", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
	"KUBECONFIG", "CLAUDE_CONFIG_DIR", "GH_CONFIG_DIR", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR",
	"CODEX_HOME", "REGISTRY_AUTH_FILE", "PASSWORD_STORE_DIR", "OP_CONFIG_DIR",
	"NPM_CONFIG_USERCONFIG", "NETRC", "TF_CLI_CONFIG_FILE",
	"HISTFILE", "PSQL_HISTORY", "MYSQL_HISTFILE", "NODE_REPL_HISTORY", "PYTHON_HISTORY",
	"SQLITE_HISTORY", "REDISCLI_HISTFILE", "LESSHISTFILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AZURE_FEDERATED_TOKEN_FILE", "DOCKER_CERT_PATH",
	"PGPASSFILE", "MYSQL_TEST_LOGIN_FILE",
}

// MovedStore is a variable that moves credential stores away from their
// default paths, and the stores under its value.
type MovedStore struct {
	Var string
	// Under are the stores, relative to the value ("" the value itself).
	Under []string
	// List: the value is a list of paths (KUBECONFIG, split on ':').
	List bool
	// Scrub: the variable is in DefaultDeniedEnv (its value does not
	// enter the sandbox unless --pass-env or --set-env gives it). The
	// XDG base directories and CARGO_HOME are not scrubbed: every tool
	// reads its ordinary config or toolchain through them, and the
	// masks follow them anyway.
	Scrub bool
}

// MovedStores are the variables that move a credential store: the
// caller's value of each is masked as DefaultDenyRead's default path is,
// so a store moved out of HOME stays hidden. The XDG base directories
// move every "~/.config/…" ("~/.local/share/…") entry of DefaultDenyRead
// with them, besides the stores listed here.
var MovedStores = []MovedStore{
	{Var: "XDG_CONFIG_HOME"},
	{Var: "XDG_DATA_HOME"},
	{Var: "XDG_RUNTIME_DIR", Under: []string{"containers/auth.json"}},
	{Var: "DOCKER_CONFIG", Under: []string{"config.json"}, Scrub: true},
	{Var: "GNUPGHOME", Under: []string{""}, Scrub: true},
	{Var: "AWS_SHARED_CREDENTIALS_FILE", Under: []string{""}, Scrub: true},
	{Var: "AWS_CONFIG_FILE", Under: []string{""}, Scrub: true},
	{Var: "KUBECONFIG", Under: []string{""}, List: true, Scrub: true},
	{Var: "CLAUDE_CONFIG_DIR", Under: []string{".credentials.json", ".claude.json"}, Scrub: true},
	{Var: "GH_CONFIG_DIR", Under: []string{""}, Scrub: true},
	{Var: "CLOUDSDK_CONFIG", Under: []string{""}, Scrub: true},
	{Var: "AZURE_CONFIG_DIR", Under: []string{""}, Scrub: true},
	{Var: "CODEX_HOME", Under: []string{"auth.json"}, Scrub: true},
	{Var: "REGISTRY_AUTH_FILE", Under: []string{""}, Scrub: true},
	{Var: "PASSWORD_STORE_DIR", Under: []string{""}, Scrub: true},
	{Var: "OP_CONFIG_DIR", Under: []string{""}, Scrub: true},
	{Var: "CARGO_HOME", Under: []string{"credentials", "credentials.toml"}},
	{Var: "NPM_CONFIG_USERCONFIG", Under: []string{""}, Scrub: true},
	{Var: "NETRC", Under: []string{""}, Scrub: true},
	{Var: "TF_CLI_CONFIG_FILE", Under: []string{""}, Scrub: true},
	{Var: "HISTFILE", Under: []string{""}, Scrub: true},
	{Var: "PSQL_HISTORY", Under: []string{""}, Scrub: true},
	{Var: "MYSQL_HISTFILE", Under: []string{""}, Scrub: true},
	{Var: "NODE_REPL_HISTORY", Under: []string{""}, Scrub: true},
	{Var: "PYTHON_HISTORY", Under: []string{""}, Scrub: true},
	{Var: "SQLITE_HISTORY", Under: []string{""}, Scrub: true},
	{Var: "REDISCLI_HISTFILE", Under: []string{""}, Scrub: true},
	{Var: "LESSHISTFILE", Under: []string{""}, Scrub: true},
	// Variables that name a credential file themselves: a service
	// account key, a workload-identity token, Docker's TLS client keys,
	// the database clients' password files.
	{Var: "GOOGLE_APPLICATION_CREDENTIALS", Under: []string{""}, Scrub: true},
	{Var: "AWS_WEB_IDENTITY_TOKEN_FILE", Under: []string{""}, Scrub: true},
	{Var: "AZURE_FEDERATED_TOKEN_FILE", Under: []string{""}, Scrub: true},
	{Var: "DOCKER_CERT_PATH", Under: []string{""}, Scrub: true},
	{Var: "PGPASSFILE", Under: []string{""}, Scrub: true},
	{Var: "MYSQL_TEST_LOGIN_FILE", Under: []string{""}, Scrub: true},
}

// movedStorePaths are the stores the variables of environ move
// (MovedStores), as absolute clean paths. A value that is not absolute,
// or that names "/" or lies in /dev or /proc (HISTFILE=/dev/null), is
// skipped: there is no store to hide, and a mask there would hide the
// sandbox's own devices.
func movedStorePaths(environ []string) []string {
	val := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			val[k] = v
		}
	}
	var out []string
	add := func(p string) {
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			return
		}
		p = filepath.Clean(p)
		if p == "/" || Within(p, "/dev") || Within(p, "/proc") {
			return
		}
		out = append(out, p)
	}
	for _, m := range MovedStores {
		v := val[m.Var]
		if v == "" {
			continue
		}
		vs := []string{v}
		if m.List {
			vs = strings.Split(v, ":")
		}
		for _, v := range vs {
			if !filepath.IsAbs(v) {
				continue
			}
			for _, u := range m.Under {
				add(filepath.Join(v, u))
			}
			var prefix string
			switch m.Var {
			case "XDG_CONFIG_HOME":
				prefix = "~/.config/"
			case "XDG_DATA_HOME":
				prefix = "~/.local/share/"
			}
			for _, d := range DefaultDenyRead {
				if rest, ok := strings.CutPrefix(d, prefix); ok && prefix != "" {
					add(filepath.Join(v, rest))
				}
			}
		}
	}
	return dedupe(out)
}
