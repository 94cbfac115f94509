package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// resolve agrees with filepath.EvalSymlinks on every path that resolves,
// and says "does not exist" where it fails, from a cold and a warm cache.
func TestResolveMatchesEvalSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "real", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(root, "real", "f"), nil, 0o644))
	must(os.Symlink("real", filepath.Join(root, "link")))
	must(os.Symlink("f", filepath.Join(root, "real", "flink")))
	must(os.Symlink("../real/sub", filepath.Join(root, "real", "sub", "up")))
	must(os.Symlink("missing", filepath.Join(root, "real", "dangling")))
	r := resolver{dirs: map[string]string{}}
	for round := 0; round < 2; round++ { // the second round hits the cache
		for _, p := range []string{
			"/", root, filepath.Join(root, "real"), filepath.Join(root, "link"),
			filepath.Join(root, "link", "f"), filepath.Join(root, "link", "flink"),
			filepath.Join(root, "real", "sub", "up"), filepath.Join(root, "link", "sub", "up", "up"),
			filepath.Join(root, "link", "dangling"), filepath.Join(root, "link", "nothere"),
			filepath.Join(root, "nothere", "x"), filepath.Join(root, "real", "f", "x"),
		} {
			got, exists, gerr := r.resolve(p)
			want, werr := filepath.EvalSymlinks(p)
			if gerr != nil || exists != (werr == nil) || (werr == nil && got != want) {
				t.Errorf("%s: got %q, %v, %v; filepath.EvalSymlinks: %q, %v", p, got, exists, gerr, want, werr)
			}
		}
	}
}
