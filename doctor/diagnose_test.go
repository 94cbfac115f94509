package doctor

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// readFixture parses a testdata file: a comment, then sections
// "-- NAME --". The section "probe" holds the probe's outcome as
// "key: value" lines (userns, errno, proc, landlock, seccomp, exe, and
// tun and tunerrno where /dev/net/tun did not open); every
// other section is a file of SnapshotPaths and its contents.
func readFixture(t *testing.T, path string) HostSnapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := HostSnapshot{Files: map[string]string{}}
	name, body := "", []string(nil)
	flush := func() {
		switch {
		case name == "probe":
			for _, line := range body {
				k, v, _ := strings.Cut(line, ":")
				v = strings.TrimSpace(v)
				switch k {
				case "userns":
					s.UsernsError = v
				case "errno":
					s.UsernsErrno = errnoByName(t, v)
				case "proc":
					s.ProcErrno = errnoByName(t, v)
				case "landlock":
					s.LandlockABI, _ = strconv.Atoi(v)
				case "seccomp":
					s.Seccomp = v == "yes"
				case "exe":
					s.Exe = v
				case "tun":
					s.TunError = v
				case "tunerrno":
					s.TunErrno = errnoByName(t, v)
				default:
					t.Fatalf("%s: unknown probe key %q", path, k)
				}
			}
		case name != "":
			if !slices.Contains(SnapshotPaths, name) {
				t.Fatalf("%s: %s is not one of SnapshotPaths", path, name)
			}
			s.Files[name] = strings.Join(body, "\n")
		}
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			flush()
			name, body = strings.TrimSuffix(strings.TrimPrefix(line, "-- "), " --"), nil
			continue
		}
		body = append(body, line)
	}
	flush()
	return s
}

func errnoByName(t *testing.T, name string) syscall.Errno {
	t.Helper()
	e, ok := map[string]syscall.Errno{"": 0, "EPERM": syscall.EPERM, "EACCES": syscall.EACCES, "ENOSPC": syscall.ENOSPC, "ENOSYS": syscall.ENOSYS,
		"ENOENT": syscall.ENOENT, "ENODEV": syscall.ENODEV}[name]
	if !ok {
		t.Fatalf("unknown errno %q", name)
	}
	return e
}

// diagnosisCase is what Diagnose must say of one host.
type diagnosisCase struct {
	id string
	// message: substrings of the one-line message.
	message []string
	// commands: fix commands that must be there, verbatim.
	commands []string
	// weaker: whether --weaker-nested is offered as a fix.
	weaker bool
	// evidence: substrings, each of some evidence line.
	evidence []string
	// absent: substrings of neither the message nor any evidence line.
	absent []string
}

// appArmorProfile is the profile for /usr/local/bin/sbx: its name is
// "sbx-" and the start of the path's SHA-256, and it grants userns and
// nothing else.
const appArmorProfile = `sudo tee /etc/apparmor.d/sbx-f0bc4de1395e >/dev/null <<'EOF'
abi <abi/4.0>,
include <tunables/global>

# sbx doctor --fix: user namespaces for this sbx binary, nothing else.
profile sbx-f0bc4de1395e /usr/local/bin/sbx flags=(unconfined) {
  userns,
}
EOF`

const dockerRun = "docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined IMAGE ..."

