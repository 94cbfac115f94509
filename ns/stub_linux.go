//go:build linux

package ns

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"golang.org/x/sys/unix"
)

// A stub is a missing protected name, created on the host for the length
// of a run so a read-only mount can sit on it (a mount needs an existing
// dentry; creating the name is the only way to stop the command creating
// it). The protocol keeps concurrent runs in one directory safe:
//
//   - the creator marks the stub with the user xattr user.sbx.stub;
//   - every run that uses a stub holds a shared flock on it;
//   - at exit a run tries to upgrade to an exclusive lock; only if no other
//     run holds the stub, and it is still a marked, empty stub at the same
//     inode, is it removed.
//
// Init runs the removal after every sandboxed process is gone, also when
// the supervisor was SIGKILLed (init sees its lifeline close). On file
// systems without user xattrs only the creator removes a stub, so a stub
// shared by overlapping runs can outlive them (documented limit).
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

const stubXattr = "user.sbx.stub"

// createStub creates the stub at host path src (how init reaches it before
// pivot_root); path is where it is after pivot_root, for the clean-up.
func createStub(src, path string, dir bool) (*stub, error) {
	for attempt := 0; attempt < 8; attempt++ {
		s, err := createMarked(src, path, dir)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("creating stub: %w", err)
		}
		// It exists: another run's stub to share (or a real file, which
		// the caller's checks refuse).
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if dir {
			flags |= unix.O_DIRECTORY
		}
		fd, err := unix.Open(src, flags, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // removed by a run that just finished: try again
		}
		if err != nil {
			return nil, fmt.Errorf("opening stub (a symlink or a different kind of file appeared?): %w", err)
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("locking stub: %w", err)
		}
		var a, b unix.Stat_t
		if unix.Fstat(fd, &a) != nil || unix.Lstat(src, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			unix.Close(fd)
			continue
		}
		_, xerr := unix.Fgetxattr(fd, stubXattr, nil)
		return &stub{src: src, path: path, dir: dir, fd: fd, marked: xerr == nil, dev: a.Dev, ino: a.Ino}, nil
	}
	return nil, errors.New("creating stub: it keeps changing under us")
}

// createMarked creates the stub under a temporary name next to src,
// marks it, locks it and renames it into place without replacing
// anything, so no other run ever sees an unmarked stub (and plans it as a
// real file) or one it could remove (its exclusive lock fails). The
// descriptor it was made with is the one kept: the stub at src is the
// inode the rename put there. EEXIST means src exists already.
func createMarked(src, path string, dir bool) (*stub, error) {
	// The name only has to be unlikely to exist: O_EXCL and
	// RENAME_NOREPLACE refuse one that does. math/rand/v2's generator is
	// seeded by the runtime; crypto/rand's first call cost 0.08 ms.
	tmp := fmt.Sprintf("%s.sbx-stub-%012x", src, rand.Uint64()&(1<<48-1))
	var fd int
	var err error
	remove := func() { _ = unix.Unlink(tmp) }
	if dir {
		remove = func() { _ = unix.Rmdir(tmp) }
		if err = unix.Mkdir(tmp, 0o755); err == nil {
			fd, err = unix.Open(tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				remove()
			}
		}
	} else {
		fd, err = unix.Open(tmp, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	}
	if err != nil {
		return nil, err
	}
	marked := unix.Fsetxattr(fd, stubXattr, []byte("1"), 0) == nil // best effort: see the type's doc
	var st unix.Stat_t
	if err = unix.Flock(fd, unix.LOCK_SH); err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, src, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		unix.Close(fd)
		remove()
		return nil, err
	}
	return &stub{src: src, path: path, dir: dir, fd: fd, created: true, marked: marked, dev: st.Dev, ino: st.Ino}, nil
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

// Close removes the stubs this view created and closes its descriptors
// on the discard overlays. Call it once every process of the sandbox is
// gone (and Changes has read the overlays).
func (v *View) Close() {
	if v == nil {
		return
	}
	for _, o := range v.Overlays {
		unix.Close(o.upperFD)
		unix.Close(o.lowerFD)
	}
	v.Overlays = nil
	for i := len(v.stubs) - 1; i >= 0; i-- {
		s := v.stubs[i]
		if v.pivoted {
			s.remove(s.path, s.path)
		} else {
			s.remove(newRoot+s.path, s.src)
		}
	}
	v.stubs = nil
}
