//go:build linux

package ns

import (
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Changes walks the upper layers of the discard overlays — only what
// changed, never the lower tree — and lists each changed path, at most
// max of them. A directory that exists below and was only entered to
// change something inside is not listed itself.
func (v *View) Changes(max int) []Change {
	var all []Change
	for _, o := range v.Overlays {
		walkUpper(o, ".", &all, max)
	}
	out := all[:0]
	for _, c := range all {
		if !v.made[c.Path] {
			out = append(out, c)
		}
	}
	return out
}

// Reach lets a reader without the capabilities init has in the sandbox's
// user namespace (the supervisor of a raw start, not root) read the upper
// layers as init does: it owns their files, so a directory or file the
// command left without its owner's read (and search) permission gets it,
// its mode as it was kept for SaveChanges. Call it before Changes, once
// nothing writes there any more; it visits at most max entries.
func (v *View) Reach(max int) {
	n := 0
	for _, o := range v.Overlays {
		v.reach(o, ".", &n, max)
	}
}

func (v *View) reach(o Overlay, rel string, n *int, max int) {
	var st unix.Stat_t
	if unix.Fstatat(o.upperFD, rel, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	need := uint32(0o400)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		need = 0o500
	case unix.S_IFREG:
	default:
		return
	}
	if st.Mode&need != need && unix.Fchmodat(o.upperFD, rel, (st.Mode|need)&0o7777, 0) == nil {
		if v.modes == nil {
			v.modes = map[string]uint32{}
		}
		v.modes[path.Join(o.Path, rel)] = st.Mode
	}
	if need != 0o500 {
		return
	}
	fd, err := unix.Openat(o.upperFD, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), rel)
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, name := range names {
		if *n++; *n > max {
			return
		}
		v.reach(o, path.Join(rel, name), n, max)
	}
}

func walkUpper(o Overlay, rel string, out *[]Change, max int) {
	if len(*out) >= max {
		return
	}
	fd, err := unix.Openat(o.upperFD, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), rel)
	entries, _ := f.ReadDir(-1)
	f.Close()
	for _, e := range entries {
		if len(*out) >= max {
			return
		}
		r := path.Join(rel, e.Name())
		var st, low unix.Stat_t
		if unix.Fstatat(o.upperFD, r, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		lowErr := unix.Fstatat(o.lowerFD, r, &low, unix.AT_SYMLINK_NOFOLLOW)
		inLower := lowErr == nil
		full := path.Join(o.Path, r)
		add := func(d string) { *out = append(*out, Change{Path: full, Detail: d}) }
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			if st.Rdev == 0 { // a whiteout: removed
				if inLower {
					add("deleted")
				}
				continue
			}
			add(detail(inLower, low.Mode&unix.S_IFMT == unix.S_IFCHR))
		case unix.S_IFDIR:
			opaque := isOpaque(o.upperFD, r)
			switch {
			case !inLower:
				add("created")
			case opaque || low.Mode&unix.S_IFMT != unix.S_IFDIR:
				add("replaced")
			}
			walkUpper(o, r, out, max)
		default:
			d := detail(inLower, low.Mode&unix.S_IFMT == st.Mode&unix.S_IFMT)
			// A file copied up from below carries the overlay's origin
			// mark; one that took an existing name without it was
			// renamed (or made anew) over it.
			if d == "modified" && !hasXattr(o.upperFD, r, "user.overlay.origin") {
				d = "renamed-over"
			}
			add(d)
		}
	}
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
