//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The three Landlock system calls, thread-local. (go-landlock's syscall
// package is not imported: in cgo builds it links libpsx, which wraps
// pthread_create process-wide, and sbx needs the thread-local form only.)

func createRuleset(attr *unix.LandlockRulesetAttr, size uintptr, flags uintptr) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), size, flags)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func addRule(fd int, typ uintptr, attr unsafe.Pointer) error {
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), typ, uintptr(attr), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

const ruleNetPort = 2

// ABI returns the kernel's Landlock ABI version, 0 when unavailable.
func ABI() int {
	v, err := createRuleset(nil, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if err != nil {
		return 0
	}
	return v
}

// fsMask is every filesystem right the given ABI knows.
func fsMask(abi int) uint64 {
	m := uint64(1<<13 - 1)
	if abi >= 2 {
		m |= accessRefer
	}
	if abi >= 3 {
		m |= accessTruncate
	}
	if abi >= 5 {
		m |= accessIoctlDev
	}
	return m
}

// rulesetAttr is the ruleset rs needs on this kernel: every filesystem
// right its Landlock ABI knows, TCP bind and connect (ABI 4+) when rs
// restricts TCP, the signal and abstract-socket scopes (ABI 6+), and the
// attribute's size for that ABI.
func (rs Ruleset) rulesetAttr() (int, *unix.LandlockRulesetAttr, uintptr, error) {
	abi := ABI()
	if abi < 1 {
		return 0, nil, 0, errors.New("landlock: not available in this kernel (needs CONFIG_SECURITY_LANDLOCK and \"landlock\" in the lsm= boot list)")
	}
	attr := &unix.LandlockRulesetAttr{Handled_access_fs: fsMask(abi)}
	size := unsafe.Sizeof(attr.Handled_access_fs)
	if abi >= 4 && rs.RestrictTCP {
		if !rs.BindAny {
			attr.Handled_access_net |= unix.LANDLOCK_ACCESS_NET_BIND_TCP
		}
		if !rs.ConnectAny {
			attr.Handled_access_net |= unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
	}
	if abi >= 4 {
		size += unsafe.Sizeof(attr.Handled_access_net)
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.Scoped)
	}
	return abi, attr, size, nil
}

// RestrictThread applies rs to the calling OS thread (not the whole
// process). The caller must hold the thread (runtime.LockOSThread) and
// never release it. Paths that do not exist in the caller's view are
// skipped. It returns the ABI used.
func (rs Ruleset) RestrictThread() (int, error) {
	abi, attr, size, err := rs.rulesetAttr()
	if err != nil {
		return 0, err
	}
	mask := attr.Handled_access_fs
	fd, err := createRuleset(attr, size, 0)
	if err != nil {
		return abi, fmt.Errorf("landlock: create ruleset: %w", err)
	}
	defer unix.Close(fd)
	for _, r := range rs.Rules {
		pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // not in this view
		}
		access := r.Access & mask
		if r.NotDir {
			access &= fileRights
		}
		if access != 0 {
			pb := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
			err = addRule(fd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&pb))
			if errors.Is(err, unix.EINVAL) && access&^fileRights != 0 {
				// Directory-only rights on what is not a directory
				// (not known from the plan): the file rights only.
				err = nil
				if pb.Allowed_access = access & fileRights; pb.Allowed_access != 0 {
					err = addRule(fd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&pb))
				}
			}
		}
		unix.Close(pfd)
		if err != nil {
			return abi, fmt.Errorf("landlock: rule for %s: %w", r.Path, err)
		}
	}
	if attr.Handled_access_net&unix.LANDLOCK_ACCESS_NET_CONNECT_TCP != 0 {
		for _, port := range rs.ConnectPorts {
			np := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if err := addRule(fd, ruleNetPort, unsafe.Pointer(&np)); err != nil {
				return abi, fmt.Errorf("landlock: port rule %d: %w", port, err)
			}
		}
	}
	if attr.Handled_access_net&unix.LANDLOCK_ACCESS_NET_BIND_TCP != 0 {
		for _, port := range rs.BindPorts {
			np := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_BIND_TCP, port: uint64(port)}
			if err := addRule(fd, ruleNetPort, unsafe.Pointer(&np)); err != nil {
				return abi, fmt.Errorf("landlock: bind port rule %d: %w", port, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return abi, fmt.Errorf("landlock: no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return abi, fmt.Errorf("landlock: restrict self: %w", e)
	}
	return abi, nil
}
