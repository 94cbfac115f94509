//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sh/sbx/doctor"
)

// fixHost is a fake host for `sbx doctor --fix`: a PATH whose sudo,
// sysctl, apparmor_parser, chmod and mknod only log their argv (sudo then runs the rest,
// without -n, from the same PATH; tee is the real one), a fake sbx binary
// whose `doctor --json` says ok once a fix has run (or never, or always
// after), and a root directory the fixes write under instead of /.
type fixHost struct {
	dir, root, exe, log string
	env                 []string
}

// newFixHost makes the fakes. sudo is "ok" (runs anything) or "password"
// (refuses, as sudo -n does when it would ask); parser is "ok" or "fail";
// after is the diagnosis id the fresh sbx reports once a fix ran ("ok", or
// the cause, as when the fix did not help).
func newFixHost(t *testing.T, sudo, parser, after string) *fixHost {
	t.Helper()
	d := t.TempDir()
	h := &fixHost{dir: d, root: filepath.Join(d, "root"), exe: filepath.Join(d, "opt", "sbx"), log: filepath.Join(d, "log")}
	bin := filepath.Join(d, "bin")
	for _, p := range []string{bin, filepath.Dir(h.exe), filepath.Join(h.root, "etc", "apparmor.d"), filepath.Join(h.root, "etc", "sysctl.d")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logLine := `printf '%s\n' "$(basename "$0") $*" >>'` + h.log + `'` + "\n"
	marker := filepath.Join(d, "fixed")
	scripts := map[string]string{
		"sysctl":          logLine + "touch '" + marker + "'\n",
		"chmod":           logLine + "touch '" + marker + "'\n",
		"mknod":           logLine + "touch '" + marker + "'\n",
		"apparmor_parser": logLine + map[string]string{"ok": "touch '" + marker + "'\n", "fail": "echo 'apparmor_parser: Unable to replace \"sbx\".  Permission denied; attempted to load a profile while confined?' >&2\nexit 1\n"}[parser],
		"sudo": logLine + map[string]string{
			"ok":       "[ \"$1\" = -n ] && shift\nexec \"$@\"\n",
			"password": "echo 'sudo: a password is required' >&2\nexit 1\n",
		}[sudo],
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake := "#!/bin/sh\n" + logLine +
		"if [ -e '" + marker + "' ]; then id=" + after + "; else id=before; fi\n" +
		`printf '{"mode": "x", "diagnosis": {"id": "%s", "message": "the fake says %s"}}\n' "$id" "$id"` + "\n"
	if err := os.WriteFile(h.exe, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	h.env = []string{"PATH=" + bin + ":/usr/bin:/bin", "LC_ALL=C"}
	return h
}

// diagnose is what sbx would diagnose on this host: the sysctl file path
// holds value, and the process is root or a user.
func (h *fixHost) diagnose(asRoot bool, path, value string) doctor.Diagnosis {
	status := "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t0\n"
	if asRoot {
		status = "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t0\n"
	}
	return doctor.Diagnose(doctor.HostSnapshot{
		Files:       map[string]string{"/proc/self/status": status, path: value, "/proc/self/attr/current": "unconfined\n"},
		UsernsError: "fork/exec " + h.exe + ": operation not permitted", UsernsErrno: syscall.EPERM,
		LandlockABI: 4, Seccomp: true, Exe: h.exe, Root: h.root,
	})
}

func (h *fixHost) fix(t *testing.T, d doctor.Diagnosis, yes bool) (int, string, string) {
	t.Helper()
	var so, se bytes.Buffer
	code := doctorFix(d, fixer{exe: h.exe, env: h.env, yes: yes, stdout: &so, stderr: &se})
	t.Logf("doctor --fix (yes %v): exit %d\nstdout:\n%s\nstderr:\n%s", yes, code, so.String(), se.String())
	if se.Len() > 0 && strings.Count(se.String(), "\n") != 1 {
		t.Errorf("stderr is not one line: %q", se.String())
	}
	return code, so.String(), se.String()
}

// logged is the fakes' log: one "NAME ARGS" line per call, in order.
func (h *fixHost) logged(t *testing.T) []string {
	b, err := os.ReadFile(h.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (h *fixHost) wantLog(t *testing.T, want ...string) {
	t.Helper()
	got := h.logged(t)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func (h *fixHost) wantFile(t *testing.T, rel, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.root, rel))
	if err != nil || string(b) != want {
		t.Errorf("%s: %v\n%s\nwant:\n%s", rel, err, b, want)
	}
	// Nothing else was written under the root.
	_ = filepath.Walk(h.root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && p != filepath.Join(h.root, rel) {
			t.Errorf("also written: %s", p)
		}
		return nil
	})
}

const (
	aaRestrict   = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	usernsClone  = "/proc/sys/kernel/unprivileged_userns_clone"
	maxUserNS    = "/proc/sys/user/max_user_namespaces"
	sysctlConf   = "etc/sysctl.d/99-sbx-userns.conf"
	profileDirRe = "etc/apparmor.d/"
)

// TestDoctorFixAppArmor: for apparmor-userns, --fix --yes as a user with
// passwordless sudo writes a profile for this binary's real path that
// grants userns and nothing else, loads it with apparmor_parser -r, both
// through sudo -n, then starts the binary afresh to check; the
// system-wide sysctl is never run. As root, no sudo. Without --yes,
// nothing runs and the commands are printed.
func TestDoctorFixAppArmor(t *testing.T) {
	profileText := func(h *fixHost) (string, string) {
		name, _ := doctor.AppArmorProfile(h.exe)
		return name, "abi <abi/4.0>,\ninclude <tunables/global>\n\n# sbx doctor --fix: user namespaces for this sbx binary, nothing else.\n" +
			"profile " + name + " " + h.exe + " flags=(unconfined) {\n  userns,\n}\n"
	}
	t.Run("user with sudo -n", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "ok")
		name, text := profileText(h)
		file := filepath.Join(h.root, profileDirRe, name)
		code, out, _ := h.fix(t, h.diagnose(false, aaRestrict, "1"), true)
		if code != 0 || !strings.Contains(out, "fixed:") {
			t.Errorf("exit %d, want 0 and fixed:", code)
		}
		h.wantLog(t,
			"sudo -n true",
			"sudo -n tee "+file,
			"sudo -n apparmor_parser -r "+file,
			"apparmor_parser -r "+file,
			"sbx doctor --json")
		h.wantFile(t, profileDirRe+name, text)
		for _, line := range []string{"run:              sudo -n tee " + file, "run:              sudo -n apparmor_parser -r " + file} {
			if !strings.Contains(out, "\n"+line+"\n") {
				t.Errorf("stdout lacks %q", line)
			}
		}
	})
	t.Run("root", func(t *testing.T) {
		h := newFixHost(t, "password", "ok", "ok")
		name, text := profileText(h)
		file := filepath.Join(h.root, profileDirRe, name)
		if code, _, errOut := h.fix(t, h.diagnose(false, aaRestrict, "1"), true); code != 1 ||
			!strings.Contains(errOut, "the fix needs root, and sudo does not run without a password here (sudo -n true: exit status 1: sudo: a password is required)") {
			t.Errorf("a user without passwordless sudo: exit %d, want 1 and why", code)
		}
		h.wantLog(t, "sudo -n true")
		// apparmor-userns never binds root, so the root case is built by
		// hand: the same fix, without sudo.
		d := h.diagnose(false, aaRestrict, "1")
		d.Fixes[0].Sudo = false
		if code, _, _ := h.fix(t, d, true); code != 0 {
			t.Errorf("as root: exit %d, want 0", code)
		}
		h.wantLog(t, "sudo -n true", "apparmor_parser -r "+file, "sbx doctor --json")
		h.wantFile(t, profileDirRe+name, text)
	})
	t.Run("printed and not run", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "ok")
		name, text := profileText(h)
		file := filepath.Join(h.root, profileDirRe, name)
		code, out, _ := h.fix(t, h.diagnose(false, aaRestrict, "1"), false)
		if code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		h.wantLog(t)
		for _, want := range []string{
			"\nsudo tee " + file + " >/dev/null <<'EOF'\n" + text + "EOF\n",
			"\nsudo apparmor_parser -r " + file + "\n",
			"\nnot applied:      or lift the restriction system-wide",
			"\nsudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n",
			"\nto apply:         sbx doctor --fix --yes",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q", want)
			}
		}
	})
	t.Run("apparmor_parser fails", func(t *testing.T) {
		h := newFixHost(t, "ok", "fail", "ok")
		name, _ := profileText(h)
		file := filepath.Join(h.root, profileDirRe, name)
		code, _, errOut := h.fix(t, h.diagnose(false, aaRestrict, "1"), true)
		if code != 1 || !strings.Contains(errOut, "sbx: doctor --fix --yes: apparmor_parser failed: exit status 1: apparmor_parser: Unable to replace") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		h.wantLog(t, "sudo -n true", "sudo -n tee "+file, "sudo -n apparmor_parser -r "+file, "apparmor_parser -r "+file)
	})
	t.Run("the profile does not help", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "apparmor-userns")
		code, out, errOut := h.fix(t, h.diagnose(false, aaRestrict, "1"), true)
		if code != 1 || !strings.Contains(errOut, "still cannot start its sandbox: apparmor-userns") ||
			!strings.Contains(out, "\nsudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n") {
			t.Errorf("exit %d, want 1, the reason, and the sysctl offered (not run)", code)
		}
		for _, l := range h.logged(t) {
			if strings.HasPrefix(l, "sysctl") || strings.Contains(l, "sudo -n sysctl") {
				t.Errorf("the system-wide sysctl ran: %s", l)
			}
		}
	})
}

