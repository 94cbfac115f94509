package sandbox

import (
	"errors"
	"strings"

	"github.com/sbx-sh/sbx/learn"
	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// RuleUndeclared is the rule of a read refused because --reads declared
// left it out of the view.
const RuleUndeclared = "--reads declared: not declared (--allow-read PATH)"

// fileObserver turns observed file-system calls (--observe-files) into
// records for the ones the sandbox refuses. The kernel decides each call
// (the observer answers Continue); the observer predicts, from what the
// call names in the command's view, whether the mount view refuses it:
//
//   - a write, create, remove or replace on a read-only mount (EROFS);
//   - a remove or replace of a mount point (EBUSY): protected paths and
//     the directories pinned above them;
//   - anything inside, or opening, a masked path (denyRead: EACCES).
//
// Refusals the mount view does not make — permissions (EACCES on a file
// the user cannot write), a missing parent (ENOENT), an existing name
// (EEXIST) — are the kernel's ordinary answers, not sbx's, and are not
// recorded. Landlock enforces the same policy as the mount view behind
// it, so a call the mount view lets through is not refused by it either.
type fileObserver struct {
	// reads and writes say which refusals to record (--observe-files):
	// with reads only, the filter also notifies opens for writing.
	reads, writes bool
	// ops are the mount plan's ops, in plan order.
	ops []ns.Op
	// noPty: the view has no /dev/ptmx and no /dev/pts (no allowPty).
	noPty bool
	// emptyRoot: the view starts empty (--reads declared, denyRead "/"):
	// a host path nothing binds in is absent, and a read of it is
	// refused by the view (undeclared).
	emptyRoot bool
	fi        *seccomp.FileInspector
}

// setOps takes the complete mount plan (before any notification).
func (o *fileObserver) setOps(mp ns.MountPlan) {
	o.ops = mp.Ops
	o.noPty = !mp.Pty && !mp.HostFS
	o.emptyRoot = mp.EmptyRoot
}

// undeclared reports whether a read of n is refused by the empty root:
// the name is absent from the view, no bind of the host holds it (the
// view's own /proc, /dev and /tmp are not the host's), and the host has
// it. A name the host lacks as well is an ordinary ENOENT, not a
// refusal. The supervisor's lstat of the host path reads nothing of it.
func (o *fileObserver) undeclared(n seccomp.FileName) (string, bool) {
	if !o.emptyRoot || n.Effect != seccomp.EffectRead {
		return "", false
	}
	absent := n.Missing || errors.Is(n.Err, unix.ENOENT) || errors.Is(n.Err, unix.ENOTDIR)
	if !absent {
		return "", false
	}
	p := n.Resolved
	if p == "" {
		p = n.Abs
	}
	if p == "" || p[0] != '/' {
		return "", false
	}
	op, found := o.cover(p)
	for _, own := range []string{"/proc", "/dev", "/tmp"} {
		// The view's own: the host's files there are absent in every
		// mode, except under the way made to the working directory
		// (the empty directories of OpDir), which --reads declared
		// leaves empty.
		if (p == own || strings.HasPrefix(p, own+"/")) && !(found && op.Kind == ns.OpDir) {
			return "", false
		}
	}
	if found {
		switch op.Kind {
		case ns.OpRW, ns.OpRO, ns.OpOverlay, ns.OpContent, ns.OpMask:
			// From the host (absent there too), or a mask, whose
			// refusal is the mask's.
			return "", false
		}
	}
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return "", false
	}
	return p, true
}

// isPty reports whether n names the pseudo-terminal multiplexer or a
// terminal of devpts.
func isPty(n seccomp.FileName) bool {
	for _, p := range []string{n.Abs, n.Resolved} {
		if p == "/dev/ptmx" || strings.HasPrefix(p, "/dev/pts/") {
			return true
		}
	}
	return false
}

// cover is the op deciding path p: the deepest op at p or above it (of
// several at that path, the last, which the mount view applies last).
func (o *fileObserver) cover(p string) (ns.Op, bool) {
	var best ns.Op
	found := false
	for _, op := range o.ops {
		if op.Path == p || strings.HasPrefix(p, strings.TrimSuffix(op.Path, "/")+"/") {
			if !found || len(op.Path) >= len(best.Path) {
				best, found = op, true
			}
		}
	}
	return best, found
}

// masked reports whether p is a masked path or inside one (and not
// re-opened below it), with the op that masks it.
func (o *fileObserver) masked(p string) (ns.Op, bool) {
	if p == "" {
		return ns.Op{}, false
	}
	op, ok := o.cover(p)
	return op, ok && op.Kind == ns.OpMask
}

