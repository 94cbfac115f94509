// Command sbx runs a command under an OS sandbox.
//
//	sbx [flags] -- COMMAND [ARG...]
//	sbx [flags] -c 'STRING'
//	sbx doctor [--json | --fix [--yes]]
//	sbx learn [flags] [--output FILE] [--format F] [--learn-net on|off] -- COMMAND
//	sbx version
//
// It is thin wiring: flags and settings become a policy.Policy, the Policy
// becomes a sandbox.Plan, and the plan runs. The README's flag table has
// every flag (TestFlagTable); docs/ has the rest.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/check"
	_ "github.com/sbx-sh/sbx/internal/oneproc" // GOMAXPROCS 1, as early as init order allows
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/sandbox"
)

// version and commit are set at build time with -ldflags "-X main.version=…
// -X main.commit=…" (scripts/release.sh does). When they are not, sbx
// version reads them from the build information the go command stamps in
// (the module version of a `go install …@vX`, the VCS revision of a build
// in a git checkout): see cmdVersion.
var (
	version string
	commit  string
)

func main() {
	// On Linux the start runs on one P from package initialisation on
	// (internal/oneproc, imported above).
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			return cmdVersion(stdout)
		case "doctor":
			return cmdDoctor(args[1:], stdout, stderr)
		case "check":
			return check.Main(args[1:], stdout, stderr)
		case "profile":
			return cmdRun(args[1:], stdout, stderr, true)
		case "learn":
			return cmdLearn(args[1:], stdout, stderr)
		case "connect":
			return cmdConnect(args[1:], os.Stdin, stdout, stderr)
		}
	}
	return cmdRun(args, stdout, stderr, false)
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type fdList []int

func (l *fdList) String() string { return fmt.Sprint(*l) }
func (l *fdList) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 3 || n > 1<<20 {
		return fmt.Errorf("%q is not a descriptor number of 3 or more", v)
	}
	*l = append(*l, n)
	return nil
}

// optionalDir is --claude-settings[=DIR]: a flag with an optional value.
type optionalDir struct {
	set bool
	dir string
}

func (o *optionalDir) String() string   { return o.dir }
func (o *optionalDir) IsBoolFlag() bool { return true }
func (o *optionalDir) Set(v string) error {
	o.set = true
	if v != "true" {
		if v == "false" {
			o.set = false
			return nil
		}
		o.dir = v
	}
	return nil
}

// runFlagsHook, when set (by a test), sees cmdRun's flag set once every
// flag is defined.
var runFlagsHook func(*flag.FlagSet)

