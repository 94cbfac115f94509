package seccomp

import (
	"encoding/binary"
	"errors"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Effect is what a file-system call does to one of the names it is given.
type Effect uint8

const (
	// EffectRead reads the object (an open without write intent).
	EffectRead Effect = iota
	// EffectWrite changes the object: an open for writing or truncating,
	// chmod, chown, truncate.
	EffectWrite
	// EffectCreate adds the name to its parent directory (mkdir, mknod,
	// symlink, the new name of link, an O_CREAT open of a missing name).
	EffectCreate
	// EffectRemove takes the name out of its parent directory (unlink,
	// rmdir, the old name of rename).
	EffectRemove
	// EffectReplace puts something at the name, replacing what is there
	// if anything (the new name of rename).
	EffectReplace
)

func (e Effect) String() string {
	return [...]string{"read", "write", "create", "remove", "replace"}[e]
}

// FileCall is a notified file-system call (Config.ObserveWrites,
// ObserveReads), decoded, with every name it is given looked up in the
// caller's view of the filesystem. FileInspector.Inspect only looks: it changes
// nothing and decides nothing, and what it saw can differ from what the
// kernel meets when the call then runs (another thread or process may
// rename or create in between). It is for reporting, never for a
// security decision.
type FileCall struct {
	Syscall string
	Flags   uint64 // the open flags of an open, openat, openat2 or creat
	Names   []FileName
}

// FileName is one name a call is given, as the caller's view resolves it.
type FileName struct {
	// Path is the name as the command gave it; Abs is Path made absolute
	// against the call's base directory (the working directory, or the
	// directory descriptor), lexically, without resolving symbolic links.
	Path, Abs string
	Effect    Effect
	// Resolved is where the name leads in the caller's view: the object,
	// or, when it is missing, its parent directory joined with the last
	// element. Empty when the parent could not be reached (Err).
	Resolved string
	Missing  bool   // the last element does not exist (not looked up for a creating call in a writable parent)
	Mode     uint32 // the object's st_mode (0 when Missing)
	// ReadOnly: the object is on a read-only mount; ParentReadOnly: its
	// parent directory is. MountRoot: the object is a mount point (a
	// rename or unlink of it fails with EBUSY).
	ReadOnly, ParentReadOnly, MountRoot bool
	// ParentMountID identifies the parent's mount: rename fails with
	// EXDEV across mounts.
	ParentMountID uint64
	// Err is why the parent directory could not be reached (EACCES in a
	// directory that cannot be searched, ENOENT, ...), or nil.
	Err error
}

// fileArgs says where a call's names are: for each, the argument index of
// the directory descriptor (-1: AT_FDCWD), of the path, and its effect;
// nofollow when the last element is not followed.
type fileArg struct {
	dirfd, path int
	effect      Effect
	nofollow    bool
}

const (
	atSymlinkNofollow = 0x100 // AT_SYMLINK_NOFOLLOW
)

// FileInspector looks up the names of notified file-system calls in the
// sandbox's view. Every process of one sandbox has the same root (the
// filter refuses chroot, pivot_root, setns and new mount namespaces), so
// the inspector opens it once, through the first caller's /proc/PID/root,
// and keeps it; working directories and directory descriptors are read
// through /proc/TID/cwd and /proc/TID/fd/N on each call.
type FileInspector struct {
	// Resolve fills in FileName.Resolved for every name that exists,
	// not only where the mount view may refuse it (sbx learn notes the
	// resolved path of what a command read), at the cost of a readlink
	// of /proc/self/fd/N per name. Set it before the first Inspect.
	Resolve bool

	mu       sync.Mutex
	root     int // -1 until the first call
	rootLink string
}

// NewFileInspector returns an inspector for one sandbox's calls.
func NewFileInspector() *FileInspector { return &FileInspector{root: -1} }

// Close releases the root.
func (fi *FileInspector) Close() {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if fi.root >= 0 {
		unix.Close(fi.root)
		fi.root = -1
	}
}

func (fi *FileInspector) view(pid int) (*view, error) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if fi.root < 0 {
		v, err := openView(pid, false)
		if err != nil {
			return nil, err
		}
		fi.root, fi.rootLink = v.root, v.rootLink // kept: not v.close()
	}
	return &view{root: fi.root, cwd: -1, rootLink: fi.rootLink, resolve: fi.Resolve}, nil
}

