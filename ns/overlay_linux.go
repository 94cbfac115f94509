//go:build linux

package ns

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Discards are the discard overlays of a started sandbox, for the
// supervisor at the end of the run: descriptors on their upper layers and
// the host directories under them, which the sandbox's first process
// handed over (View.Discards). Close closes them.
type Discards struct {
	// Overlays are the discard overlays, for Changes at the end of the
	// run.
	Overlays []Overlay
	// made are the protected names made inside overlays (not the
	// command's writes: Changes leaves them out).
	made map[string]bool
	// modes are the modes Reach changed, as they were.
	modes map[string]uint32
}

// Overlay is one discard region: Path in the view, its upper layer and
// the host directory under it.
type Overlay struct {
	Path             string
	upperFD, lowerFD int
}

// Close closes the descriptors on the discard overlays. Call it once
// every process of the sandbox is gone (and Changes has read them).
func (v *Discards) Close() {
	if v == nil {
		return
	}
	for _, o := range v.Overlays {
		unix.Close(o.upperFD)
		unix.Close(o.lowerFD)
	}
	v.Overlays = nil
}

// Changes walks the upper layers of the discard overlays — only what
// changed, never the lower tree — and lists each changed path, at most
// max of them. A directory that exists below and was only entered to
// change something inside is not listed itself. The walk goes one
// directory at a time (dirCursor): paths of any length are listed.
func (v *Discards) Changes(max int) []Change {
	var all []Change
	for _, o := range v.Overlays {
		walkUpper(o, &all, max)
	}
	out := all[:0]
	for _, c := range all {
		if !v.made[c.Path] {
			out = append(out, c)
		}
	}
	return out
}

// Reach lets a reader without the capabilities PID 1 has in the sandbox's
// user namespace (the supervisor, not root) read every upper layer: it
// owns their files, so a directory or file the
// command left without its owner's read (and search) permission gets it,
// its mode as it was kept for SaveChanges. Call it before Changes, once
// nothing writes there any more; it visits at most max entries.
func (v *Discards) Reach(max int) {
	n := 0
	for _, o := range v.Overlays {
		up, err := newCursor(o.upperFD)
		if err != nil {
			continue
		}
		v.reach(up, o.Path, &n, max)
		up.close()
	}
}

// reach gives the entries of the directory up is on (p in the view) the
// owner's read (and search) permission, and descends.
func (v *Discards) reach(up *dirCursor, p string, n *int, max int) bool {
	for _, name := range up.list() {
		if *n++; *n > max {
			return false
		}
		var st unix.Stat_t
		if unix.Fstatat(up.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		need := uint32(0o400)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			need = 0o500
		case unix.S_IFREG:
		default:
			continue
		}
		full := joinView(p, name)
		// Not following links: name was a directory or a file just now,
		// and nothing writes the upper layer any more.
		if st.Mode&need != need && unix.Fchmodat(up.fd, name, (st.Mode|need)&0o7777, 0) == nil {
			if v.modes == nil {
				v.modes = map[string]uint32{}
			}
			v.modes[full] = st.Mode
		}
		if need != 0o500 || up.down(name, false, 0) != nil {
			continue
		}
		ok := v.reach(up, full, n, max)
		if up.up() != nil || !ok {
			return false
		}
	}
	return true
}

// joinView is dir/name for a clean absolute dir, without Clean's pass
// over a long path.
func joinView(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// walkUpper lists the changes in o's upper layer, comparing with its
// lower one.
func walkUpper(o Overlay, out *[]Change, max int) {
	up, err := newCursor(o.upperFD)
	if err != nil {
		return
	}
	defer up.close()
	low, err := newCursor(o.lowerFD)
	if err == nil {
		defer low.close()
	}
	walkDir(up, low, low != nil, o.Path, out, max)
}

// walkDir lists the changes in the upper directory up is on (p in the
// view). When inLow, low is on the same directory of the lower layer;
// otherwise the lower layer has no such directory. It returns false when
// the walk must stop.
func walkDir(up, low *dirCursor, inLow bool, p string, out *[]Change, max int) bool {
	for _, name := range up.list() {
		if len(*out) >= max {
			return false
		}
		var st, lst unix.Stat_t
		if unix.Fstatat(up.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		inLower := inLow && unix.Fstatat(low.fd, name, &lst, unix.AT_SYMLINK_NOFOLLOW) == nil
		full := joinView(p, name)
		add := func(d string) { *out = append(*out, Change{Path: full, Detail: d}) }
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			if st.Rdev == 0 { // a whiteout: removed
				if inLower {
					add("deleted")
				}
				continue
			}
			add(detail(inLower, lst.Mode&unix.S_IFMT == unix.S_IFCHR))
		case unix.S_IFDIR:
			opaque := isOpaque(up.fd, name)
			switch {
			case !inLower:
				add("created")
			case opaque || lst.Mode&unix.S_IFMT != unix.S_IFDIR:
				add("replaced")
			}
			if up.down(name, false, 0) != nil {
				continue
			}
			lowNext := inLower && lst.Mode&unix.S_IFMT == unix.S_IFDIR && low.down(name, false, 0) == nil
			ok := walkDir(up, low, lowNext, full, out, max)
			if lowNext && low.up() != nil {
				inLow = false // the host tree moved: compare no further
			}
			if up.up() != nil || !ok {
				return false
			}
		default:
			d := detail(inLower, lst.Mode&unix.S_IFMT == st.Mode&unix.S_IFMT)
			// A file copied up from below carries the overlay's origin
			// mark; one that took an existing name without it was
			// renamed (or made anew) over it.
			if d == "modified" && !hasXattr(up.fd, name, "user.overlay.origin") {
				d = "renamed-over"
			}
			add(d)
		}
	}
	return true
}

func detail(inLower, sameType bool) string {
	switch {
	case !inLower:
		return "created"
	case !sameType:
		return "replaced"
	}
	return "modified"
}

// isOpaque reports the overlay's opaque mark on an upper directory: its
// lower contents were removed (rm -r, then mkdir).
func isOpaque(upperFD int, rel string) bool {
	v, ok := xattr(upperFD, rel, "user.overlay.opaque")
	return ok && len(v) > 0 && v[0] == 'y'
}

// hasXattr reports whether the upper entry rel carries the attribute.
func hasXattr(upperFD int, rel, name string) bool {
	_, ok := xattr(upperFD, rel, name)
	return ok
}

// xattr reads attribute name of the upper entry rel (not following a
// symlink), up to 8 bytes: enough for the marks it is asked about.
func xattr(upperFD int, rel, name string) ([]byte, bool) {
	fd, err := unix.Openat(upperFD, rel, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	buf := make([]byte, 8)
	n, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(fd), name, buf)
	if err != nil && err != unix.ERANGE {
		return nil, false
	}
	return buf[:max(n, 0)], true
}
