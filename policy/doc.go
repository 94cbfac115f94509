// Package policy owns sbx's one merged, validated description of what a
// sandboxed command may do. It is a leaf: it imports none of the enforcers
// (ns, landlock, seccomp, netproxy, darwin); each of them translates a
// Policy into its own mechanism.
//
// A Policy is built from layers, lowest precedence first:
//
//  1. built-in defaults (credential paths denied for reading, the protected
//     names that stay read-only inside writable places, credential
//     environment variables removed);
//  2. settings files: with --claude-settings, Claude Code's user, project
//     and local scopes, then each --settings file in order. Both shapes
//     are accepted: sandbox-runtime's (srt) top-level
//     {"network": …, "filesystem": …} and Claude Code's {"sandbox": {…}}
//     (whose "permissions" rules add to the filesystem lists);
//  3. layers derived from flags: --allow-registry's domains, presets;
//  4. command-line flags;
//  5. the managed layer (--managed-settings, or /etc/claude-code with
//     --claude-settings).
//
// Scalars: the last layer that sets one wins, so the managed layer's
// beats every flag. Lists: every list is the union of every layer's, and
// nothing replaces one (merge.go). The managed layer cannot be undone: a
// non-managed grant equal to or inside a managed denyRead or denyWrite is
// dropped with a note; a non-managed filesystem.disabled is ignored when
// the managed layer sets filesystem rules; its allowManaged…Only keys make
// its allow lists the only ones; and the live sources (--control-fd
// lines, --ask-fd answers), which change only network lists, never remove
// a managed deny nor, under allowManagedDomainsOnly, add a host
// (ManagedNetwork).
//
// Trust (trust.go): a file in the working tree is the repository's and
// may not configure secret flow or weaken enforcement unless the user
// trusts it (Input.TrustProjectSettings, or trustedProjectDirs in a file
// outside the tree), nor name the host's own or a private network in
// allowedDomains (localhost, or an address of the proxy's guarded ranges,
// which internal/hostaddr holds for both packages). --claude-settings
// DIR anchors the scopes' relative paths at DIR.
//
// A settings file is read by internal/settingsfile: a regular file of at
// most 1 MiB, opened without blocking. Large lists stay linear: PathSet
// finds the entries that hold a path by walking up its components.
//
// Every settings key is either honoured, refused with an error naming the
// key and the file, or (for srt's helper-binary paths, which sbx has no use
// for) accepted with a note that it is ignored; see Keys for the table. An
// unknown key is an error.
//
// Limits (limits.go) are sbx's own "limits" object and the limit flags:
// files then flags, a managed value capping the others, and defaults for
// the process cap and the private tmpfs.
//
// Paths may be absolute, "~/…", "./…" or relative to the working directory.
// They are made absolute, cleaned and resolved through symlinks before use,
// so that a rule applies to the object the kernel will see. Entries that
// contain glob characters (* ? [) are expanded against the filesystem at
// start-up unless given as {"path": …, "literal": true}, by a walk with
// descriptors that never skips what it cannot see: a deny's unreadable
// directory where writes go is denied whole, and so is a directory
// holding paths longer than a mount can name (walk.go).
//
// Semantics (srt's, with safer defaults):
//
//   - Reads are allowed except under DenyRead; AllowRead re-opens paths
//     inside a denied region. DefaultDenyRead lists credential locations
//     denied unless an AllowRead names them; of those, DefaultMaskedCopies
//     (~/.npmrc, ~/.pypirc, ~/.yarnrc.yml) are listed in Filesystem.MaskedCopies when
//     only the defaults deny them, for the sandbox to show a copy with
//     the secret values masked.
//   - Writes are denied except under AllowWrite and the sandbox's private
//     /tmp; DenyWrite beats AllowWrite.
//   - Inside writable places the ProtectedNames stay read-only (see
//     ProtectedNames for the list and the search depth), except the
//     ones the user allows on purpose (Filesystem.Protected).
//   - The environment passes through except DefaultDeniedEnv.
package policy
