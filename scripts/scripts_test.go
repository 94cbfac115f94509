// Package scripts holds the repository's shell scripts (and, in sbom, the
// SBOM generator). This test checks what the README promises of them.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// runDirect matches a scripts/NAME.sh that the README runs as a command of
// its own: not after "bash " or "sh " (which need no run bit), and not as
// a path inside another one (./, /).
var runDirect = regexp.MustCompile(`(^|[^/.\w-])(bash |sh )?(scripts/[\w.-]+\.sh)\b`)

// directScripts lists the scripts the README runs directly: in its code
// blocks (lines indented by four spaces or a tab) and in its `code spans`.
func directScripts(readme string) []string {
	seen := map[string]bool{}
	var code []string
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			code = append(code, line)
			continue
		}
		parts := strings.Split(line, "`")
		for i := 1; i < len(parts); i += 2 {
			code = append(code, parts[i])
		}
	}
	for _, c := range code {
		for _, m := range runDirect.FindAllStringSubmatch(c, -1) {
			if m[2] == "" {
				seen[m[3]] = true
			}
		}
	}
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// TestReadmeScriptsExecutable: every script the README tells the user to
// run directly (scripts/release.sh 1.2.3) has its run bit in git, so a
// fresh clone runs it instead of saying "Permission denied"; and in this
// checkout too.
func TestReadmeScriptsExecutable(t *testing.T) {
	// The README and the docs it leads to (docs/releasing.md runs
	// scripts/release.sh VERSION).
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob("../docs/*.md")
	for _, d := range docs {
		db, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, '\n'), db...)
	}
	scripts := directScripts(string(b))
	found := false
	for _, s := range scripts {
		found = found || s == "scripts/release.sh"
	}
	if !found {
		t.Fatalf("the README runs %q directly; want scripts/release.sh among them (is the parser blind?)", scripts)
	}
	// safe.directory: the unprivileged run works on a copy that another
	// user's git directory may back.
	args := append([]string{"-c", "safe.directory=*", "ls-files", "-s", "--"}, scripts...)
	cmd := exec.Command("git", args...)
	cmd.Dir = ".."
	out, gitErr := cmd.Output()
	modes := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// MODE OBJECT STAGE\tPATH
		if meta, path, ok := strings.Cut(line, "\t"); ok {
			modes[path] = strings.Fields(meta)[0]
		}
	}
	for _, s := range scripts {
		st, err := os.Stat(filepath.Join("..", s))
		if err != nil {
			t.Errorf("the README runs %s, which is not here: %v", s, err)
			continue
		}
		if st.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable here (%v), but the README runs it directly", s, st.Mode())
		}
		switch {
		case gitErr != nil:
			t.Logf("git ls-files: %v (not a git checkout?): only the file's own mode checked", gitErr)
		case modes[s] != "100755":
			t.Errorf("%s has mode %q in git, want 100755: git update-index --chmod=+x %s", s, modes[s], s)
		}
	}
}

// TestDirectScripts: the parser finds direct runs and skips runs through
// bash and paths that only end in scripts/NAME.sh.
func TestDirectScripts(t *testing.T) {
	readme := "    bash scripts/setup.sh && bin/sbx -- true\n    scripts/release.sh 1.2.3\n" +
		"Run `scripts/lint.sh --fix` or `bash scripts/test.sh`, not `./x/scripts/other.sh`.\n"
	got := strings.Join(directScripts(readme), " ")
	if want := "scripts/lint.sh scripts/release.sh"; got != want {
		t.Errorf("directScripts = %q, want %q", got, want)
	}
}
