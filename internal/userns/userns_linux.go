//go:build linux

// Package userns holds what every process sbx starts in new user
// namespaces is given, so that the supervisor's launch (package sandbox)
// and doctor's probes (package doctor), which must see what a run sees,
// share one definition: the id maps (IDMap) and the capabilities this
// kernel knows (LastCap, AllCaps).
package userns

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// IDMap maps the caller's id to itself. For root it maps every id to
// itself: init (root in the sandbox's user namespace) then has its
// capabilities over files of other owners too, so it can build the mount
// view inside a writable directory another user owns. The command drops
// every capability, so it gains nothing from this.
func IDMap(id int) []syscall.SysProcIDMap {
	if id == 0 && os.Geteuid() == 0 {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	}
	return []syscall.SysProcIDMap{{ContainerID: id, HostID: id, Size: 1}}
}

// AllCaps lists every capability this kernel knows, for the ambient set
// of init (and of doctor's probes, which must have what init has).
func AllCaps() []uintptr {
	last := LastCap()
	caps := make([]uintptr, 0, last+1)
	for c := 0; c <= last; c++ {
		caps = append(caps, uintptr(c))
	}
	return caps
}

// LastCap is the highest capability this kernel knows. PR_CAPBSET_READ
// fails with EINVAL past it, so a binary search over 0..63 costs six
// prctl calls; /proc/sys/kernel/cap_last_cap is the fallback when prctl
// is refused (an outer seccomp filter), 63 when both fail.
var LastCap = sync.OnceValue(func() int {
	known := func(c int) bool {
		_, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		return err == nil
	}
	if known(0) {
		lo, hi := 0, 64 // known(lo), !known(hi)
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; known(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n := 0
	for _, ch := range b {
		if ch >= '0' && ch <= '9' {
			n = n*10 + int(ch-'0')
		}
	}
	return n
})
