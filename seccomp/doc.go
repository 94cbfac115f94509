// Package seccomp owns sbx's system-call filter: which calls a sandboxed
// command may not make, and how the filter reaches the kernel.
//
// The filter is compiled with libseccomp at development time, by go
// generate, for every Config and for each target architecture (amd64 and
// arm64, both from any machine: libseccomp targets a foreign architecture
// as well as its own), and the classic BPF programs are embedded in sbx
// (filters_GOARCH.go; Compile returns one): sbx links no libseccomp and
// needs no cgo. On any other architecture Compile fails and sbx refuses
// to run. The tests run both tables in two BPF interpreters (their own
// and golang.org/x/net/bpf's) with each architecture's numbers, on every
// machine; no test has run on an arm64 kernel yet. The filter's definition is compileLibseccomp
// (libseccomp_linux_test.go); the tests compare the embedded programs with
// its output and run them on the calls listed below. The
// sandbox's exec stage loads those bytes with one seccomp(2) call on the
// thread that then forks the command (LoadThread, or LoadThreadListener
// when the filter notifies), so nothing between the load and execve needs
// cgo, and the rest of the init process stays unfiltered.
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
//   - a set-id bit (S_ISUID, S_ISGID) in a mode argument: chmod, fchmod,
//     fchmodat, fchmodat2, creat, mknod, mknodat, and open/openat with
//     O_CREAT or O_TMPFILE (setid.go says why openat2 and mkdir need no
//     rule); a run cannot leave a set-id file behind. With Notify the
//     supervisor answers these EPERM even when it observes the call
//     (SetIDMode decides from the registers alone);
//   - ioctl TIOCSTI and TIOCLINUX, compared on the low 32 bits of the
//     request so a value with high bits set cannot slip past (the kernel
//     truncates it to 32 bits);
//   - socket families the policy does not need: only AF_INET, AF_INET6 and
//     AF_NETLINK/NETLINK_ROUTE are allowed, AF_UNIX only when the policy
//     allows Unix sockets; raw and packet sockets and MPTCP are refused.
//     socketpair(2) is not filtered in this mode; note that a
//     socketpair(AF_UNIX, SOCK_DGRAM) socket can sendto(2) any datagram
//     socket path it can see (UnixConnect closes that).
//
// Refused calls fail with EPERM (clone3: ENOSYS) so programs see an
// ordinary error; only the foreign-architecture case kills.
//
// Some refused calls are feature probes that runtimes make on every
// start and handle by doing without (Probes: Node's libuv calling
// io_uring_setup). They are refused like the rest; the supervisor marks
// their records so the report leaves them out.
//
// # Notify: denials reported to the supervisor
//
// With Config.Notify every EPERM rule becomes SECCOMP_RET_USER_NOTIF, and
// the calls that put a new entry in a directory other than an open
// (mkdir, mknod, rename, link, symlink, in all their forms) are notified
// too, for the supervisor to note where the command made them (the
// after-run check) and answer Continue; the program is otherwise
// identical. The exec stage loads it with LoadThreadListener and
// hands the notification descriptor to the supervisor (SCM_RIGHTS), which
// wraps it in a Listener and runs Serve: each refused call arrives as a
// Request, Describe decodes it for the violation record (socket family
// and type, ioctl name, clone/unshare flags, ptrace request, mount paths),
// and the handler answers Response{Errno: EPERM}. The notification API is
// plain ioctls on the descriptor, cgo-free.
//
// # ObserveNet: destinations reported to the supervisor
//
// With Config.ObserveNet (for a network namespace with loopback alone)
// every connect(2), and sendto(2) with a destination address, goes to the
// supervisor; InspectNet reads the destination (and, when it is not a
// loopback address, the socket's type and the start of the datagram, for
// a DNS question), and the handler answers Continue: the kernel decides,
// the supervisor only reports. sendmsg(2) and sendmmsg(2) are not
// notified: their destination lies in memory, so each one would be, the
// sandbox's own hand-over of the listener (made under this filter)
// included.
//
// # UnixConnect: an allow-list of pathname Unix sockets
//
// With Config.UnixConnect the command may create AF_UNIX stream and
// seqpacket sockets (datagram ones stay refused, socketpair included; the
// kernel makes SOCK_RAW a datagram socket), and every connect(2) goes to
// the supervisor, whose UnixAllow.Connect decides: the path is resolved
// in the command's own view (/proc/PID/root, RESOLVE_IN_ROOT, no magic
// links), compared by device and inode with the allowed sockets, and the
// supervisor connects a pidfd_getfd duplicate of the command's socket to
// the very file it checked (through /proc/self/fd/N) and answers with the
// result. Nothing is re-read from the command after the check, so a
// thread rewriting the address or swapping a symlink cannot redirect the
// connect. Refused: DeniedErrno (EACCES) for a socket outside the list,
// EPERM for abstract addresses, with a UnixDenial for the record. Sockets
// of other families are answered Continue by default, which a thread
// swapping descriptors can race (see UnixAllow.EmulateNonUnix for the
// closed alternative and its Landlock caveat).
//
// # When the supervisor is gone
//
// Notified calls wait in the kernel for the supervisor's answer. When the
// listener's last descriptor is closed — Listener.Close, or the
// supervisor dying — pending and future notified calls fail with ENOSYS:
// the sandbox fails closed (nothing refused becomes allowed, and connect
// fails for every family under UnixConnect), but programs see ENOSYS
// rather than EPERM. A program compiled with Notify or UnixConnect and
// loaded with plain LoadThread has no listener and behaves the same way
// from the start. The kernel allows one listener per filter stack, so a
// sandbox nested in one that already has a listener gets EBUSY from
// LoadThreadListener and must fall back to a filter without Notify.
package seccomp
