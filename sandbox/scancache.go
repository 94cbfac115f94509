package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// ScanCacheDir returns the directory for the protected-name search's
// cache ($XDG_CACHE_HOME/sbx, else ~/.cache/sbx), made 0700 when missing,
// or "" when there is none to trust: not on Linux, no home, or a
// directory that is not the caller's own or that others may write. The
// policy denies the sandboxed command writes there (policy.Input.ScanCache).
func ScanCacheDir(home string) string {
	if runtime.GOOS != "linux" {
		return ""
	}
	// Only the cache directory itself (and ~/.cache in an existing home)
	// is ever made: never a home or an XDG_CACHE_HOME that does not exist.
	base := os.Getenv("XDG_CACHE_HOME")
	if filepath.IsAbs(base) {
		if st, err := os.Stat(base); err != nil || !st.IsDir() {
			return ""
		}
	} else {
		if !filepath.IsAbs(home) || home == "/" {
			return ""
		}
		if st, err := os.Stat(home); err != nil || !st.IsDir() {
			return ""
		}
		base = filepath.Join(home, ".cache")
		if err := os.Mkdir(base, 0o700); err != nil && !os.IsExist(err) {
			return ""
		}
	}
	dir := filepath.Join(base, "sbx")
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return ""
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm()&0o022 != 0 {
		return ""
	}
	if s, ok := st.Sys().(*syscall.Stat_t); !ok || int(s.Uid) != os.Geteuid() {
		return ""
	}
	return dir
}
