//go:build linux

package ns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// base is where the new root is assembled. It is a tmpfs mounted in the
// sandbox's own mount namespace, so nothing is written to the host's /tmp;
// it disappears with the old root after pivot_root.
const (
	base    = "/tmp"
	newRoot = base + "/root"
	empty   = base + "/empty" // mode-000 file bound over denied files
)

// View is a built mount view; Close removes the stubs it created on the
// host (call it after every sandboxed process is gone).
type View struct {
	stubs []*stub
}

// BuildRoot assembles the mount view described by plan and pivots into it.
// It must run in a fresh mount namespace (and pid namespace, for /proc)
// with CAP_SYS_ADMIN there. On error the caller must not run anything.
func BuildRoot(plan MountPlan) (*View, error) {
	v := &View{}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return v, fmt.Errorf("making / private: %w", err)
	}
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k"); err != nil {
		return v, fmt.Errorf("mounting the staging tmpfs on %s: %w", base, err)
	}
	if err := os.Mkdir(newRoot, 0o755); err != nil {
		return v, fmt.Errorf("staging: %w", err)
	}
	if err := os.WriteFile(empty, nil, 0); err != nil {
		return v, fmt.Errorf("staging: %w", err)
	}
	if err := unix.Mount("/", newRoot, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return v, fmt.Errorf("binding / into the new root: %w", err)
	}
	if !plan.HostFS {
		if err := setattr(newRoot, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, 0); err != nil {
			return v, fmt.Errorf("making the root read-only: %w", err)
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
	var masks []string
	for _, op := range plan.Ops {
		if err := v.apply(op, masks); err != nil {
			return v, fmt.Errorf("mount view: %s %s (%s): %w", op.Kind, op.Path, op.Why, err)
		}
		if op.Kind == OpMask && op.Dir {
			masks = append(masks, op.Path)
		}
	}
	for _, m := range masks {
		if err := setattr(newRoot+m, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, 0); err != nil {
			return v, fmt.Errorf("making mask %s read-only: %w", m, err)
		}
	}
	if err := pivot(newRoot); err != nil {
		return v, err
	}
	return v, nil
}

func (v *View) apply(op Op, masks []string) error {
	target := newRoot + op.Path
	if err := ensureTarget(target, op, masks); err != nil {
		return err
	}
	switch op.Kind {
	case OpRW:
		return unix.Mount(op.Path, target, "", unix.MS_BIND|unix.MS_REC, "")
	case OpPin:
		return unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, "")
	case OpRO:
		if err := unix.Mount(op.Path, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return setattr(target, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, 0)
	case OpMask:
		if op.Dir {
			// Mode 000: nobody in the sandbox can list or enter it.
			// ensureTarget relaxes it to 0111 (enter by name only) when a
			// path inside is re-allowed.
			return unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,nr_inodes=64,mode=000")
		}
		if err := unix.Mount(empty, target, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return setattr(target, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0)
	case OpStub:
		s, err := createStub(op.Path, op.Dir)
		if err != nil {
			return err
		}
		if s.created || s.marked {
			v.stubs = append(v.stubs, s)
		} else {
			s.release()
		}
		if err := unix.Mount(op.Path, target, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return setattr(target, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0)
	}
	return fmt.Errorf("unknown op kind %q", op.Kind)
}

// ensureTarget creates a missing mount point, but only inside a mask this
// view created (a tmpfs of its own): it never creates anything on the host.
func ensureTarget(target string, op Op, masks []string) error {
	if op.Kind == OpStub {
		return nil
	}
	if _, err := os.Lstat(target); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	inMask := false
	for _, m := range masks {
		if strings.HasPrefix(op.Path, m+"/") {
			inMask = true
		}
	}
	if !inMask {
		return fmt.Errorf("%s vanished since the plan was made", op.Path)
	}
	st, err := os.Stat(op.Path)
	if err != nil {
		return err
	}
	// Make the directories on the way reachable by name only (mode 0111).
	for _, m := range masks {
		if strings.HasPrefix(op.Path, m+"/") {
			for d := newRoot + m; ; {
				if err := os.Chmod(d, 0o111); err != nil {
					return err
				}
				rest := strings.TrimPrefix(target, d+"/")
				first, _, more := strings.Cut(rest, "/")
				if !more {
					break
				}
				d = filepath.Join(d, first)
				if err := os.Mkdir(d, 0o111); err != nil && !errors.Is(err, os.ErrExist) {
					return err
				}
			}
		}
	}
	if st.IsDir() {
		return os.Mkdir(target, 0o755)
	}
	return os.WriteFile(target, nil, 0o444)
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
