package bench

import (
	"fmt"
	"os"
	"path/filepath"
)

// MakeTree fills dir with n small files in a node_modules-like shape:
// 100 packages of nested directories, ~10 files a directory.
func MakeTree(dir string, n int) error {
	made := 0
	for pkg := 0; made < n; pkg++ {
		for sub := 0; sub < 10 && made < n; sub++ {
			d := filepath.Join(dir, "node_modules", fmt.Sprintf("pkg%03d", pkg%100), fmt.Sprintf("v%d", pkg/100), "lib", fmt.Sprintf("d%d", sub))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			for f := 0; f < 10 && made < n; f++ {
				if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.js", f)), []byte("x"), 0o644); err != nil {
					return err
				}
				made++
			}
		}
	}
	return nil
}
