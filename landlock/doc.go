// Package landlock owns sbx's second, LSM-level statement of the
// filesystem and network policy: it computes a Ruleset from a Policy in the
// supervisor (Plan) and applies it to the sandboxed command. One applier
// serves each context the command can start from:
//
//   - the full sandbox (linux/amd64 and arm64): Ruleset.Compile appends
//     the system calls to the program the sandbox's first process runs
//     without a Go runtime (package internal/rawexec); the command runs
//     them after its fork, in the mount view, before it execs;
//   - the early process, the full sandbox's first process cloned while
//     the supervisor plans: Ruleset.PrepareEarly creates the ruleset and
//     the table of rules whose paths the view shows as the host has them,
//     which the early process adds off the supervisor's path (addEarly);
//     Compile, given that Early, adds the rest in the command;
//   - the weaker mode (no namespaces): Ruleset.RestrictThread restricts one
//     OS thread of the supervisor itself, the thread that then forks the
//     command.
//
// Landlock is an allow-list: a rule grants rights on a whole hierarchy and
// nothing can take them back below it. sbx therefore states the policy as
// follows (ABI 7 on this project's machines; lower ABIs drop the rights
// they do not know, higher ones are not used):
//
//   - Reads (read file, read dir, execute) are granted on "/" — except that
//     for every denied path D the grant is split: each ancestor of D gets
//     only "read dir", and every sibling on the way down gets the full read
//     rights, so D's contents are unreachable through any path that goes
//     through D's parent. AllowRead entries inside D are granted again.
//     Where D's parent lies inside a writable root, the split is skipped in
//     the full sandbox (files created there during the run would otherwise
//     be unreadable); the mount view masks D there. The weaker mode has no
//     mount view and always splits.
//   - Writes (write, truncate, create, remove, rename/link "refer") are
//     granted only on the writable roots, the sandbox's /tmp and /dev/shm,
//     and the device nodes of the minimal /dev. DenyWrite paths and the
//     protected names inside writable roots are enforced by the mount view
//     (read-only binds); Landlock cannot carve them out of a granted root.
//   - Device ioctls only on the sandbox's own device nodes.
//   - TCP (ABI 4+): when the policy does not allow local binding, connect
//     is granted only to the proxy ports and bind to none.
//   - Scopes (ABI 6+): signals and abstract Unix sockets cannot cross the
//     sandbox's domain, so the command can signal neither the sandbox's
//     PID 1 nor any host process, and reaches no host abstract socket.
//
// RestrictThread is irreversible for the thread; its tests run in a
// re-executed subprocess.
package landlock
