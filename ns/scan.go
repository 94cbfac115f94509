package ns

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// blindErr reports whether err, opening or reading a directory the
// protected-name search meant to read, leaves a blind spot: anything
// but the directory being gone or no directory (any more), or a symlink
// (never entered). See dirInfo.blind.
func blindErr(err error) bool {
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.ELOOP)
}

// scanReadDir is the plain os.ReadDir walk: scanTree on systems without
// the getdents64 version, and the reference that version is tested
// against. It reads root and its subdirectories down to depth levels,
// skipping directories in skip (and what is below them), and returns the
// directories it could read (and those it could not, marked blind) and
// every directory it tried.
func scanReadDir(root string, depth int, firsts, skip map[string]bool) (map[string]*dirInfo, []string) {
	tree := map[string]*dirInfo{}
	var visited []string
	var walk func(dir string, level int)
	walk = func(dir string, level int) {
		if skip[dir] {
			return
		}
		visited = append(visited, dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			if blindErr(err) {
				tree[dir] = &dirInfo{blind: true}
			}
			return
		}
		d := &dirInfo{}
		for _, e := range entries {
			typ := typeOther
			switch {
			case e.Type()&os.ModeSymlink != 0:
				typ = typeSymlink
			case e.IsDir():
				typ = typeDir
			}
			if firsts[e.Name()] {
				if d.have == nil {
					d.have = map[string]entryType{}
				}
				d.have[e.Name()] = typ
			}
			if level < depth && typ == typeDir {
				d.subs = append(d.subs, e.Name())
			}
		}
		tree[dir] = d
		for _, sub := range d.subs {
			walk(filepath.Join(dir, sub), level+1)
		}
	}
	walk(root, 0)
	return tree, visited
}
