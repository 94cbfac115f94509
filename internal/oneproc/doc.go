// Package oneproc starts the sbx binary on one P: on Linux its init sets
// GOMAXPROCS to 1. It has no API; package main imports it, blank, for that
// effect alone.
//
// Why one P: on the project's two cores a run starts sooner when no
// goroutine of the supervisor runs on the other CPU, which stays free for
// the sandbox's first process, and when no page the supervisor writes needs
// a cross-CPU TLB flush. sandbox.Launch gives the runtime half its default
// on the first connection the supervisor relays, which on two CPUs is the
// one P it has (see sandbox.relaying).
//
// Why in a package's init rather than in main: the runtime starts with one
// P per CPU, and package initialisation (about a hundred packages here)
// then wakes idle Ps, starts threads for them and takes page faults that
// flush the other CPU's TLB. The Go specification initialises, at each
// step, the first package by import path whose imports are all
// initialised; this package imports only runtime, so it comes among the
// first few, before the standard library's network and crypto packages.
// Measured on the two-core machine: `sbx version` 2.12 -> 1.79 ms and
// `sbx -- /bin/true` 5.32 -> 5.13 ms (interleaved medians of 200 runs)
// against the same call at the top of main. The call itself costs 0.07 ms
// there against 0.15 ms at main.
//
// A test binary of package main gets the init too: cmd/sbx's TestMain
// gives its process the default back.
package oneproc
