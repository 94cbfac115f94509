//go:build linux && (amd64 || arm64)

package landlock

import (
	"github.com/sbx-sh/sbx/internal/rawexec"
	"golang.org/x/sys/unix"
)

// Compile appends to p the system calls that confine the sandboxed
// command, which runs them without a Go runtime (see package rawexec)
// after its fork from the sandbox's first process: create the ruleset,
// add each rule (a path missing in the view is skipped; a file given
// directory rights gets its file rights only), set no_new_privs and
// restrict. The kernel's ABI is probed here, in the caller.
//
// With e (PrepareEarly; nil for none) the ruleset is e's and the command
// skips each rule the early process marked as added and adds every other
// one in the view, so a rule is added at least once whatever the early
// process managed (twice, for the same inode, is harmless).
func (rs Ruleset) Compile(p *rawexec.Program, e *Early) error {
	var (
		ruleset rawexec.Arg
		attr    *unix.LandlockRulesetAttr
		rules   []compiledRule
	)
	if e != nil {
		ruleset, attr, rules = rawexec.Int(e.fd), e.rulesetAttr, e.rules
	} else {
		var size uintptr
		var err error
		if _, attr, size, err = rs.rulesetAttr(); err != nil {
			return err
		}
		ruleset = p.Syscall("landlock: create ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, rawexec.Ptr(attr), rawexec.Imm(size), rawexec.Imm(0)).Save()
		rules = rs.compiledRules(attr.Handled_access_fs)
	}
	fd := p.NewSlot()
	for i, r := range rules {
		if e != nil && e.mine[i] {
			p.SkipIfNotEqual(r.label, e.done, 8*i, 0, ruleOpsLen(r)) // added by the early process?
		}
		ruleOps(p, ruleset, fd, r)
	}
	rs.finishOps(p, attr, ruleset)
	return p.Err()
}

// compiledRule is a Rule as the raw ops add it: pb its rights (masked to the
// kernel's), pf its file rights only when pb holds directory rights too
// (retried with those where the path is not a directory).
type compiledRule struct {
	path, label string
	pb, pf      *unix.LandlockPathBeneathAttr
	dirRights   bool
}

func (rs Ruleset) compiledRules(mask uint64) []compiledRule {
	out := make([]compiledRule, 0, len(rs.Rules))
	for _, r := range rs.Rules {
		access := r.Access & mask
		if r.NotDir {
			access &= fileRights
		}
		if access == 0 {
			continue
		}
		rr := compiledRule{path: r.Path, label: "landlock: rule for " + r.Path,
			pb: &unix.LandlockPathBeneathAttr{Allowed_access: access}, dirRights: access&^fileRights != 0}
		if files := access & fileRights; rr.dirRights && files != 0 {
			rr.pf = &unix.LandlockPathBeneathAttr{Allowed_access: files}
		}
		out = append(out, rr)
	}
	return out
}

// ruleOps add one rule in the view: open its path (a path missing in the
// view skips the rule), add pb, and with pf (directory rights on what may
// be a file) add pf, the file rights only, if the kernel refuses pb; then
// close. ruleOpsLen(r) ops.
func ruleOps(p *rawexec.Program, ruleset rawexec.Arg, fd rawexec.Slot, r compiledRule) {
	// Not in this view: skip the rule (and close nothing).
	p.Syscall(r.label, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(r.path),
		rawexec.Imm(unix.O_PATH|unix.O_CLOEXEC)).SaveTo(fd).Ignore().SkipIfIgnored(ruleOpsLen(r) - 1)
	p.Store(r.label, &r.pb.Parent_fd, fd)
	add := p.Syscall(r.label, unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(unix.LANDLOCK_RULE_PATH_BENEATH), rawexec.Ptr(r.pb), rawexec.Imm(0))
	switch {
	case r.pf != nil:
		// Directory-only rights on what is not a directory: the file
		// rights only.
		add.Ignore(unix.EINVAL).SkipIfOK(2)
		p.Store(r.label, &r.pf.Parent_fd, fd)
		p.Syscall(r.label+" (file rights)", unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(unix.LANDLOCK_RULE_PATH_BENEATH), rawexec.Ptr(r.pf), rawexec.Imm(0))
	case r.dirRights:
		add.Ignore(unix.EINVAL) // directory rights only, on a file: no rule
	}
	p.Syscall(r.label, unix.SYS_CLOSE, fd)
}

// ruleOpsLen is how many ops ruleOps appends for r.
func ruleOpsLen(r compiledRule) int {
	if r.pf != nil {
		return 6 // open, store, add, store, add again, close
	}
	return 4 // open, store, add, close
}

// finishOps appends the port rules, no_new_privs, the restriction and the
// ruleset's close.
func (rs Ruleset) finishOps(p *rawexec.Program, attr *unix.LandlockRulesetAttr, ruleset rawexec.Arg) {
	if attr.Handled_access_net&unix.LANDLOCK_ACCESS_NET_CONNECT_TCP != 0 {
		for _, port := range rs.ConnectPorts {
			np := &netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			p.Syscall("landlock: port rule", unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(ruleNetPort), rawexec.Ptr(np), rawexec.Imm(0))
		}
	}
	if attr.Handled_access_net&unix.LANDLOCK_ACCESS_NET_BIND_TCP != 0 {
		for _, port := range rs.BindPorts {
			np := &netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_BIND_TCP, port: uint64(port)}
			p.Syscall("landlock: bind port rule", unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(ruleNetPort), rawexec.Ptr(np), rawexec.Imm(0))
		}
	}
	p.Syscall("landlock: no_new_privs", unix.SYS_PRCTL, rawexec.Imm(unix.PR_SET_NO_NEW_PRIVS), rawexec.Imm(1), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	p.Syscall("landlock: restrict self", unix.SYS_LANDLOCK_RESTRICT_SELF, ruleset, rawexec.Imm(0))
	p.Syscall("landlock: close ruleset", unix.SYS_CLOSE, ruleset)
}