// cmdRun runs a command, or with profile set prints the macOS Seatbelt
// profile for the same flags and settings (`sbx profile --os darwin`).
// Its steps: the flags (runFlags: define, parse, the command and its
// limits), the caller's context, policy.Build, the command gate, then
// --dry-run's printout or the run.
func cmdRun(args []string, stdout, stderr io.Writer, profile bool) int {
	f := newRunFlags(profile)
	if err := f.parse(args); err != nil {
		return fail(stderr, "%v; see 'sbx --help'", err)
	}
	if *f.help {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err := f.command(profile); err != nil {
		return fail(stderr, "%v", err)
	}
	in := &f.in
	if !in.DryRun && !in.WeakerNested {
		// The sandbox's first process makes its namespaces on the
		// other CPU while the policy and the plan are built, and the
		// capture device when the command line filters the network
		// (a guess: the plan decides, and takes down a device it does
		// not use).
		filtered := in.NetMode == "filtered" || (in.NetMode == "" && len(in.AllowDomains) > 0)
		sandbox.Prespawn(filtered && in.Capture != "off")
		defer sandbox.DropPrespawn()
	}
	if err := f.context(); err != nil {
		return fail(stderr, "%v", err)
	}
	p, err := policy.Build(*in)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if profile {
		return printProfile(p, stdout, stderr)
	}
	if f.shellSet {
		if err := gate(p, in.Cwd, *f.shell); err != nil {
			return fail(stderr, "%v", err)
		}
	}
	if *f.dryRun {
		if err := printPlan(p, stdout); err != nil {
			return fail(stderr, "%v", err)
		}
		return 0
	}
	defer policy.RemovePlaceholders(p)
	col, err := f.vf.open(p, args)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	code, err := start(p, stderr, col, func() {
		if p.Filesystem.Disabled {
			fmt.Fprintln(stderr, "sbx: filesystem.disabled: the command can read and write everything the user can")
		}
		if p.Network.Mode == "host" {
			fmt.Fprintln(stderr, "sbx: --net host: the command shares the host's network, unfiltered")
		}
	})
	if err != nil {
		f.vf.abort(col)
		return fail(stderr, "%v", err)
	}
	return f.vf.finish(p, col, code, stderr)
}

// runFlags is cmdRun's flag set and what it fills: policy.Input directly
// where a flag maps onto one field, and the values that need checking or
// assembling first.
type runFlags struct {
	fs                                                            *flag.FlagSet
	in                                                            policy.Input
	targetOS                                                      string
	settings, allowRead, denyRead, allowWrite, denyWrite, discard list
	passEnv, setEnv, unsetEnv, allowDomain, denyDomain, allowSock list
	publish, presets, registries, allowProtected                  list
	claude                                                        optionalDir
	keep                                                          fdList
	controlFD, askFD                                              fdOne
	vf                                                            violationFlags
	askTimeout                                                    *time.Duration
	timeout, shell                                                *string
	dryRun, help                                                  *bool
	// shellSet: -c was given (even empty).
	shellSet bool
}

// newRunFlags defines every flag of a run (and of `sbx profile`, which
// adds --os).
// extra defines more flags before the once-only wrapping (sbx learn's).
func newRunFlags(profile bool, extra ...func(*flag.FlagSet)) *runFlags {
	f := &runFlags{fs: flag.NewFlagSet("sbx", flag.ContinueOnError), targetOS: "darwin"}
	fs, in := f.fs, &f.in
	if profile {
		fs.StringVar(&f.targetOS, "os", "darwin", "")
	}
	fs.SetOutput(io.Discard)
	f.vf.register(fs)
	fs.Var(&f.settings, "settings", "")
	fs.StringVar(&in.ManagedSettings, "managed-settings", "", "")
	fs.Var(&f.claude, "claude-settings", "")
	fs.BoolVar(&in.TrustProjectSettings, "trust-project-settings", false, "")
	fs.StringVar(&in.Reads, "reads", "", "")
	fs.Var(&f.presets, "preset", "")
	fs.Var(&f.registries, "allow-registry", "")
	fs.Var(&f.allowRead, "allow-read", "")
	fs.Var(&f.denyRead, "deny-read", "")
	fs.Var(&f.allowWrite, "allow-write", "")
	fs.Var(&f.denyWrite, "deny-write", "")
	fs.Var(&f.discard, "discard-writes", "")
	fs.StringVar(&in.UndeclaredWrites, "undeclared-writes", "", "")
	fs.StringVar(&in.SaveChanges, "save-changes", "", "")
	fs.BoolVar(&in.AllowGitConfig, "allow-git-config", false, "")
	fs.Var(&f.allowProtected, "allow-protected", "")
	fs.BoolVar(&in.AllowPty, "allow-pty", false, "")
	fs.BoolVar(&in.Tty, "tty", false, "")
	fs.BoolVar(&in.WeakerNested, "weaker-nested", false, "")
	fs.StringVar(&in.ObserveFiles, "observe-files", "", "")
	fs.BoolVar(&in.ClearEnv, "clear-env", false, "")
	fs.Var(&f.passEnv, "pass-env", "")
	fs.Var(&f.setEnv, "set-env", "")
	fs.Var(&f.unsetEnv, "unset-env", "")
	fs.Var(&f.allowDomain, "allow-domain", "")
	fs.Var(&f.denyDomain, "deny-domain", "")
	fs.Var(&f.allowSock, "allow-unix-socket", "")
	fs.BoolVar(&in.AllowAllUnixSockets, "allow-all-unix-sockets", false, "")
	fs.BoolVar(&in.AllowLocalBinding, "allow-local-binding", false, "")
	fs.Var(&f.publish, "publish", "")
	fs.StringVar(&in.NetMode, "net", "", "")
	fs.StringVar(&in.Capture, "capture", "", "")
	fs.BoolVar(&in.TLSTerminate, "tls-terminate", false, "")
	fs.Var(&f.keep, "keep-fd", "")
	fs.Var(&f.controlFD, "control-fd", "")
	fs.Var(&f.askFD, "ask-fd", "")
	f.askTimeout = fs.Duration("ask-timeout", 0, "")
	registerLimitFlags(fs, &in.Limits)
	f.timeout = fs.String("timeout", "", "")
	f.dryRun = fs.Bool("dry-run", false, "")
	f.shell = fs.String("c", "", "")
	f.help = fs.Bool("help", false, "")
	fs.BoolVar(f.help, "h", false, "")
	for _, x := range extra {
		x(fs)
	}
	onceFlags(fs) // last: every flag defined above, whoever added it
	if runFlagsHook != nil {
		runFlagsHook(fs)
	}
	return f
}

// parse parses args, refuses a scalar flag given twice and flags that
// contradict each other (flags.go), and notes whether -c was given.
func (f *runFlags) parse(args []string) error {
	fs := f.fs
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	// --claude-settings takes an optional DIR, as --claude-settings=DIR
	// or as the one word between the flag and "--" (never a word that
	// could be the command: `--claude-settings go test` runs go).
	if rest := fs.Args(); f.claude.set && f.claude.dir == "" && len(rest) > 1 && rest[0] != "--" && rest[1] == "--" {
		f.claude.dir = rest[0]
		if err := fs.Parse(rest[1:]); err != nil {
			return flagError(fs, err)
		}
	}
	if err := checkOnce(fs); err != nil {
		return err
	}
	if err := checkConflicts(fs); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "c" {
			f.shellSet = true
		}
	})
	return nil
}

