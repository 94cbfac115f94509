//go:build linux && (amd64 || arm64)

package ns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/sbx-sh/sbx/internal/rawexec"
	"github.com/sbx-sh/sbx/policy"
	"golang.org/x/sys/unix"
)

// base is where the new root is assembled. It is a tmpfs mounted in the
// sandbox's own mount namespace, so nothing is written to the host's /tmp;
// it disappears with the old root after pivot_root.
const (
	base    = "/tmp"
	newRoot = base + "/root"
	empty   = base + "/empty" // mode-000 file bound over denied files
	// contentDir holds the masked copies OpContent binds.
	contentDir = base + "/content"
	// upperDir holds the upper and work directories of the overlays.
	upperDir = base + "/upper"
	// scratchTmp and scratchShm, on upperDir's tmpfs, are the sandbox's
	// /tmp and /dev/shm.
	scratchTmp = upperDir + "/tmp"
	scratchShm = upperDir + "/shm"
)

// maskAttrs are the flags of a file mask (those of the staging mount).
const maskAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC

// View is the sandbox's mount view compiled into system calls for its
// first process (see package rawexec): decided in the supervisor and run
// in the child without a Go runtime. The stubs it needs are made on the
// host before the child starts; the child removes them at exit (the exit
// ops), and Release drops the supervisor's hold on them.
type View struct {
	stubs []*stub
	// tmpFD is a descriptor number reserved for the host's /tmp in the
	// child (-1: none needed).
	tmpFD int
	// Keep are the descriptors the sandbox's first process must keep
	// until its exit ops have run (the stubs' locks, and the numbers
	// reserved for the stubs' directories: dirFDs).
	Keep []int
	// dirFDs are descriptor numbers reserved for the stubs' parent
	// directories, which the exit ops open before detaching the view.
	dirFDs []int
	// overlays are the discard overlays' paths, in the order the child
	// sends their descriptors; made are the protected names made inside
	// them (Discards.made).
	overlays []string
	made     map[string]bool
}

// overlayBatch is how many overlays' descriptors (upper and lower) one
// message carries: 128 of them, within SCM_MAX_FD (253).
const overlayBatch = 64

// OverlayMessages is how many messages the child sends on the socket
// given to Compile, each the text "overlays" with the upper and lower
// directories of up to 64 discard overlays, in plan order. They are sent
// while the view is built, before the command is forked.
func (v *View) OverlayMessages() int {
	if v == nil {
		return 0
	}
	return (len(v.overlays) + overlayBatch - 1) / overlayBatch
}

// Discards are the discard overlays for the supervisor, from the
// descriptors the child sent (upper then lower for each overlay, in
// order): Changes and SaveChanges read the upper layers through them at
// the end of the run. It takes the descriptors over (Close closes them);
// on error it closes them.
func (v *View) Discards(fds []int) (*Discards, error) {
	if len(fds) != 2*len(v.overlays) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the sandbox handed over %d descriptors for %d discard overlays", len(fds), len(v.overlays))
	}
	d := &Discards{made: v.made}
	for i, p := range v.overlays {
		d.Overlays = append(d.Overlays, Overlay{Path: p, upperFD: fds[2*i], lowerFD: fds[2*i+1]})
	}
	return d, nil
}

// Release drops the supervisor's descriptors on the stubs. Call it once
// the sandbox's first process is gone.
func (v *View) Release() {
	if v == nil {
		return
	}
	for _, s := range v.stubs {
		s.release()
	}
	v.stubs = nil
	if v.tmpFD >= 0 {
		unix.Close(v.tmpFD)
		v.tmpFD = -1
	}
	for _, fd := range v.dirFDs {
		unix.Close(fd)
	}
	v.dirFDs = nil
}

// RemoveStubs removes the stubs from the supervisor's side, for a run
// whose sandbox never started (its first process would have).
func (v *View) RemoveStubs() {
	if v == nil {
		return
	}
	for i := len(v.stubs) - 1; i >= 0; i-- {
		s := v.stubs[i]
		s.remove("", s.src)
	}
	v.stubs = nil
}

