// Package doctor is what `sbx doctor` knows: it probes this host (Probe,
// Snapshot: one short-lived process in new user, mount, pid and network
// namespaces, an overlay mount, the Landlock ABI, seccomp) and diagnoses
// the one reason sbx cannot run in its full mode here (Diagnose, from a
// HostSnapshot, so that captured hosts under testdata/ are diagnosed like
// this one), with the fixes and the exact steps `sbx doctor --fix` runs.
// A run whose start could not create its user namespace words its message
// from the same diagnosis (Explain), so the two never name different
// reasons.
//
// It owns the probes, the diagnosis and the report; cmd/sbx owns how they
// are printed and applied. The probes start this binary again with one
// argument (see probeArg); any binary that calls Probe links this
// package, and so its init, which answers that argument. On other OSes
// Probe reports that the Linux mechanisms do not exist.
package doctor
