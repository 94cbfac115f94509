package check

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		cmd     string
		want    bool
	}{
		{"make (test|lint)", "make test", true},
		{"make (test|lint)", "MAKE LINT", true},
		{"make (test|lint)", "make test extra", false},
		{"make (test|lint)", "make", false},
		{"make <target>", "make all", true},
		{"make <target>", "make -j8", false},
		{"make <target>", "make", false},
		{"make <target>", "make a b", false},
		{"just [--quiet] <recipe> ...", "just build --release", true},
		{"just [--quiet] <recipe> ...", "just --quiet build", true},
		{"just [--quiet] <recipe> ...", "just --quiet", false},
		{"just [--quiet] <recipe> ...", "just", false},
		// <args> is one word like any placeholder, and never a flag.
		{"npm run <script> [-- <args>]", "npm run build -- --watch", false},
		{"npm run <script> [-- <args>]", "npm run build -- src", true},
		{"npm run <script> [-- <args>]", "npm run build -- --watch --poll", false},
		{"npm run <script> [-- ...]", "npm run build -- --watch --poll", true},
		{"npm run <script> [-- ...]", "npm run build --", true},
		{"npm run <script> [-- ...]", "npm run build --watch", false},
		{"dotnet (run|watch|test|build) [args]", "dotnet watch --project src/Api", true},
		{"dotnet (run|watch|test|build) [args]", "dotnet test", true},
		{"dotnet (run|watch|test|build) [args]", "dotnet publish", false},
		{"a [b [c]] d", "a d", true},
		{"a [b [c]] d", "a b d", true},
		{"a [b [c]] d", "a b c d", true},
		{"a [b [c]] d", "a c d", false},
		{"a (b c|b) d", "a b d", true},
		{"a (b c|b) d", "a b c d", true},
		{"a (b|c ...)", "a c x y", true},
		{"a (b|c ...)", "a b x", false},
		{"tool <x!bad|worse>", "tool good", true},
		{"tool <x!bad|worse>", "tool BAD", false},
		{"tool <x!bad|worse>", "tool worse", false},
		{"Bash(git:*)", "git status", true},
		{"Bash(git:*)", "git", true},
		{"Bash(git:*)", "gitk", false},
		{"Bash(npm run test:*)", "npm run test -- -u", true},
		{"Bash(npm run test:*)", "npm run testing", false},
		{"Bash(npm run test)", "npm run test", true},
		{"Bash(npm run test)", "npm run test -u", false},
	}
	for _, tc := range tests {
		p, err := compileEntry(tc.pattern)
		if err != nil {
			t.Errorf("compile %q: %v", tc.pattern, err)
			continue
		}
		if got := p.match(strings.Fields(tc.cmd)); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.cmd, got, tc.want)
		}
	}
}

func TestDefaultYarnRefusesBuiltins(t *testing.T) {
	cfg := Default()
	for _, b := range yarnBuiltins {
		for _, cmd := range []string{"yarn " + b, "yarn " + b + " -- x"} {
			got := cfg.Check(t.TempDir(), cmd)
			if len(got) == 0 {
				t.Errorf("%q accepted", cmd)
			}
		}
	}
}

func TestDocListsYarnBuiltins(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(string(doc))
	for _, b := range yarnBuiltins {
		if !slices.Contains(words, b) {
			t.Errorf("yarn built-in %q is missing from the package documentation", b)
		}
	}
}

func TestPatternCompileErrors(t *testing.T) {
	tests := map[string]string{
		"":                            "empty pattern",
		"   ":                         "empty pattern",
		"npm run <script":             "unclosed",
		"npm run script>":             "unexpected",
		"make (test|lint":             "unclosed",
		"make (test|)":                "empty alternative",
		"make ()":                     "empty alternative",
		"make [":                      "unclosed",
		"make []":                     "empty",
		"make ]":                      "unexpected",
		"make )":                      "unexpected",
		"make |":                      "unexpected",
		"make ... x":                  "may only end",
		"make [...] x":                "may only end",
		"make [args] x":               "may only end",
		"<cmd> x":                     "must start with a literal",
		"(a|b) x":                     "must start with a literal",
		"make <1x>":                   "bad placeholder",
		"make <>":                     "bad placeholder",
		"make <x!>":                   "bad exclusion",
		"make <x!a||b>":               "bad exclusion",
		"Read(./x)":                   "unsupported tool",
		"Bash":                        "bare Bash",
		"Bash()":                      "empty Bash",
		"Bash(:*)":                    "empty Bash",
		"Bash(*)":                     "wildcard",
		"Bash(git *)":                 "wildcard",
		"Bash(git push:*:*)":          "wildcard",
		strings.Repeat("[", 40) + "a": "nested deeper",
	}
	for src, want := range tests {
		_, err := compileEntry(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("compileEntry(%q) = %v, want error containing %q", src, err, want)
		}
	}
}

func TestDefaultPrefixesDisplay(t *testing.T) {
	cfg := Default()
	got := cfg.Check(t.TempDir(), "npm install")
	if len(got) != 1 || !strings.Contains(got[0].Message, "yarn [run] <script> [-- ...]") {
		t.Errorf("prefix message does not list the patterns readably: %v", got)
	}
}