// TestDoctorFixtures diagnoses each host of testdata (the usual
// reasons sbx cannot start, and healthy hosts) and checks the one reason
// and its fixes. Every fixture must have a case here.
func TestDoctorFixtures(t *testing.T) {
	cases := map[string]diagnosisCase{
		"debian-12-vm-captured.txtar": {id: "ok", message: []string{"full mode", "Landlock ABI 7"}},
		"debian-12-healthy.txtar":     {id: "ok", message: []string{"full mode"}},
		"ubuntu-24.04-sysctl-0.txtar": {id: "ok", message: []string{"full mode"}},
		"ubuntu-24.04-apparmor-profile.txtar": {id: "ok", message: []string{"full mode"},
			evidence: []string{"apparmor_restrict_unprivileged_userns: 1, but sbx may create user namespaces"}},
		"ubuntu-24.04-apparmor-restricted.txtar": {
			id:      "apparmor-userns",
			message: []string{"AppArmor restricts unprivileged user namespaces", "kernel.apparmor_restrict_unprivileged_userns=1", "EPERM"},
			commands: []string{
				appArmorProfile,
				"sudo apparmor_parser -r /etc/apparmor.d/sbx-f0bc4de1395e",
				"sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
				"echo 'kernel.apparmor_restrict_unprivileged_userns = 0' | sudo tee -a /etc/sysctl.d/99-sbx-userns.conf >/dev/null",
				"sbx --weaker-nested [flags] -- COMMAND",
			},
			weaker:   true,
			evidence: []string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns: 1"},
		},
		"debian-12-userns-clone-0.txtar": {
			id:      "userns-clone",
			message: []string{"kernel.unprivileged_userns_clone is 0"},
			commands: []string{
				"sudo sysctl -w kernel.unprivileged_userns_clone=1",
				"echo 'kernel.unprivileged_userns_clone = 1' | sudo tee -a /etc/sysctl.d/99-sbx-userns.conf >/dev/null",
			},
			weaker: true,
		},
		"debian-12-max-user-namespaces-0.txtar": {
			id:      "max-user-namespaces",
			message: []string{"user.max_user_namespaces is 0", "ENOSPC"},
			commands: []string{
				"sudo sysctl -w user.max_user_namespaces=15000",
				"echo 'user.max_user_namespaces = 15000' | sudo tee -a /etc/sysctl.d/99-sbx-userns.conf >/dev/null",
			},
			weaker: true,
		},
		"docker-default-seccomp.txtar": {
			id:      "container-seccomp",
			message: []string{"container", "seccomp profile", "EPERM"},
			commands: []string{
				dockerRun,
				"podman run --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt unmask=ALL IMAGE ...",
				"sbx --weaker-nested [flags] -- COMMAND",
			},
			weaker: true,
			evidence: []string{"/.dockerenv exists", "Seccomp: 2", "root file system is an overlay", "docker-default (enforce)",
				// The host's AppArmor switch stands behind the filter: said, not the reason.
				"also: kernel.apparmor_restrict_unprivileged_userns is 1"},
		},
		"docker-seccomp-unconfined-masked-proc.txtar": {
			id:       "proc-masked",
			message:  []string{"fresh /proc cannot be mounted", "EPERM", "hidden by mounts over them"},
			commands: []string{dockerRun},
			weaker:   true,
			evidence: []string{"/proc/acpi", "/proc/bus"},
		},
		"debian-12-tun-0600.txtar": {
			id:       "capture-tun",
			message:  []string{"full mode", "capture is off", "/dev/net/tun (EACCES", "ignore the proxy variables get no network"},
			commands: []string{"sudo chmod 0666 /dev/net/tun", "sbx --capture off [flags] -- COMMAND"},
			evidence: []string{"open /dev/net/tun: permission denied"},
		},
		"gvisor-runsc-4.4.0.txtar": {
			id:       "gvisor",
			message:  []string{"gVisor", "Landlock", "--weaker-nested cannot run either: Landlock is unavailable"},
			commands: []string{"docker run --runtime=runc --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined IMAGE ..."},
			evidence: []string{"gVisor's fixed kernel build string"},
		},
		"gvisor-runsc-4.19-seccomp.txtar": {
			id:       "gvisor",
			message:  []string{"gVisor", "Landlock", "user namespaces (EPERM", "--weaker-nested cannot run either"},
			commands: []string{"docker run --runtime=runc --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined IMAGE ..."},
			evidence: []string{"4.19.0-gvisor"},
		},
	}
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		c, ok := cases[name]
		if !ok {
			t.Errorf("%s has no case in TestDoctorFixtures", name)
			continue
		}
		delete(cases, name)
		t.Run(name, func(t *testing.T) { checkDiagnosis(t, Diagnose(readFixture(t, f)), c) })
	}
	for name := range cases {
		t.Errorf("case %s has no fixture", name)
	}
}

