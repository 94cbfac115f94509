package doctor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Diagnosis is the one reason sbx cannot run in its full mode on this host
// and what fixes it, as `sbx doctor` prints it (and --json carries it).
type Diagnosis struct {
	// ID names the reason: "ok", "gvisor", "container-seccomp",
	// "container", "max-user-namespaces", "userns-clone",
	// "apparmor-userns", "root-partial-idmap", "seccomp-filter",
	// "userns-limit", "userns-failed",
	// "proc-masked", "landlock-unavailable", "seccomp-unavailable" (or
	// "not-linux"); or "capture-tun": the full mode runs, but without the
	// capture (network.capture), as this user cannot open /dev/net/tun.
	ID string `json:"id"`
	// Message is the reason in one line.
	Message string `json:"message"`
	// Evidence is what the diagnosis rests on: the files read and what
	// they said, and the probe's errors.
	Evidence []string `json:"evidence,omitempty"`
	// Fixes are the alternatives, best first.
	Fixes []Fix `json:"fixes,omitempty"`
}

// Fix is one way out: what it does and costs, and the commands, in order
// (a command may span lines: a here-document).
type Fix struct {
	Say      string   `json:"say"`
	Commands []string `json:"commands,omitempty"`
	// Steps are Commands as `sbx doctor --fix --yes` runs them, one for
	// each command: only the fix that --fix applies has them (the first
	// fix of apparmor-userns, userns-clone, max-user-namespaces and
	// capture-tun where the device's mode or node is the cause; a
	// system-wide fallback never has).
	Steps []Step `json:"steps,omitempty"`
	// Sudo: the steps need root and the snapshot was not taken as root,
	// so they run through sudo (the commands say "sudo ").
	Sudo bool `json:"sudo,omitempty"`
}

// Step is one command of a fix: its argv, and what it reads on standard
// input (a file's contents for tee).
type Step struct {
	Argv  []string `json:"argv"`
	Stdin string   `json:"stdin,omitempty"`
}

// Command is the step as a shell command to paste: argv quoted where it
// needs it, after prefix ("sudo " or ""); one line of input is piped in
// with echo, more lines come from a here-document. tee's copy of its
// input to standard output is discarded.
func (s Step) Command(prefix string) string {
	q := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		q[i] = shellWord(a)
	}
	c := prefix + strings.Join(q, " ")
	switch {
	case s.Stdin == "":
		return c
	case !strings.Contains(strings.TrimSuffix(s.Stdin, "\n"), "\n"):
		return "echo " + shellWord(strings.TrimSuffix(s.Stdin, "\n")) + " | " + c + " >/dev/null"
	}
	return c + " >/dev/null <<'EOF'\n" + s.Stdin + "EOF"
}

// shellWord quotes a word for sh where it needs it.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-=,:@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// steps makes a fix that --fix can apply: its commands are its steps'.
func (h *host) steps(say string, st ...Step) Fix {
	f := Fix{Say: say, Steps: st, Sudo: h.sudo != ""}
	for _, x := range st {
		f.Commands = append(f.Commands, x.Command(h.sudo))
	}
	return f
}

// sysctlSteps set a sysctl now and append it to sysctlFile for every boot.
func (h *host) sysctlSteps(say, name, value string) Fix {
	return h.steps(say,
		Step{Argv: []string{"sysctl", "-w", name + "=" + value}},
		Step{Argv: []string{"tee", "-a", h.s.Root + sysctlFile}, Stdin: name + " = " + value + "\n"})
}