// Compile appends to prog the system calls that build plan's view and
// pivot into it, and to exit those that remove its stubs after every
// sandboxed process is gone. The program is as long as the plan needs;
// only a plan past rawexec's sanity bound gives an error wrapping
// rawexec.ErrTooLong. Whether a path exists in the view is decided here,
// on the host, which the view shows as it is outside the tmpfs mounts
// this view makes itself (tracked as made); a discard overlay shows the
// host directory as it is when it is mounted.
//
// sock is the child's end of a socket to the supervisor, on which the
// child sends the discard overlays' descriptors (OverlayMessages); it is
// needed only for a plan with discard overlays.
func Compile(plan MountPlan, sock int, prog, exit *rawexec.Program) (*View, error) {
	needTmp := false
	for _, op := range plan.Ops {
		if op.Kind == OpOverlay && sock < 0 {
			return nil, errors.New("ns: a discard overlay needs a socket to the supervisor")
		}
		needTmp = needTmp || policy.Within(op.Path, "/tmp")
	}
	c := &compiler{p: prog, made: map[string]bool{}, tmpFD: -1, sock: sock,
		// The fresh /proc shows what the host's does (but processes); the
		// view's /dev holds only what dev makes.
		mounts: []viewMount{{"/", false}, {"/dev", true}, {"/tmp", true}}}
	if plan.EmptyRoot {
		// Nothing of the host but what the ops bind in, and the view's
		// own /proc, /dev and /tmp.
		c.mounts = []viewMount{{"/", true}, {"/proc", false}, {"/dev", true}, {"/tmp", true}}
		c.made["/proc"], c.made["/dev"], c.made["/tmp"] = true, true, true
	}
	v := &View{tmpFD: -1, made: map[string]bool{}}
	if needTmp {
		// A number for the child's handle on the host's /tmp, which the
		// staging tmpfs covers (hostPath): reserved here, so the ops can
		// name it before it exists.
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("reserving a descriptor: %w", err)
		}
		v.tmpFD, c.tmpFD = fd, fd
	}
	if err := c.view(plan, v); err != nil {
		v.RemoveStubs()
		v.Release()
		return nil, err
	}
	if err := stubsExitOps(exit, v); err != nil {
		v.RemoveStubs()
		v.Release()
		return nil, err
	}
	if err := prog.Err(); err != nil {
		v.RemoveStubs()
		return nil, err
	}
	if err := exit.Err(); err != nil {
		v.RemoveStubs()
		return nil, err
	}
	return v, nil
}

type compiler struct {
	p *rawexec.Program
	// made are the view's paths this view creates (in its own tmpfs
	// mounts); mounts are the view's mounts so far, the latest last.
	made   map[string]bool
	mounts []viewMount
	scr    rawexec.Slot
	tmpFD  int
	// sock is the socket the overlays' descriptors go on; oob are the
	// control messages that carry them, one per overlayBatch overlays,
	// filled in the child as the overlays are mounted.
	sock int
	oob  [][]byte
}

// hostPath is how the child reaches host path p while the staging tmpfs
// covers /tmp.
func (c *compiler) hostPath(p string) string {
	if c.tmpFD < 0 || !policy.Within(p, "/tmp") {
		return p
	}
	return fmt.Sprintf("/proc/self/fd/%d", c.tmpFD) + strings.TrimPrefix(p, "/tmp")
}

// viewMount is a mount of the view being built: a tmpfs of its own
// (synth: nothing exists there but what is made) or a bind of the host's
// same path.
type viewMount struct {
	path  string
	synth bool
}

func str(s string) rawexec.Arg {
	if s == "" {
		return rawexec.Imm(0)
	}
	return rawexec.String(s)
}

func (c *compiler) mount(label, src, target, fstype string, flags uintptr, data string) {
	c.p.Syscall(label, unix.SYS_MOUNT, str(src), rawexec.String(target), str(fstype), rawexec.Imm(flags), str(data))
}