func checkDiagnosis(t *testing.T, d Diagnosis, c diagnosisCase) {
	t.Helper()
	if d.ID != c.id {
		t.Fatalf("id %q, want %q: %+v", d.ID, c.id, d)
	}
	if d.Message == "" || strings.Contains(d.Message, "\n") {
		t.Errorf("the message must be one line: %q", d.Message)
	}
	for _, m := range c.message {
		if !strings.Contains(d.Message, m) {
			t.Errorf("message %q lacks %q", d.Message, m)
		}
	}
	var commands []string
	weaker := false
	for _, f := range d.Fixes {
		if f.Say == "" || strings.Contains(f.Say, "\n") {
			t.Errorf("a fix must say what it does in one line: %+v", f)
		}
		commands = append(commands, f.Commands...)
		weaker = weaker || slices.Contains(f.Commands, "sbx --weaker-nested [flags] -- COMMAND")
	}
	for _, want := range c.commands {
		if !slices.Contains(commands, want) {
			t.Errorf("no fix command\n%s\namong %q", want, commands)
		}
	}
	if weaker != c.weaker {
		t.Errorf("--weaker-nested offered: %v, want %v (%q)", weaker, c.weaker, commands)
	}
	if (c.id == "ok") != (len(d.Fixes) == 0) {
		t.Errorf("fixes %+v for %s", d.Fixes, c.id)
	}
	for _, e := range c.evidence {
		if !slices.ContainsFunc(d.Evidence, func(s string) bool { return strings.Contains(s, e) }) {
			t.Errorf("no evidence %q in %q", e, d.Evidence)
		}
	}
	for _, a := range c.absent {
		if strings.Contains(d.Message+"\n"+strings.Join(d.Evidence, "\n"), a) {
			t.Errorf("%q must not be said: %q %q", a, d.Message, d.Evidence)
		}
	}
}