// HostSnapshot is everything Diagnose looks at: the files of SnapshotPaths
// as read, and what Probe's start of a process in new namespaces (and
// Landlock's and seccomp's probes) returned. It holds no live state, so a
// captured one can be diagnosed anywhere.
type HostSnapshot struct {
	// Files maps a path of SnapshotPaths to its contents; a path that
	// does not exist or cannot be read has no entry.
	Files map[string]string
	// UsernsError is how starting a process in new user, mount, pid and
	// network namespaces failed ("" when it started); UsernsErrno is its
	// errno, when it has one.
	UsernsError string
	UsernsErrno syscall.Errno
	// ProcErrno is the errno with which that process failed to mount a
	// fresh /proc (0 when it mounted one, or was not started).
	ProcErrno syscall.Errno
	// LandlockABI is the Landlock ABI version (0: none).
	LandlockABI int
	// Seccomp is whether sbx can load its seccomp filters.
	Seccomp bool
	// TunError is how opening /dev/net/tun for reading and writing, as
	// the capture (network.capture) does, failed ("" when it opened);
	// TunErrno is its errno.
	TunError string
	TunErrno syscall.Errno
	// Exe is the sbx binary's path with symlinks resolved (what an
	// AppArmor profile must name).
	Exe string
	// Root is prefixed to the paths the fixes write (/etc/…): "" on a
	// real host; tests write under a temporary directory.
	Root string
}

// The files Diagnose reads.
const (
	pathAppArmorRestrict = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	pathUsernsClone      = "/proc/sys/kernel/unprivileged_userns_clone"
	pathMaxUserNS        = "/proc/sys/user/max_user_namespaces"
	pathStatus           = "/proc/self/status"
	pathVersion          = "/proc/version"
	pathInitCgroup       = "/proc/1/cgroup"
	pathMountinfo        = "/proc/self/mountinfo"
	pathAppArmorLabel    = "/proc/self/attr/current"
	pathUIDMap           = "/proc/self/uid_map"
	pathDockerenv        = "/.dockerenv"
	pathContainerenv     = "/run/.containerenv"
	pathLSM              = "/sys/kernel/security/lsm"
)

// SnapshotPaths are the files a HostSnapshot holds.
var SnapshotPaths = []string{
	pathAppArmorRestrict, pathUsernsClone, pathMaxUserNS, pathStatus,
	pathVersion, pathInitCgroup, pathMountinfo, pathAppArmorLabel,
	pathUIDMap, pathDockerenv, pathContainerenv, pathLSM,
}

// sysctlFile is where Diagnose's fixes persist a sysctl. 99- sorts after
// the distributions' own files, so it wins at boot.
const sysctlFile = "/etc/sysctl.d/99-sbx-userns.conf"

// gvisorVersion is the build string gVisor's sentry reports as the kernel
// version in uname(2) and /proc/version, in every release so far (the
// release before it was "4.4.0", later "4.19.0-gvisor", "5.15.0-gvisor").
const gvisorVersion = "#1 SMP Sun Jan 10 15:06:54 PST 2016"

// Diagnose names the one reason sbx cannot run in its full mode on the
// host s was taken on, or "ok", with the fixes. It is pure: everything it
// knows is in s. Where several things stand in the way, the reason is the
// first one a start of sbx meets (a container's seccomp filter before the
// kernel's sysctls, those before AppArmor); the others are in Evidence, and
// `sbx doctor` run again after the fix names the next.
func Diagnose(s HostSnapshot) Diagnosis {
	h := readHost(s)
	d := h.diagnose()
	if d.ID != "ok" && d.ID != "not-linux" {
		if s.TunError != "" && d.ID != "capture-tun" {
			h.also = append(h.also, "also: "+tunDevice+" cannot be opened ("+s.TunError+"): the capture (network.capture) is off")
		}
		d.Evidence = append(d.Evidence, h.also...)
	}
	return d
}

// host is a HostSnapshot's files, parsed.
type host struct {
	s          HostSnapshot
	sudo       string // "sudo " unless the snapshot was taken as root
	root       bool   // euid 0
	mapped     uint64 // ids the user namespace maps (0: the initial one, all)
	privileged bool   // CAP_SYS_ADMIN in the initial user namespace
	seccompBPF bool   // a seccomp filter is on the process
	label      string // AppArmor label ("" without AppArmor)
	container  []string
	gvisor     string
	usernsOK   bool
	weakerOK   bool
	also       []string // other obstacles, for Evidence
}