func (c *compiler) setattr(label, path string, recursive bool, set uint64) {
	attr := &unix.MountAttr{Attr_set: set}
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	c.p.Syscall(label, unix.SYS_MOUNT_SETATTR, rawexec.Int(unix.AT_FDCWD), rawexec.String(path),
		rawexec.Int(flags), rawexec.Ptr(attr), rawexec.Imm(unsafe.Sizeof(*attr)))
}

func (c *compiler) mkdir(label, path string, mode uint32, ignoreExist bool) {
	call := c.p.Syscall(label, unix.SYS_MKDIRAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(path), rawexec.Imm(mode))
	if ignoreExist {
		call.Ignore(unix.EEXIST)
	}
}

func (c *compiler) symlink(label, to, at string) {
	c.p.Syscall(label, unix.SYS_SYMLINKAT, rawexec.String(to), rawexec.Int(unix.AT_FDCWD), rawexec.String(at))
}

// exists says whether view path p exists in the view being built: made
// here, or, outside the tmpfs mounts this view makes, on the host.
func (c *compiler) exists(p string) bool {
	if c.made[p] {
		return true
	}
	// The deepest (and, at equal depth, latest) mount holding p decides.
	var m viewMount
	for _, mt := range c.mounts {
		if policy.Within(p, mt.path) && len(mt.path) >= len(m.path) {
			m = mt
		}
	}
	if m.synth {
		return p == m.path
	}
	_, err := os.Lstat(p)
	return err == nil
}

