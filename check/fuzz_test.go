package check

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzCheck checks that Check never panics and that whatever it accepts
// is harmless: under the defaults, no metacharacter and exactly one simple
// command of plain words with no redirections or assignments; with the
// character rules off, still exactly one simple command of plain words.
func FuzzCheck(f *testing.F) {
	for _, tc := range commandTable {
		f.Add(tc.cmd)
	}
	for _, s := range []string{
		"npm run x -- 'a'\"b\"c", `npm run x -- a\ b`, "npm run x -- a\\\nb", "yarn run run",
		"go test -run 'Test(A|B)' ./...", "npm run x -- \"a b\" 'c d'", "cargo run -- -- --",
	} {
		f.Add(s)
	}
	root := f.TempDir()
	def := Default()
	structural, err := ParseConfig(json.RawMessage(`{"rules": {"charset": false, "metachars": false, "length": false}}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		// A hang would stall the fuzzer silently; turn it into a failure.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("Check(%q) took more than 10s", cmd))
			}
		}()
		if len(def.Check(root, cmd)) == 0 {
			if i := strings.IndexAny(cmd, metachars); i >= 0 {
				t.Fatalf("accepted %q with metacharacter %q", cmd, cmd[i])
			}
			if n := utf8.RuneCountInString(strings.TrimSpace(cmd)); n > DefaultMaxLength {
				t.Fatalf("accepted %q of %d characters", cmd, n)
			}
			assertSimpleCommand(t, cmd)
		}
		if len(structural.Check(root, cmd)) == 0 {
			assertSimpleCommand(t, cmd)
		}
	})
}

// assertSimpleCommand fails unless cmd parses, in both the Bash and POSIX
// dialects, as one simple command whose words are plain or quoted text.
func assertSimpleCommand(t *testing.T, cmd string) {
	t.Helper()
	for _, lang := range []syntax.LangVariant{syntax.LangBash, syntax.LangPOSIX} {
		file, err := syntax.NewParser(syntax.Variant(lang), syntax.KeepComments(true)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("accepted %q, which does not parse as %s: %v", cmd, lang, err)
		}
		if len(file.Stmts) != 1 || len(file.Last) > 0 {
			t.Fatalf("accepted %q: %d statements as %s", cmd, len(file.Stmts), lang)
		}
		st := file.Stmts[0]
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(st.Redirs) > 0 || len(call.Assigns) > 0 || st.Negated || st.Background ||
			st.Coprocess || st.Semicolon.IsValid() || len(st.Comments) > 0 {
			t.Fatalf("accepted %q: not one plain simple command as %s", cmd, lang)
		}
		for _, w := range call.Args {
			for i, part := range w.Parts {
				switch p := part.(type) {
				case *syntax.Lit:
					assertNoExpansion(t, cmd, p.Value, i == 0)
				case *syntax.SglQuoted:
					if p.Dollar {
						t.Fatalf("accepted %q: $'' quoting", cmd)
					}
				case *syntax.DblQuoted:
					for _, in := range p.Parts {
						if _, ok := in.(*syntax.Lit); !ok || p.Dollar {
							t.Fatalf("accepted %q: expansion inside double quotes", cmd)
						}
					}
				default:
					t.Fatalf("accepted %q: word part %T", cmd, part)
				}
			}
		}
	}
}

// assertNoExpansion fails if an unquoted literal has an unescaped glob
// character, a brace pair, or a tilde starting the word.
func assertNoExpansion(t *testing.T, cmd, lit string, first bool) {
	t.Helper()
	if first && strings.HasPrefix(lit, "~") {
		t.Fatalf("accepted %q: tilde expansion", cmd)
	}
	brace := false
	for i := 0; i < len(lit); i++ {
		switch lit[i] {
		case '\\':
			i++
		case '*', '?', '[':
			t.Fatalf("accepted %q: unescaped glob in %q", cmd, lit)
		case '{':
			brace = true
		case '}':
			if brace {
				t.Fatalf("accepted %q: brace expansion in %q", cmd, lit)
			}
		}
	}
}