func readHost(s HostSnapshot) *host {
	h := &host{s: s, sudo: "sudo ", usernsOK: s.UsernsError == ""}
	h.weakerOK = s.LandlockABI > 0 && s.Seccomp
	for _, line := range strings.Split(s.Files[pathStatus], "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "Uid":
			if len(f) > 1 && f[1] == "0" {
				h.sudo, h.root = "", true
			}
		case "CapEff":
			if caps, err := strconv.ParseUint(f[0], 16, 64); err == nil {
				h.privileged = caps&(1<<21) != 0 // CAP_SYS_ADMIN
			}
		case "Seccomp":
			h.seccompBPF = f[0] == "2"
		}
	}
	// The initial user namespace maps 0 0 4294967295; a nested one
	// (a rootless container) maps fewer, and its CAP_SYS_ADMIN is not the
	// one Debian's switch and AppArmor ask for.
	if m, ok := s.Files[pathUIDMap]; ok {
		var n uint64
		for _, line := range strings.Split(m, "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				c, _ := strconv.ParseUint(f[2], 10, 64)
				n += c
			}
		}
		if n < 1<<32-1 {
			h.mapped = n
			h.privileged = false
		}
	}
	if l, ok := s.Files[pathAppArmorLabel]; ok {
		h.label = strings.TrimSpace(strings.TrimRight(l, "\x00"))
	}
	h.gvisor = gvisorEvidence(s.Files[pathVersion])
	h.container = containerEvidence(s.Files)
	return h
}

// gvisorEvidence says why /proc/version is gVisor's ("" when it is not).
// A real kernel's /proc/version names who built it, "(user@host)", and
// with what compiler; gVisor's is "Linux version RELEASE" and its fixed
// build string, and newer releases end RELEASE with "-gvisor".
func gvisorEvidence(version string) string {
	v := strings.TrimSpace(version)
	f := strings.Fields(v)
	switch {
	case strings.Contains(v, gvisorVersion) && !strings.Contains(v, "("):
		return fmt.Sprintf("%s: %q (gVisor's fixed kernel build string)", pathVersion, v)
	case len(f) > 2 && strings.HasSuffix(f[2], "-gvisor"):
		return fmt.Sprintf("%s: %q (a gVisor kernel release)", pathVersion, v)
	}
	return ""
}

// containerEvidence lists what says the snapshot was taken in a container.
// None of it is proof (this project's own CI VM has a /.dockerenv), which
// is why Diagnose only uses it to explain a failure the probe saw.
func containerEvidence(files map[string]string) []string {
	var ev []string
	if _, ok := files[pathDockerenv]; ok {
		ev = append(ev, pathDockerenv+" exists (Docker)")
	}
	if _, ok := files[pathContainerenv]; ok {
		ev = append(ev, pathContainerenv+" exists (Podman)")
	}
	for _, line := range strings.Split(files[pathInitCgroup], "\n") {
		// hierarchy-ID:controllers:path
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			if w := containerWord(f[2]); w != "" {
				ev = append(ev, fmt.Sprintf("%s names %s: %q", pathInitCgroup, w, strings.TrimSpace(line)))
				break
			}
		}
	}
	for _, m := range mountinfo(files[pathMountinfo]) {
		if m.point == "/" && m.fstype == "overlay" {
			ev = append(ev, "the root file system is an overlay (a container image)")
			break
		}
	}
	return ev
}

// containerWord is the runtime a cgroup path names ("" for none).
func containerWord(path string) string {
	for _, w := range []string{"docker", "kubepods", "containerd", "libpod", "lxc", "crio"} {
		if strings.Contains(path, w) {
			return w
		}
	}
	return ""
}

// mount is one line of /proc/self/mountinfo.
type mount struct{ point, fstype string }