func (c *compiler) view(plan MountPlan, v *View) error {
	c.scr = c.p.NewSlot()
	c.mount("making / private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	if c.tmpFD >= 0 {
		c.p.Syscall("opening the host's /tmp", unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String("/tmp"),
			rawexec.Imm(unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)).SaveTo(c.scr)
		c.p.Syscall("opening the host's /tmp", unix.SYS_DUP3, c.scr, rawexec.Int(c.tmpFD), rawexec.Imm(unix.O_CLOEXEC))
		c.p.Syscall("opening the host's /tmp", unix.SYS_CLOSE, c.scr)
	}
	c.mount("mounting the staging tmpfs on "+base, "tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k")
	c.mkdir("staging", newRoot, 0o755, false)
	c.p.CreateFile("staging", empty, nil, 0)
	hasContent, nOverlay, contentSize := false, 0, 0
	for _, op := range plan.Ops {
		hasContent = hasContent || op.Kind == OpContent
		contentSize += len(op.Content)
		if op.Kind == OpOverlay {
			nOverlay++
		}
	}
	// Small copies (the capture's resolv.conf, hosts and nsswitch.conf)
	// go on the staging tmpfs itself; larger ones (a masked credentials
	// file) get a tmpfs of their own, with room for them.
	ownTmpfs := contentSize > smallContent
	c.mkdir("staging", upperDir, 0o700, false)
	if hasContent {
		c.mkdir("staging", contentDir, 0o755, false)
		if !ownTmpfs {
			c.contentFiles(plan)
		}
	}
	c.setattr("staging", base, false, maskAttrs)
	// One tmpfs, private to the run and gone with it, holds /tmp,
	// /dev/shm and the upper layers of the discard overlays, so that
	// size= (limits.tmpSize) bounds what they take together: a tmpfs's
	// pages are shared memory, charged to no process the OOM killer
	// would pick. /tmp and /dev/shm are binds of its directories.
	scratch := "mode=0700"
	if plan.TmpSize > 0 {
		scratch += fmt.Sprintf(",size=%d", plan.TmpSize)
	}
	c.mount("mounting the tmpfs for /tmp, /dev/shm and discarded writes", "tmpfs", upperDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, scratch)
	for _, d := range []string{scratchTmp, scratchShm} {
		c.mkdir("the private "+d, d, 0o1777, false)
		c.p.Syscall("the private "+d, unix.SYS_FCHMODAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(d), rawexec.Imm(0o1777), rawexec.Imm(0))
	}
	if nOverlay > 0 {
		for n := nOverlay; n > 0; n -= overlayBatch {
			c.oob = append(c.oob, unix.UnixRights(make([]int, 2*min(n, overlayBatch))...))
		}
	}
	if hasContent && ownTmpfs {
		c.mount("mounting the tmpfs for masked files", "tmpfs", contentDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=16m")
		c.contentFiles(plan)
		c.setattr("staging", contentDir, false, maskAttrs)
	}
	var masks []string
	if plan.EmptyRoot {
		c.mount("mounting the empty root", "tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0555,size=64k,nr_inodes=4096")
		for _, d := range []string{"proc", "dev", "tmp"} {
			c.mkdir("empty root", newRoot+"/"+d, 0o555, false)
		}
		masks = append(masks, "/")
	} else {
		c.mount("binding / into the new root", "/", newRoot, "", unix.MS_BIND|unix.MS_REC, "")
		if !plan.HostFS {
			c.setattr("making the root read-only", newRoot, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID)
		}
	}
	c.mount("mounting a fresh /proc (is /proc partly hidden, as in some containers?)", "proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	c.dev(newRoot+"/dev", plan.Pty)
	c.mount("mounting the private /tmp", scratchTmp, newRoot+"/tmp", "", unix.MS_BIND, "")
	for i, op := range plan.Ops {
		if op.Kind == OpContent {
			op.Target = fmt.Sprintf("%s/%d", contentDir, i)
		}
		if op.Kind == OpOverlay {
			if err := c.overlay(op, i, v); err != nil {
				return fmt.Errorf("mount view: discard overlay on %s: %w", op.Path, err)
			}
			// The overlay shows the host directory (its lower layer).
			c.mounts = append(c.mounts, viewMount{op.Path, false})
			continue
		}
		if err := c.apply(op, masks, v); err != nil {
			return fmt.Errorf("mount view: %s %s (%s): %w", op.Kind, op.Path, op.Why, err)
		}
		switch {
		case op.Kind == OpMask && op.Dir:
			masks = append(masks, op.Path)
			c.mounts = append(c.mounts, viewMount{op.Path, true})
		case op.Kind == OpRW || op.Kind == OpRO || op.Kind == OpStub:
			// (A pin binds the view onto itself: what exists is unchanged.)
			c.mounts = append(c.mounts, viewMount{op.Path, false})
		}
	}
	for _, m := range masks {
		c.setattr("making mask "+m+" read-only", filepath.Clean(newRoot+m), false,
			unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	}
	c.sendOverlays()
	c.p.Syscall("pivot: chdir "+newRoot, unix.SYS_CHDIR, rawexec.String(newRoot))
	c.p.Syscall("pivot_root", unix.SYS_PIVOT_ROOT, rawexec.String("."), rawexec.String("."))
	c.p.Syscall("detaching the old root", unix.SYS_UMOUNT2, rawexec.String("."), rawexec.Imm(unix.MNT_DETACH))
	c.p.Syscall("pivot: chdir /", unix.SYS_CHDIR, rawexec.String("/"))
	return nil
}

func (c *compiler) dev(dev string, pty bool) {
	c.mount("mounting /dev", "tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k")
	for _, n := range []string{"fd", "stdin", "stdout", "stderr", "shm"} {
		c.made["/dev/"+n] = true
	}
	if pty {
		c.made["/dev/pts"], c.made["/dev/ptmx"] = true, true
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		c.made["/dev/"+n] = true
		c.p.CreateFile("/dev/"+n, dev+"/"+n, nil, 0o666)
		c.mount("binding /dev/"+n, "/dev/"+n, dev+"/"+n, "", unix.MS_BIND, "")
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		c.symlink("/dev/"+l[0], l[1], dev+"/"+l[0])
	}
	c.mkdir("/dev/shm", dev+"/shm", 0o1777, false)
	c.mount("mounting /dev/shm", scratchShm, dev+"/shm", "", unix.MS_BIND, "")
	if pty {
		c.mkdir("/dev/pts", dev+"/pts", 0o755, false)
		c.mount("mounting a private devpts", "devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
		c.symlink("/dev/ptmx", "pts/ptmx", dev+"/ptmx")
	}
	c.setattr("mount_setattr "+dev, dev, false, unix.MOUNT_ATTR_RDONLY)
}

// apply appends the ops of one plan op (but an overlay) at target =
// newRoot + op.Path.
func (c *compiler) apply(op Op, masks []string, v *View) error {
	target := newRoot + op.Path
	src := c.hostPath(op.Path)
	label := fmt.Sprintf("mount view: %s %s (%s)", op.Kind, op.Path, op.Why)
	if !op.Protected && op.Kind != OpLink {
		if err := c.ensureTarget(label, target, src, op, masks); err != nil {
			return err
		}
	}
	switch op.Kind {
	case OpRW:
		c.mount(label, src, target, "", unix.MS_BIND|unix.MS_REC, "")
	case OpPin:
		c.mount(label, target, target, "", unix.MS_BIND|unix.MS_REC, "")
	case OpRO, OpStub:
		if op.Protected && op.InOverlay {
			c.protectInView(label, op, target, v)
			return nil
		}
		if op.Protected {
			return c.protect(label, op, src, target, v)
		}
		c.mount(label, src, target, "", unix.MS_BIND|unix.MS_REC, "")
		c.setattr(label, target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID)
	case OpDir:
	case OpLink:
		c.symlink(label, op.Target, target)
		c.made[op.Path] = true
	case OpContent:
		c.mount(label, op.Target, target, "", unix.MS_BIND, "")
	case OpMask:
		if op.Dir {
			c.mount(label, "tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,nr_inodes=64,mode=000")
		} else {
			c.mount(label, empty, target, "", unix.MS_BIND, "")
		}
	default:
		return fmt.Errorf("unknown op kind %q", op.Kind)
	}
	return nil
}

// smallContent is the most the OpContent copies may hold together to be
// written on the staging tmpfs (64 KiB, which also holds the view's own
// directories) rather than on a tmpfs of their own.
const smallContent = 16 << 10

// contentFiles write the OpContent copies into contentDir.
func (c *compiler) contentFiles(plan MountPlan) {
	for i, op := range plan.Ops {
		if op.Kind == OpContent {
			c.p.CreateFile("masked copy of "+op.Path, fmt.Sprintf("%s/%d", contentDir, i), op.Content, 0o444)
		}
	}
}

// protect binds a protected name read-only onto itself, over a stub made
// here, in the supervisor, on the host, where the name is missing.
func (c *compiler) protect(label string, op Op, src, target string, v *View) error {
	dir := op.Dir
	var st unix.Stat_t
	if unix.Lstat(op.Path, &st) == nil {
		dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	s, err := createStub(op.Path, op.Path, dir)
	if err != nil {
		return err
	}
	if s.created || s.marked {
		// The view's mount the stub is in (a writable root): the exit
		// ops detach it with every stub in it at once.
		for _, m := range c.mounts {
			if policy.Within(op.Path, m.path) && m.path != op.Path && len(m.path) >= len(s.mount) {
				s.mount = m.path
			}
		}
		v.stubs = append(v.stubs, s)
		v.Keep = append(v.Keep, s.fd)
	} else {
		s.release()
	}
	c.mount(label, src, target, "", unix.MS_BIND|unix.MS_REC, "")
	c.setattr(label, target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	return nil
}

// overlay mounts a discard overlay on op.Path: the host directory's owner and mode
// are read here; the child makes the upper and work directories, mounts
// the overlay and puts its descriptors on the upper layer and the host
// directory into the control message sendOverlays sends.
func (c *compiler) overlay(op Op, i int, v *View) error {
	label := "mount view: discard overlay on " + op.Path
	dir := fmt.Sprintf("%s/%d", upperDir, i)
	upper, work := dir+"/u", dir+"/w"
	c.mkdir(label, dir, 0o755, false)
	c.mkdir(label, upper, 0o755, false)
	c.mkdir(label, work, 0o755, false)
	src := c.hostPath(op.Path)
	var st unix.Stat_t
	if err := unix.Stat(op.Path, &st); err != nil {
		return err
	}
	// The upper root takes the lower root's owner and mode, so the
	// region looks as it does on the host (failures ignored, as there).
	c.p.Syscall(label, unix.SYS_FCHOWNAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(upper),
		rawexec.Imm(st.Uid), rawexec.Imm(st.Gid), rawexec.Imm(unix.AT_SYMLINK_NOFOLLOW)).Ignore()
	c.p.Syscall(label, unix.SYS_FCHMODAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(upper),
		rawexec.Imm(st.Mode&0o7777), rawexec.Imm(0)).Ignore()
	opts := "lowerdir=" + escapeOpt(src) + ",upperdir=" + upper + ",workdir=" + work + ",userxattr"
	c.mount(label+": overlayfs in this user namespace (needs Linux 5.11+; sbx never falls back to real writes)",
		"overlay", newRoot+op.Path, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
	n := len(v.overlays)
	oob := c.oob[n/overlayBatch]
	off := unix.CmsgLen(0) + 8*(n%overlayBatch)
	for k, p := range []string{upper, src} {
		c.p.Syscall(label, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(p),
			rawexec.Imm(unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)).SaveTo(c.scr)
		c.p.StoreAt(label, oob, off+4*k, c.scr)
	}
	v.overlays = append(v.overlays, op.Path)
	return nil
}

// sendOverlays hands the overlays' descriptors to the supervisor. They
// stay open in the first process until the fork, which closes them (and
// the command's exec, as they are close-on-exec).
func (c *compiler) sendOverlays() {
	body := []byte("overlays")
	for _, oob := range c.oob {
		iov := &unix.Iovec{Base: &body[0]}
		iov.SetLen(len(body))
		hdr := &unix.Msghdr{Iov: iov, Iovlen: 1, Control: &oob[0]}
		hdr.SetControllen(len(oob))
		c.p.Syscall("handing the discard overlays to the supervisor", unix.SYS_SENDMSG, rawexec.Int(c.sock),
			rawexec.Ptr(hdr), rawexec.Imm(0)).Want(uintptr(len(body)))
	}
}

// protectInView pins a protected name inside a discard overlay: a missing
// one is made in the overlay (its upper layer, never the host; MkdirAll,
// or an empty 0444 file), then bound read-only onto itself like any
// protected name, so the command can neither create nor change it.
func (c *compiler) protectInView(label string, op Op, target string, v *View) {
	if !c.exists(op.Path) {
		first := filepath.Dir(op.Path)
		if op.Dir {
			first = op.Path
		}
		var missing []string
		for d := first; d != "/" && !c.exists(d); d = filepath.Dir(d) {
			missing = append(missing, d)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			c.mkdir(label, newRoot+missing[i], 0o755, true)
			c.made[missing[i]] = true
		}
		if !op.Dir {
			c.p.CreateFile(label, target, nil, 0o444)
			c.made[op.Path] = true
		}
		v.made[op.Path] = true // its parent exists: op.Path is the first missing component
	}
	c.mount(label, target, target, "", unix.MS_BIND|unix.MS_REC, "")
	c.setattr(label, target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
}

// ensureTarget makes the mount point target for op where the view lacks
// it: the checks run here against the view as it will be, the creations
// in the child.
func (c *compiler) ensureTarget(label, target, src string, op Op, masks []string) error {
	if c.exists(op.Path) {
		return nil
	}
	st, err := os.Stat(op.Path) // the host's, as the supervisor sees it
	if err != nil {
		return err
	}
	mask := deepestMask(op.Path, masks)
	switch {
	case mask != "":
		// Directories on the way are reachable by name only (0111); in
		// the empty root they list the way (0555), which is all they hold.
		mode := uint32(0o111)
		if mask == "/" {
			mode = 0o555
		}
		for d := filepath.Clean(newRoot + mask); ; {
			c.p.Syscall(label+": chmod "+d, unix.SYS_FCHMODAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(d), rawexec.Imm(mode), rawexec.Imm(0))
			first, _, more := strings.Cut(strings.TrimPrefix(target, d+"/"), "/")
			if !more {
				break
			}
			d = filepath.Join(d, first)
			c.mkdir(label+": mkdir "+d, d, mode, true)
			c.made[strings.TrimPrefix(d, newRoot)] = true
		}
	case strings.HasPrefix(op.Path, "/tmp/"):
		// MkdirAll of the parent, in the private /tmp.
		var missing []string
		for d := filepath.Dir(op.Path); d != "/tmp" && !c.exists(d); d = filepath.Dir(d) {
			missing = append(missing, d)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			c.mkdir(label+": mkdir "+missing[i], newRoot+missing[i], 0o755, true)
			c.made[missing[i]] = true
		}
	case strings.HasPrefix(op.Path, "/dev/") || strings.HasPrefix(op.Path, "/proc/"):
		return fmt.Errorf("%s is not in the sandbox: it gets its own minimal /dev and /proc; name a directory elsewhere", op.Path)
	default:
		return fmt.Errorf("%s vanished since the plan was made", op.Path)
	}
	if st.IsDir() {
		c.mkdir(label, target, 0o755, false)
	} else {
		c.p.CreateFile(label, target, nil, 0o444)
	}
	c.made[op.Path] = true
	return nil
}

// stubsExitOps are stub.remove's steps for the sandbox's first process,
// after pivot_root (a stub's path in the view is its host path), for
// every stub of v, the latest first. Unmounting each stub's read-only
// bind would wait for an RCU grace period per stub (namespace_unlock:
// 40 µs each here, the better part of a large tree's exit), so the first
// process opens the stubs' directories, then detaches each view mount
// that holds stubs (a writable root) with its stubs in one umount (one
// grace period; the run is over and nothing else is left in its mount
// namespace), and reaches each stub through its directory's descriptor,
// which still names the writable mount it was opened on. Where a detach
// fails, that mount's stubs are unmounted one by one, as before. Then,
// per stub: take the lock exclusively (another run still holding it
// keeps the stub), and remove it only if the name still names the stub's
// inode (and, for a file, it is still empty).
func stubsExitOps(p *rawexec.Program, v *View) error {
	if len(v.stubs) == 0 {
		return nil
	}
	dirFD := map[string]int{}
	var dirs []string
	for i := len(v.stubs) - 1; i >= 0; i-- {
		dir := filepath.Dir(v.stubs[i].path)
		if _, ok := dirFD[dir]; ok {
			continue
		}
		// A number for the directory's descriptor in the child,
		// reserved here so the ops can name it (as tmpFD).
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("reserving a descriptor: %w", err)
		}
		v.dirFDs = append(v.dirFDs, fd)
		v.Keep = append(v.Keep, fd)
		dirFD[dir] = fd
		dirs = append(dirs, dir)
	}
	scr := p.NewSlot()
	for _, dir := range dirs {
		// A directory that cannot be opened leaves the reserved
		// /dev/null in place: the stub's ops there fail (ENOTDIR) and
		// are ignored.
		label := "removing stubs: opening " + dir
		p.Syscall(label, unix.SYS_OPENAT, rawexec.Int(unix.AT_FDCWD), rawexec.String(dir),
			rawexec.Imm(unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)).SaveTo(scr).Ignore().SkipIfIgnored(2)
		p.Syscall(label, unix.SYS_DUP3, scr, rawexec.Int(dirFD[dir]), rawexec.Imm(unix.O_CLOEXEC))
		p.Syscall(label, unix.SYS_CLOSE, scr)
	}
	// One detach per mount that holds stubs, each followed by the
	// fallback that unmounts its stubs one by one (skipped when the
	// detach worked; "/" is locked, so a stub there takes the fallback).
	byMount := map[string][]*stub{}
	var mounts []string
	for i := len(v.stubs) - 1; i >= 0; i-- {
		s := v.stubs[i]
		if _, ok := byMount[s.mount]; !ok {
			mounts = append(mounts, s.mount)
		}
		byMount[s.mount] = append(byMount[s.mount], s)
	}
	for _, m := range mounts {
		stubs := byMount[m]
		if m != "" && len(stubs) <= maxSkip {
			p.Syscall("removing stubs: detaching "+m, unix.SYS_UMOUNT2, rawexec.String(m), rawexec.Imm(unix.MNT_DETACH)).
				Ignore().SkipIfOK(len(stubs))
		}
		for _, s := range stubs {
			p.Syscall("removing stub "+s.path+": unmount", unix.SYS_UMOUNT2, rawexec.String(s.path), rawexec.Imm(unix.MNT_DETACH)).Ignore()
		}
	}
	for i := len(v.stubs) - 1; i >= 0; i-- {
		s := v.stubs[i]
		stubExitOps(p, s, dirFD[filepath.Dir(s.path)])
	}
	return p.Err()
}

// maxSkip is how many ops one op can skip (rawexec's limit).
const maxSkip = 255

// stubExitOps are one stub's steps after its bind is gone: dir is a
// descriptor on its parent directory.
func stubExitOps(p *rawexec.Program, s *stub, dir int) {
	st := make([]byte, unsafe.Sizeof(unix.Stat_t{}))
	var zero unix.Stat_t
	offDev, offIno, offSize := int(unsafe.Offsetof(zero.Dev)), int(unsafe.Offsetof(zero.Ino)), int(unsafe.Offsetof(zero.Size))
	label := "removing stub " + s.path
	name := filepath.Base(s.path)
	rest := 4 // the ops after the lock: stat, dev, ino, remove
	if !s.dir {
		rest++ // and the size check
	}
	p.Syscall(label+": lock", unix.SYS_FLOCK, rawexec.Int(s.fd), rawexec.Imm(unix.LOCK_EX|unix.LOCK_NB)).Ignore().SkipIfIgnored(rest)
	p.Syscall(label+": stat", unix.SYS_NEWFSTATAT, rawexec.Int(dir), rawexec.String(name), rawexec.Bytes(st),
		rawexec.Imm(unix.AT_SYMLINK_NOFOLLOW)).Ignore().SkipIfIgnored(rest - 1)
	p.SkipIfNotEqual(label+": same device", st, offDev, s.dev, rest-2)
	p.SkipIfNotEqual(label+": same inode", st, offIno, s.ino, rest-3)
	if s.dir {
		p.Syscall(label+": rmdir", unix.SYS_UNLINKAT, rawexec.Int(dir), rawexec.String(name), rawexec.Imm(unix.AT_REMOVEDIR)).Ignore()
	} else {
		p.SkipIfNotEqual(label+": still empty", st, offSize, 0, 1)
		p.Syscall(label+": unlink", unix.SYS_UNLINKAT, rawexec.Int(dir), rawexec.String(name), rawexec.Imm(0)).Ignore()
	}
}

// deepestMask is the deepest directory mask in masks above p ("" for
// none): ensureTarget makes the way to p inside it.
func deepestMask(p string, masks []string) string {
	mask := ""
	for _, m := range masks {
		if m == "/" && (policy.Within(p, "/tmp") || policy.Within(p, "/dev") || policy.Within(p, "/proc")) {
			continue // the view's own mounts over the empty root, not part of it
		}
		if m != p && policy.Within(p, m) && len(m) > len(mask) {
			mask = m
		}
	}
	return mask
}

// escapeOpt escapes the characters overlayfs's option parser treats
// specially in a path.
func escapeOpt(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}
