package policy

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
	"/etc/shadow",
	"/etc/gshadow",
	"/etc/shadow-",
	"/etc/gshadow-",
	"/etc/sudoers",
	"/etc/ssh/ssh_host_rsa_key",
	"/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key",
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
}
