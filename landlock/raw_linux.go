//go:build linux && (amd64 || arm64)

package landlock

import (
	"github.com/sbx-sh/sbx/internal/rawexec"
	"golang.org/x/sys/unix"
)

// CompileRaw appends to p the system calls of RestrictThread, for a
// process that has no Go runtime (see package rawexec): create the
// ruleset, add each rule (a path missing in the view is skipped; a file
// given directory rights gets its file rights only), set no_new_privs and
// restrict. The kernel's ABI is probed here, in the caller.
func (rs Ruleset) CompileRaw(p *rawexec.Program) error {
	_, attr, size, err := rs.rulesetAttr()
	if err != nil {
		return err
	}
	mask := attr.Handled_access_fs
	ruleset := p.Syscall("landlock: create ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, rawexec.Ptr(attr), rawexec.Imm(size), rawexec.Imm(0)).Save()
	fd := p.NewSlot()
	for _, r := range rs.Rules {
		access := r.Access & mask
		if r.NotDir {
			access &= fileRights
		}
		label := "landlock: rule for " + r.Path
		if access == 0 {
			continue
		}
		files := access & fileRights
		dirRights := access&^fileRights != 0
		retry := dirRights && files != 0
		n := 3 // store, add, close
		if retry {
			n = 5 // store, add, store, add again, close
		}
		// Not in this view: skip the rule (and close nothing).
		p.Syscall(label, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(r.Path),
			rawexec.Imm(unix.O_PATH|unix.O_CLOEXEC)).SaveTo(fd).Ignore().SkipIfIgnored(n)
		pb := &unix.LandlockPathBeneathAttr{Allowed_access: access}
		p.Store(label, &pb.Parent_fd, fd)
		add := p.Syscall(label, unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(unix.LANDLOCK_RULE_PATH_BENEATH), rawexec.Ptr(pb), rawexec.Imm(0))
		if dirRights && !retry {
			add.Ignore(unix.EINVAL) // directory rights only, on a file: no rule
		}
		if retry {
			// Directory-only rights on what is not a directory: the
			// file rights only.
			add.Ignore(unix.EINVAL).SkipIfOK(2)
			pf := &unix.LandlockPathBeneathAttr{Allowed_access: files}
			p.Store(label, &pf.Parent_fd, fd)
			p.Syscall(label+" (file rights)", unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(unix.LANDLOCK_RULE_PATH_BENEATH), rawexec.Ptr(pf), rawexec.Imm(0))
		}
		p.Syscall(label, unix.SYS_CLOSE, fd)
	}
	if attr.Handled_access_net != 0 {
		for _, port := range rs.ConnectPorts {
			np := &netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			p.Syscall("landlock: port rule", unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(ruleNetPort), rawexec.Ptr(np), rawexec.Imm(0))
		}
		for _, port := range rs.BindPorts {
			np := &netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_BIND_TCP, port: uint64(port)}
			p.Syscall("landlock: bind port rule", unix.SYS_LANDLOCK_ADD_RULE, ruleset, rawexec.Imm(ruleNetPort), rawexec.Ptr(np), rawexec.Imm(0))
		}
	}
	p.Syscall("landlock: no_new_privs", unix.SYS_PRCTL, rawexec.Imm(unix.PR_SET_NO_NEW_PRIVS), rawexec.Imm(1), rawexec.Imm(0), rawexec.Imm(0), rawexec.Imm(0))
	p.Syscall("landlock: restrict self", unix.SYS_LANDLOCK_RESTRICT_SELF, ruleset, rawexec.Imm(0))
	p.Syscall("landlock: close ruleset", unix.SYS_CLOSE, ruleset)
	return p.Err()
}
