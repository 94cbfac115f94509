// Package policy owns sbx's one merged, validated description of what a
// sandboxed command may do. It is a leaf: it imports none of the enforcers
// (ns, landlock, seccomp, netproxy, darwin); each of them translates a
// Policy into its own mechanism.
//
// A Policy is built from, in order:
//
//  1. built-in defaults (credential paths denied for reading, the protected
//     names that stay read-only inside writable places, credential
//     environment variables removed);
//  2. settings files, each given with --settings (repeatable). Both shapes
//     are accepted: sandbox-runtime's (srt) top-level
//     {"network": …, "filesystem": …} and Claude Code's {"sandbox": {…}}.
//     Arrays merge across files, later scalars win. An optional managed
//     layer (--managed-settings) is read first; its allowManaged…Only keys
//     make its own allow lists the only ones honoured;
//  3. command-line flags, which append to arrays and override scalars.
//
// Every settings key is either honoured, refused with an error naming the
// key and the file, or (for srt's helper-binary paths, which sbx has no use
// for) accepted with a note that it is ignored; see Keys for the table. An
// unknown key is an error.
//
// Paths may be absolute, "~/…", "./…" or relative to the working directory.
// They are made absolute, cleaned and resolved through symlinks before use,
// so that a rule applies to the object the kernel will see. Entries that
// contain glob characters (* ? [) are expanded against the filesystem at
// start-up unless given as {"path": …, "literal": true}.
//
// Semantics (srt's, with safer defaults):
//
//   - Reads are allowed except under DenyRead; AllowRead re-opens paths
//     inside a denied region. DefaultDenyRead lists credential locations
//     denied unless an AllowRead names them.
//   - Writes are denied except under AllowWrite and the sandbox's private
//     /tmp; DenyWrite beats AllowWrite.
//   - Inside writable places the ProtectedNames stay read-only (see
//     ProtectedNames for the list and the search depth).
//   - The environment passes through except DefaultDeniedEnv.
package policy