// command fills the Input from the flags: the command (-c or the
// arguments; none for a profile), the timeout, the lists, and the
// descriptors, which must be open.
func (f *runFlags) command(profile bool) error {
	in := &f.in
	rest := f.fs.Args()
	if profile {
		if f.targetOS != "darwin" {
			return fmt.Errorf("profile --os %q: only darwin profiles exist", f.targetOS)
		}
		if f.shellSet || len(rest) > 0 {
			return errors.New("sbx profile takes policy flags only, no command")
		}
		rest = []string{"true"} // the profile does not depend on the command
	}
	switch {
	case f.shellSet && len(rest) > 0:
		return errors.New("give either -c 'STRING' or -- COMMAND, not both")
	case f.shellSet:
		if strings.TrimSpace(*f.shell) == "" {
			return errors.New("-c needs a non-empty command string")
		}
		in.Argv = []string{"/bin/sh", "-c", *f.shell}
	default:
		in.Argv = rest
	}
	if len(in.Argv) == 0 || in.Argv[0] == "" {
		return errors.New("no command given; usage: sbx [flags] -- COMMAND [ARG...] or sbx [flags] -c 'STRING'")
	}
	if *f.timeout != "" {
		d, err := time.ParseDuration(*f.timeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("--timeout %q: not a positive duration; use e.g. 30s, 5m, 1h30m", *f.timeout)
		}
		in.Timeout = d
	}
	in.Settings, in.AllowRead, in.DenyRead = f.settings, f.allowRead, f.denyRead
	in.AllowWrite, in.DenyWrite, in.DiscardWrites = f.allowWrite, f.denyWrite, f.discard
	in.PassEnv, in.SetEnv, in.UnsetEnv = f.passEnv, f.setEnv, f.unsetEnv
	in.AllowDomains, in.DenyDomains, in.AllowUnixSockets, in.Publish = f.allowDomain, f.denyDomain, f.allowSock, f.publish
	in.KeepFDs = f.keep
	if f.askFD.set {
		in.AskFD, in.AskTimeout = f.askFD.n, *f.askTimeout
		if _, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", in.AskFD)); err != nil {
			return fmt.Errorf("--ask-fd %d: descriptor %d is not open", in.AskFD, in.AskFD)
		}
	}
	if f.controlFD.set {
		in.ControlFD = f.controlFD.n
		if _, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", in.ControlFD)); err != nil {
			return fmt.Errorf("--control-fd %d: descriptor %d is not open", in.ControlFD, in.ControlFD)
		}
	}
	in.Presets, in.AllowRegistry, in.AllowProtected = f.presets, f.registries, f.allowProtected
	in.DryRun = *f.dryRun || profile // a profile runs nothing: create nothing
	return nil
}

