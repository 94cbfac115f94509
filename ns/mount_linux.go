//go:build linux

package ns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
)

// View is a built mount view; Close removes the stubs it created on the
// host (call it after every sandboxed process is gone).
type View struct {
	stubs   []*stub
	pivoted bool
	// Overlays are the discard overlays, for Changes at the end of the
	// run: descriptors on their upper and lower directories, which stay
	// reachable after pivot_root has detached the staging area.
	Overlays []Overlay
	// made are the protected names made inside overlays (not the
	// command's writes: Changes leaves them out).
	made map[string]bool
	// modes are the modes Reach changed, as they were.
	modes map[string]uint32
}

// Overlay is one discard region: Path in the view, its upper layer and
// the host directory under it.
type Overlay struct {
	Path             string
	upperFD, lowerFD int
}

// BuildRoot assembles the mount view described by plan and pivots into it.
// It must run in a fresh mount namespace (and pid namespace, for /proc)
// with CAP_SYS_ADMIN there. On error the caller must not run anything.
func BuildRoot(plan MountPlan) (*View, error) {
	v := &View{}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return v, fmt.Errorf("making / private: %w", err)
	}
	// The staging tmpfs hides the host's /tmp from this namespace; keep a
	// handle on it so host paths below /tmp stay reachable (hostPath).
	tmpFD, err := unix.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return v, fmt.Errorf("opening the host's /tmp: %w", err)
	}
	defer unix.Close(tmpFD)
	hostTmp = fmt.Sprintf("/proc/self/fd/%d", tmpFD)
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k"); err != nil {
		return v, fmt.Errorf("mounting the staging tmpfs on %s: %w", base, err)
	}
	if err := os.Mkdir(newRoot, 0o755); err != nil {
		return v, fmt.Errorf("staging: %w", err)
	}
	if err := os.WriteFile(empty, nil, 0); err != nil {
		return v, fmt.Errorf("staging: %w", err)
	}
	hasContent, hasOverlay := false, false
	for _, op := range plan.Ops {
		hasContent = hasContent || op.Kind == OpContent
		hasOverlay = hasOverlay || op.Kind == OpOverlay
	}
	if hasOverlay {
		if err := os.Mkdir(upperDir, 0o700); err != nil {
			return v, fmt.Errorf("staging: %w", err)
		}
	}
	if hasContent {
		// Masked copies live on a tmpfs of their own under the staging
		// area; it is made read-only once they are written.
		if err := os.Mkdir(contentDir, 0o755); err != nil {
			return v, fmt.Errorf("staging: %w", err)
		}
	}
	// A bind mount takes its flags from the mount it is made from: with
	// the staging tmpfs read-only, nosuid, nodev and noexec, every file
	// mask bound from empty is too, with no mount_setattr of its own.
	if err := setattr(base, false, maskAttrs, 0); err != nil {
		return v, fmt.Errorf("staging: %w", err)
	}
	if hasOverlay {
		// The upper layers of the discard overlays: private to the run,
		// gone with it (no size= beyond tmpfs's default of half the RAM).
		if err := unix.Mount("tmpfs", upperDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
			return v, fmt.Errorf("mounting the tmpfs for discarded writes: %w", err)
		}
	}
	if hasContent {
		if err := unix.Mount("tmpfs", contentDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=16m"); err != nil {
			return v, fmt.Errorf("mounting the tmpfs for masked files: %w", err)
		}
		for i, op := range plan.Ops {
			if op.Kind == OpContent {
				if err := os.WriteFile(fmt.Sprintf("%s/%d", contentDir, i), op.Content, 0o444); err != nil {
					return v, fmt.Errorf("masked copy of %s: %w", op.Path, err)
				}
			}
		}
		if err := setattr(contentDir, false, maskAttrs, 0); err != nil {
			return v, fmt.Errorf("staging: %w", err)
		}
	}
	var masks []string
	if plan.EmptyRoot {
		// denyRead "/": nothing of the host but what the ops bind in.
		if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0555,size=64k,nr_inodes=4096"); err != nil {
			return v, fmt.Errorf("mounting the empty root: %w", err)
		}
		for _, d := range []string{"proc", "dev", "tmp"} {
			if err := os.Mkdir(newRoot+"/"+d, 0o555); err != nil {
				return v, fmt.Errorf("empty root: %w", err)
			}
		}
		masks = append(masks, "/")
	} else {
		if err := unix.Mount("/", newRoot, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return v, fmt.Errorf("binding / into the new root: %w", err)
		}
		if !plan.HostFS {
			if err := setattr(newRoot, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, 0); err != nil {
				return v, fmt.Errorf("making the root read-only: %w", err)
			}
		}
	}
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return v, fmt.Errorf("mounting a fresh /proc (is /proc partly hidden, as in some containers?): %w", err)
	}
	if err := buildDev(newRoot+"/dev", plan.Pty); err != nil {
		return v, err
	}
	if err := unix.Mount("tmpfs", newRoot+"/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return v, fmt.Errorf("mounting the private /tmp: %w", err)
	}
	for i, op := range plan.Ops {
		if op.Kind == OpContent {
			op.Target = fmt.Sprintf("%s/%d", contentDir, i)
		}
		if op.Kind == OpOverlay {
			if err := v.overlay(op, i); err != nil {
				return v, fmt.Errorf("mount view: discard overlay on %s: %w", op.Path, err)
			}
			continue
		}
		if err := v.apply(op, masks); err != nil {
			return v, fmt.Errorf("mount view: %s %s (%s): %w", op.Kind, op.Path, op.Why, err)
		}
		if op.Kind == OpMask && op.Dir {
			masks = append(masks, op.Path)
		}
	}
	for _, m := range masks {
		if err := setattr(filepath.Clean(newRoot+m), false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, 0); err != nil {
			return v, fmt.Errorf("making mask %s read-only: %w", m, err)
		}
	}
	if err := pivot(newRoot); err != nil {
		return v, err
	}
	v.pivoted = true
	return v, nil
}

