package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestFlagTable: every flag of a run (and of sbx profile and sbx learn) is in --help and
// in the README's flag table, and every subcommand is in --help. It fails
// when a flag is added without its row.
func TestFlagTable(t *testing.T) {
	names := map[string]bool{}
	runFlagsHook = func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	}
	defer func() { runFlagsHook = nil }()
	var help strings.Builder
	if code := run([]string{"--help"}, &help, io.Discard); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	run([]string{"profile", "--help"}, io.Discard, io.Discard)
	run([]string{"learn", "--help"}, io.Discard, io.Discard)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The rows of the README's flag table: "| `--name ...` |", and rows
	// naming two flags ("`--set-env K=V` / `--unset-env NAME`").
	inTable := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `--[^|]*\\|")
	flagName := regexp.MustCompile("`--([a-z0-9-]+)")
	for _, r := range row.FindAllString(string(readme), -1) {
		for _, m := range flagName.FindAllStringSubmatch(r, -1) {
			inTable[m[1]] = true
		}
	}
	if len(names) < 40 {
		t.Fatalf("only %d flags seen: the hook did not run", len(names))
	}
	for n := range names {
		switch n {
		case "c", "h", "help":
			continue // the synopsis and --help itself
		}
		if !strings.Contains(help.String(), "--"+n) {
			t.Errorf("--%s is not in --help", n)
		}
		if !inTable[n] {
			t.Errorf("--%s has no row in the README's flag table", n)
		}
	}
	for _, sub := range []string{"doctor", "check", "profile", "connect", "learn", "version"} {
		if !strings.Contains(help.String(), "sbx "+sub) {
			t.Errorf("--help does not list 'sbx %s'", sub)
		}
	}
}