// TestDoctorDiagnoseRules: the rules that no fixture shows alone — who
// the sysctls bind, the order of the reasons, the rarer reasons, and the
// commands' form (sudo only when not root, a quoted profile path).
func TestDoctorDiagnoseRules(t *testing.T) {
	const user = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t0\n"
	const root = "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t0\n"
	eperm := func(files map[string]string) HostSnapshot {
		return HostSnapshot{Files: files, UsernsError: "fork/exec /opt/sbx: operation not permitted", UsernsErrno: syscall.EPERM,
			LandlockABI: 4, Seccomp: true, Exe: "/opt/sbx"}
	}
	for _, tc := range []struct {
		name string
		s    HostSnapshot
		want diagnosisCase
	}{
		{"root is not bound by the AppArmor switch: the reason is elsewhere",
			eperm(map[string]string{pathStatus: root, pathAppArmorRestrict: "1\n"}),
			diagnosisCase{id: "userns-failed", message: []string{"EPERM"}, weaker: true,
				commands: []string{"unshare --user --map-root-user --mount --pid --fork true"}}},
		{"nor by Debian's switch",
			eperm(map[string]string{pathStatus: root, pathUsernsClone: "0\n"}),
			diagnosisCase{id: "userns-failed", weaker: true}},
		{"max_user_namespaces=0 binds root too, and root's commands need no sudo",
			HostSnapshot{Files: map[string]string{pathStatus: root, pathMaxUserNS: "0\n"}, UsernsError: "x", UsernsErrno: syscall.ENOSPC, LandlockABI: 1, Seccomp: true},
			diagnosisCase{id: "max-user-namespaces", weaker: true, commands: []string{
				"sysctl -w user.max_user_namespaces=15000",
				"echo 'user.max_user_namespaces = 15000' | tee -a /etc/sysctl.d/99-sbx-userns.conf >/dev/null"}}},
		{"the kernel's count check before Debian's and AppArmor's switches",
			eperm(map[string]string{pathStatus: user, pathMaxUserNS: "0", pathUsernsClone: "0", pathAppArmorRestrict: "1"}),
			diagnosisCase{id: "max-user-namespaces", weaker: true,
				evidence: []string{"also: kernel.unprivileged_userns_clone is 0", "also: kernel.apparmor_restrict_unprivileged_userns is 1"}}},
		{"the profile names the binary's real path, quoted where it must be",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathAppArmorRestrict: "1", pathAppArmorLabel: "unconfined\n"},
				UsernsError: "x", UsernsErrno: syscall.EACCES, Exe: "/home/a b/sbx"},
			diagnosisCase{id: "apparmor-userns", message: []string{"EACCES", "--weaker-nested cannot run either: Landlock is unavailable"},
				commands: []string{"sudo apparmor_parser -r /etc/apparmor.d/sbx-d0d1a771bea8"}}},
		{"a process under another AppArmor profile: that profile decides, not the switch",
			eperm(map[string]string{pathStatus: user, pathAppArmorRestrict: "1", pathAppArmorLabel: "snap.foo.foo (enforce)"}),
			diagnosisCase{id: "userns-failed", weaker: true}},
		{"root of a rootless container: Debian's switch binds it (its CAP_SYS_ADMIN is the container's)",
			eperm(map[string]string{pathStatus: root, pathUIDMap: "         0       1000          1\n         1     100000      65536\n", pathUsernsClone: "0"}),
			diagnosisCase{id: "userns-clone", weaker: true, commands: []string{"sysctl -w kernel.unprivileged_userns_clone=1"},
				evidence: []string{"also: sbx runs as root in a user namespace that maps only 65537 ids"}}},
		{"root of a rootless container: sbx's own full id map is refused",
			eperm(map[string]string{pathStatus: root, pathUIDMap: "0 1000 1\n1 100000 65536\n", pathContainerenv: ""}),
			diagnosisCase{id: "root-partial-idmap", message: []string{"maps only 65537 ids"}, weaker: true,
				commands: []string{"docker run --user 1000:1000 IMAGE ..."}, absent: []string{"also:"}}},
		{"root of the initial user namespace is not that",
			eperm(map[string]string{pathStatus: root, pathUIDMap: "         0          0 4294967295\n"}),
			diagnosisCase{id: "userns-failed", weaker: true}},
		{"a container without a seccomp filter",
			eperm(map[string]string{pathStatus: user, pathContainerenv: "engine=\"podman-4.9\"\n"}),
			diagnosisCase{id: "container", message: []string{"container"}, commands: []string{dockerRun}, weaker: true,
				evidence: []string{"/run/.containerenv exists (Podman)"}}},
		{"a container known by its cgroup alone",
			eperm(map[string]string{pathStatus: user, pathInitCgroup: "12:pids:/docker/0123abcd\n0::/docker/0123abcd\n"}),
			diagnosisCase{id: "container", weaker: true, evidence: []string{"/proc/1/cgroup names docker"}}},
		{"a seccomp filter outside a container",
			eperm(map[string]string{pathStatus: strings.Replace(user, "Seccomp:\t0", "Seccomp:\t2", 1)}),
			diagnosisCase{id: "seccomp-filter", message: []string{"seccomp filter"}, weaker: true}},
		{"the nesting limit",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathMaxUserNS: "15000"}, UsernsError: "x", UsernsErrno: syscall.ENOSPC, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "userns-limit", weaker: true}},
		// ENOSPC is the kernel's count, never a container's policy: signs
		// of Docker (a /.dockerenv, a seccomp filter, a docker cgroup)
		// do not outweigh it.
		{"the limit in a nested namespace under a seccomp filter with a /.dockerenv",
			HostSnapshot{Files: map[string]string{pathStatus: strings.Replace(root, "Seccomp:\t0", "Seccomp:\t2", 1), pathDockerenv: "",
				pathInitCgroup: "0::/docker/0123abcd\n", pathMaxUserNS: "2147483647", pathUIDMap: "0 0 1\n"},
				UsernsError: "x", UsernsErrno: syscall.ENOSPC, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "userns-limit", message: []string{"nested user namespace", "user.max_user_namespaces there", "ENOSPC"}, weaker: true,
				evidence: []string{"maps 1 id: a nested user namespace"}, absent: []string{"Docker", "container", "sysctl -w"}}},
		{"max_user_namespaces=0 under a seccomp filter with a /.dockerenv",
			HostSnapshot{Files: map[string]string{pathStatus: strings.Replace(user, "Seccomp:\t0", "Seccomp:\t2", 1), pathDockerenv: "", pathMaxUserNS: "0"},
				UsernsError: "x", UsernsErrno: syscall.ENOSPC, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "max-user-namespaces", weaker: true, commands: []string{"sudo sysctl -w user.max_user_namespaces=15000"}, absent: []string{"Docker"}}},
		{"the limit in a container without a filter",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathDockerenv: "", pathMaxUserNS: "15000"}, UsernsError: "x", UsernsErrno: syscall.ENOSPC, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "userns-limit", weaker: true, commands: []string{"sudo sysctl -w user.max_user_namespaces=15000"}, absent: []string{"Docker"}}},
		{"the limit, not AppArmor's switch (which answers EACCES)",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathAppArmorRestrict: "1", pathMaxUserNS: "15000"}, UsernsError: "x", UsernsErrno: syscall.ENOSPC, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "userns-limit", weaker: true}},
		{"Docker's seccomp profile answers EPERM: that is the container",
			eperm(map[string]string{pathStatus: strings.Replace(user, "Seccomp:\t0", "Seccomp:\t2", 1), pathDockerenv: ""}),
			diagnosisCase{id: "container-seccomp", weaker: true, commands: []string{dockerRun}}},
		{"no Landlock on a host whose LSM list lacks it",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathLSM: "lockdown,capability,yama,apparmor"}, Seccomp: true},
			diagnosisCase{id: "landlock-unavailable", message: []string{"both modes"},
				commands: []string{`sudo sed -i 's/^GRUB_CMDLINE_LINUX="/GRUB_CMDLINE_LINUX="lsm=landlock,lockdown,capability,yama,apparmor /' /etc/default/grub`}}},
		{"every host mounts binfmt_misc under /proc: that hides nothing",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathMountinfo: "25 24 0:23 / /proc rw - proc proc rw\n26 25 0:24 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw\n"},
				ProcErrno: syscall.EPERM, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "proc-masked", message: []string{"EPERM"}, weaker: true, absent: []string{"hidden", "binfmt_misc"}}},
		{"no seccomp",
			HostSnapshot{Files: map[string]string{pathStatus: user}, LandlockABI: 3},
			diagnosisCase{id: "seccomp-unavailable"}},
		{"the capture: a missing TUN node is made, as root without sudo",
			HostSnapshot{Files: map[string]string{pathStatus: root}, LandlockABI: 3, Seccomp: true,
				TunError: "open /dev/net/tun: no such file or directory", TunErrno: syscall.ENOENT},
			diagnosisCase{id: "capture-tun", message: []string{"full mode", "(ENOENT"},
				commands: []string{"mkdir -p /dev/net", "mknod -m 0666 /dev/net/tun c 10 200", "sbx --capture off [flags] -- COMMAND"}}},
		{"the capture: a container's device policy is the user's to change",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathDockerenv: ""}, LandlockABI: 3, Seccomp: true,
				TunError: "open /dev/net/tun: operation not permitted", TunErrno: syscall.EPERM},
			diagnosisCase{id: "capture-tun", message: []string{"(EPERM"},
				commands: []string{"docker run --device /dev/net/tun IMAGE ...", "sudo modprobe tun", "sbx --capture off [flags] -- COMMAND"}}},
		{"the capture comes after the reason sbx cannot start, said as also",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathAppArmorRestrict: "1"}, UsernsError: "x", UsernsErrno: syscall.EACCES,
				LandlockABI: 4, Seccomp: true, Exe: "/usr/local/bin/sbx",
				TunError: "open /dev/net/tun: permission denied", TunErrno: syscall.EACCES},
			diagnosisCase{id: "apparmor-userns", weaker: true, commands: []string{appArmorProfile},
				evidence: []string{"also: /dev/net/tun cannot be opened (open /dev/net/tun: permission denied): the capture (network.capture) is off"}}},
		{"a host whose TUN device opens has nothing said of it",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathAppArmorRestrict: "1"}, UsernsError: "x", UsernsErrno: syscall.EACCES,
				LandlockABI: 4, Seccomp: true, Exe: "/usr/local/bin/sbx"},
			diagnosisCase{id: "apparmor-userns", weaker: true, absent: []string{"tun", "capture"}}},
		{"/.dockerenv alone is no reason: this project's VM has one",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathDockerenv: ""}, LandlockABI: 3, Seccomp: true},
			diagnosisCase{id: "ok"}},
		{"a real kernel built on gVisor's date is not gVisor",
			HostSnapshot{Files: map[string]string{pathStatus: user, pathVersion: "Linux version 4.4.0 (me@host) (gcc 5.3) #1 SMP Sun Jan 10 15:06:54 PST 2016"}, Seccomp: true},
			diagnosisCase{id: "landlock-unavailable"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkDiagnosis(t, Diagnose(tc.s), tc.want) })
	}
	// The quoted path, whole.
	d := Diagnose(HostSnapshot{Files: map[string]string{pathStatus: user, pathAppArmorRestrict: "1"}, UsernsError: "x", Exe: "/home/a b/sbx"})
	if !strings.Contains(d.Fixes[0].Commands[0], "\nprofile sbx-d0d1a771bea8 \"/home/a b/sbx\" flags=(unconfined) {\n  userns,\n}\nEOF") {
		t.Errorf("the profile does not name the quoted path: %q", d.Fixes[0].Commands[0])
	}
}