// record is the denial for fc, if the sandbox refuses it.
func (o *fileObserver) record(r *seccomp.Request, fc *seccomp.FileCall) (violations.Record, bool) {
	isOpen := fc.Syscall == "open" || fc.Syscall == "openat" || fc.Syscall == "openat2" || fc.Syscall == "creat"
	if len(fc.Names) == 2 {
		// A rename across mounts fails with EXDEV before anything else
		// is checked (a link checks its new name first): the kernel's
		// answer, not a refusal.
		a, b := fc.Names[0], fc.Names[1]
		if a.Err == nil && b.Err == nil && a.ParentMountID != 0 && a.ParentMountID != b.ParentMountID {
			return violations.Record{}, false
		}
	}
	for _, n := range fc.Names {
		if o.noPty && isOpen && isPty(n) {
			// Absent from the view (ENOENT): sbx's refusal, recorded in
			// either mode, since the cause is never a file the user
			// could make writable.
			kind := violations.KindFileWrite
			if n.Effect == seccomp.EffectRead {
				kind = violations.KindFileRead
			}
			return violations.Record{
				Kind: kind, Source: violations.SourceObserver,
				PID: r.PID, Syscall: fc.Syscall, Path: n.Path,
				Detail: n.Effect.String() + ": no pseudo-terminals (" + openFlags(fc.Flags) + ")",
				Rule:   violations.RuleAllowPty,
			}, true
		}
		if (n.Effect == seccomp.EffectRead && !o.reads) || (n.Effect != seccomp.EffectRead && !o.writes) {
			continue
		}
		if p, ok := o.undeclared(n); ok {
			detail := "read: not declared (--reads declared)"
			if isOpen {
				detail += " (" + openFlags(fc.Flags) + ")"
			}
			return violations.Record{
				Kind: violations.KindFileRead, Source: violations.SourceObserver,
				PID: r.PID, Syscall: fc.Syscall, Path: n.Path, Resolved: p,
				Detail: detail, Rule: RuleUndeclared,
			}, true
		}
		why, at, ok := o.refused(n, isOpen)
		if !ok {
			continue
		}
		kind := violations.KindFileWrite
		if n.Effect == seccomp.EffectRead {
			kind = violations.KindFileRead
		}
		resolved := n.Resolved
		if resolved == "" {
			resolved = n.Abs
		}
		rule := "filesystem: writes only under allowWrite and /tmp"
		if op, found := o.cover(at); found && (why != "read-only" || op.Protected || op.Why == "denyWrite") {
			rule = op.Why + ": " + op.Path
		}
		detail := n.Effect.String() + ": " + why
		if isOpen {
			detail += " (" + openFlags(fc.Flags) + ")"
		}
		return violations.Record{
			Kind: kind, Source: violations.SourceObserver,
			PID: r.PID, Syscall: fc.Syscall,
			Path: n.Path, Resolved: resolved,
			Detail: detail, Rule: rule,
		}, true
	}
	return violations.Record{}, false
}

// refused predicts whether the mount view refuses n, why, and the path
// whose op decided.
func (o *fileObserver) refused(n seccomp.FileName, isOpen bool) (why, at string, ok bool) {
	if n.Err != nil {
		// The parent could not be reached: refused by sbx only when a
		// mask is on the way.
		if errors.Is(n.Err, unix.EACCES) {
			if op, m := o.masked(n.Abs); m {
				return "masked", op.Path, true
			}
		}
		return "", "", false
	}
	if op, m := o.masked(n.Resolved); m {
		// Inside a mask the command cannot even look up a name (only
		// a root supervisor can); the mask itself cannot be opened. A
		// mask's own name is a mount point on a read-only parent: the
		// checks below.
		if n.Resolved != op.Path || n.Effect == seccomp.EffectRead || n.Effect == seccomp.EffectWrite {
			return "masked", op.Path, true
		}
	}
	typ := n.Mode & unix.S_IFMT
	special := typ == unix.S_IFCHR || typ == unix.S_IFBLK || typ == unix.S_IFIFO || typ == unix.S_IFSOCK
	switch n.Effect {
	case seccomp.EffectWrite:
		if !n.Missing && n.ReadOnly && !(isOpen && special) {
			return "read-only", n.Resolved, true
		}
	case seccomp.EffectCreate:
		if n.Missing && n.ParentReadOnly {
			return "read-only", n.Resolved, true
		}
	case seccomp.EffectRemove:
		if !n.Missing && n.MountRoot {
			return "mount point", n.Resolved, true
		}
		if !n.Missing && n.ParentReadOnly {
			return "read-only", n.Resolved, true
		}
	case seccomp.EffectReplace:
		if !n.Missing && n.MountRoot {
			return "mount point", n.Resolved, true
		}
		if n.ParentReadOnly {
			return "read-only", n.Resolved, true
		}
	}
	return "", "", false
}

