package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// CheckPassedFDs refuses a descriptor the command would inherit (its
// standard three, and --keep-fd ones) that is a directory or an O_PATH
// handle: through it (openat, /proc/self/fd/N/...) the command would
// reach the host's view of that directory, past the sandbox's masks and
// read-only binds, wherever Landlock leaves enforcement to the mount view
// (the class of runc's CVE-2024-21626). A closed standard descriptor is
// fine.
func CheckPassedFDs(fds []int) error {
	for _, fd := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			continue // not open
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		isPath := err == nil && flags&unix.O_PATH != 0
		if st.Mode&unix.S_IFMT == unix.S_IFDIR || isPath {
			what := map[int]string{0: "standard input", 1: "standard output", 2: "standard error"}[fd]
			if what == "" {
				what = fmt.Sprintf("--keep-fd %d", fd)
			}
			return fmt.Errorf("%s is a directory or a path handle; sbx passes none into the sandbox (the command could open the host's files through it, past the mount view): redirect it from a file or /dev/null", what)
		}
	}
	return nil
}
