//go:build linux

package ns

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// SavedChange is one entry of changes.json (--save-changes).
type SavedChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // created, modified, deleted, replaced
	Type string `json:"type,omitempty"`
	// Mode is the saved entry's mode, as saved: the permission bits the
	// command left, never setuid, setgid or sticky.
	Mode string `json:"mode,omitempty"`
	// DroppedBits are the setuid, setgid and sticky bits the command set
	// and the saved entry does not have.
	DroppedBits string `json:"droppedBits,omitempty"`
	Size        int64  `json:"size,omitempty"`
	Target      string `json:"target,omitempty"` // a symlink's text
}

// specialBits are the mode bits a saved entry never has: a saved tree is
// for the caller to review and apply, and a setuid or setgid file the
// sandboxed command made must not become one of the caller's (or root's)
// by a copy.
const specialBits = unix.S_ISUID | unix.S_ISGID | unix.S_ISVTX

// SaveChanges keeps what the discard overlays took instead of discarding
// it: under dirFD (the --save-changes directory, opened before the view
// was built) a tree files/<absolute path> of the new and modified files,
// directories and symlinks, and changes.json listing every change with
// its kind, type, mode and size, deletions included. Protected names sbx
// made itself are not saved (Changes leaves them out); masked paths never
// reach an upper layer. Both trees are walked one directory at a time
// (dirCursor), so paths of any length are saved. Each entry gets the
// permission bits the command left (a directory once its contents are
// saved) and none of specialBits; changes.json records the mode as saved.
func (v *Discards) SaveChanges(dirFD int, changes []Change) error {
	dst, err := newCursor(dirFD)
	if err != nil {
		return fmt.Errorf("--save-changes: %w", err)
	}
	defer dst.close()
	ups := make([]*dirCursor, len(v.Overlays))
	defer func() {
		for _, c := range ups {
			c.close()
		}
	}()
	type savedDir struct {
		names []string // under dirFD
		perm  uint32
		entry int // in manifest
	}
	var dirs []savedDir
	var manifest []SavedChange
	for _, c := range changes {
		i, rel, ok := v.overlayOf(c.Path)
		if !ok || len(rel) == 0 {
			continue
		}
		sc := SavedChange{Path: c.Path, Kind: c.Detail}
		if c.Detail != "deleted" {
			if ups[i] == nil {
				if ups[i], err = newCursor(v.Overlays[i].upperFD); err != nil {
					return fmt.Errorf("--save-changes: %s: %w", c.Path, err)
				}
			}
			up, base := ups[i], rel[len(rel)-1]
			var st unix.Stat_t
			if up.goTo(rel[:len(rel)-1], false) != nil || unix.Fstatat(up.fd, base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			if m, ok := v.modes[c.Path]; ok {
				st.Mode = m // as the command left it (Reach)
			}
			names := append([]string{"files"}, strings.Split(strings.TrimPrefix(c.Path, "/"), "/")...)
			if err := dst.goTo(names[:len(names)-1], true); err != nil {
				return fmt.Errorf("--save-changes: %s: %w", c.Path, err)
			}
			if err := saveOne(up.fd, base, dst.fd, base, st, &sc); err != nil {
				return fmt.Errorf("--save-changes: %s: %w", c.Path, err)
			}
			if sc.Type == "directory" {
				dirs = append(dirs, savedDir{names, st.Mode & 0o777, len(manifest)})
			}
		}
		manifest = append(manifest, sc)
	}
	// Directories get their modes once everything is saved, the deepest
	// first (Changes lists a directory before its contents): one the
	// command left without write or search permission could not have
	// been filled, nor passed through, if it had them earlier.
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := dst.goTo(d.names[:len(d.names)-1], false); err != nil {
			return fmt.Errorf("--save-changes: %s: %w", manifest[d.entry].Path, err)
		}
		mode, err := chmodAt(dst.fd, d.names[len(d.names)-1], d.perm, unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("--save-changes: %s: %w", manifest[d.entry].Path, err)
		}
		manifest[d.entry].Mode = mode
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

// saveOne saves the upper layer's entry name in the directory open at
// upDir as base in the one open at parent, and notes its type, mode as
// saved (and a symlink's text) in sc. A directory is made 0700; the
// caller gives it its mode later.
func saveOne(upDir int, name string, parent int, base string, st unix.Stat_t, sc *SavedChange) error {
	if bits := st.Mode & specialBits; bits != 0 && st.Mode&unix.S_IFMT != unix.S_IFLNK {
		sc.DroppedBits = fmt.Sprintf("%04o", bits)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sc.Type = "directory"
		sc.Mode = fmt.Sprintf("%04o", st.Mode&0o777)
		if err := unix.Mkdirat(parent, base, 0o700); err != nil && err != unix.EEXIST {
			return err
		}
	case unix.S_IFLNK:
		sc.Type = "symlink"
		sc.Mode = fmt.Sprintf("%04o", st.Mode&0o777)
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(upDir, name, buf)
		if err != nil {
			return nil
		}
		sc.Target = string(buf[:n])
		return unix.Symlinkat(sc.Target, parent, base)
	case unix.S_IFREG:
		sc.Type, sc.Size = "file", st.Size
		mode, err := copyAt(upDir, name, parent, base, st.Mode&0o777)
		sc.Mode = mode
		return err
	default:
		sc.Type = "other (not saved)"
		sc.DroppedBits = ""
	}
	return nil
}

// overlayOf finds the overlay holding p and p's components inside its
// upper layer (none for the overlay's own directory).
func (v *Discards) overlayOf(p string) (int, []string, bool) {
	for i, o := range v.Overlays {
		var rest string
		switch {
		case p == o.Path:
			return i, nil, true
		case o.Path == "/" && strings.HasPrefix(p, "/"):
			rest = p[1:]
		case strings.HasPrefix(p, o.Path+"/"):
			rest = p[len(o.Path)+1:]
		default:
			continue
		}
		return i, strings.Split(rest, "/"), true
	}
	return 0, nil, false
}

// chmodAt gives the entry base in dir (of the type flags says, never
// through a symbolic link) the permission bits perm, and returns its mode
// as it then is.
func chmodAt(dir int, base string, perm uint32, flags int) (string, error) {
	fd, err := unix.Openat(dir, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return fchmodMode(fd, perm)
}

// fchmodMode sets fd's permission bits to perm (clearing specialBits)
// and returns its mode as it then is, as four octal digits.
func fchmodMode(fd int, perm uint32) (string, error) {
	if err := unix.Fchmod(fd, perm&0o777); err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%04o", st.Mode&0o7777), nil
}

// copyAt copies the regular file src in srcDir to a new file dst in
// dstDir, made 0600 and given the permission bits mode once written, and
// returns its mode as saved.
func copyAt(srcDir int, src string, dstDir int, dst string, mode uint32) (string, error) {
	in, err := unix.Openat(srcDir, src, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	fi := os.NewFile(uintptr(in), src)
	defer fi.Close()
	out, err := unix.Openat(dstDir, dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	fo := os.NewFile(uintptr(out), dst)
	defer fo.Close()
	if _, err := io.Copy(fo, fi); err != nil {
		return "", err
	}
	return fchmodMode(out, mode)
}
