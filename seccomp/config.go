package seccomp

// Config is what the filter depends on. The zero value is the strictest.
type Config struct {
	// AllowUnixSockets lets the command create AF_UNIX sockets (the mount
	// view and Landlock still decide which ones it can reach).
	AllowUnixSockets bool `json:"allowUnixSockets"`
	// AllowDatagram lets the command create SOCK_DGRAM inet sockets. In the
	// full sandbox the network namespace has only loopback, so this is on;
	// the weaker mode has the host's network and turns it off.
	AllowDatagram bool `json:"allowDatagram"`
	// Notify turns every EPERM rule into a user notification
	// (SECCOMP_RET_USER_NOTIF), so that a supervisor holding the listener
	// (LoadThreadListener, Listener) can record the denial and answer EPERM
	// itself. clone3 keeps its plain ENOSYS; the foreign-architecture kill
	// and the x32 guard are unchanged. Without a listener, or once the
	// listener is closed, notified calls fail with ENOSYS.
	//
	// Notify also notifies, whatever their arguments, the calls other
	// than an open that put a new entry in a directory: mkdir, mknod,
	// rename, link and symlink in all their forms. The supervisor answers
	// Continue (the kernel decides) and notes where the entry was made,
	// for the after-run check: what the command left deep in a writable
	// tree is found from these notes, not by walking the tree.
	Notify bool `json:"notify"`
	// UnixConnect sends every connect(2) to user notification, so that the
	// supervisor decides which pathname Unix sockets the command reaches
	// (UnixAllow.Connect), and lets the command create AF_UNIX SOCK_STREAM
	// and SOCK_SEQPACKET sockets. Every other AF_UNIX type (SOCK_DGRAM, and
	// SOCK_RAW, which the kernel turns into SOCK_DGRAM) stays refused for
	// socket(2) and socketpair(2): a datagram socket reaches any socket path
	// with sendto(2), without connect(2). It excludes AllowUnixSockets.
	UnixConnect bool `json:"unixConnect"`
	// ObserveWrites sends every file-system call with write intent to
	// user notification (Notify is required): open, openat and creat
	// with O_WRONLY, O_RDWR, O_CREAT or O_TRUNC; openat2 (its flags are
	// in memory the filter cannot read); mkdir, mknod, unlink, rmdir,
	// rename, link, symlink, chmod, chown and truncate in all their
	// forms. The supervisor looks at what the call names and answers
	// Continue: the kernel decides, the observer only reports (see
	// FileInspector). Each notified call costs a round trip through the
	// supervisor.
	ObserveWrites bool `json:"observeWrites"`
	// ObserveReads sends every open, openat, openat2 and creat to user
	// notification (Notify is required), whatever its flags.
	ObserveReads bool `json:"observeReads"`
	// ObserveNet sends the calls that name a network destination to user
	// notification (Notify is required): every connect(2), and sendto(2)
	// with a destination address (its fifth argument not NULL; a plain
	// send(2) on a connected socket is not notified). sendmsg(2) and
	// sendmmsg(2) are not notified (their destination is in memory the
	// filter cannot read, and they carry descriptors between processes).
	// The supervisor looks at the destination and answers Continue: the
	// kernel decides, the observer only reports (see InspectNet). Meant
	// for a network namespace with loopback alone, where every other
	// destination is unreachable.
	ObserveNet bool `json:"observeNet"`
}

// createdEntries are the calls, other than an open, that put a new entry
// in a directory. With Notify they are notified whatever their
// arguments (unless ObserveWrites notifies them already), so that the
// supervisor learns where the command made directories, special files
// and links, and checks those places after the run (Config.Notify).
var createdEntries = []string{
	"mkdir", "mkdirat", "mknod", "mknodat", "rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat",
}

// Program is a compiled classic-BPF filter, as the kernel reads it
// (struct sock_filter, 8 bytes an instruction, native byte order).
type Program []byte
