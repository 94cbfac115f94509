package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// newRoot makes a project directory with a few files and a symlink that
// points outside it, and returns the root and the outside directory.
func newRoot(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "proj")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{"cmd/server", "src/Api", "scripts", "dist", filepath.Join("..", "outside")} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"scripts/dev.sh", "package.json", filepath.Join("..", "outside", "secret")} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/Api", filepath.Join(root, "api")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// rulesOf returns the distinct rules of findings, in order.
func rulesOf(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	return out
}

const (
	L = RuleLength
	C = RuleCharset
	M = RuleMetachars
	S = RuleStructure
	P = RulePrefix
	D = RuleDeniedWords
	F = RulePaths // files
)

var commandTable = []struct {
	cmd   string
	rules []string // nil: acceptable
}{
	// Acceptable: the documented passes first.
	{"npm run dev", nil},
	{"npm run build -- --watch", nil},
	{"pnpm run test", nil},
	{"yarn dev", nil},
	{"dotnet watch --project src/Api", nil},
	{"cargo test", nil},
	{"go build ./cmd/server", nil},
	{"yarn run dev", nil},
	{"yarn test -- --coverage", nil},
	{"NPM RUN dev", nil},
	{`npm run "dev"`, nil},
	{"npm run 'build' -- --port=3000", nil},
	{"npm run test -- --grep 'adds numbers'", nil},
	{"dotnet run", nil},
	{"dotnet test --filter Category=Unit", nil},
	{"dotnet build -c Release", nil},
	{"dotnet watch run --project src/Api", nil},
	{"cargo run --release -- --port 8080", nil},
	{"cargo build --target x86_64-unknown-linux-gnu", nil},
	{"cargo watch -x test", nil},
	{"go test ./...", nil},
	{"go run ./cmd/server --addr :8080", nil},
	{"go test -run TestFoo ./cmd/", nil},
	{"go build -o dist/server ./cmd/server", nil},
	{"  npm run dev  ", nil},
	{"npm run lint -- '// @ts-ignore'", nil},
	{"npm run x -- /dev/null", nil},
	{"npm run x -- --out=dist/app.js", nil},
	{"npm run x -- KEY=value", nil},
	{"npm run format-check", nil},
	{"pnpm run e2e -- --project=chromium", nil},
	{"npm run x -- user@example.com", nil},
	{"npm run x -- a,b,c 50% +1", nil},
	{"npm run dev -- --host 0.0.0.0", nil},
	{"npm run x -- http://localhost:3000/api", nil},
	{"npm run x -- api/index.js", nil},
	{"go build ./cmd/", nil},

	// Refused: the documented failures.
	{"npm install", []string{P}},
	{"node server.js", []string{P, D}},
	{"bash scripts/dev.sh", []string{P, D}},
	{"npm run dev && npm run api", []string{C, M, S, P}},
	{"npm run x -- git pull", []string{D}},
	{"cat '/etc/passwd'", []string{P, F}},
	{"go run ../x", []string{F}},
	{"npm run build \u2014 --watch", []string{C, P}},
	{"npm run build \u2013watch", []string{C, P}},
	{"npm\trun dev", []string{C}},
	{"npm run dev\t", []string{C}},

	// Metacharacters and structure.
	{"npm run dev; rm -rf /", []string{C, M, S, P, D, F}},
	{"npm run dev ;", []string{C, M, S}},
	{"npm run dev | tee log", []string{C, M, S, P}},
	{"npm run dev > out.txt", []string{C, M, S, P}},
	{"npm run dev < in.txt", []string{C, M, S, P}},
	{"npm run dev &", []string{C, M, S, P}},
	{"npm run dev || true", []string{C, M, S, P}},
	{"cargo test -- --nocapture 2>&1", []string{C, M, S, P}},
	{"npm run dev <<EOF\nx\nEOF", []string{C, M, S, P}},
	{"npm run $SCRIPT", []string{C, M, S, P}},
	{"npm run ${SCRIPT}", []string{C, M, S, P}},
	{"npm run `id`", []string{C, M, S, P}},
	{"npm run $(id)", []string{C, M, S, P}},
	{`npm run "$(id)"`, []string{C, M, S, P}},
	{"(npm run dev)", []string{C, M, S, P}},
	{"npm run dev\nnpm run api", []string{C, M, S, P}},
	{"npm run dev\r", []string{C, M}},
	{"npm run x -- 'a;b'", []string{C, M}},
	{"FOO=bar npm run dev", []string{S, P}},
	{"export X=1", []string{S, P}},
	{"time npm run dev", []string{S, P}},
	{"! npm run dev", []string{C, S, P}},
	{"npm run x -- *", []string{C, S}},
	{"npm run x?", []string{C, S}},
	{"npm run x -- a{b,c}", []string{C, S}},
	{"npm run x -- # comment", []string{C, S}},
	{"npm run x -- \"unterminated", []string{S, P}},
	{"npm run x -- $'a'", []string{C, M, S, P}},
	{"{ npm run dev; }", []string{C, M, S, P}},

	// Prefixes.
	{"npx vite", []string{P, D}},
	{"npm run", []string{P}},
	{"npm run -- dev", []string{P}},
	{"npm run dev --prefix=x", []string{P}},
	{"npm run --script-shell=bash dev", []string{P, D}},
	{"npm test", []string{P}},
	{"yarn add -- left-pad", []string{P}},
	{"yarn install", []string{P}},
	{"yarn dlx create-app", []string{P}},
	{"pnpm install", []string{P}},
	{"pnpm dev", []string{P}},
	{"dotnet publish", []string{P}},
	{"dotnet", []string{P}},
	{"cargo install ripgrep", []string{P}},
	{"go get example.com/x", []string{P}},
	{"go vet ./...", []string{P}},
	{"make test", []string{P}},

	// Denied words.
	{"python3 -m http.server", []string{P, D}},
	{"sudo npm run dev", []string{P, D}},
	{"npm run x -- GIT pull", []string{D}},
	{`npm run x -- g"i"t`, []string{D}},
	{`npm run x -- g\it`, []string{D}},
	{"npm run x -- --exec=curl", []string{D}},
	{"npm run x -- node_modules/.bin/node", []string{D}},
	{"npm run x -- powershell.exe -c x", []string{D}},
	{"npm run x -- WSL.EXE", []string{D}},
	{"npm run format", []string{D}},
	{"npm run open", []string{D}},
	{"go test -exec=sh ./...", []string{D}},

	// Paths.
	{"npm run x -- /etc/passwd", []string{F}},
	{"npm run x -- --config=/etc/x", []string{F}},
	{"npm run x -- KEY=../y", []string{F}},
	{"go test ./..", []string{F}},
	{`npm run x -- ..\..\secret`, []string{F}},
	{"npm run x -- C:/Windows", []string{F}},
	{"dotnet run --project ../Other", []string{F}},
	{"go build -o /usr/local/bin/x ./cmd/server", []string{F}},
	{"go build ./cmd", []string{D}}, // the last path segment names an executable
	{"npm run x -- link/secret", []string{F}},
	{"npm run x -- ~", []string{C, S, F}},
	{"npm run x -- ~/.ssh/id_rsa", []string{C, S, F}},
	{"npm run x -- ..", []string{F}},

	// Length and emptiness.
	{"npm run dev -- " + strings.Repeat("a", 290), []string{L}},
	{"", []string{C, S, P}},
	{"   ", []string{S, P}},

	// Other unicode.
	{"npm run x -- \u2019quoted\u2019", []string{C}},
	{"npm run\u00a0dev", []string{C, P}},
	{"npm run de\u200bv", []string{C}},
	{"npm run dev\uff1b", []string{C}},
	{"npm run x -- \xff", []string{C, S, P}},
}

func TestCheckTable(t *testing.T) {
	if len(commandTable) < 80 {
		t.Fatalf("table has %d commands; want at least 80", len(commandTable))
	}
	root, _ := newRoot(t)
	cfg := Default()
	for _, tc := range commandTable {
		got := cfg.Check(root, tc.cmd)
		if gotRules := rulesOf(got); !slices.Equal(gotRules, tc.rules) {
			t.Errorf("Check(%q): rules %v, want %v; findings:\n%s", tc.cmd, gotRules, tc.rules, findingLines(got))
		}
	}
}

func findingLines(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\t" + f.String() + "\n")
	}
	return b.String()
}