// Inspect decodes r, a notified file-system call, and looks up each name
// it is given in the caller's view (openat2 with RESOLVE_IN_ROOT, as
// UnixAllow.Connect does). ok is false when r is not a file-system call
// sbx observes. Check r.Valid after it, as for any read through the PID.
func (fi *FileInspector) Inspect(r *Request) (fc *FileCall, ok bool, err error) {
	fc = &FileCall{Syscall: r.Syscall}
	a := r.Args
	var args []fileArg
	openArgs := func(dirfd, p int, flags uint64) {
		fc.Flags = flags
		e := EffectRead
		if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) != 0 {
			e = EffectWrite
		}
		args = []fileArg{{dirfd, p, e, flags&unix.O_NOFOLLOW != 0 || flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL}}
	}
	switch r.Syscall {
	case "open":
		openArgs(-1, 0, a[1]&0xffffffff)
	case "openat":
		openArgs(0, 1, a[2]&0xffffffff)
	case "creat":
		openArgs(-1, 0, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC)
	case "openat2":
		var b [8]byte
		if n, err := ReadMem(r.PID, uintptr(a[2]), b[:]); err != nil || n < 8 || a[3] < 8 {
			return nil, true, errors.New("openat2: unreadable open_how")
		}
		openArgs(0, 1, binary.NativeEndian.Uint64(b[:])) // open_how.flags
	case "mkdir", "mknod":
		args = []fileArg{{-1, 0, EffectCreate, true}}
	case "mkdirat", "mknodat":
		args = []fileArg{{0, 1, EffectCreate, true}}
	case "unlink", "rmdir":
		args = []fileArg{{-1, 0, EffectRemove, true}}
	case "unlinkat":
		args = []fileArg{{0, 1, EffectRemove, true}}
	case "rename":
		args = []fileArg{{-1, 0, EffectRemove, true}, {-1, 1, EffectReplace, true}}
	case "renameat", "renameat2":
		args = []fileArg{{0, 1, EffectRemove, true}, {2, 3, EffectReplace, true}}
	case "link":
		args = []fileArg{{-1, 1, EffectCreate, true}}
	case "linkat":
		args = []fileArg{{2, 3, EffectCreate, true}}
	case "symlink":
		args = []fileArg{{-1, 1, EffectCreate, true}}
	case "symlinkat":
		args = []fileArg{{1, 2, EffectCreate, true}}
	case "chmod", "chown", "truncate":
		args = []fileArg{{-1, 0, EffectWrite, false}}
	case "lchown":
		args = []fileArg{{-1, 0, EffectWrite, true}}
	case "fchmodat":
		args = []fileArg{{0, 1, EffectWrite, false}}
	case "fchmodat2":
		args = []fileArg{{0, 1, EffectWrite, a[3]&atSymlinkNofollow != 0}}
	case "fchownat":
		args = []fileArg{{0, 1, EffectWrite, a[4]&atSymlinkNofollow != 0}}
	default:
		return nil, false, nil
	}
	v, err := fi.view(r.PID)
	if err != nil {
		return nil, true, err
	}
	for _, fa := range args {
		p, err := ReadString(r.PID, uintptr(a[fa.path]), unix.PathMax)
		if err != nil {
			return nil, true, err
		}
		dirfd := unix.AT_FDCWD
		if fa.dirfd >= 0 {
			dirfd = int(int32(a[fa.dirfd]))
		}
		excl := fc.Flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL
		nd := needAll
		switch {
		case fa.effect == EffectCreate || excl:
			nd = needCreate
		case fa.effect == EffectRemove || fa.effect == EffectReplace:
			nd = needEntry
		}
		n := v.inspect(r.PID, dirfd, p, fa.nofollow, len(args) == 2, nd)
		n.Effect = fa.effect
		if fc.Flags&unix.O_CREAT != 0 && (n.Missing || excl) {
			// An O_CREAT open creates a missing name; with O_EXCL it
			// fails on an existing one (EEXIST), so it never opens one.
			n.Effect = EffectCreate
		}
		fc.Names = append(fc.Names, n)
	}
	return fc, true, nil
}

// errNoBase: a relative name whose base directory the supervisor cannot
// place in the view (a descriptor or working directory outside the
// root, or removed). Such a name is not judged: better no record than a
// wrong one.
var errNoBase = errors.New("the base directory is not reachable from the root")