// maskAttrs are the flags of a file mask (those of the staging mount).
const maskAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC

// hostTmp reaches the host's /tmp while the staging tmpfs covers it.
var hostTmp = "/tmp"

// hostPath is how init reaches host path p before pivot_root.
func hostPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/tmp/"); ok {
		return hostTmp + "/" + rest
	}
	if p == "/tmp" {
		return hostTmp
	}
	return p
}

func (v *View) apply(op Op, masks []string) error {
	target := newRoot + op.Path
	src := hostPath(op.Path)
	if err := ensureTarget(target, src, op, masks); err != nil {
		return err
	}
	switch op.Kind {
	case OpRW:
		return unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, "")
	case OpPin:
		return unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, "")
	case OpRO, OpStub:
		if op.Protected && op.InOverlay {
			return v.protectInView(op, target)
		}
		if op.Protected {
			return v.protect(op, src, target)
		}
		if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return setattr(target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, 0)
	case OpDir:
		return nil // ensureTarget made it
	case OpLink:
		return os.Symlink(op.Target, target)
	case OpContent:
		// Read-only, nosuid, nodev and noexec from its tmpfs.
		return unix.Mount(op.Target, target, "", unix.MS_BIND, "")
	case OpMask:
		if op.Dir {
			// Mode 000: nobody in the sandbox can list or enter it.
			// ensureTarget relaxes it to 0111 (enter by name only) when a
			// path inside is re-allowed.
			return unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,nr_inodes=64,mode=000")
		}
		// Read-only, nosuid, nodev and noexec from the staging mount.
		return unix.Mount(empty, target, "", unix.MS_BIND, "")
	}
	return fmt.Errorf("unknown op kind %q", op.Kind)
}

