package learn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Errors WriteAtomic returns (wrapped, with the path).
var (
	ErrOutputSymlink  = errors.New("is a symbolic link; name the file itself")
	ErrOutputDirOpen  = errors.New("its directory is writable by others and not sticky; write it elsewhere")
	ErrOutputDirOwner = errors.New("its directory belongs to another user; write it elsewhere")
	ErrOutputNotFile  = errors.New("is not a regular file")
)

// WriteAtomic writes data to path: a temporary file in the same
// directory, written, synced, renamed over path, and the directory
// synced, so that a reader sees the old file or the new one, never a
// part. It refuses, each with its own error: a path that is a symbolic
// link or not a regular file, and a directory that another user owns or
// that others may write to without the sticky bit (someone else could
// swap the file between the write and the read). The new file's mode is
// the old file's, or 0644 less the umask.
func WriteAtomic(path string, data []byte) error {
	if path == "" {
		return errors.New("learn: no output path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("learn: output %s: %w", path, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Lstat(abs); err == nil {
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("learn: output %s: %w", path, ErrOutputSymlink)
		case !st.Mode().IsRegular():
			return fmt.Errorf("learn: output %s: %w", path, ErrOutputNotFile)
		}
		mode = st.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("learn: output %s: %w", path, err)
	}
	dir := filepath.Dir(abs)
	dst, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("learn: output %s: %w", path, err)
	}
	if dst.Mode()&0o002 != 0 && dst.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("learn: output %s: %w", path, ErrOutputDirOpen)
	}
	if sys, ok := dst.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() && sys.Uid != 0 {
		return fmt.Errorf("learn: output %s: %w", path, ErrOutputDirOwner)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(abs)+".learn-*")
	if err != nil {
		return fmt.Errorf("learn: output %s: %w", path, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("learn: output %s: %w", path, err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		return fmt.Errorf("learn: output %s: %w", path, err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
