package seccomp

import (
	"fmt"
	"strings"
)

// Set-id bits of a file mode, and the open flags that make an open's mode
// argument count (the kernel reads the mode only when the open may create
// a file).
const (
	modeSetUID = 0o4000
	modeSetGID = 0o2000
	// SetIDBits are the mode bits a sandboxed command may never set.
	SetIDBits = modeSetUID | modeSetGID

	openCreat   = 0o100      // O_CREAT, the same on amd64 and arm64
	openTmpfile = 0o20000000 // __O_TMPFILE (O_TMPFILE without O_DIRECTORY), the same on both
)

// setIDCall is a system call whose mode argument is a direct (register)
// argument, so the filter compares it: Mode is the index of the mode
// argument, Flags that of the open flags (-1: the call always uses the
// mode).
type setIDCall struct {
	Name        string
	Mode, Flags int
}

// setIDCalls are the calls that set a file's mode bits from an argument:
// the filter refuses them when the mode holds a set-id bit (and, for the
// opens, when the flags create a file: O_CREAT or O_TMPFILE). It is the
// one list the filter's definition (compileFor) and the supervisor's
// answer (SetIDMode) read.
//
// openat2 is not here: its mode lives in a struct open_how in the
// caller's memory, which a filter cannot read (and a supervisor must
// not decide on: the kernel reads that memory again after the answer).
// It creates regular files only, and a regular file's set-id bits are
// cleared by the kernel on its first write, truncate or fallocate by a
// caller without CAP_FSETID, which no sandboxed command holds; a set-id
// file that openat2 creates therefore stays empty or loses the bits. The
// same rule clears a setgid bit that chmod sets on a file of a group the
// caller is not in. setxattr("security.capability") needs CAP_SETFCAP,
// which the command does not hold either. mkdir and mkdirat are not here
// either: the kernel keeps only the permission and sticky bits of their
// mode (a directory gets setgid from its parent alone).
var setIDCalls = []setIDCall{
	{"chmod", 1, -1},
	{"fchmod", 1, -1},
	{"fchmodat", 2, -1},
	{"fchmodat2", 2, -1},
	{"creat", 1, -1},
	{"open", 2, 1},
	{"openat", 3, 2},
	{"mknod", 1, -1},
	{"mknodat", 2, -1},
}

// setIDOpenFlags are the flag bits that make an open use its mode.
var setIDOpenFlags = []uint64{openCreat, openTmpfile}

// SetIDMode reports whether r is one of the calls the filter refuses for
// set-id bits (a set-id mode given to chmod, fchmod, fchmodat, fchmodat2,
// creat, mknod in all their forms, or an open that creates), and
// the mode it asked for. The mode is a register argument, so the answer
// is exact: nothing in the caller's memory is read.
func SetIDMode(r *Request) (mode uint32, ok bool) {
	for _, c := range setIDCalls {
		if c.Name != r.Syscall {
			continue
		}
		mode = uint32(r.Args[c.Mode])
		if mode&SetIDBits == 0 {
			return 0, false
		}
		if c.Flags >= 0 {
			fl := r.Args[c.Flags]
			if fl&openCreat == 0 && fl&openTmpfile == 0 {
				return 0, false
			}
		}
		return mode, true
	}
	return 0, false
}

// ModeString describes a mode's permission bits for a record:
// "mode 06755 (setuid, setgid)".
func ModeString(mode uint32) string {
	var names []string
	if mode&modeSetUID != 0 {
		names = append(names, "setuid")
	}
	if mode&modeSetGID != 0 {
		names = append(names, "setgid")
	}
	s := fmt.Sprintf("mode %#o", mode&0o7777)
	if len(names) > 0 {
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}