// protect pins a protected name read-only through the stub protocol: an
// existing sbx stub (ours or another run's) is shared under its lock, a
// missing name is stubbed, a real file or directory is bound read-only.
func (v *View) protect(op Op, src, target string) error {
	dir := op.Dir
	var st unix.Stat_t
	if unix.Lstat(src, &st) == nil {
		dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	s, err := createStub(src, op.Path, dir)
	if err != nil {
		return err
	}
	if s.created || s.marked {
		v.stubs = append(v.stubs, s)
	} else {
		defer s.release()
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return setattr(target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0)
}

// ensureTarget creates a missing mount point, but only inside a tmpfs this
// view mounted itself (a mask, or the private /tmp): it never creates
// anything on the host.
func ensureTarget(target, src string, op Op, masks []string) error {
	if op.Protected || op.Kind == OpLink {
		return nil // protect creates what is missing, on the host, as a stub
	}
	if _, err := os.Lstat(target); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	mask := deepestMask(op.Path, masks)
	switch {
	case mask != "":
		// Directories on the way are reachable by name only (0111); in
		// the empty root they list the way (0555), which is all they hold.
		mode := os.FileMode(0o111)
		if mask == "/" {
			mode = 0o555
		}
		for d := filepath.Clean(newRoot + mask); ; {
			if err := os.Chmod(d, mode); err != nil {
				return err
			}
			first, _, more := strings.Cut(strings.TrimPrefix(target, d+"/"), "/")
			if !more {
				break
			}
			d = filepath.Join(d, first)
			if err := os.Mkdir(d, mode); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
	case strings.HasPrefix(op.Path, "/tmp/"):
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
	case strings.HasPrefix(op.Path, "/dev/") || strings.HasPrefix(op.Path, "/proc/"):
		// Not a race: the sandbox has its own /dev (null, zero, full,
		// random, urandom, tty, pts) and /proc.
		return fmt.Errorf("%s is not in the sandbox: it gets its own minimal /dev and /proc; name a directory elsewhere", op.Path)
	default:
		return fmt.Errorf("%s vanished since the plan was made", op.Path)
	}
	if st.IsDir() {
		return os.Mkdir(target, 0o755)
	}
	return os.WriteFile(target, nil, 0o444)
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

func buildDev(dev string, pty bool) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		t := dev + "/" + n
		if err := os.WriteFile(t, nil, 0o666); err != nil {
			return fmt.Errorf("/dev/%s: %w", n, err)
		}
		if err := unix.Mount("/dev/"+n, t, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", n, err)
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	for name, to := range links {
		if err := os.Symlink(to, dev+"/"+name); err != nil {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
	}
	if err := os.Mkdir(dev+"/shm", 0o1777); err != nil {
		return fmt.Errorf("/dev/shm: %w", err)
	}
	if err := unix.Mount("tmpfs", dev+"/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mounting /dev/shm: %w", err)
	}
	if pty {
		if err := os.Mkdir(dev+"/pts", 0o755); err != nil {
			return fmt.Errorf("/dev/pts: %w", err)
		}
		if err := unix.Mount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
			return fmt.Errorf("mounting a private devpts: %w", err)
		}
		if err := os.Symlink("pts/ptmx", dev+"/ptmx"); err != nil {
			return fmt.Errorf("/dev/ptmx: %w", err)
		}
	}
	return setattr(dev, false, unix.MOUNT_ATTR_RDONLY, 0)
}

// pivot makes root the new / and detaches the old one.
func pivot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	return unix.Chdir("/")
}

func setattr(path string, recursive bool, set, clr uint64) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	attr := unix.MountAttr{Attr_set: set, Attr_clr: clr}
	if err := unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &attr); err != nil {
		return fmt.Errorf("mount_setattr %s: %w", path, err)
	}
	return nil
}

// LoopbackUp brings up "lo" in the current network namespace.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// overlay mounts a discard overlay for op (plan index i): the host
// directory as the lower layer, a fresh upper and work directory on the
// run's tmpfs. userxattr: the overlay keeps its bookkeeping in user.*
// xattrs, as it must in a user namespace (Linux 5.11+).
func (v *View) overlay(op Op, i int) error {
	upper := fmt.Sprintf("%s/%d/u", upperDir, i)
	work := fmt.Sprintf("%s/%d/w", upperDir, i)
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	src := hostPath(op.Path)
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		return err
	}
	// The upper root takes the lower root's owner and mode, so the
	// region looks as it does on the host.
	_ = os.Lchown(upper, int(st.Uid), int(st.Gid))
	_ = os.Chmod(upper, os.FileMode(st.Mode&0o7777))
	opts := "lowerdir=" + escapeOpt(src) + ",upperdir=" + upper + ",workdir=" + work + ",userxattr"
	if err := unix.Mount("overlay", newRoot+op.Path, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("overlayfs in this user namespace: %w (needs Linux 5.11+; sbx never falls back to real writes)", err)
	}
	uf, err := unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	lf, err := unix.Open(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(uf)
		return err
	}
	v.Overlays = append(v.Overlays, Overlay{Path: op.Path, upperFD: uf, lowerFD: lf})
	return nil
}

// escapeOpt escapes the characters overlayfs's option parser treats
// specially in a path.
func escapeOpt(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}

// protectInView pins a protected name inside a discard overlay: a missing
// one is made in the overlay (its upper layer, never the host) as an
// empty file or directory, then bound read-only onto itself like any
// protected name, so the command can neither create nor change it.
func (v *View) protectInView(op Op, target string) error {
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		if op.Dir {
			err = os.MkdirAll(target, 0o755)
		} else {
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = os.WriteFile(target, nil, 0o444)
			}
		}
		if err != nil {
			return err
		}
		if v.made == nil {
			v.made = map[string]bool{}
		}
		v.made[op.Path] = true // its parent exists: op.Path is the first missing component
	} else if err != nil {
		return err
	}
	if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return setattr(target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0)
}
