// Package rawexec starts a process in new namespaces that runs a
// pre-compiled program of system calls and then execve, without a second
// Go runtime.
//
// # What it owns
//
// Today sbx's supervisor starts the sandbox's PID 1 by re-exec'ing its own
// binary, which then boots a fresh Go runtime only to make a few dozen
// system calls (mounts, id maps, capability drops, Landlock, seccomp)
// before exec'ing the user's command. rawexec removes that second runtime:
// the supervisor compiles the whole setup into a flat, pre-allocated
// [Program] of system calls, and [Start] clones a child that interprets it
// and ends in execve, the way Go's own syscall.forkAndExecInChild1 runs
// its fixed list of steps. The sandbox's first process therefore never
// executes sbx: it is a copy-on-write snapshot of the supervisor with one
// thread, and its first exec is the user's command.
//
// Start owns, in order:
//
//   - the clone (plain clone with SIGCHLD and the caller's CLONE_NEW*
//     flags, optionally CLONE_PIDFD; no CLONE_VM or CLONE_VFORK, so the
//     parent may write the child's id maps while the child waits), or
//     the fork of an early process (see "Early processes" below);
//   - the user-namespace id maps, either written by the child itself
//     (a single-id map after "deny" to setgroups, what an unprivileged
//     caller can do) or written by the parent into /proc/PID/*_map while
//     the child blocks on a sync pipe (needed for root's full map);
//   - the caller's Program;
//   - the descriptor layout (Attr.Files becomes the child's 0, 1, 2, 3...,
//     done with dup3 as Go does, then every other descriptor is marked
//     close-on-exec with close_range);
//   - execve, and the report: the child writes {op index, errno, result}
//     to a close-on-exec pipe if an op fails, so the parent learns either
//     "exec'd" (EOF) or exactly which op failed, and reaps a failed child.
//
// It does not own policy: which mounts, which capabilities, which
// filters. Those are ops the caller appends.
//
// # Rules for the child code
//
// Between the clone and execve the child runs on a copy of the parent's
// address space in which only the cloning thread exists. The Go runtime's
// other threads (GC workers, sysmon, the scheduler) are gone, its locks
// may be held by threads that no longer exist, and the stack guard is
// poisoned by runtime_BeforeFork. The interpreter therefore follows the
// same rules as syscall.forkAndExecInChild1:
//
//   - every function reachable in the child is //go:nosplit (no stack
//     growth; the linker checks the whole chain against the nosplit limit
//     of about 800 bytes, so the interpreter's frame stays small: 16 slots
//     fit, 128 did not) and //go:norace;
//   - no allocation, no maps, no interfaces, no defer, no panics: indexes
//     are masked or loop-bounded so the compiler elides bounds checks, and
//     errors become a report on the pipe followed by exit_group(127);
//   - no write barriers and no writes of heap pointers: the child only
//     writes integers (its slots on its own stack, and int32 stores into
//     parent-allocated, pointer-free buffers);
//   - system calls only through syscall.RawSyscall6 (never Syscall, which
//     calls into the scheduler);
//   - runtime_AfterForkInChild runs first, restoring the signal mask and
//     resetting handlers, because both survive execve.
//
// Everything that needs Go (formatting the id maps, NUL-terminating
// strings, building argv and envp, choosing the descriptor shuffles,
// sizing buffers) happens in the parent while the Program is built; all
// buffers are allocated before the clone and kept alive until the child
// has exec'd or failed.
//
// # Programs
//
// An op is one system call: a number (always taken from
// golang.org/x/sys/unix, never hard-coded, since amd64 and arm64 differ),
// six arguments and a few flags. An argument is an immediate ([Imm],
// [Int]), a pointer to a parent-owned buffer ([Bytes], [Ptr]), a
// NUL-terminated string ([String]) or a [Slot]: one of a small number of
// registers that an earlier op saved its result into (typically a file
// descriptor opened in the child). [Program.StoreAt] copies a slot into a
// buffer, so descriptors obtained in the child can be placed into
// structures such as landlock_path_beneath_attr or an SCM_RIGHTS control
// message. Every op carries a short label used in error messages.
//
// Building a Program (error checks elided):
//
//	var p rawexec.Program
//	p.Syscall("make mounts private", unix.SYS_MOUNT,
//		rawexec.Imm(0), rawexec.String("/"), rawexec.Imm(0),
//		rawexec.Imm(unix.MS_REC|unix.MS_PRIVATE), rawexec.Imm(0))
//	p.Syscall("mount tmpfs on /tmp", unix.SYS_MOUNT,
//		rawexec.String("tmpfs"), rawexec.String("/tmp"), rawexec.String("tmpfs"),
//		rawexec.Imm(unix.MS_NOSUID|unix.MS_NODEV), rawexec.String("mode=1777"))
//	ruleset := p.Syscall("landlock ruleset", unix.SYS_LANDLOCK_CREATE_RULESET,
//		rawexec.Ptr(rulesetAttr), rawexec.Imm(unsafe.Sizeof(*rulesetAttr)), rawexec.Imm(0)).Save()
//	dir := p.Syscall("open /work", unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD),
//		rawexec.String("/work"), rawexec.Imm(unix.O_PATH|unix.O_CLOEXEC)).Save()
//	rule := &unix.LandlockPathBeneathAttr{Allowed_access: access}
//	p.Store("rule: /work fd", &rule.Parent_fd, dir) // the fd exists only in the child
//	p.Syscall("landlock add /work", unix.SYS_LANDLOCK_ADD_RULE, ruleset,
//		rawexec.Imm(unix.LANDLOCK_RULE_PATH_BENEATH), rawexec.Ptr(rule), rawexec.Imm(0))
//	p.Syscall("close /work", unix.SYS_CLOSE, dir)
//	p.Syscall("no_new_privs", unix.SYS_PRCTL,
//		rawexec.Imm(unix.PR_SET_NO_NEW_PRIVS), rawexec.Imm(1))
//	p.Syscall("landlock restrict", unix.SYS_LANDLOCK_RESTRICT_SELF, ruleset, rawexec.Imm(0))
//	p.Syscall("seccomp", unix.SYS_SECCOMP,
//		rawexec.Imm(unix.SECCOMP_SET_MODE_FILTER), rawexec.Imm(0), rawexec.Ptr(&fprog))
//	if err := p.Err(); err != nil { ... }
//
//	proc, err := rawexec.Start(&p, &rawexec.Attr{
//		Path:       "/bin/sh",
//		Args:       []string{"sh", "-c", "exec make"},
//		Env:        env,
//		Files:      []int{0, 1, 2},
//		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID,
//		IDMap:      rawexec.SelfMap,
//	})
//	// err is an *OpError naming the failing op, or nil once the child
//	// has exec'd; then proc.Wait().
//
// There are no branches, but [Call.SkipIfOK] and [Call.SkipIfIgnored]
// skip a fixed number of following ops, enough for a fallback such as
// "seccomp with a listener, or on EBUSY without", and
// [Program.SkipIfNotEqual] skips them unless a uint64 in a buffer an
// earlier op filled (a struct stat's inode, say) has a given value.
//
// # PID 1: Fork and Reaper
//
// The sandbox's first process is PID 1 of its pid namespace, and PID 1
// has duties no user command performs: reaping orphans (or they stay
// zombies), passing on the supervisor's signals (the kernel drops a
// signal to PID 1 that has no handler), and taking everything down when
// the supervisor goes away. [Program.Fork] and [Attr.Reaper] keep these
// duties in the first process, still without exec'ing sbx: the ops before
// Fork (and Start's id maps) run in the first process; at Fork it blocks
// SIGCHLD and the [Reaper]'s Signals, opens a signalfd for them and clones
// the command (plain SIGCHLD clone: same namespaces, PID 2), which
// restores the signal mask, runs the ops after Fork, the descriptor
// layout and execve, reporting a failure on the same error pipe. The
// first process closes its copy of that pipe and every descriptor not in
// Reaper.Keep, writes a [Record] RecordStarted to Reaper.Status, and
// loops in ppoll on the signalfd, Reaper.Lifeline and Reaper.Dial:
//
//   - SIGCHLD: wait4(-1, WNOHANG) until none is left; when the command is
//     among them, end;
//   - another signal: kill(-pid, sig), or kill(pid, sig) when the command
//     leads no process group (add a setsid op after Fork to make it one);
//   - the Lifeline readable, hung up or in error (the supervisor closed
//     its end, died, or wrote to it): end;
//   - Reaper.Dial (optional) readable: read one [DialRequest] without
//     waiting, start a non-blocking connect to 127.0.0.1:Port in the
//     sandbox's network namespace and send a [DialReply] with the socket
//     (SCM_RIGHTS), or with the errno and none; a reply that cannot be
//     sent at once is dropped. EOF or a hang-up stops the service only.
//
// The end: kill(-1, SIGKILL) and wait4 until ECHILD, so that nothing of
// the sandbox survives; write RecordExited with the command's raw wait
// status; if Reaper.Ack is not -1, read one byte (or EOF) from it; run
// Reaper.Exit (cleanup ops, e.g. unmount or unlink, where
// [Program.SkipIfNotEqual] can check a struct stat field first); write
// RecordDone; exit with status 0. The parent reads records with
// [ReadRecord].
//
// Start returns once the command has exec'd. If an op after Fork fails
// (or the layout or execve), Start returns both the first process and
// the *OpError: the first process lives on and reports Exited with status
// 127 and Done, and the caller waits for it as usual. A failure before
// Fork, or of Fork itself, returns no Process, as without a Reaper.
// Start requires CLONE_NEWPID with a Reaper (kill(-1) must stay inside
// the sandbox; as a second guard a first process that finds itself not
// PID 1 kills only the command's group and the command).
//
// The first process follows the same rules as the rest of the child code
// (nosplit, no allocation, raw system calls); its state that would not
// fit the nosplit frames lives in a pointer-free buffer Start allocates.
//
// # Early processes: Prespawn
//
// Creating the namespaces is the slowest part of the clone (a network
// namespace alone is 0.3-0.5 ms of kernel time). [Prespawn] moves it off
// the caller's path: it clones an early process before the Program
// exists, with CLONE_VM|CLONE_FILES on a stack of its own (an assembly
// entry point, amd64 only; on arm64 Prespawn fails and Start clones as
// usual). The early process resets the copied signal handlers, unshares
// the user namespace and the others, writes its own id maps (SelfMap),
// runs Prespawn's ops (system calls that need the namespaces but nothing
// of the plan, such as bringing up the loopback), and sleeps on a futex
// while the caller builds the Program on the other CPU. [Early.Call]
// hands it one function to run meanwhile (sbx: adding the Landlock rules
// for paths the view shows as the host has them); it is best effort, and
// the caller's Program checks what it did. Start, given the early
// process in [Attr.Early], writes the maps (ParentMap), passes the
// signal dispositions that changed since Prespawn, and wakes it; it
// forks the first process with clone3 (the kernel stores the pid and the
// pidfd before the child runs), which is from there on what Start's own
// clone would have made (a private copy of the caller's memory and
// descriptor table, PID 1 of the new pid namespace), and exits. Until
// that fork the early process shares the caller's memory but runs only
// nosplit code that writes its own stack, a header outside the Go heap
// and what Call's function writes; the first process and the command
// never share it (a test compares them with kcmp). The stack has guard
// pages, and the caller waits on the stage word, which the kernel clears
// and wakes at the early process's exit, with shared futex operations.
//
// That first process runs at the top of the early stack (its private
// copy), so at Fork it vforks the command (CLONE_VM|CLONE_VFORK) onto
// the stack's lower half: the command runs the ops after Fork in the
// first process's memory while the first process sleeps, copies no page
// tables, and its execve tears none down.
//
// The first process is the early process's child: the caller is a child
// subreaper from Prespawn until the early process is reaped (by Start,
// once the command has exec'd or failed), so that the first process is
// reparented to it. An early process dies with the thread that made it
// (PR_SET_PDEATHSIG), so a caller that exits or is killed before Start
// leaves nothing behind; one that goes on without it calls
// [Early.Abandon]. An early process whose setup failed is reaped by
// Start, which then clones as usual and reports that clone's error.
// Everything else of the first process (working directory, umask,
// cgroup, credentials) is as the caller had it at Prespawn.
//
// # Notes for callers
//
//   - The Program runs before the descriptor layout, so its ops may name
//     parent descriptors by number. A seccomp filter or Landlock domain it
//     installs must still allow what follows: close, dup3, fcntl,
//     close_range, execve, and (for the error report) write and
//     exit_group.
//   - The child is a copy of the parent: anything the Program needs must
//     be computed before Start, and no op may rely on Go state changing
//     after it (stores write the child's copy, not the parent's buffer).
//   - A pre-exec failure exits with status 127 after the report; Start
//     reaps that child, so a failed Start never leaves a zombie.
//   - PR_SET_PDEATHSIG, setsid and chdir are ordinary ops. Note that the
//     death signal follows the parent thread that cloned, which Start
//     does not lock: a goroutine that later locks that thread and exits
//     without unlocking ends it. sbx uses a lifeline pipe instead.
//
// The package builds on linux/amd64 and linux/arm64; elsewhere it holds
// only this documentation.
package rawexec