// TestDoctorFixSteps: the causes `sbx doctor --fix` applies carry
// steps (argv and standard input) under the snapshot's Root, through sudo
// unless the snapshot was taken as root, and their printed commands are
// exactly the steps'; the AppArmor fallback (the system-wide sysctl) and
// --weaker-nested carry none, so --fix never applies them.
func TestDoctorFixSteps(t *testing.T) {
	const user = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t0\n"
	const root = "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t0\n"
	snap := func(status, path, value string) HostSnapshot {
		return HostSnapshot{Files: map[string]string{pathStatus: status, path: value}, UsernsError: "x", UsernsErrno: syscall.EPERM,
			LandlockABI: 4, Seccomp: true, Exe: "/opt/bin/sbx", Root: "/tmp/r"}
	}
	// The capture's cause: sbx starts, but this user cannot open the TUN
	// device.
	tun := func(status string, e syscall.Errno) HostSnapshot {
		return HostSnapshot{Files: map[string]string{pathStatus: status}, LandlockABI: 4, Seccomp: true, Exe: "/opt/bin/sbx", Root: "/tmp/r",
			TunError: "open /dev/net/tun: " + e.Error(), TunErrno: e}
	}
	name, profile := AppArmorProfile("/opt/bin/sbx")
	for _, tc := range []struct {
		s     HostSnapshot
		id    string
		sudo  bool
		steps []Step
	}{
		{snap(user, pathAppArmorRestrict, "1"), "apparmor-userns", true, []Step{
			{Argv: []string{"tee", "/tmp/r/etc/apparmor.d/" + name}, Stdin: profile},
			{Argv: []string{"apparmor_parser", "-r", "/tmp/r/etc/apparmor.d/" + name}}}},
		{snap(user, pathUsernsClone, "0"), "userns-clone", true, []Step{
			{Argv: []string{"sysctl", "-w", "kernel.unprivileged_userns_clone=1"}},
			{Argv: []string{"tee", "-a", "/tmp/r/etc/sysctl.d/99-sbx-userns.conf"}, Stdin: "kernel.unprivileged_userns_clone = 1\n"}}},
		{snap(root, pathMaxUserNS, "0"), "max-user-namespaces", false, []Step{
			{Argv: []string{"sysctl", "-w", "user.max_user_namespaces=15000"}},
			{Argv: []string{"tee", "-a", "/tmp/r/etc/sysctl.d/99-sbx-userns.conf"}, Stdin: "user.max_user_namespaces = 15000\n"}}},
		{tun(user, syscall.EACCES), "capture-tun", true, []Step{
			{Argv: []string{"chmod", "0666", "/tmp/r/dev/net/tun"}}}},
		{tun(root, syscall.ENOENT), "capture-tun", false, []Step{
			{Argv: []string{"mkdir", "-p", "/tmp/r/dev/net"}},
			{Argv: []string{"mknod", "-m", "0666", "/tmp/r/dev/net/tun", "c", "10", "200"}}}},
	} {
		d := Diagnose(tc.s)
		if d.ID != tc.id {
			t.Fatalf("%s: diagnosed %s", tc.id, d.ID)
		}
		f := d.Fixes[0]
		if f.Sudo != tc.sudo || !reflect.DeepEqual(f.Steps, tc.steps) {
			t.Errorf("%s: sudo %v, steps %q; want %v, %q", tc.id, f.Sudo, f.Steps, tc.sudo, tc.steps)
		}
		prefix := map[bool]string{true: "sudo ", false: ""}[tc.sudo]
		for i, st := range f.Steps {
			if i >= len(f.Commands) || f.Commands[i] != st.Command(prefix) {
				t.Errorf("%s: command %d is not its step's: %q", tc.id, i, f.Commands)
			}
		}
		for _, other := range d.Fixes[1:] {
			if len(other.Steps) > 0 {
				t.Errorf("%s: the fix %q has steps; only the first is --fix's", tc.id, other.Say)
			}
		}
	}
	want := "abi <abi/4.0>,\ninclude <tunables/global>\n\n# sbx doctor --fix: user namespaces for this sbx binary, nothing else.\n" +
		"profile sbx-c9e5afda2e61 /opt/bin/sbx flags=(unconfined) {\n  userns,\n}\n"
	if name != "sbx-c9e5afda2e61" || profile != want {
		t.Errorf("the profile grants more than userns, or names another binary:\n%s", profile)
	}
	if got := (Step{Argv: []string{"tee", "a b", "it's"}, Stdin: "one\n"}).Command("sudo "); got != `echo one | sudo tee 'a b' 'it'\''s' >/dev/null` {
		t.Errorf("quoting: %s", got)
	}
}
