//go:build linux

package ns

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// A stub is a missing protected name, created on the host for the length
// of a run so a read-only mount can sit on it (a mount needs an existing
// dentry; creating the name is the only way to stop the command creating
// it). The protocol keeps concurrent runs in one directory safe:
//
//   - the creator gives the stub the marker mode, the sticky bit and no
//     write bit (stubFileMode, stubDirMode), in the call that creates it,
//     so no run ever sees an unmarked stub and plans it as a real file;
//   - every run that uses a stub holds a shared flock on it, taken before
//     it trusts the name: a run checks, under the lock, that the name
//     still names the inode it opened;
//   - at exit a run tries to upgrade to an exclusive lock; only if no other
//     run holds the stub, and it is still a stub at the same inode (a file
//     still empty), is it removed.
//
// The sandbox's first process runs the removal after every sandboxed
// process is gone, also when the supervisor was SIGKILLed (it sees its
// lifeline close). On file
// systems that drop the sticky bit only the creator removes a stub, so a
// stub shared by overlapping runs can outlive them (documented limit).
//
// Earlier versions marked stubs with an xattr, user.sbx.stub, set between
// a create under a temporary name and a rename into place: three journal
// operations per stub where the marker mode needs one.
type stub struct {
	src             string
	path            string
	dir             bool
	fd              int
	created, marked bool
	dev             uint64
	ino             uint64
	mount           string // the raw start's view mount the stub lies in ("": unknown)
}

// The marker modes. umask can clear read and execute bits, never the
// sticky bit, and a stub never gains a write bit; stubMarked tests that.
const (
	stubFileMode = 0o1444
	stubDirMode  = 0o1555
)

// stubMarked reports whether st is an sbx stub: a directory, or an empty
// regular file, with the sticky bit set and no write bit. Linux ignores
// the sticky bit on a regular file, and a sticky directory nobody can
// write is of no use, so a real file looks like this only by design.
func stubMarked(st *unix.Stat_t) bool {
	if st.Mode&unix.S_ISVTX == 0 || st.Mode&0o222 != 0 {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return true
	case unix.S_IFREG:
		return st.Size == 0
	}
	return false
}

// createStub creates the stub at host path src (where the supervisor
// reaches it), or shares the one another run made there; path is where it
// is after pivot_root, for the clean-up. A real file at src is returned
// unmarked, locked like a stub: the caller binds it and does not keep it.
func createStub(src, path string, dir bool) (*stub, error) {
	for attempt := 0; attempt < 8; attempt++ {
		fd, created, err := openStub(src, dir)
		if errors.Is(err, unix.ENOENT) {
			continue // removed by a run that just finished: try again
		}
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("locking stub: %w", err)
		}
		// Under the lock no other run can remove it; before it, one
		// that shared it may have (it exits and finds no lock but its
		// own). The name must still name the inode locked.
		var a, b unix.Stat_t
		if unix.Fstat(fd, &a) != nil || unix.Lstat(src, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			unix.Close(fd)
			continue
		}
		return &stub{src: src, path: path, dir: dir, fd: fd, created: created, marked: stubMarked(&a), dev: a.Dev, ino: a.Ino}, nil
	}
	return nil, errors.New("creating stub: it keeps changing under us")
}

// openStub creates the stub at src with the marker mode and opens it, or
// opens what is there already (created false). ENOENT means it went away
// between the two: try again.
func openStub(src string, dir bool) (fd int, created bool, err error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if dir {
		err = unix.Mkdir(src, stubDirMode)
		flags |= unix.O_DIRECTORY
	} else {
		fd, err = unix.Open(src, flags|unix.O_CREAT|unix.O_EXCL, stubFileMode)
		if err == nil {
			return fd, true, nil
		}
	}
	created = err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, false, fmt.Errorf("creating stub: %w", err)
	}
	// It exists: another run's stub to share (or a real file, which the
	// caller's checks refuse).
	fd, err = unix.Open(src, flags, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, false, err
	}
	if err != nil {
		return -1, false, fmt.Errorf("opening stub (a symlink or a different kind of file appeared?): %w", err)
	}
	return fd, created, nil
}

func (s *stub) release() { unix.Close(s.fd) }

// remove unmounts the stub's read-only mount (at mnt) and deletes the
// stub (at at) if no other run holds it and it is still what was created.
func (s *stub) remove(mnt, at string) {
	defer s.release()
	_ = unix.Unmount(mnt, unix.MNT_DETACH)
	if err := unix.Flock(s.fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // another run still uses it; the last one removes it
	}
	var st unix.Stat_t
	if unix.Lstat(at, &st) != nil || st.Dev != s.dev || st.Ino != s.ino {
		return
	}
	if s.dir {
		_ = unix.Rmdir(at) // fails, rightly, if something was put inside
	} else if st.Size == 0 {
		_ = unix.Unlink(at)
	}
}
