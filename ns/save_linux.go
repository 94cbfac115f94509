//go:build linux

package ns

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// SavedChange is one entry of changes.json (--save-changes).
type SavedChange struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // created, modified, deleted, replaced
	Type   string `json:"type,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Target string `json:"target,omitempty"` // a symlink's text
}

// SaveChanges keeps what the discard overlays took instead of discarding
// it: under dirFD (the --save-changes directory, opened before the view
// was built) a tree files/<absolute path> of the new and modified files,
// directories and symlinks, and changes.json listing every change with
// its kind, type, mode and size, deletions included. Protected names sbx
// made itself are not saved (Changes leaves them out); masked paths never
// reach an upper layer.
func (v *View) SaveChanges(dirFD int, changes []Change) error {
	var manifest []SavedChange
	for _, c := range changes {
		o, rel, ok := v.overlayOf(c.Path)
		if !ok {
			continue
		}
		sc := SavedChange{Path: c.Path, Kind: c.Detail}
		if c.Detail != "deleted" {
			var st unix.Stat_t
			if err := unix.Fstatat(o.upperFD, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue
			}
			if m, ok := v.modes[c.Path]; ok {
				st.Mode = m // as the command left it (Reach)
			}
			sc.Mode = fmt.Sprintf("%04o", st.Mode&0o7777)
			dst := "files" + c.Path
			parent, err := mkdirAllAt(dirFD, path.Dir(dst))
			if err != nil {
				return fmt.Errorf("--save-changes: %s: %w", c.Path, err)
			}
			base := path.Base(dst)
			err = saveOne(o, rel, parent, base, st, &sc)
			unix.Close(parent)
			if err != nil {
				return fmt.Errorf("--save-changes: %s: %w", c.Path, err)
			}
		}
		manifest = append(manifest, sc)
	}
	b, _ := json.MarshalIndent(manifest, "", "  ")
	fd, err := unix.Openat(dirFD, "changes.json", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("--save-changes: changes.json: %w", err)
	}
	f := os.NewFile(uintptr(fd), "changes.json")
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// saveOne saves the upper layer's entry rel as base in the directory open
// at parent, and notes its type (and a symlink's text) in sc.
func saveOne(o Overlay, rel string, parent int, base string, st unix.Stat_t, sc *SavedChange) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sc.Type = "directory"
		if err := unix.Mkdirat(parent, base, 0o755); err != nil && err != unix.EEXIST {
			return err
		}
	case unix.S_IFLNK:
		sc.Type = "symlink"
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(o.upperFD, rel, buf)
		if err != nil {
			return nil
		}
		sc.Target = string(buf[:n])
		return unix.Symlinkat(sc.Target, parent, base)
	case unix.S_IFREG:
		sc.Type, sc.Size = "file", st.Size
		return copyAt(o.upperFD, rel, parent, base, st.Mode&0o777)
	default:
		sc.Type = "other (not saved)"
	}
	return nil
}

// overlayOf finds the overlay holding p and p's path inside its upper
// layer.
func (v *View) overlayOf(p string) (Overlay, string, bool) {
	for _, o := range v.Overlays {
		if p == o.Path || strings.HasPrefix(p, o.Path+"/") {
			rel := strings.TrimPrefix(strings.TrimPrefix(p, o.Path), "/")
			if rel == "" {
				rel = "."
			}
			return o, rel, true
		}
	}
	return Overlay{}, "", false
}

// mkdirAllAt makes the directories of p under dirFD, one component at a
// time and never through a symbolic link (a link planted in the tree
// fails with ELOOP or ENOTDIR instead of leading out of it), and returns
// a descriptor on the last one.
func mkdirAllAt(dirFD int, p string) (int, error) {
	cur, err := unix.Openat(dirFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." {
			continue
		}
		if err := unix.Mkdirat(cur, part, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(cur)
			return -1, err
		}
		next, err := unix.Openat(cur, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

func copyAt(srcDir int, src string, dstDir int, dst string, mode uint32) error {
	in, err := unix.Openat(srcDir, src, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	fi := os.NewFile(uintptr(in), src)
	defer fi.Close()
	out, err := unix.Openat(dstDir, dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	fo := os.NewFile(uintptr(out), dst)
	defer fo.Close()
	_, err = io.Copy(fo, fi)
	return err
}
