// Package learn owns `sbx learn`: what one observed run saw, and the
// narrowest policy that lets the same command pass again under
// --reads declared --fail-on-violation.
//
// The observed run (package sandbox, told by a Recorder) lets the command
// do its job while the host stays unchanged: it reads what the normal
// view shows, every writable place is a discard region, and each host it
// asks for is let through the proxy and the capture. Every path it
// touched, every host it reached and every Unix socket it connected to is
// noted in the Recorder; what the protections refused (credential masks,
// protected names, managed denies, the resolved-address guard) is noted
// as a Refusal with the explicit flag that would grant it, and never
// becomes part of a policy.
//
// The policy writer (build.go, collapse.go, encode.go, report.go,
// write.go) turns a Start (the starting policy, the command, its
// environment) and the Observed into a Result: Build subtracts what the
// start policy and the runtime of --reads declared already allow, maps
// caches the presets know to the preset's name, and collapses paths by
// one rule (collapse: a directory replaces its entries only when every
// entry on the host was touched, never /, HOME or an ancestor of HOME or
// of the working directory, the runtime, or a directory holding a
// credential mask). Encode writes the sbx, srt, claude and flags
// formats, adding to an existing settings file; WriteAtomic writes the
// file; Report tells stderr what was granted and refused and how to
// replay. docs/learn.md describes every rule.
//
// observed.go holds the observations only and imports nothing of sbx,
// so that the supervisor can fill a Recorder without depending on the
// policy writer; the writer imports package policy (never the other
// way).
package learn
