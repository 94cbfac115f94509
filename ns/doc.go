// Package ns owns the Linux namespaces side of sbx: the mount view (its
// plan, computed in the supervisor by PlanMounts, and its construction,
// which Compile turns into system calls that the sandbox's first process
// runs without a Go runtime: package internal/rawexec), the stubs that pin
// missing protected names, and the discard overlays' changes (Discards).
//
// The view is assembled in a fresh mount namespace owned by a fresh user
// namespace, on a tmpfs staging area that the host never sees:
//
//  1. / is bound recursively into the staging root and made read-only and
//     nosuid in one mount_setattr(AT_RECURSIVE) call;
//  2. a fresh /proc (only the sandbox's pids), a minimal /dev (null zero
//     full random urandom tty, shm, and a private devpts with ptmx only
//     when ptys are allowed) and a private /tmp are mounted: /tmp and
//     /dev/shm are directories of one tmpfs, which also holds the discard
//     overlays' upper layers, so that its size= (MountPlan.TmpSize)
//     bounds them together;
//  3. the plan's ops are applied, shallowest path first: writable roots
//     bound read-write; denied-read paths masked with an empty mode-000
//     tmpfs (directories) or file; paths re-allowed inside a mask bound
//     back; denied-write paths and protected names bound read-only; the
//     directories between a writable root and a protected name bound onto
//     themselves ("pinned") so that renaming a parent fails with EBUSY
//     instead of carrying the protection away; missing protected names
//     stubbed (see stub), only where they act (policy.Protected.Stub:
//     HOME, a repository root, the working directory), so a writable
//     directory that is none of those sees no placeholder; the directory
//     that core.hooksPath names is protected like .git/hooks
//     (hookspath.go);
//     a directory the protected-name search could
//     not read bound read-only whole (see dirInfo);
//  4. pivot_root into the staging root and detach the old root.
//
// Nothing is created on the host except the stubs, which the sandbox's
// first process removes when the run ends, however it ends.
package ns
