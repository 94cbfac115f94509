// Package darwin is sbx's macOS enforcer: it turns a policy into a Seatbelt
// (SBPL) profile for sandbox-exec, reads the kernel's denials back from the
// unified log, and runs a command under the profile.
//
// # What it owns
//
//   - Profile: a pure function from Input to profile text. It touches no
//     file and no OS API, so it builds and is tested on any OS, and
//     `sbx profile --os darwin` prints it anywhere. Output is deterministic
//     (lists sorted and de-duplicated) so it can be diffed against goldens.
//   - ParseLogLine and LogStreamArgs: the violation records, from
//     `log stream --style ndjson --predicate 'eventMessage ENDSWITH "TAG"'`.
//   - Command and Run: `sandbox-exec -p PROFILE -- ARGV...`, and a small
//     runner around it. The runner itself (runner_unix.go) is the same on
//     every Unix; it is built and unit-tested on Linux (with /bin/sh in
//     place of sandbox-exec) but has never been run on a Mac here, and no
//     profile from this package has been compiled by a real sandbox-exec.
//     Run on other OSes returns ErrUnsupported with status 125: sbx never
//     falls back to running a command unsandboxed.
//
// The caller (package darwin/launch: sbx's policy mapping, and the launch
// around Run with the proxy and the system log) owns ~ expansion,
// relative paths and realpath; this package only canonicalises the fixed
// macOS aliases.
//
// # Profile structure
//
// Seatbelt applies the last rule that matches an operation, so the profile
// is ordered: every allow that could widen access comes before every deny
// it must not override.
//
//	(version 1)
//	(deny default (with message "TAG"))      everything not allowed below
//	process, Mach baseline, sysctl, IPC, IOKit, devices   fixed allows
//	opt-in Mach services                      weaker isolation, Apple Events, allowMachLookup
//	(deny network*) + loopback proxy ports, local binding, Unix sockets
//	(allow file-read*)                        reads are open by default
//	(allow file-write* roots)                 allowWrite + TempDirs
//	devices, pty                              /dev/null, /dev/fd/N, ...
//	(deny file-read* denyRead minus allowRead)
//	(allow file-read-metadata ancestors)      the one allow after a deny
//	(deny file-write* denyWrite + protected names)
//	(deny file-write* parents that are not directories)
//	(deny file-write-unlink parents, read-denied paths)
//
// Every deny carries (with message "TAG"). Nothing from the input is ever
// written outside a string literal: comments are static text (plus the
// validated tag), and each path goes through one quoting function.
//
// # From policy to SBPL
//
//	Input field             SBPL
//	----------------------  -------------------------------------------------------
//	(always)                (deny default (with message TAG)); process-exec, process-fork;
//	                        process-info*, signal, mach-priv-task-port (target same-sandbox);
//	                        mach-lookup of the baseline below; sysctl-read of a fixed list
//	DenyRead                (deny file-read* (subpath P) | (regex GLOB)), each narrowed by
//	                        (require-not ...) for the AllowRead entries inside it
//	AllowRead               the carve-outs above, and (allow file-read-metadata (literal D))
//	                        for each denied directory on the way to it (for a glob, directory
//	                        metadata under its base), so realpath works
//	AllowWrite, TempDirs    (allow file-write* (subpath P) | (regex GLOB))
//	DenyWrite               (deny file-write* ...) after the allows; the directories above it
//	                        inside a writable root: no unlink/rename, no file or symlink there
//	(protected)             (deny file-write* (regex "^/(.*/)?NAME(/.*)?$")) for .gitconfig
//	                        .gitmodules .bashrc .bash_profile .zshrc .zprofile .profile
//	                        .ripgreprc .mcp.json .vscode .idea .claude/commands
//	                        .claude/agents .git/hooks, .git/config, and the hook
//	                        managers', editors', mise's and package managers' files
//	                        of docs/settings.md (files.go)
//	AllowGitConfig          drops the .git/config rule (hooks stay protected)
//	AllowProtected          drops the rules of the names it lists (a parent's too)
//	(protected parents)     .git and .claude: no unlink/rename; never a file or symlink
//	                        (so a .git file cannot point git at other hooks)
//	ProxyPorts              (allow network-outbound (remote ip "localhost:PORT"))
//	AllowLocalBinding       (allow network-bind|network-inbound (local ip "localhost:*")),
//	                        never an outbound rule (srt #131/#225)
//	AllowUnixSockets        system-socket AF_UNIX; network-bind (local unix-socket (subpath P))
//	                        and network-outbound (remote unix-socket (subpath P)), path-regex
//	                        for a glob
//	AllowAllUnixSockets     the same with (subpath "/")
//	AllowPty                (allow pseudo-tty); file-read*, file-write*, file-ioctl on
//	                        /dev/ptmx and ^/dev/ttys[0-9]+$
//	AllowMachLookup         (global-name N), or (global-name-prefix N) for "N*"; a bare "*"
//	                        is refused
//	WeakerNetworkIsolation  mach-lookup com.apple.trustd.agent (Go TLS verification, srt #118)
//	AllowAppleEvents        appleevent-send, lsopen, mach-lookup coreservices.appleevents,
//	                        CoreServices.coreservicesd, coreservices.quarantine-resolver
//	Tag                     the message of every deny; ^[A-Za-z0-9_-]+$, at most 128 bytes
//
// # Precedence
//
// Reads: an AllowRead entry re-opens the part of a DenyRead entry it lies
// in (the deny covers it, or for a glob a path shaped like it); a DenyRead
// that lies inside an AllowRead is not carved and wins there; an AllowRead
// of exactly a denied path cancels that deny. Writes: DenyWrite and the
// protected names beat AllowWrite and TempDirs, always.
//
// # Paths
//
// Each entry is absolute ("**/x" is accepted and means "/**/x"), cleaned
// lexically, and /tmp, /var and /etc are rewritten to /private/... because
// Seatbelt matches the resolved path (srt #596). A literal path is matched
// with subpath (itself and everything beneath). An entry holding * or ? is
// a glob, turned into an anchored regex that likewise covers everything
// beneath each match: "**/" becomes "(.*/)?", "**" ".*", "*" "[^/]*",
// "?" "[^/]", and every other regex metacharacter (\.^$*+?()[]{}|) is
// escaped. The string literal escapes \ and ", writes \n \t \r and \xHH for
// other control bytes, and keeps UTF-8 as is. A NUL byte, invalid UTF-8,
// or a string over 1000 bytes (sandbox-exec rejects about 1 KiB) is an
// error, as is a relative path.
//
// The protected names are matched anchored at "/", not at each writable
// root: outside the roots nothing is writable anyway, this cannot be
// anchored to the wrong directory (srt #432 anchored its ** globs to the
// working directory), and a name that straddles a root (an allowWrite of
// .../.git) is still caught. Moving a protected directory's parent cannot
// defeat it either: the name still matches wherever it lands.
//
// # Mach services in every profile
//
//	com.apple.audio.systemsoundserver          NSBeep / AudioServices alerts
//	com.apple.bsd.dirhelper                    $TMPDIR (confstr _CS_DARWIN_USER_TEMP_DIR)
//	com.apple.coreservices.launchservicesd     LaunchServices (UTI, app lookups)
//	com.apple.distributed_notifications@Uv3    NSDistributedNotificationCenter
//	com.apple.FontObjectsServer                CoreText font registration
//	com.apple.fonts                            CoreText font lookup
//	com.apple.logd                             os_log
//	com.apple.lsd.mapdb                        LaunchServices database
//	com.apple.PowerManagement.control          IOPM assertions
//	com.apple.SecurityServer                   Security.framework (certificate checks)
//	com.apple.securityd.xpc                    Security.framework (certificate checks)
//	com.apple.system.logger                    syslog(3) / ASL
//	com.apple.system.notification_center       notify(3)
//	com.apple.system.opendirectoryd.libinfo    getpwnam/getgrgid (id, ls -l, git, ssh)
//	com.apple.system.opendirectoryd.membership group membership
//
// This is srt's baseline. com.apple.trustd.agent is opt-in (it fetches
// OCSP/CRL URLs itself, an egress path around the proxy). The sysctl list
// (baseline.go) leaves out kern.procargs2 (other processes' argv and
// environment).
//
// # Violations
//
// A denial appears in the log as "Sandbox: EXE(PID) deny(N) OPERATION
// TARGET", possibly prefixed "N duplicate reports for ", followed by a line
// holding the message tag. ParseLogLine requires the message to end with
// that line exactly, so another run's tag or a tag forged inside a path
// does not match, and maps the operation to a Kind: file-read, file-write
// (file-write-*, file-link, file-clone, file-mknod), file-ioctl, file,
// network (host:port targets), unix-socket (network-* on a path), process
// (process-*, signal), mach, sysctl, iokit, ipc, pty, appleevent,
// preference, other. Path holds the target for non-network kinds.
//
// # Runner
//
// Run checks argv[0] the way execvp will (PATH from env, relative to dir):
// 127 if missing, 126 if not executable, with nothing run. It starts
// sandbox-exec in a new session (no controlling terminal, so TIOCSTI cannot
// inject into the caller's terminal), forwards SIGINT, SIGTERM, SIGHUP and
// SIGQUIT to its process group, and SIGKILLs the group when ctx ends (the
// error then wraps ctx.Err()) and once the command exits. Status: the
// command's own, 128+N on signal N, 125 if sandbox-exec cannot start.
//
// # Known limits
//
//   - Unverified on macOS: no profile has been compiled by sandbox-exec and
//     no rule exercised on a Mac. The operations and filters used are the
//     ones srt ships, except (require-not (vnode-type DIRECTORY)) on
//     file-write-create, which assumes Seatbelt sees the type of the vnode
//     being created; if it does not, mkdir of .git and .claude is refused.
//   - Protected names apply in every writable root, temp dirs included:
//     git init and git clone fail (they copy hooks into .git/hooks) unless
//     run with --template=, and git worktrees and submodules (which use a
//     .git file) cannot be created; rm -rf of a repository fails at .git.
//   - Hard links: a link to a protected or read-denied file made inside a
//     writable root names the same inode under another path. No file-link
//     rule is emitted (if macOS checks link(2) as file-link, (deny default)
//     refuses every hard link instead).
//   - A glob DenyWrite is matched against the resolved path: a symlink
//     planted between the glob's base and a match redirects writes to a
//     path the glob does not match. Literal DenyWrite parents are covered.
//   - Globs: [ and { are literal; a literal path containing * or ? cannot
//     be written; ? matches one byte in Seatbelt's regex, so not one
//     non-ASCII character; Unicode normalisation is not applied.
//   - Only /tmp, /var and /etc are resolved; any other symlink in a path is
//     the caller's to realpath.
//   - AllowLocalBinding allows no outbound connection, so a client in the
//     sandbox cannot connect to the server it started (outbound to
//     localhost:* would reach every service on the host's loopback). A
//     dual-stack socket bound to ::ffff:127.0.0.1 is not "localhost" to
//     Seatbelt (srt binds *:* for that; sbx does not).
//   - AllowPty opens every /dev/ttys* of the user, not just the command's.
//   - The new session means the command has no controlling terminal:
//     prompts that open /dev/tty (ssh passwords, sudo) fail.
//   - A process that calls setsid() itself leaves the group and survives
//     the group kill.
//   - process-exec is unrestricted (anything readable runs); POSIX shared
//     memory and semaphores are one namespace with unsandboxed processes;
//     user-preference-read and SecurityServer are allowed as in srt.
//   - When sandbox-exec rejects the profile or is denied the exec, the
//     status is sandbox-exec's own, not 125/126/127.
package darwin