func mountinfo(s string) []mount {
	var ms []mount
	for _, line := range strings.Split(s, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		ms = append(ms, mount{point: unescapeMount(f[4]), fstype: g[0]})
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procOvermounts are the mount points under /proc, but for the ones every
// host has (binfmt_misc): a runtime's masks, which forbid a fresh /proc.
func procOvermounts(s string) []string {
	var ps []string
	for _, m := range mountinfo(s) {
		if strings.HasPrefix(m.point, "/proc/") && !strings.HasPrefix(m.point, "/proc/sys/fs/binfmt_misc") {
			ps = append(ps, m.point)
		}
	}
	sort.Strings(ps)
	return ps
}

func (h *host) file(path string) (string, bool) {
	v, ok := h.s.Files[path]
	return strings.TrimSpace(v), ok
}

func (h *host) diagnose() Diagnosis {
	s := h.s
	procOK := s.ProcErrno == 0
	if h.usernsOK && procOK && h.weakerOK {
		if s.TunError != "" {
			return h.tunDiagnosis()
		}
		d := Diagnosis{ID: "ok", Message: fmt.Sprintf("sbx runs here in its full mode: user namespaces, a fresh /proc, Landlock ABI %d, seccomp", s.LandlockABI)}
		if v, _ := h.file(pathAppArmorRestrict); v == "1" {
			d.Evidence = append(d.Evidence, pathAppArmorRestrict+": 1, but sbx may create user namespaces (an AppArmor profile allows it, or sbx runs as root)")
		}
		return d
	}
	if h.gvisor != "" {
		return h.gvisorDiagnosis()
	}
	if !h.usernsOK {
		h.noteSysctls()
		// ENOSPC is the kernel's own count: user.max_user_namespaces (of
		// this namespace or one above it) or the nesting depth of 32. No
		// seccomp profile or LSM answers it (Docker's answers EPERM), so
		// it decides before any sign of a container, which is no proof
		// (a VM with a /.dockerenv, a sandbox nested in one).
		limit := s.UsernsErrno == syscall.ENOSPC
		switch {
		case !limit && len(h.container) > 0 && h.seccompBPF:
			return h.containerDiagnosis("container-seccomp")
		case h.sysctl(pathMaxUserNS) == "0":
			h.drop("user.max_user_namespaces")
			return h.withWeaker(Diagnosis{
				ID:       "max-user-namespaces",
				Message:  "user.max_user_namespaces is 0: the kernel lets nobody create a user namespace" + h.errnoNote(),
				Evidence: []string{pathMaxUserNS + ": 0", h.probeEvidence()},
				Fixes:    []Fix{h.sysctlSteps("allow user namespaces (now, and at every boot)", "user.max_user_namespaces", "15000")},
			})
		case limit:
			// Not Debian's switch nor AppArmor (EPERM, EACCES).
			return h.limitDiagnosis()
		case !h.privileged && h.sysctl(pathUsernsClone) == "0":
			h.drop("kernel.unprivileged_userns_clone")
			return h.withWeaker(Diagnosis{
				ID:       "userns-clone",
				Message:  "kernel.unprivileged_userns_clone is 0 (Debian's switch): only root may create user namespaces" + h.errnoNote(),
				Evidence: []string{pathUsernsClone + ": 0", h.probeEvidence()},
				Fixes:    []Fix{h.sysctlSteps("let unprivileged users create user namespaces (now, and at every boot)", "kernel.unprivileged_userns_clone", "1")},
			})
		case !h.privileged && h.sysctl(pathAppArmorRestrict) == "1" && !h.confinedByProfile():
			h.drop("kernel.apparmor_restrict_unprivileged_userns")
			return h.appArmorDiagnosis()
		case h.root && h.mapped > 0:
			h.drop("sbx runs as root")
			return h.withWeaker(Diagnosis{
				ID: "root-partial-idmap",
				Message: fmt.Sprintf("sbx runs as root in a user namespace that maps only %s (a rootless container), and as root it maps every id into its sandbox, which the kernel refuses", ids(h.mapped)) +
					h.errnoNote(),
				Evidence: []string{pathUIDMap + ": " + strings.Join(strings.Fields(h.s.Files[pathUIDMap]), " "), h.probeEvidence()},
				Fixes: []Fix{{
					Say:      "run sbx as an ordinary user in the container",
					Commands: []string{"docker run --user 1000:1000 IMAGE ...", "setpriv --reuid=1000 --regid=1000 --init-groups sbx [flags] -- COMMAND"},
				}},
			})
		case len(h.container) > 0:
			return h.containerDiagnosis("container")
		case h.seccompBPF:
			return h.withWeaker(Diagnosis{
				ID:       "seccomp-filter",
				Message:  "a seccomp filter on this process refuses new user namespaces" + h.errnoNote() + " (a systemd unit's RestrictNamespaces= or SystemCallFilter=, or another sandbox sbx runs inside)",
				Evidence: []string{pathStatus + ": Seccomp: 2 (a filter is on)", h.probeEvidence()},
				Fixes: []Fix{{
					Say: "run sbx outside that sandbox; in a systemd unit: RestrictNamespaces=no and a SystemCallFilter= that allows unshare, clone, mount, umount2, pivot_root and setns",
				}},
			})
		}
		return h.withWeaker(Diagnosis{
			ID:       "userns-failed",
			Message:  "no user namespace can be created here, for a reason sbx cannot see" + h.errnoNote(),
			Evidence: []string{h.probeEvidence()},
			Fixes: []Fix{{
				Say:      "reproduce it outside sbx, then look for the policy (LSM, seccomp, sysctl) that refuses it",
				Commands: []string{"unshare --user --map-root-user --mount --pid --fork true"},
			}},
		})
	}
	if !procOK {
		return h.procDiagnosis()
	}
	if s.LandlockABI == 0 {
		lsm, ok := h.file(pathLSM)
		ev := []string{"landlock_create_ruleset: no ABI version (kernel older than 5.13, or Landlock not enabled)"}
		fix := Fix{Say: "a kernel of 5.13 or later with CONFIG_SECURITY_LANDLOCK=y; where it is built in but not enabled, add landlock to the lsm= boot parameter and reboot"}
		if ok {
			ev = append(ev, pathLSM+": "+lsm)
			if !strings.Contains(","+lsm+",", ",landlock,") {
				fix.Commands = []string{
					h.sudo + "sed -i 's/^GRUB_CMDLINE_LINUX=\"/GRUB_CMDLINE_LINUX=\"lsm=landlock," + lsm + " /' /etc/default/grub",
					h.sudo + "update-grub",
					h.sudo + "reboot",
				}
			}
		}
		return Diagnosis{
			ID:       "landlock-unavailable",
			Message:  "Landlock is unavailable, and sbx needs it in both modes (the full one and --weaker-nested)",
			Evidence: ev,
			Fixes:    []Fix{fix},
		}
	}
	return Diagnosis{
		ID:      "seccomp-unavailable",
		Message: "seccomp filters cannot be loaded, and sbx needs them in both modes",
		Fixes:   []Fix{{Say: "a kernel with CONFIG_SECCOMP_FILTER=y"}},
	}
}

// limitDiagnosis: the kernel refused the namespace for its count
// (ENOSPC) while this namespace's user.max_user_namespaces is not 0: the
// limit of a namespace above this one, the count reached, or a nesting
// deeper than 32. In a nested user namespace, that is where to look.
func (h *host) limitDiagnosis() Diagnosis {
	msg := "the user-namespace limit is reached (user.max_user_namespaces, or a nesting deeper than 32)"
	ev := []string{pathMaxUserNS + ": " + h.sysctl(pathMaxUserNS)}
	if h.mapped > 0 {
		msg = "this is a nested user namespace, and the kernel refuses another in it: the user-namespace limit of a namespace above it (user.max_user_namespaces there), or a nesting deeper than 32"
		ev = append(ev, pathUIDMap+": "+strings.Join(strings.Fields(h.s.Files[pathUIDMap]), " ")+" (maps "+ids(h.mapped)+": a nested user namespace)")
	}
	fix := Fix{
		Say: "raise the limit (this cannot lift the nesting limit)",
		Commands: []string{
			h.sudo + "sysctl -w user.max_user_namespaces=15000",
			"echo 'user.max_user_namespaces = 15000' | " + h.sudo + "tee -a " + sysctlFile + " >/dev/null",
		},
	}
	if h.mapped > 0 {
		// This namespace's own value is not the one that refused (a new
		// user namespace starts unlimited): the commands would change
		// nothing here.
		fix = Fix{Say: "raise user.max_user_namespaces where it is lowered: in the namespace that started this one (as bwrap --disable-userns and other sandboxes lower it), or on the host; a nesting deeper than 32 cannot be raised"}
	}
	return h.withWeaker(Diagnosis{
		ID:       "userns-limit",
		Message:  msg + h.errnoNote(),
		Evidence: append(ev, h.probeEvidence()),
		Fixes:    []Fix{fix},
	})
}

// tunDevice is the TUN driver's clone device, which the capture opens.
const tunDevice = "/dev/net/tun"

// tunDiagnosis: the full mode runs, but the capture cannot, as this user
// cannot open the TUN device. Opening it gives nothing by itself: making
// or configuring a device (TUNSETIFF) needs CAP_NET_ADMIN over the network
// namespace, which a user has only in namespaces of their own, which is
// why distributions' udev makes it 0666 (systemd's 50-udev-default.rules,
// as on Debian and Ubuntu) and only some containers and minimal images
// leave it 0600. --fix applies the mode (EACCES) or makes the node
// (ENOENT); a container's device policy (EPERM) or a kernel without the
// driver is the user's to change.
func (h *host) tunDiagnosis() Diagnosis {
	s := h.s
	why := s.TunError
	if s.TunErrno != 0 {
		why = errnoName(s.TunErrno)
	}
	d := Diagnosis{
		ID: "capture-tun",
		Message: fmt.Sprintf("sbx runs here in its full mode, but the capture is off: this user cannot open %s (%s), so with --allow-domain clients that ignore the proxy variables get no network",
			tunDevice, why),
		Evidence: []string{s.TunError + " (read-write, as this user)"},
	}
	dev := s.Root + tunDevice
	switch s.TunErrno {
	case syscall.EACCES:
		d.Fixes = append(d.Fixes, h.steps("let every user open the TUN device: mode 0666, the mode Debian's and Ubuntu's udev give it (a user still makes devices only in network namespaces of their own)",
			Step{Argv: []string{"chmod", "0666", dev}}))
	case syscall.ENOENT:
		d.Fixes = append(d.Fixes, h.steps("make the TUN device node (character 10,200) with mode 0666, as udev makes it",
			Step{Argv: []string{"mkdir", "-p", s.Root + "/dev/net"}},
			Step{Argv: []string{"mknod", "-m", "0666", dev, "c", "10", "200"}}))
	default:
		d.Fixes = append(d.Fixes, Fix{
			Say:      "give the container the device, or load the TUN driver on the host (a container's device policy answers EPERM; a kernel without the driver ENODEV)",
			Commands: []string{"docker run --device /dev/net/tun IMAGE ...", h.sudo + "modprobe tun"},
		})
	}
	d.Fixes = append(d.Fixes, Fix{
		Say:      "or, changing nothing: run without the capture (clients that ignore the proxy variables then get no network; --capture off says you know)",
		Commands: []string{"sbx --capture off [flags] -- COMMAND"},
	})
	return d
}

// sysctl is a sysctl file's value ("" when absent).
func (h *host) sysctl(path string) string {
	v, _ := h.file(path)
	return v
}

// noteSysctls records every sysctl that refuses this process a user
// namespace; the diagnosis drops the one it names.
func (h *host) noteSysctls() {
	if h.sysctl(pathMaxUserNS) == "0" {
		h.also = append(h.also, "also: user.max_user_namespaces is 0")
	}
	if !h.privileged && h.sysctl(pathUsernsClone) == "0" {
		h.also = append(h.also, "also: kernel.unprivileged_userns_clone is 0")
	}
	if !h.privileged && h.sysctl(pathAppArmorRestrict) == "1" {
		h.also = append(h.also, "also: kernel.apparmor_restrict_unprivileged_userns is 1")
	}
	if h.root && h.mapped > 0 {
		h.also = append(h.also, fmt.Sprintf("also: sbx runs as root in a user namespace that maps only %s", ids(h.mapped)))
	}
}

func (h *host) drop(name string) {
	for i, a := range h.also {
		if strings.Contains(a, name+" ") {
			h.also = append(h.also[:i], h.also[i+1:]...)
			return
		}
	}
}

// confinedByProfile: the process runs under an AppArmor profile (not
// "unconfined"), which decides about user namespaces itself.
func (h *host) confinedByProfile() bool {
	return h.label != "" && !strings.HasPrefix(h.label, "unconfined")
}

func (h *host) errnoNote() string {
	if h.s.UsernsErrno != 0 {
		return fmt.Sprintf(" (%s)", errnoName(h.s.UsernsErrno))
	}
	return ""
}

func (h *host) probeEvidence() string {
	if h.s.UsernsError == "" {
		return "a process in new user, mount, pid and network namespaces started"
	}
	return "starting a process in new user, mount, pid and network namespaces: " + h.s.UsernsError
}

// withWeaker adds --weaker-nested as the last fix where it can run, and
// says so where it cannot.
func (h *host) withWeaker(d Diagnosis) Diagnosis {
	if h.weakerOK {
		d.Fixes = append(d.Fixes, Fix{
			Say:      "or, changing nothing: Landlock + seccomp only (no private /tmp, the host's processes visible, protected names inside writable places not enforced)",
			Commands: []string{"sbx --weaker-nested [flags] -- COMMAND"},
		})
		return d
	}
	why := "Landlock is unavailable"
	if h.s.LandlockABI > 0 {
		why = "seccomp filters cannot be loaded"
	}
	d.Message += "; --weaker-nested cannot run either: " + why
	return d
}

// AppArmorProfile is the profile `sbx doctor --fix` writes for the sbx
// binary at exe (its real path): its name and the file it goes into under
// /etc/apparmor.d, both "sbx-" and the first 12 hex digits of the path's
// SHA-256 (one profile for each installed binary), and the text. The
// profile grants the binary user namespaces and nothing else: unconfined,
// as the binary was without it, plus the userns rule that
// kernel.apparmor_restrict_unprivileged_userns asks for (as Ubuntu's own
// profile for bwrap does).
func AppArmorProfile(exe string) (name, text string) {
	sum := sha256.Sum256([]byte(exe))
	name = "sbx-" + hex.EncodeToString(sum[:])[:12]
	if strings.IndexFunc(exe, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._+-", r))
	}) >= 0 {
		exe = strconv.Quote(exe)
	}
	return name, "abi <abi/4.0>,\ninclude <tunables/global>\n\n# sbx doctor --fix: user namespaces for this sbx binary, nothing else.\nprofile " + name + " " + exe + " flags=(unconfined) {\n  userns,\n}\n"
}

func (h *host) appArmorDiagnosis() Diagnosis {
	exe := h.s.Exe
	if exe == "" {
		exe = "/usr/local/bin/sbx"
	}
	name, profile := AppArmorProfile(exe)
	file := h.s.Root + "/etc/apparmor.d/" + name
	return h.withWeaker(Diagnosis{
		ID:       "apparmor-userns",
		Message:  "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu's default since 23.10) and no profile allows them to sbx" + h.errnoNote(),
		Evidence: []string{pathAppArmorRestrict + ": 1", h.probeEvidence()},
		Fixes: []Fix{
			h.steps("an AppArmor profile that allows user namespaces to this sbx binary only, "+exe+" (update it if the binary moves)",
				Step{Argv: []string{"tee", file}, Stdin: profile},
				Step{Argv: []string{"apparmor_parser", "-r", file}}),
			{
				Say: "or lift the restriction system-wide (weaker: every program may then create user namespaces)",
				Commands: []string{
					h.sudo + "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
					"echo 'kernel.apparmor_restrict_unprivileged_userns = 0' | " + h.sudo + "tee -a " + sysctlFile + " >/dev/null",
				},
			},
		},
	})
}

// dockerFixes are the container options that let sbx's full mode run:
// Docker's default seccomp profile refuses unshare, clone of namespaces,
// mount and pivot_root without CAP_SYS_ADMIN, its AppArmor profile
// (docker-default) refuses mount, and its masked /proc paths refuse a
// fresh /proc.
func dockerFixes() []Fix {
	return []Fix{
		{
			Say: "start the container without Docker's seccomp and AppArmor profiles and /proc masks (or Podman's)",
			Commands: []string{
				"docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined IMAGE ...",
				"podman run --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt unmask=ALL IMAGE ...",
			},
		},
		{
			Say: "or keep a seccomp profile: Docker's default with clone, clone3, unshare, mount, umount2, pivot_root and setns allowed without its CAP_SYS_ADMIN condition",
			Commands: []string{
				"docker run --security-opt seccomp=/path/to/sbx-seccomp.json --security-opt apparmor=unconfined --security-opt systempaths=unconfined IMAGE ...",
			},
		},
	}
}

func (h *host) containerDiagnosis(id string) Diagnosis {
	ev := append([]string{}, h.container...)
	msg := "running in a container whose policy refuses new user namespaces"
	if id == "container-seccomp" {
		msg = "running in a container whose seccomp profile (Docker's default refuses unshare and clone of namespaces without CAP_SYS_ADMIN) refuses new user namespaces"
		ev = append(ev, pathStatus+": Seccomp: 2 (a filter is on)")
	}
	if h.label != "" {
		ev = append(ev, pathAppArmorLabel+": "+h.label)
	}
	ev = append(ev, h.probeEvidence())
	return h.withWeaker(Diagnosis{ID: id, Message: msg + h.errnoNote(), Evidence: ev, Fixes: dockerFixes()})
}

func (h *host) procDiagnosis() Diagnosis {
	masks := procOvermounts(h.s.Files[pathMountinfo])
	msg := fmt.Sprintf("a fresh /proc cannot be mounted (%s), and every full-mode run mounts one", errnoName(h.s.ProcErrno))
	ev := []string{}
	if len(masks) > 0 {
		msg += ": parts of /proc are hidden by mounts over them, as container runtimes do"
		if len(masks) > 6 {
			masks = append(masks[:6], fmt.Sprintf("and %d more", len(masks)-6))
		}
		ev = append(ev, "mounted over: "+strings.Join(masks, ", "))
	} else if h.label != "" {
		msg += fmt.Sprintf(": the AppArmor profile %q may refuse mount", h.label)
	}
	ev = append(ev, h.container...)
	return h.withWeaker(Diagnosis{ID: "proc-masked", Message: msg, Evidence: ev, Fixes: dockerFixes()[:1]})
}

func (h *host) gvisorDiagnosis() Diagnosis {
	var missing []string
	if h.s.LandlockABI == 0 {
		missing = append(missing, "Landlock (gVisor implements none)")
	}
	if !h.usernsOK {
		missing = append(missing, "user namespaces"+h.errnoNote())
	} else if h.s.ProcErrno != 0 {
		missing = append(missing, "a fresh /proc ("+errnoName(h.s.ProcErrno)+")")
	}
	if !h.s.Seccomp {
		missing = append(missing, "seccomp filters")
	}
	d := Diagnosis{
		ID:       "gvisor",
		Message:  "running under gVisor (runsc), whose kernel lacks what sbx needs: " + strings.Join(missing, ", "),
		Evidence: []string{h.gvisor, h.probeEvidence(), fmt.Sprintf("Landlock ABI: %d", h.s.LandlockABI)},
		Fixes: []Fix{
			{
				Say:      "run sbx where the kernel is Linux's: on the host, in a VM, or in a container with the runc runtime",
				Commands: []string{"docker run --runtime=runc --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined IMAGE ..."},
			},
			{Say: "or rely on gVisor alone: it confines the whole container from the host, but not one command from the rest of the container"},
		},
	}
	return h.withWeaker(d)
}

func ids(n uint64) string {
	if n == 1 {
		return "1 id"
	}
	return fmt.Sprintf("%d ids", n)
}

// errnoName is "EPERM: operation not permitted".
func errnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{
		syscall.EPERM: "EPERM", syscall.EACCES: "EACCES", syscall.ENOSPC: "ENOSPC",
		syscall.EINVAL: "EINVAL", syscall.ENOSYS: "ENOSYS", syscall.ENOENT: "ENOENT",
		syscall.ENODEV: "ENODEV", syscall.ENXIO: "ENXIO",
	}
	if n, ok := names[e]; ok {
		return n + ": " + e.Error()
	}
	return fmt.Sprintf("errno %d: %s", int(e), e.Error())
}
