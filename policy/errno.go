package policy

import "syscall"

// syscallENOTDIR is matched when resolving a path whose prefix is a file.
var syscallENOTDIR error = syscall.ENOTDIR

// syscallAccess is access(2) with W_OK.
func syscallAccess(p string) error { return syscall.Access(p, 2) }