// context fills the rest of the Input from the caller's context: the
// kept descriptors (which must be open), the working directory, the
// homes, the Claude Code project, sbx itself, the environment and ids.
func (f *runFlags) context() error {
	in := &f.in
	for _, k := range f.keep {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", k)); err != nil {
			return fmt.Errorf("--keep-fd %d: descriptor %d is not open", k, k)
		}
	}
	if err := sandbox.CheckPassedFDs(append([]int{0, 1, 2}, f.keep...)); err != nil {
		return err
	}
	// A terminal on standard input and output: with allowPty the command
	// gets a pty of its own (policy.Process.Tty); --tty insists on one.
	in.Terminal = isTerminal(0) && isTerminal(1)
	if in.Tty && !isTerminal(0) {
		return errors.New("--tty: standard input is not a terminal; run sbx from a terminal, or drop --tty")
	}
	var err error
	if in.Cwd, err = os.Getwd(); err != nil {
		return fmt.Errorf("cannot determine the working directory: %w", err)
	}
	// Getwd may answer with $PWD, a path through symlinks; the view is
	// built from resolved paths.
	if real, err := filepath.EvalSymlinks(in.Cwd); err == nil {
		in.Cwd = real
	}
	// HOME may be unset, unreadable or another user's (setpriv, sudo -u
	// without a login environment): policy.Build masks the credential
	// locations under it and under the passwd entry's home, and skips
	// with a note what it cannot resolve.
	in.Home = os.Getenv("HOME")
	in.PasswdHome = policy.PasswdHome(os.Getuid())
	if f.claude.set {
		in.ClaudeSettings = true
		in.ClaudeDir = in.Cwd
		if f.claude.dir != "" {
			d, err := filepath.Abs(f.claude.dir)
			if err != nil {
				return fmt.Errorf("--claude-settings %q: %w", f.claude.dir, err)
			}
			in.ClaudeDir, in.ClaudeDirGiven = d, true
		}
	}
	in.Self, _ = os.Executable()
	in.ScanCache = sandbox.ScanCacheDir(in.Home)
	in.Environ = os.Environ()
	in.UID, in.GID = os.Getuid(), os.Getgid()
	return nil
}

// gate runs the command gate over a -c string when the settings enable
// it.
func gate(p *policy.Policy, cwd, shell string) error {
	cfg, err := check.ParseConfig(p.Commands)
	if err != nil {
		return fmt.Errorf("settings: commands: %w", err)
	}
	if cfg.Enabled() {
		if fs := cfg.Check(cwd, shell); len(fs) > 0 {
			msgs := make([]string, len(fs))
			for i, f := range fs {
				msgs[i] = f.String()
			}
			return fmt.Errorf("command refused by the gate: %s", strings.Join(msgs, "; "))
		}
	}
	return nil
}

