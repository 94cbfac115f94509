//go:build linux && (amd64 || arm64)

package landlock

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An Early is the part of a Ruleset that the sandbox's early process
// (rawexec.Early.Call) adds while the supervisor plans, before the
// sandbox's view exists: the rules for paths that name the same inode in
// the view as on the host, opened on the host. It holds the ruleset the
// rules go into, created here. See PrepareEarly and Compile.
type Early struct {
	fd          int
	rulesetAttr *unix.LandlockRulesetAttr
	rules       []compiledRule
	mine        []bool // rules[i] is in the table
	done        []byte // 8 bytes per rule, not 0 once the early process added it
	t           *earlyTable
}

// earlyTable is what addEarly reads: pointer-free but for the Go memory
// it points into, which the Early keeps alive.
type earlyTable struct {
	ruleset uintptr
	how     unix.OpenHow
	n       uintptr
	rules   *earlyRule
	done    *byte
}

type earlyRule struct {
	path   *byte // NUL-terminated
	pb, pf *unix.LandlockPathBeneathAttr
	index  uintptr // its 8 bytes in done
}

// PrepareEarly creates rs's ruleset and the table of its rules whose
// path hostInode accepts (the path names the same inode in the sandbox's
// view as on the host). Hand Func to the early process; compile the rest
// with Compile; Close once the command has started.
func (rs Ruleset) PrepareEarly(hostInode func(string) bool) (*Early, error) {
	_, attr, size, err := rs.rulesetAttr()
	if err != nil {
		return nil, err
	}
	r0, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock: create ruleset: %w", errno)
	}
	e := &Early{fd: int(r0), rules: rs.compiledRules(attr.Handled_access_fs)}
	e.rulesetAttr = attr
	e.mine = make([]bool, len(e.rules))
	e.done = make([]byte, 8*len(e.rules)+8) // never empty: t.done points into it
	var paths []byte
	var table []earlyRule
	var offs []int
	for i, r := range e.rules {
		if !hostInode(r.path) {
			continue
		}
		e.mine[i] = true
		offs = append(offs, len(paths))
		paths = append(append(paths, r.path...), 0)
		table = append(table, earlyRule{pb: r.pb, pf: r.pf, index: uintptr(i)})
	}
	for i := range table {
		table[i].path = &paths[offs[i]]
	}
	e.t = &earlyTable{
		ruleset: uintptr(e.fd),
		how:     unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS},
		n:       uintptr(len(table)),
		done:    &e.done[0],
	}
	if len(table) > 0 {
		e.t.rules = &table[0]
	}
	return e, nil
}

// Func is the function and argument for rawexec.Early.Call.
func (e *Early) Func() (func(unsafe.Pointer), unsafe.Pointer) {
	return addEarly, unsafe.Pointer(e.t)
}

// Close closes the ruleset's descriptor.
func (e *Early) Close() {
	if e != nil && e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}

const atFDCWD = ^uintptr(99) // AT_FDCWD (-100)

// addEarly adds the table's rules, each opened on the host with
// RESOLVE_NO_SYMLINKS: a rule whose path has a symlink on it, is missing
// or is refused is left for Compile's ops. It runs in the early
// process (rawexec.Early.Call): nosplit, norace, no allocation, no bounds
// checks, raw system calls, writes only into the table's attributes and
// done.
//
//go:nosplit
//go:norace
func addEarly(arg unsafe.Pointer) {
	var (
		t  = (*earlyTable)(arg)
		r  *earlyRule
		i  uintptr
		fd uintptr
		e  syscall.Errno
	)
	for i = 0; i < t.n; i++ {
		r = (*earlyRule)(unsafe.Add(unsafe.Pointer(t.rules), i*unsafe.Sizeof(earlyRule{})))
		fd, _, e = syscall.RawSyscall6(unix.SYS_OPENAT2, atFDCWD, uintptr(unsafe.Pointer(r.path)),
			uintptr(unsafe.Pointer(&t.how)), unsafe.Sizeof(t.how), 0, 0)
		if e != 0 {
			continue
		}
		r.pb.Parent_fd = int32(fd)
		_, _, e = syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, t.ruleset, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(r.pb)), 0, 0, 0)
		if e == syscall.EINVAL && r.pf != nil {
			// Directory rights on what is not a directory: the file
			// rights only, as ruleOps does.
			r.pf.Parent_fd = int32(fd)
			_, _, e = syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, t.ruleset, unix.LANDLOCK_RULE_PATH_BENEATH,
				uintptr(unsafe.Pointer(r.pf)), 0, 0, 0)
		}
		if e == 0 {
			*(*uint64)(unsafe.Add(unsafe.Pointer(t.done), r.index*8)) = 1
		}
		syscall.RawSyscall6(syscall.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
	}
}
