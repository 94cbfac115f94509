package policy

import "syscall"

// syscallENOTDIR is matched when resolving a path whose prefix is a file.
var syscallENOTDIR error = syscall.ENOTDIR
