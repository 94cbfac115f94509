package seccomp

import "syscall"

// Probe is a refused system call that language runtimes make on every
// start to learn whether a kernel feature is there, and that they handle
// by doing without the feature. The filter refuses a probe like any other
// call of its kind (the call never runs, whoever makes it); the
// supervisor answers it with Errno, and the violation report leaves it
// out (violations.Record.Probe): a clean `node -e 1` is not an attack, and
// --fail-on-violation must not fail it. An attack that makes the same
// call is refused all the same; it is only not reported, because the
// refusal leaves it nothing to use.
type Probe struct {
	Syscall string
	// Errno is the answer: one the runtimes already handle (the one they
	// meet on kernels without the feature or with it switched off).
	Errno syscall.Errno
	// Who makes the call and why refusing it is harmless.
	Runtime, Reason string
}

// Probes is the whole list. Each entry was found by running the runtime
// under sbx with its violations written out (the runtime matrix in
// cmd/sbx/runtimes_test.go runs them all with --fail-on-violation), and
// each is a call whose refusal leaves nothing behind: no descriptor, no
// mapping, no state a later call could use.
var Probes = []Probe{
	{
		Syscall: "io_uring_setup",
		Errno:   syscall.EPERM,
		Runtime: "Node.js 24 (libuv, on every start; Node 20 does not), and any program linking liburing",
		Reason: "libuv tries io_uring_setup once per event loop (the main thread's and each worker's) and falls " +
			"back to epoll and its thread pool when it fails; EPERM is what a kernel with " +
			"kernel.io_uring_disabled=2 or Docker's default seccomp profile answers. Without a ring " +
			"io_uring_enter and io_uring_register have nothing to act on; they stay reported.",
	},
}

// ProbeFor returns the probe entry for a refused call named name
// (SyscallName's spelling), if it is one.
func ProbeFor(name string) (Probe, bool) {
	for _, p := range Probes {
		if p.Syscall == name {
			return p, true
		}
	}
	return Probe{}, false
}