// TestDoctorFixSysctls: userns-clone and max-user-namespaces get their
// sysctl, now (sysctl -w) and at every boot (appended to
// /etc/sysctl.d/99-sbx-userns.conf), as a user through sudo -n and as
// root without it.
func TestDoctorFixSysctls(t *testing.T) {
	for _, tc := range []struct {
		name, path, value, setting string
		root                       bool
	}{
		{"userns-clone", usernsClone, "0", "kernel.unprivileged_userns_clone=1", false},
		{"userns-clone as root in a rootless container", usernsClone, "0", "kernel.unprivileged_userns_clone=1", true},
		{"max-user-namespaces", maxUserNS, "0", "user.max_user_namespaces=15000", false},
		{"max-user-namespaces as root", maxUserNS, "0", "user.max_user_namespaces=15000", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFixHost(t, "ok", "ok", "ok")
			d := h.diagnose(tc.root, tc.path, tc.value)
			if tc.root && tc.path == usernsClone {
				// Root binds Debian's switch only in a rootless container.
				d = doctor.Diagnose(doctor.HostSnapshot{
					Files: map[string]string{"/proc/self/status": "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t0\n",
						"/proc/self/uid_map": "0 1000 1\n1 100000 65536\n", tc.path: tc.value},
					UsernsError: "x", UsernsErrno: syscall.EPERM, LandlockABI: 4, Seccomp: true, Exe: h.exe, Root: h.root})
			}
			if want := strings.SplitN(tc.name, " ", 2)[0]; d.ID != want {
				t.Fatalf("diagnosed %s, want %s", d.ID, want)
			}
			if code, out, _ := h.fix(t, d, true); code != 0 || !strings.Contains(out, "fixed:") {
				t.Errorf("exit %d, want 0 and fixed:", code)
			}
			conf := filepath.Join(h.root, sysctlConf)
			if tc.root {
				h.wantLog(t, "sysctl -w "+tc.setting, "sbx doctor --json")
			} else {
				h.wantLog(t, "sudo -n true", "sudo -n sysctl -w "+tc.setting, "sysctl -w "+tc.setting, "sudo -n tee -a "+conf, "sbx doctor --json")
			}
			k, v, _ := strings.Cut(tc.setting, "=")
			h.wantFile(t, sysctlConf, k+" = "+v+"\n")
		})
	}
}

