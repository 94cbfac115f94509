package seccomp

import "strconv"

// Audit architectures (linux/audit.h) of the tables below.
const (
	auditArchX86_64  = 0xc000003e
	auditArchAArch64 = 0xc00000b7
)

// sysNames maps the numbers of the calls the filter refuses or notifies
// to their names, for x86_64 and arm64. It is a
// static table so that decoding needs neither cgo nor libseccomp; a test
// checks it against libseccomp.
var sysNames = map[uint32]map[int]string{
	auditArchX86_64: {
		101: "ptrace",
		310: "process_vm_readv",
		311: "process_vm_writev",
		425: "io_uring_setup",
		426: "io_uring_enter",
		427: "io_uring_register",
		165: "mount",
		166: "umount2",
		155: "pivot_root",
		161: "chroot",
		428: "open_tree",
		429: "move_mount",
		430: "fsopen",
		431: "fsconfig",
		432: "fsmount",
		433: "fspick",
		442: "mount_setattr",
		308: "setns",
		248: "add_key",
		249: "request_key",
		250: "keyctl",
		321: "bpf",
		298: "perf_event_open",
		323: "userfaultfd",
		246: "kexec_load",
		320: "kexec_file_load",
		175: "init_module",
		313: "finit_module",
		176: "delete_module",
		304: "open_by_handle_at",
		303: "name_to_handle_at",
		212: "lookup_dcookie",
		179: "quotactl",
		163: "acct",
		167: "swapon",
		168: "swapoff",
		169: "reboot",
		103: "syslog",
		153: "vhangup",
		164: "settimeofday",
		227: "clock_settime",
		305: "clock_adjtime",
		159: "adjtimex",
		172: "iopl",
		173: "ioperm",
		134: "uselib",
		180: "nfsservctl",
		435: "clone3",
		56:  "clone",
		272: "unshare",
		16:  "ioctl",
		41:  "socket",
		53:  "socketpair",
		42:  "connect",
	},
	auditArchAArch64: {
		117: "ptrace",
		270: "process_vm_readv",
		271: "process_vm_writev",
		425: "io_uring_setup",
		426: "io_uring_enter",
		427: "io_uring_register",
		40:  "mount",
		39:  "umount2",
		41:  "pivot_root",
		51:  "chroot",
		428: "open_tree",
		429: "move_mount",
		430: "fsopen",
		431: "fsconfig",
		432: "fsmount",
		433: "fspick",
		442: "mount_setattr",
		268: "setns",
		217: "add_key",
		218: "request_key",
		219: "keyctl",
		280: "bpf",
		241: "perf_event_open",
		282: "userfaultfd",
		104: "kexec_load",
		294: "kexec_file_load",
		105: "init_module",
		273: "finit_module",
		106: "delete_module",
		265: "open_by_handle_at",
		264: "name_to_handle_at",
		18:  "lookup_dcookie",
		60:  "quotactl",
		89:  "acct",
		224: "swapon",
		225: "swapoff",
		142: "reboot",
		116: "syslog",
		58:  "vhangup",
		170: "settimeofday",
		112: "clock_settime",
		266: "clock_adjtime",
		171: "adjtimex",
		42:  "nfsservctl",
		435: "clone3",
		220: "clone",
		97:  "unshare",
		29:  "ioctl",
		198: "socket",
		199: "socketpair",
		203: "connect",
	},
}

// SyscallName names system call nr of audit architecture arch, or returns
// "syscall#NR" when the static table does not know it.
func SyscallName(arch uint32, nr int) string {
	if n, ok := sysNames[arch][nr]; ok {
		return n
	}
	return "syscall#" + strconv.Itoa(nr)
}
