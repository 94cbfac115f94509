//go:build linux

package ns

import (
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// dirCursor is one open directory inside a tree, moved one component at
// a time: whatever the depth, no call is given more than one path
// component (paths longer than PATH_MAX work), and only the current
// directory is open (depth costs no descriptors). Each step up through
// ".." is checked against the identity the directory had on the way
// down, so a tree changed meanwhile gives an error, never a wrong place.
// No step follows a symbolic link.
type dirCursor struct {
	fd    int      // the current directory
	ids   []dirID  // identity of the root and of each directory below it down to the current one
	names []string // the components from the root to the current directory
}

type dirID struct{ dev, ino uint64 }

// newCursor opens a cursor on the directory open at root (which stays
// the caller's).
func newCursor(root int) (*dirCursor, error) {
	fd, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &dirCursor{fd: fd, ids: []dirID{{st.Dev, st.Ino}}}, nil
}

func (c *dirCursor) close() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// down enters name, a directory in the current one (made first, with
// mode, when create is set).
func (c *dirCursor) down(name string, create bool, mode uint32) error {
	if c.fd < 0 {
		return unix.EBADF
	}
	if create {
		if err := unix.Mkdirat(c.fd, name, mode); err != nil && err != unix.EEXIST {
			return err
		}
	}
	next, err := unix.Openat(c.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(next, &st); err != nil {
		unix.Close(next)
		return err
	}
	unix.Close(c.fd)
	c.fd = next
	c.ids = append(c.ids, dirID{st.Dev, st.Ino})
	c.names = append(c.names, name)
	return nil
}

// up returns to the parent of the current directory. If it cannot, the
// cursor is closed: every later step fails, so that no caller mistakes
// where it is.
func (c *dirCursor) up() error {
	if c.fd < 0 || len(c.names) == 0 {
		return fmt.Errorf("no parent to return to")
	}
	next, err := unix.Openat(c.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.close()
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(next, &st); err != nil {
		unix.Close(next)
		c.close()
		return err
	}
	if (dirID{st.Dev, st.Ino}) != c.ids[len(c.ids)-2] {
		unix.Close(next)
		c.close()
		return fmt.Errorf("the tree changed during the walk")
	}
	unix.Close(c.fd)
	c.fd = next
	c.ids = c.ids[:len(c.ids)-1]
	c.names = c.names[:len(c.names)-1]
	return nil
}

// goTo moves to the directory whose components below the root are
// names, going up only as far as the common part (made on the way, mode
// 0755 less the umask, when create is set).
func (c *dirCursor) goTo(names []string, create bool) error {
	k := 0
	for k < len(names) && k < len(c.names) && names[k] == c.names[k] {
		k++
	}
	for len(c.names) > k {
		if err := c.up(); err != nil {
			return err
		}
	}
	for _, n := range names[k:] {
		if n == "" || n == "." || n == ".." {
			return fmt.Errorf("bad path component %q", n)
		}
		if err := c.down(n, create, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// list returns the names in the current directory, sorted.
func (c *dirCursor) list() []string {
	fd, err := unix.Openat(c.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), ".")
	names, _ := f.Readdirnames(-1)
	f.Close()
	sort.Strings(names)
	return names
}