// TestDoctorFixCaptureTUN: capture-tun, where this user cannot open
// /dev/net/tun, gets chmod 0666 (EACCES: the mode distributions' udev
// gives the device) or the node made (ENOENT), as a user through sudo -n
// and as root without it, then the binary started afresh must say ok;
// without --yes nothing runs; a container's device policy (EPERM) is not
// sbx's to fix.
func TestDoctorFixCaptureTUN(t *testing.T) {
	const user = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t0\n"
	const root = "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t0\n"
	diagnose := func(h *fixHost, status string, e syscall.Errno) doctor.Diagnosis {
		d := doctor.Diagnose(doctor.HostSnapshot{Files: map[string]string{"/proc/self/status": status}, LandlockABI: 4, Seccomp: true,
			Exe: h.exe, Root: h.root, TunError: "open /dev/net/tun: " + e.Error(), TunErrno: e})
		if d.ID != "capture-tun" {
			t.Fatalf("diagnosed %s, want capture-tun", d.ID)
		}
		return d
	}
	t.Run("user with sudo -n", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "ok")
		dev := filepath.Join(h.root, "dev/net/tun")
		code, out, _ := h.fix(t, diagnose(h, user, syscall.EACCES), true)
		if code != 0 || !strings.Contains(out, "\nrun:              sudo -n chmod 0666 "+dev+"\n") || !strings.Contains(out, "fixed:") {
			t.Errorf("exit %d, want 0, the chmod run and fixed:", code)
		}
		h.wantLog(t, "sudo -n true", "sudo -n chmod 0666 "+dev, "chmod 0666 "+dev, "sbx doctor --json")
	})
	t.Run("root", func(t *testing.T) {
		h := newFixHost(t, "password", "ok", "ok")
		dev := filepath.Join(h.root, "dev/net/tun")
		if code, _, _ := h.fix(t, diagnose(h, root, syscall.EACCES), true); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		h.wantLog(t, "chmod 0666 "+dev, "sbx doctor --json")
	})
	t.Run("no node", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "ok")
		dev := filepath.Join(h.root, "dev/net/tun")
		if code, _, _ := h.fix(t, diagnose(h, root, syscall.ENOENT), true); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		// mkdir is the real one: the directory is made under the root.
		if st, err := os.Stat(filepath.Dir(dev)); err != nil || !st.IsDir() {
			t.Errorf("%s not made: %v", filepath.Dir(dev), err)
		}
		h.wantLog(t, "mknod -m 0666 "+dev+" c 10 200", "sbx doctor --json")
	})
	t.Run("printed and not run", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "ok")
		dev := filepath.Join(h.root, "dev/net/tun")
		code, out, _ := h.fix(t, diagnose(h, user, syscall.EACCES), false)
		if code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		h.wantLog(t)
		for _, want := range []string{
			"\nsudo chmod 0666 " + dev + "\n",
			"\nnot applied:      or, changing nothing: run without the capture",
			"\nsbx --capture off [flags] -- COMMAND\n",
			"\nto apply:         sbx doctor --fix --yes",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q", want)
			}
		}
	})
	t.Run("the mode does not help", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "capture-tun")
		code, _, errOut := h.fix(t, diagnose(h, root, syscall.EACCES), true)
		if code != 1 || !strings.Contains(errOut, "still cannot start its sandbox: capture-tun") {
			t.Errorf("exit %d, want 1 and the reason", code)
		}
	})
	t.Run("a container's device policy", func(t *testing.T) {
		h := newFixHost(t, "ok", "ok", "ok")
		code, out, errOut := h.fix(t, diagnose(h, user, syscall.EPERM), true)
		if code != 1 || !strings.Contains(out, "\ndocker run --device /dev/net/tun IMAGE ...\n") ||
			!strings.Contains(errOut, "cannot apply a fix for capture-tun itself") {
			t.Errorf("exit %d, want 1, the container fix printed", code)
		}
		h.wantLog(t)
	})
}

