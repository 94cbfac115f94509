package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAllowWriteMissingDirectory: a missing allowWrite directory whose
// parent exists is created when the command runs, from the command line
// and from a settings file alike (the output directory sbx learn saw a
// run create); a deeper missing path is an error (likely a typo), and so
// is a protected name; a dry run creates nothing.
func TestAllowWriteMissingDirectory(t *testing.T) {
	t.Run("settings file", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(t.TempDir(), "s.json")
		mustWrite(t, f, srtFile(`"filesystem": {"allowWrite": ["./out"]}`))
		in.Settings = []string{f}
		in.DryRun = true
		p := mustBuild(t, in)
		out := filepath.Join(in.Cwd, "out")
		if _, err := os.Lstat(out); err == nil {
			t.Fatal("a dry run created the directory")
		}
		in.DryRun = false
		p = mustBuild(t, in)
		if st, err := os.Stat(out); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Fatalf("./out not created 0700: %v %v", st, err)
		}
		if !slices.Contains(p.Filesystem.AllowWrite, out) {
			t.Errorf("./out not writable: %q", p.Filesystem.AllowWrite)
		}
	})
	t.Run("command line", func(t *testing.T) {
		in := input(t)
		in.AllowWrite = []string{"./target"}
		mustBuild(t, in)
		if st, err := os.Stat(filepath.Join(in.Cwd, "target")); err != nil || !st.IsDir() {
			t.Fatalf("./target not created: %v", err)
		}
	})
	t.Run("deeper missing path", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(t.TempDir(), "s.json")
		mustWrite(t, f, srtFile(`"filesystem": {"allowWrite": ["./no/such/out"]}`))
		in.Settings = []string{f}
		mustFail(t, in, "does not exist")
		if _, err := os.Lstat(filepath.Join(in.Cwd, "no")); err == nil {
			t.Fatal("a deeper missing path was created")
		}
	})
	t.Run("a protected name", func(t *testing.T) {
		in := input(t)
		f := filepath.Join(t.TempDir(), "s.json")
		mustWrite(t, f, srtFile(`"filesystem": {"allowWrite": ["./.vscode"]}`))
		in.Settings = []string{f}
		mustFail(t, in, ".vscode")
		if _, err := os.Lstat(filepath.Join(in.Cwd, ".vscode")); err == nil {
			t.Fatal("a protected name was created")
		}
	})
}
