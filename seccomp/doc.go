// Package seccomp owns sbx's system-call filter: which calls a sandboxed
// command may not make, and how the filter reaches the kernel.
//
// The filter is compiled once, in the supervisor, with libseccomp
// (Compile, linux+cgo only) and exported as a classic BPF program. The
// sandbox's exec stage loads those bytes with one seccomp(2) call on the
// thread that then forks the command (LoadThread), so nothing between the
// load and execve needs cgo, and the rest of the init process stays
// unfiltered.
//
// The default action is ALLOW; the filter is a deny list aimed at the
// kernel surfaces that sandbox escapes have used:
//
//   - foreign architectures: any syscall made with an audit arch other than
//     the native one (i386 via int 0x80 on x86_64) kills the process; x32
//     numbers (bit 30 set) are refused too;
//   - ptrace, process_vm_readv/writev (reading or writing other processes);
//   - io_uring_setup/enter/register (socket/open/connect without the
//     syscalls this filter sees);
//   - user-namespace creation: unshare/clone with any CLONE_NEW* flag get
//     EPERM; clone3, whose flags live in memory a filter cannot read, gets
//     ENOSYS so libcs fall back to clone;
//   - the mount API (mount, umount2, pivot_root, chroot, open_tree,
//     move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr), setns;
//   - keyrings, bpf, perf_event_open, userfaultfd, kexec, module loading,
//     open_by_handle_at and other host-administration calls;
//   - ioctl TIOCSTI and TIOCLINUX, compared on the low 32 bits of the
//     request so a value with high bits set cannot slip past (the kernel
//     truncates it to 32 bits);
//   - socket families the policy does not need: only AF_INET, AF_INET6 and
//     AF_NETLINK/NETLINK_ROUTE are allowed, AF_UNIX only when the policy
//     allows Unix sockets (socketpair stays allowed: it reaches nobody);
//     raw and packet sockets and MPTCP are refused.
//
// Refused calls fail with EPERM (clone3: ENOSYS) so programs see an
// ordinary error; only the foreign-architecture case kills.
package seccomp