// printPlan is --dry-run: the policy and the plan, as JSON.
func printPlan(p *policy.Policy, stdout io.Writer) error {
	plan, err := sandbox.Compute(p)
	if err != nil {
		return err
	}
	if plan.Net.TLS != nil {
		plan.Net.TLS.Bundle = nil // certificates only, but long: the path and the CA say enough
	}
	out := struct {
		Policy *policy.Policy `json:"policy"`
		Plan   *sandbox.Plan  `json:"plan"`
		// Visible is what an empty-root view (denyRead "/",
		// --reads declared) holds; nothing else is there.
		Visible []string `json:"visible,omitempty"`
	}{p, plan, plan.Mounts.Visible()}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func fail(w io.Writer, format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(w, "sbx: %s\n", strings.ReplaceAll(msg, "\n", " "))
	return 125
}

const usage = `sbx — run a command in a sandbox

  sbx [flags] -- COMMAND [ARG...]
  sbx [flags] -c 'STRING'          runs /bin/sh -c STRING
  sbx doctor [--json]              what this kernel supports, the mode sbx will use
  sbx doctor --fix [--yes]         print (--yes: run, as root or with sudo -n) the fix for
                                   why sbx cannot start here, then check it
  sbx check [flags] -- 'STRING'    check a shell command against the settings' command gate
                                   ("commands"); 'sbx check -h' for its flags
  sbx profile --os darwin [flags]  print the macOS Seatbelt profile for these policy flags
  sbx connect HOST PORT            CONNECT client on stdin/stdout (ssh ProxyCommand)
  sbx learn [flags] [--output FILE] [--format sbx|srt|claude|flags] [--learn-net on|off] -- CMD
                                   run CMD once, observed, with the host unchanged; write the
                                   narrowest policy it needs (stdout by default; docs/learn.md)
  sbx version

Policy:
  --settings FILE        srt / Claude Code settings JSON (repeatable; arrays merge, later scalars win)
  --managed-settings F   managed layer: a file, or a directory laid out like
                         /etc/claude-code (its scalars win; its allowManaged…Only keys are honoured)
  --claude-settings[=DIR]  Claude Code's scopes for the project that holds DIR (default:
                         the working directory; also --claude-settings DIR -- CMD): managed,
                         ~/.claude, .claude/settings{,.local}.json from DIR up to the root,
                         with their Read()/Edit() permission rules; exit 125 if they
                         set sandbox.enabled false
  --trust-project-settings  settings files in the working tree (DIR/.claude/…, a
                         --settings file there) may configure credentials, proxies, CAs,
                         Unix sockets, ignoreViolations, filesystem.disabled, weaker modes,
                         re-open denies, replace the command gate; without it: exit 125
  --reads all|declared   declared: nothing is readable but allowRead, allowWrite, the
                         program and a minimal runtime (/usr /bin /sbin /lib* /etc)
  --preset NAME          make a toolchain's caches writable: node go python rust dotnet
                         java (repeatable; creates a missing cache 0700)
  --allow-registry NAME  allow an ecosystem's public registry domains: the preset names, or
                         a registry's: npm yarn pypi crates nuget maven gradle goproxy
  --allow-read PATH      re-open PATH inside a denied region (filesystem.allowRead)
  --deny-read PATH       hide PATH (filesystem.denyRead)
  --allow-write PATH     make PATH writable (filesystem.allowWrite)
  --deny-write PATH      keep PATH read-only even inside a writable one (filesystem.denyWrite)
  --discard-writes DIR   DIR looks writable; what is written there is gone when the run
                         ends, and each changed path is reported (filesystem.discardWrites)
  --undeclared-writes refuse|discard
                         discard: HOME, the working directory and /var/tmp (those the
                         caller may write) become discard regions; allowWrite stays real
  --save-changes DIR     keep what the discard regions took in DIR (new, made 0700):
                         files/<path> and changes.json
  --allow-git-config     let .git/config be written (filesystem.allowGitConfig)
  --allow-protected NAME let one protected name be written, as the list spells
                         it (.vscode, .npmrc, …; repeatable; filesystem.allowProtected)
  --allow-pty            pseudo-terminals (allowPty); with a terminal on stdin and stdout,
                         the command gets one of its own, as --tty
  --tty                  the command gets a pty of its own (job control, window size),
                         relayed to sbx's terminal; exit 125 if stdin is not a terminal
  --weaker-nested        Landlock + seccomp only, for hosts without user namespaces
Network:
  --net none|filtered|host   default none (filtered when domains are allowed)
  --allow-domain PATTERN     reachable through sbx's proxy (network.allowedDomains)
  --deny-domain PATTERN      never reachable; beats every allow (network.deniedDomains)
  --allow-unix-socket PATH   the command may connect to this Unix socket, and no other
  --allow-all-unix-sockets   every Unix socket the filesystem view reaches
  --allow-local-binding      let the command listen on the sandbox's loopback
  --capture on|off           default on: TCP and DNS of clients that ignore the proxy
                             variables reach the proxy through a TUN device (network.capture)
  --tls-terminate            terminate HTTPS to allowed hosts in the proxy, with a CA made
                             for the run (network.tlsTerminate); the command trusts it
                             through SSL_CERT_FILE and friends
  --publish [HOST:]PORT      forward the host's 127.0.0.1:HOST to PORT inside
Violations:
  --violations FILE          append every denial as JSON Lines (created 0600)
  --violations-fd N          write them to descriptor N
  --violations-format F      json (default), text or github
  --quiet-violations         no summary on stderr
  --violations-probes        also write runtimes' refused feature probes (io_uring_setup),
                             marked "probe":true; they never count as violations
  --observe-files WHAT       also report refused file writes, reads or all
                             (writes|reads|all); costs a supervisor round
                             trip on every observed call (docs/violations.md)
  --fail-on-violation        exit 123 if the command succeeded but something was refused
Environment:
  --clear-env  --pass-env NAME  --set-env K=V  --unset-env NAME   (NAME may be a glob)
Process:
  --timeout DURATION     kill the whole sandbox after DURATION, exit 124
  --keep-fd N            pass descriptor N to the command (all others beyond 2 are closed)
  --control-fd N         read settings objects, one per line, from descriptor N (>= 3);
                         each replaces the network lists of the running sandbox (srt's)
  --ask-fd N             ask on descriptor N (a socket) about hosts no rule allows or
                         denies: {"id","host","port","command"} out, {"id","allow","remember"}
                         back; --ask-timeout D (default 30s) or a dead peer means no
  --dry-run              print the resolved policy and the enforcement plan as JSON; run nothing
Limits (docs/limits.md; a limit this host cannot enforce is exit 125, never dropped):
  --memory SIZE          memory of the whole sandbox (512M, 2G; limits.memory)
  --pids N               processes and threads of the whole sandbox (default 4096; limits.pids)
  --cpus N               CPU time per wall second, fractional like Docker's (limits.cpus)
  --cpu-time DURATION    CPU time, the whole sandbox's where a cgroup counts it (limits.cpuTime)
  --file-size SIZE       the largest file a process may write (limits.fileSize)
  --open-files N         descriptors per process (limits.openFiles)
  --tmp-size SIZE        /tmp, /dev/shm and the discard overlays together (default RAM/8,
                         256M to 4G; limits.tmpSize)

Exit status: the command's; 128+N if it died of signal N; 124 timeout;
125 sbx failed (nothing was run); 126 not executable; 127 not found;
123 with --fail-on-violation.
`
