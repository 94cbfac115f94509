//go:build linux

package ns

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func TestScanTreeMatchesReadDir(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A tree wider and deeper than the search, with protected names as
	// files, directories and symlinks at every level, and an unreadable
	// directory.
	for i := 0; i < 6; i++ {
		for j := 0; j < 5; j++ {
			d := filepath.Join(root, fmt.Sprintf("p%d", i), fmt.Sprintf("q%d", j), "r", "s")
			must(os.MkdirAll(d, 0o755))
			must(os.WriteFile(filepath.Join(d, "f.js"), nil, 0o644))
		}
	}
	must(os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755))
	must(os.WriteFile(filepath.Join(root, "p1", ".bashrc"), nil, 0o644))
	must(os.MkdirAll(filepath.Join(root, "p2", "q1", ".vscode"), 0o755))
	must(os.Symlink("/etc", filepath.Join(root, "p3", "q2", ".idea")))
	must(os.Symlink("p1", filepath.Join(root, "link-to-dir")))
	must(os.WriteFile(filepath.Join(root, "p4", "q0", "r", ".git"), []byte("gitdir: x"), 0o644))
	must(os.MkdirAll(filepath.Join(root, "p5", "closed", "inner"), 0o755))
	must(os.Chmod(filepath.Join(root, "p5", "closed"), 0))
	defer os.Chmod(filepath.Join(root, "p5", "closed"), 0o755)
	firsts := map[string]bool{".git": true, ".bashrc": true, ".vscode": true, ".idea": true, ".claude": true}
	for _, depth := range []int{0, 1, 3, 10} {
		for _, skip := range []map[string]bool{nil, {filepath.Join(root, "p2"): true}, {root: true}} {
			got, gotV := scanTree(root, depth, firsts, skip)
			want, wantV := scanReadDir(root, depth, firsts, skip)
			sort.Strings(gotV)
			sort.Strings(wantV)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("depth %d skip %v: scanTree and os.ReadDir disagree:\n got %v %v\nwant %v %v", depth, skip, got, gotV, want, wantV)
			}
		}
	}
}
