// Package sandbox is the supervisor of one sandboxed run on Linux, and
// nothing else: it turns a Policy into a Plan (everything the kernel must
// enforce, computed once in the supervisor), starts the sandbox's PID 1 in
// fresh namespaces, serves the run while it lasts (the proxy's listeners,
// published ports, the seccomp notifications, --control-fd and --ask-fd),
// relays signals, the timeout and the exit status, and records what was
// denied.
//
// The start (start_linux.go) compiles the Plan into one program of system
// calls that a clone of the supervisor runs without the Go runtime
// (package internal/rawexec): PID 1 builds the mount view, forks the
// command, which confines itself — Landlock, capabilities dropped, seccomp
// — and execs; PID 1 then reaps orphans, forwards signals, and when the
// command ends (or the supervisor dies, which it sees as its lifeline pipe
// closing) kills everything left and removes the stubs. With discard
// overlays it hands the supervisor descriptors on their upper layers,
// which the supervisor reads once the sandbox's processes are gone (the
// discard records, --save-changes) before it lets PID 1 finish; once the
// run is over the supervisor runs the after-run check (afterrun_linux.go)
// over the writable roots, the working directory and HOME, and over the
// entries the command made below them, which the supervisor noted from
// the notified calls (created_linux.go); and it
// connects to published ports inside the sandbox for the supervisor. It
// is the only start of the full mode, for every plan; it is built for
// linux/amd64 and linux/arm64, and other Linux CPUs refuse the full mode
// (exit 125, naming --weaker-nested).
//
// The limits (limits.go) are planned with the rest (Plan.Limits: each
// limit's mechanism on this host, a cgroup v2 or v1 child of the run's
// own, rlimits, the tmpfs size), refused when asked for and not
// enforceable; the start makes the run's cgroup, which the first process
// joins before it forks, sets the rlimits in the command, records the
// limits hit at the end, and removes the cgroup.
//
// The command's own terminal (tty_linux.go, Plan.Tty: --tty, or allowPty
// with a terminal): the first process opens a pseudo-terminal in the
// view's private devpts and hands its multiplexer to the supervisor; the
// command makes it its controlling terminal and its standard descriptors
// that were the caller's terminal; the supervisor relays it with the
// caller's terminal in raw mode, follows SIGWINCH, and restores the
// caller's modes at the end.
//
// Secrets (secrets.go): credentials' mask mode, and the built-in masked
// copies (Filesystem.MaskedCopies: ~/.npmrc, ~/.pypirc, ~/.yarnrc.yml), whose copies the
// supervisor makes with credentials.MaskConfig and binds read-only over
// the file from the run's own tmpfs.
//
// The weaker mode (enableWeakerNestedSandbox) has no namespaces: the
// supervisor confines a thread and forks the command itself, as a child
// subreaper that kills the command's whole process tree at the end.
// Landlock is its only filesystem enforcer and grants a writable root
// whole, so a plan with a read-denied path inside a writable place is
// refused there (weakerDenyReads), never run as if the deny held.
//
// LaunchObserved is the run of `sbx learn` (package learn owns the
// policy it writes): cmd/sbx hands it a policy made for observation
// (every writable place a discard region, every file call observed) and
// a learn.Recorder. The file observer notes each host path the command
// opened for reading (observe_linux.go: note), the discard overlays'
// change lists what it wrote, created and removed (changeAccess), and
// the proxy, through netproxy.Config.Ask and Asked, lets each unlisted
// host through and notes it once the address guard has passed it too.
// No credential is injected in such a run. What the run refused reaches
// cmd/sbx as records, which it turns into learn.Refusals.
//
// What is not here: `sbx doctor`'s probes and diagnosis (package doctor,
// whose Explain also words this package's message when the user namespace
// cannot be created),
// the macOS launch (package darwin/launch), the proxy and its client
// environment (package netproxy), the mount plan (package ns). On other
// OSes Run and Launch refuse with status 125.
package sandbox
