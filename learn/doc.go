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
// This file holds the observations only; it imports nothing of sbx, so
// that the supervisor can fill a Recorder without depending on the
// policy writer.
package learn