// inspect looks up p, relative to dirfd of process pid, in the view;
// mounts asks for ParentMountID. Resolved is filled in only where the
// mount view may refuse (a read-only mount or a mount point, on the
// name or its parent; masks are read-only mounts): the common case, a
// name in a writable place, costs no readlink. nd says how much of the
// name itself the call's judgement needs.
func (v *view) inspect(pid, dirfd int, p string, nofollow, mounts bool, nd need) FileName {
	n := FileName{Path: p}
	if p == "" {
		n.Err = unix.ENOENT // what the kernel answers (AT_EMPTY_PATH calls act on a descriptor: not observed)
		return n
	}
	base := ""
	switch {
	case strings.HasPrefix(p, "/"):
	case dirfd == unix.AT_FDCWD:
		base = v.procPath(pid, "cwd")
	default:
		base = v.procPath(pid, "fd/"+strconv.Itoa(dirfd))
	}
	if base == "" && !strings.HasPrefix(p, "/") {
		n.Err = errNoBase
		return n
	}
	if !strings.HasPrefix(p, "/") {
		p = strings.TrimSuffix(base, "/") + "/" + p
	}
	n.Abs = path.Clean(p)
	// The parent: everything before the last element, followed.
	trimmed := strings.TrimRight(p, "/")
	dir, last := "/", ""
	if i := strings.LastIndexByte(trimmed, '/'); i >= 0 {
		dir, last = trimmed[:i+1], trimmed[i+1:]
	}
	if last == "" || last == "." || last == ".." {
		dir, last = trimmed, ""
		if dir == "" {
			dir = "/"
		}
	}
	pfd, err := v.openat(v.root, dir, unix.O_DIRECTORY)
	if err != nil {
		n.Err = err
		return n
	}
	defer unix.Close(pfd)
	n.ParentReadOnly = readOnly(pfd)
	if mounts {
		n.ParentMountID = mountID(pfd)
	}
	if last == "" {
		v.describe(&n, pfd)
		if n.ReadOnly || n.ParentReadOnly || n.MountRoot || v.resolve {
			n.Resolved = v.name(pfd)
		}
		return n
	}
	switch {
	case nd == needCreate && !n.ParentReadOnly:
		return n
	case nd == needEntry && nofollow:
		v.entry(&n, pfd, last)
		return n
	}
	var fl uint64
	if nofollow {
		fl = unix.O_NOFOLLOW
	}
	fd, err := v.openat(v.root, p, fl)
	if err != nil {
		v.notFound(&n, pfd, last, err)
		return n
	}
	defer unix.Close(fd)
	v.describe(&n, fd)
	if n.ReadOnly || n.ParentReadOnly || n.MountRoot || v.resolve {
		n.Resolved = v.name(fd)
	}
	return n
}

// need is how much inspect looks up of a name (its parent is always
// opened and judged).
type need uint8

const (
	// needAll opens the name: its type, whether it is a mount point,
	// whether its mount is read-only.
	needAll need = iota
	// needCreate: the call only creates the name (mkdir, O_CREAT|O_EXCL,
	// ...; an existing name fails with EEXIST). In a writable parent
	// nothing in the view can refuse it, so the name is not looked up
	// (Missing stays false).
	needCreate
	// needEntry: the call removes or replaces the name, never following
	// it (unlink, rmdir, rename). One statx of the entry in its parent
	// tells its type and whether it is a mount point; unless it is one,
	// its mount is its parent's.
	needEntry
)

// entry fills in n from a statx of last in the parent open at pfd,
// without following it (needEntry).
func (v *view) entry(n *FileName, pfd int, last string) {
	var sx unix.Statx_t
	if err := unix.Statx(pfd, last, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MODE, &sx); err != nil {
		v.notFound(n, pfd, last, err)
		return
	}
	n.Mode = uint32(sx.Mode)
	n.MountRoot = mountRoot(&sx)
	n.ReadOnly = n.ParentReadOnly
	if n.MountRoot {
		// Another mount: its own flags (rare: protected paths and pins).
		if fd, err := unix.Openat(pfd, last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			n.ReadOnly = readOnly(fd)
			unix.Close(fd)
		}
	}
	if n.ReadOnly || n.ParentReadOnly || n.MountRoot {
		n.Resolved = v.child(pfd, last)
	}
}

// notFound fills in n for a name last, in the parent open at pfd, that
// could not be looked up: missing (ENOENT) or unreachable (Err). Its
// resolved path is needed only where the parent's mount is read-only.
func (v *view) notFound(n *FileName, pfd int, last string, err error) {
	if n.ParentReadOnly {
		n.Resolved = v.child(pfd, last)
	}
	if err == unix.ENOENT {
		n.Missing = true
	} else {
		n.Err = err
	}
}

// mountRoot reports whether a statx result is a mount's root.
func mountRoot(sx *unix.Statx_t) bool {
	return sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// child is the view's path of name last in the directory open at pfd.
func (v *view) child(pfd int, last string) string {
	return strings.TrimSuffix(v.name(pfd), "/") + "/" + last
}

// describe fills in what fd's object is.
func (v *view) describe(n *FileName, fd int) {
	var sx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MODE, &sx) == nil {
		n.Mode = uint32(sx.Mode)
		n.MountRoot = mountRoot(&sx)
	}
	n.ReadOnly = readOnly(fd)
}

// mountID is the ID of fd's mount (0 if unknown).
func mountID(fd int) uint64 {
	var sx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &sx) != nil || sx.Mask&unix.STATX_MNT_ID == 0 {
		return 0
	}
	return sx.Mnt_id
}

// readOnly reports whether fd's mount is read-only.
func readOnly(fd int) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(fd, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// procPath is the path, in the view, of the directory /proc/TID/WHAT
// links to (the working directory, or a directory descriptor), with a
// trailing slash; "" when it is not a path under the root (a removed
// directory reads "/x (deleted)" and then fails to resolve: no record).
func (v *view) procPath(pid int, what string) string {
	s, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/" + what)
	if err != nil || !strings.HasPrefix(s, "/") {
		return ""
	}
	if s, ok := v.underRoot(s); ok {
		return strings.TrimSuffix(s, "/") + "/"
	}
	return ""
}
