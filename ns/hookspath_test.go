package ns

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Every spelling of core.hooksPath git accepts is read, included files
// too; other sections and keys are not.
func TestHooksPathValues(t *testing.T) {
	d := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("inc", "[core]\n  hooksPath = from-include\n")
	write("cond", "[CORE]\nHOOKSPATH=from-includeif\n")
	main := write("config", `[core]
	bare = false
	hooksPath = ".husky/_" ; husky 9
[core "sub"]
	hooksPath = not-core
[other]
	hooksPath = not-core-either
[include]
	path = inc
[includeIf "gitdir:~/work/"]
	path = `+filepath.Join(d, "cond")+`
[core] hookspath = ~/hooks # inline section
`)
	got := hooksPathValues(main, "/home/u", 0)
	want := []string{".husky/_", "from-include", "from-includeif", "/home/u/hooks"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// An include that includes itself ends.
	loop := write("loop", "[include]\npath = loop\n[core]\nhooksPath = x\n")
	if got := hooksPathValues(loop, "", 0); len(got) != 9 {
		t.Errorf("self-include: %d values", len(got))
	}
}