// openFlags names an open's access mode and the flags that matter here.
func openFlags(f uint64) string {
	var parts []string
	switch f & unix.O_ACCMODE {
	case unix.O_RDONLY:
		parts = append(parts, "O_RDONLY")
	case unix.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	default:
		parts = append(parts, "O_RDWR")
	}
	for _, fl := range []struct {
		bit  uint64
		name string
	}{{unix.O_CREAT, "O_CREAT"}, {unix.O_EXCL, "O_EXCL"}, {unix.O_TRUNC, "O_TRUNC"}, {unix.O_APPEND, "O_APPEND"}, {unix.O_DIRECTORY, "O_DIRECTORY"}, {unix.O_NOFOLLOW, "O_NOFOLLOW"}} {
		if f&fl.bit != 0 {
			parts = append(parts, fl.name)
		}
	}
	return strings.Join(parts, "|")
}

// note tells rec what fc read (sbx learn): each name the call opened
// that exists in the view and is the host's — not the view's own /proc,
// /dev and /tmp (/sys is the host's, and --reads declared has none),
// nor a mask or an empty directory of the view — as Read, or List for a directory. Writes are noted from the discard
// overlays' change lists (changeAccess), and what the view refused
// reaches the recorder as a refusal through the record (record), so
// neither is noted here. The stat family, access and readlink are not
// observed calls (seccomp.Config.ObserveReads): a path only looked up is
// not noted. Nor is execve, but the program a call comes from is
// (noteExe).
func (o *fileObserver) note(rec *learn.Recorder, fc *seccomp.FileCall) {
	for _, n := range fc.Names {
		if n.Err != nil || n.Missing || n.Effect != seccomp.EffectRead {
			continue
		}
		p := n.Resolved
		if p == "" || p[0] != '/' || !o.fromHost(p) {
			continue
		}
		a := learn.Read
		if n.Mode&unix.S_IFMT == unix.S_IFDIR {
			a = learn.List
		}
		rec.Path(p, a)
	}
}

// noteExe tells rec the program that pid runs (sbx learn). execve is
// not an observed call, yet a program makes observed calls as soon as it
// runs (its loader opens its libraries, it opens its input), and the
// first of them names its executable as the kernel mapped it: a program
// outside the declared runtime that a build runs by its path (a
// toolchain's binary under /opt, a project's own tool) is what a
// --reads declared replay must be able to execute. A statically linked
// program that opens nothing is not seen.
func (o *fileObserver) noteExe(rec *learn.Recorder, pid int) {
	p := exeOf(pid)
	if p == "" || p[0] != '/' || strings.HasSuffix(p, " (deleted)") || !o.fromHost(p) {
		return
	}
	rec.Path(p, learn.Exec|learn.Read)
}

// learnSocket decides a connect of an observed run to a Unix socket the
// start policy does not allow, at resolved in the command's view. It is
// let through, and noted (Connect), when the socket lies inside the
// working directory, the project, and the host has a socket there (so
// one that a replay's allow-list finds at start; the connect goes to
// the host's, see seccomp.UnixAllow.Learn). Any other socket — a daemon's under /run, an agent's
// under HOME, one the command made in a discard region or its own /tmp —
// stays refused, and the record becomes a refusal with the flag that
// would grant it: reaching a host daemon is a decision for the caller,
// not for a learning run.
func learnSocket(rec *learn.Recorder, cwd, resolved string, _ *unix.Stat_t) bool {
	if cwd == "" || resolved == "" || !policy.Within(resolved, cwd) {
		return false
	}
	var host unix.Stat_t
	if err := unix.Lstat(resolved, &host); err != nil || host.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	rec.Path(resolved, learn.Connect)
	return true
}

// fromHost reports whether p, a path in the command's view, is the
// host's path p.
func (o *fileObserver) fromHost(p string) bool {
	if op, found := o.cover(p); found {
		switch op.Kind {
		case ns.OpMask, ns.OpDir, ns.OpLink:
			return false
		case ns.OpRW, ns.OpRO, ns.OpOverlay, ns.OpContent, ns.OpStub:
			return true // a bind of the host's path (or a copy over it)
		}
	}
	return !o.viewOwn(p)
}

// viewOwn reports whether p lies in one of the view's own file systems.
func (o *fileObserver) viewOwn(p string) bool {
	for _, own := range []string{"/proc", "/dev", "/tmp"} {
		if p == own || strings.HasPrefix(p, own+"/") {
			return true
		}
	}
	return false
}

// changeAccess is how a discard overlay's change (ns.Change.Detail)
// touched its path.
func changeAccess(detail string) learn.Access {
	switch detail {
	case "created":
		return learn.Create | learn.Write
	case "deleted":
		return learn.Remove
	case "replaced":
		return learn.Remove | learn.Create | learn.Write
	default: // modified, renamed-over
		return learn.Write
	}
}
