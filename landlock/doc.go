// Package landlock owns sbx's second, LSM-level statement of the
// filesystem and network policy: it computes a Ruleset from a Policy in the
// supervisor (Plan) and applies it to one OS thread in the sandbox
// (Ruleset.RestrictThread), the thread that then forks the command.
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
//     sandbox's domain, so the command can signal neither sbx's init nor
//     any host process, and reaches no host abstract socket.
//
// RestrictThread is irreversible for the thread; its tests run in a
// re-executed subprocess.
package landlock
