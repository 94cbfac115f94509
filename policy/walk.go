package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// What a walk that builds the plan cannot see.
//
// A deny glob is expanded by walking the tree now, and what the walk
// does not see is not denied. Inside a writable (or discard) region the
// tree is whatever an earlier run's command left there, and the command
// runs as the caller: a directory it made unreadable (chmod 000) it can
// make readable again, and a directory it moved below a path longer
// than the kernel takes (PATH_MAX) it can still reach, one component at
// a time. So the walk
//
//   - moves with descriptors: each directory is opened relative to its
//     parent (openat, O_NOFOLLOW), so depth and path length cannot stop
//     it, and a symlink is never descended into;
//   - never skips what it cannot see. A directory it cannot open or
//     list is a blind spot; inside a region that takes writes it is
//     masked whole for the run (a deny-read rule hides it behind an
//     empty, read-only, mode-000 mount; a deny-write rule binds it
//     read-only), so the command sees it as the plan did, unreadable,
//     and cannot change its mode (the mount is read-only) nor move it
//     (a mount point). Outside such regions the view is read-only, the
//     command cannot change the mode either, and a blind spot stays as
//     it is. A directory whose path is longer than MaxPlanPath cannot be
//     named by a mount: the deepest directory above it that can is
//     masked whole, wherever it is.
//
// Masking rather than refusing to run: the plan cannot know what such a
// directory holds, and a mask gives the command exactly what the plan
// knows (nothing), whoever left the directory so (an earlier command,
// or a container's data directory owned by another user, which would
// otherwise stop every run in that tree). A directory the caller can
// enter but not list (mode 0311) outside such a region is an error, as
// before: the command could open files in it by name.

// MaxPlanPath is the longest path the mount view can name: PATH_MAX
// (4096 bytes with its NUL), less the staging root the view is
// assembled under and the descriptor prefixes it reaches the host by.
const MaxPlanPath = 4000

// blindSpots collects what a deny walk could not look into.
type blindSpots struct {
	// unreadable are directories the walk could not open or list;
	// they are masked whole when they lie where writes go (see above).
	unreadable []string
	// deep are directories whose entries lie deeper than MaxPlanPath;
	// they are among the walk's matches already (masked whole
	// everywhere), listed here for the note.
	deep []string
}

// permWalker expands a glob below one directory.
type permWalker struct {
	pat     []string // components, relative to the walk's start
	dirOnly bool     // matches must be directories (or symlinks to them)
	// deny: the matches are denied, so what the walk cannot see is
	// recorded in blind (or is an error), never skipped.
	deny  bool
	out   []string
	blind *blindSpots
}

// walkFrom walks the tree at start (absolute, clean; symlinks on the
// way to it are followed, as a literal path's are).
func (w *permWalker) walkFrom(start string) error {
	fd, err := unix.Open(start, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return w.cannotOpen(unix.AT_FDCWD, start, start, err)
	}
	return w.walk(fd, start, nil)
}

// walk visits the directory open at fd (which it closes), whose path is
// dir and whose path relative to the start is rel. A match is recorded
// and not descended into; symlinks are never descended into.
func (w *permWalker) walk(fd int, dir string, rel []string) error {
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return w.unlisted(dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		full := dir + "/" + name
		if dir == "/" {
			full = "/" + name
		}
		relc := append(rel[:len(rel):len(rel)], name)
		isDir := e.IsDir()
		match := false
		if globMatch(w.pat, relc) {
			match = !w.dirOnly || isDir
			if !match && e.Type()&os.ModeSymlink != 0 {
				var st unix.Stat_t
				match = unix.Fstatat(int(f.Fd()), name, &st, 0) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
			}
		}
		descend := !match && isDir && globCouldExtend(w.pat, relc)
		if (match || descend) && len(full) > MaxPlanPath {
			// No mount can name full: the directory that holds it,
			// which one can, stands for everything below.
			if !w.deny {
				return nil
			}
			if w.blind != nil {
				w.blind.deep = append(w.blind.deep, dir)
			}
			return w.add(dir)
		}
		if match {
			if err := w.add(full); err != nil {
				return err
			}
			continue
		}
		if descend {
			cfd, err := unix.Openat(int(f.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if err := w.cannotOpen(int(f.Fd()), name, full, err); err != nil {
					return err
				}
				continue
			}
			if err := w.walk(cfd, full, relc); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *permWalker) add(p string) error {
	w.out = append(w.out, p)
	if len(w.out) > permMatchCap {
		return errPermTooMany
	}
	return nil
}

// cannotOpen handles an error opening the directory name in dirfd,
// whose path is full.
func (w *permWalker) cannotOpen(dirfd int, name, full string, err error) error {
	switch {
	case !w.deny:
		return nil // a grant that finds less grants less
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		return nil // not there, not a directory, or a symlink: nothing below to match
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		if unix.Faccessat(dirfd, name, unix.X_OK, 0) == nil {
			return fmt.Errorf("cannot list %s to find what the deny pattern matches there (%v), though the command could open files in it by name; make it readable, or deny the directory itself", full, err)
		}
		return w.unreadable(blocker(full))
	}
	return fmt.Errorf("cannot open %s to find what the deny pattern matches there: %v; sbx does not skip what it cannot see", full, err)
}

// unlisted handles an error listing the open directory dir.
func (w *permWalker) unlisted(dir string, err error) error {
	switch {
	case !w.deny:
		return nil
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		return w.unreadable(dir)
	}
	return fmt.Errorf("cannot list %s to find what the deny pattern matches there: %v; sbx does not skip what it cannot see", dir, err)
}

func (w *permWalker) unreadable(dir string) error {
	if w.blind == nil {
		return fmt.Errorf("cannot read %s to find what the deny pattern matches there; make it readable (chmod u+rx %s), or deny the directory itself", dir, dir)
	}
	w.blind.unreadable = append(w.blind.unreadable, dir)
	if len(w.blind.unreadable) > permMatchCap {
		return errPermTooMany
	}
	return nil
}

// blocker is the directory that keeps p from being reached or read: p
// itself when it can be looked at (lstat), or else the deepest
// directory above it that can (the one without search permission).
func blocker(p string) string {
	for q := p; ; q = filepath.Dir(q) {
		if _, err := os.Lstat(q); err == nil || q == "/" || q == "." || !errors.Is(err, fs.ErrPermission) {
			return q
		}
	}
}

// blindIn reports the unreadable directories of bs that lie in a region
// that takes writes (resolved), where they are masked whole; the rest
// the command cannot open either, and stay as they are.
func blindIn(bs *blindSpots, takesWrites []string) []string {
	var out []string
	for _, d := range bs.unreadable {
		if WithinAny(resolvedOr(d), takesWrites) {
			out = append(out, d)
		}
	}
	return out
}

// blindEntries are the directories the deny rules of a settings file's
// "permissions" could not read, as deny-list entries marked blind.
func blindEntries(dirs []string, file string) []pathEntry {
	out := make([]pathEntry, len(dirs))
	for i, d := range dirs {
		out[i] = pathEntry{path: d, literal: true, optional: true, blind: true, from: file + " permissions"}
	}
	return out
}