// TestDoctorFixNothing: a healthy host has nothing to fix (exit 0, nothing
// run); a cause sbx cannot fix itself (a container's policy) exits 1 with
// the fixes printed and nothing run.
func TestDoctorFixNothing(t *testing.T) {
	h := newFixHost(t, "ok", "ok", "ok")
	code, out, _ := h.fix(t, doctor.Diagnose(doctor.HostSnapshot{Files: map[string]string{}, LandlockABI: 4, Seccomp: true}), true)
	if code != 0 || !strings.HasPrefix(out, "nothing to fix: ") {
		t.Errorf("healthy: exit %d", code)
	}
	d := doctor.Diagnose(doctor.HostSnapshot{Files: map[string]string{"/.dockerenv": "", "/proc/self/status": "Uid:\t1000\t1000\t1000\t1000\nSeccomp:\t2\n"},
		UsernsError: "x", UsernsErrno: syscall.EPERM, LandlockABI: 4, Seccomp: true, Exe: h.exe, Root: h.root})
	code, out, errOut := h.fix(t, d, true)
	if d.ID != "container-seccomp" || code != 1 || !strings.Contains(out, "docker run --security-opt seccomp=unconfined") ||
		!strings.Contains(errOut, "cannot apply a fix for container-seccomp itself") {
		t.Errorf("a container: %s, exit %d", d.ID, code)
	}
	h.wantLog(t)
}

// TestDoctorFixHere: on this host (root, and the unprivileged user the
// suite also runs as) `sbx doctor --fix` finds nothing to fix and exits 0;
// --yes without --fix is a usage error.
func TestDoctorFixHere(t *testing.T) {
	r := sbx(t, runOpts{}, "doctor", "--fix")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "nothing to fix: sbx runs here in its full mode") || r.stderr != "" {
		t.Errorf("sbx doctor --fix: %s", r)
	}
	r = sbx(t, runOpts{}, "doctor", "--fix", "--yes")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "nothing to fix: ") {
		t.Errorf("sbx doctor --fix --yes: %s", r)
	}
	for _, args := range [][]string{{"doctor", "--yes"}, {"doctor", "--fix", "--json"}} {
		if r := sbx(t, runOpts{}, args...); r.code != 125 || !strings.Contains(r.stderr, "usage: sbx doctor") {
			t.Errorf("sbx %q: %s", args, r)
		}
	}
}
