//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/doctor"
)

// doctorJSON is the part of `sbx doctor --json` these tests read.
type doctorJSON struct {
	UserNamespaces struct {
		Available bool `json:"available"`
	} `json:"userNamespaces"`
	FreshProc struct {
		Mountable bool `json:"mountable"`
	} `json:"freshProc"`
	DiscardOverlays struct {
		Available bool `json:"available"`
	} `json:"discardOverlays"`
	Capture struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
	} `json:"capture"`
	Mode      string           `json:"mode"`
	Diagnosis doctor.Diagnosis `json:"diagnosis"`
}

// checkDoctor checks one host's `sbx doctor` and `sbx doctor --json`
// (exit 0 both, as the GitHub Action's install step needs): the JSON's
// mode and diagnosis id, and the text's one "diagnosis:" line with the
// same id and message, followed by every fix's commands verbatim, flush
// left (a here-document's EOF must start its line).
func checkDoctor(t *testing.T, text, js result, mode, id string) doctorJSON {
	t.Helper()
	if text.code != 0 || js.code != 0 {
		t.Fatalf("sbx doctor must exit 0:\n%s\n%s", text, js)
	}
	var d doctorJSON
	if err := json.Unmarshal([]byte(js.stdout), &d); err != nil {
		t.Fatalf("--json: %v\n%s", err, js.stdout)
	}
	if d.Mode != mode || d.Diagnosis.ID != id || d.Diagnosis.Message == "" {
		t.Fatalf("mode %q, diagnosis %+v; want %s and %s\n%s", d.Mode, d.Diagnosis, mode, id, js.stdout)
	}
	var diag []string
	for _, line := range strings.Split(text.stdout, "\n") {
		if strings.HasPrefix(line, "diagnosis:") {
			diag = append(diag, line)
		}
	}
	if want := "diagnosis:        " + id + ": " + d.Diagnosis.Message; len(diag) != 1 || diag[0] != want {
		t.Errorf("want exactly one line %q, got %q\n%s", want, diag, text.stdout)
	}
	if !strings.Contains(text.stdout, "\nmode:             "+mode+"\n") {
		t.Errorf("no mode line for the Action's install step to read:\n%s", text.stdout)
	}
	fixes := strings.Count(text.stdout, "\nfix:              ")
	if fixes != len(d.Diagnosis.Fixes) {
		t.Errorf("%d fix lines, %d fixes in --json\n%s", fixes, len(d.Diagnosis.Fixes), text.stdout)
	}
	for _, f := range d.Diagnosis.Fixes {
		for _, c := range f.Commands {
			if !strings.Contains(text.stdout, "\n"+c+"\n") {
				t.Errorf("the text lacks the command, flush left:\n%s\n---\n%s", c, text.stdout)
			}
		}
	}
	return d
}

// TestDoctorHere: on this host (root, and the unprivileged user CI also
// runs the suite as) sbx's full mode runs, and doctor says so.
func TestDoctorHere(t *testing.T) {
	needCapture(t) // "ok" includes the capture; TestDoctorCaptureTUN covers a host without
	d := checkDoctor(t, sbx(t, runOpts{}, "doctor"), sbx(t, runOpts{}, "doctor", "--json"), "full", "ok")
	if !d.UserNamespaces.Available || !d.FreshProc.Mountable || len(d.Diagnosis.Fixes) != 0 {
		t.Errorf("a healthy host: %+v", d)
	}
	// This kernel (5.11+) takes overlays in a user namespace, and the
	// discard tests show it: doctor must agree, as root and not.
	if !d.DiscardOverlays.Available || !strings.Contains(sbx(t, runOpts{}, "doctor").stdout, "\ndiscard overlays: yes\n") {
		t.Errorf("discard overlays should be reported available here: %+v", d)
	}
	// scripts/setup.sh makes /dev/net/tun 0666: the capture runs here.
	if !d.Capture.Available || !strings.Contains(sbx(t, runOpts{}, "doctor").stdout, "\ncapture:          yes\n") {
		t.Errorf("the capture should be reported available here: %+v", d)
	}
}

// TestDoctorCaptureTUN: where this user cannot open /dev/net/tun (a node
// of mode 0000, or none, on a tmpfs over /dev/net in a mount namespace of
// the test's own; sbx runs as uid 1000 of a user namespace nested in it,
// without the capabilities that would override the mode), the full mode
// still runs, and doctor says the capture is off, why, and the fix
// --fix applies: chmod 0666, or the node made.
func TestDoctorCaptureTUN(t *testing.T) {
	for _, tc := range []struct {
		name, make, reason, fix string
	}{
		{"mode 0000", ": > /dev/net/tun && chmod 0000 /dev/net/tun || exit 99; ", "open /dev/net/tun: permission denied", "chmod 0666 /dev/net/tun"},
		{"no node", "", "open /dev/net/tun: no such file or directory", "mknod -m 0666 /dev/net/tun c 10 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `mount -t tmpfs -o mode=755 tmpfs /dev/net || exit 99; ` + tc.make + `exec unshare -U --map-user=1000 --map-group=1000 "$@"`
			text := inUserNS(t, script, "doctor")
			d := checkDoctor(t, text, inUserNS(t, script, "doctor", "--json"), "full", "capture-tun")
			if d.Capture.Available || d.Capture.Reason != tc.reason {
				t.Errorf("capture %+v, want unavailable: %s", d.Capture, tc.reason)
			}
			if !strings.Contains(text.stdout, "\ncapture:          NO — "+tc.reason+": the capture is off, and with --allow-domain clients that ignore the proxy variables get no network\n") {
				t.Errorf("no capture line saying why:\n%s", text.stdout)
			}
			var cmds []string
			for _, f := range d.Diagnosis.Fixes {
				cmds = append(cmds, f.Commands...)
			}
			if !slices.Contains(cmds, "sudo "+tc.fix) || !slices.Contains(cmds, "sbx --capture off [flags] -- COMMAND") ||
				len(d.Diagnosis.Fixes[0].Steps) == 0 {
				t.Errorf("want %q with steps, and --capture off: %+v", tc.fix, d.Diagnosis.Fixes)
			}
		})
	}
}

// inUserNS runs `sh -c script sh sbx ARGS…` in a user (and mount)
// namespace of the test's own, where it is root; the script sets the host
// up, then runs "$@". It skips when the script exits 99 (it could not).
func inUserNS(t *testing.T, script string, args ...string) result {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare not installed")
	}
	cmd := exec.Command(unshare, append([]string{"-U", "-r", "-m", "/bin/sh", "-c", script, "sh", sbxBin}, args...)...)
	cmd.Dir = t.TempDir()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	r := result{exitCode(t, cmd, cmd.Run()), so.String(), se.String()}
	if r.code == 99 {
		t.Skipf("cannot set the host up in a user namespace: %s", r)
	}
	return r
}

// TestDoctorMaxUserNamespaces: where no user namespace can be created
// (user.max_user_namespaces=0 in a user namespace of the test's own, which
// binds everything nested in it), doctor names that one reason and its
// fix, and says the weaker mode can run.
func TestDoctorMaxUserNamespaces(t *testing.T) {
	const script = `echo 0 > /proc/sys/user/max_user_namespaces || exit 99; exec "$@"`
	d := checkDoctor(t, inUserNS(t, script, "doctor"), inUserNS(t, script, "doctor", "--json"), "weaker-only", "max-user-namespaces")
	if d.UserNamespaces.Available {
		t.Errorf("user namespaces reported available: %+v", d)
	}
	if !strings.Contains(d.Diagnosis.Message, "user.max_user_namespaces is 0") || len(d.Diagnosis.Fixes) != 2 ||
		d.Diagnosis.Fixes[0].Commands[0] != "sysctl -w user.max_user_namespaces=15000" ||
		d.Diagnosis.Fixes[1].Commands[0] != "sbx --weaker-nested [flags] -- COMMAND" {
		t.Errorf("want the sysctl (no sudo: root in the namespace), then --weaker-nested: %+v", d.Diagnosis)
	}
}

// TestDoctorMaskedProc: where a file of /proc is hidden by a mount over it
// (as Docker hides /proc/kcore, /proc/keys, …), the user namespace is
// created but a fresh /proc cannot be mounted in it, so a full-mode run
// would fail; doctor says so and names the mount and the container fix.
// (The mask is made as root of a user namespace of the test's own; sbx
// then runs as uid 1000 of a namespace nested in it, as sbx as root there
// fails for another reason: TestDoctorRootPartialIDMap.)
func TestDoctorMaskedProc(t *testing.T) {
	const script = `mount --bind /dev/null /proc/version || exit 99; exec unshare -U --map-user=1000 --map-group=1000 "$@"`
	d := checkDoctor(t, inUserNS(t, script, "doctor"), inUserNS(t, script, "doctor", "--json"), "weaker-only", "proc-masked")
	if !d.UserNamespaces.Available || d.FreshProc.Mountable {
		t.Errorf("want user namespaces but no fresh /proc: %+v", d)
	}
	if !strings.Contains(strings.Join(d.Diagnosis.Evidence, "\n"), "mounted over: /proc/version") ||
		!strings.Contains(d.Diagnosis.Fixes[0].Commands[0], "--security-opt systempaths=unconfined") {
		t.Errorf("want the mask named and the container fix: %+v", d.Diagnosis)
	}
	// sbx itself agrees: a run fails to start, with the same cause.
	r := inUserNS(t, script, "--", "/bin/true")
	if r.code != 125 || !strings.Contains(r.stderr, "mounting a fresh /proc") {
		t.Errorf("a full-mode run where doctor says proc-masked: %s", r)
	}
}

// TestDoctorRootPartialIDMap: sbx as root of a user namespace that maps
// one id (as root of a rootless container) cannot start its full mode, as
// it maps every id for root; doctor says so, and a run fails as it says.
func TestDoctorRootPartialIDMap(t *testing.T) {
	const script = `exec "$@"`
	d := checkDoctor(t, inUserNS(t, script, "doctor"), inUserNS(t, script, "doctor", "--json"), "weaker-only", "root-partial-idmap")
	if d.UserNamespaces.Available || !strings.Contains(d.Diagnosis.Message, "maps only 1 id ") {
		t.Errorf("%+v", d)
	}
	if r := inUserNS(t, script, "--", "/bin/true"); r.code != 125 {
		t.Errorf("a full-mode run where doctor says root-partial-idmap: %s", r)
	}
}

// TestDoctorHintsText: the AppArmor profile is printed as a here-document
// that can be pasted as it is, with the binary's real path.
func TestDoctorHintsText(t *testing.T) {
	d := doctor.Diagnose(doctor.HostSnapshot{
		Files: map[string]string{
			"/proc/self/status": "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t0\n",
			"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1\n",
		},
		UsernsError: "fork/exec /usr/bin/sbx: permission denied", Exe: "/usr/bin/sbx", LandlockABI: 4, Seccomp: true,
	})
	var b bytes.Buffer
	writeDiagnosis(&b, d)
	out := b.String()
	want := "\nsudo tee /etc/apparmor.d/sbx-0e45138f35cc >/dev/null <<'EOF'\nabi <abi/4.0>,\ninclude <tunables/global>\n\n" +
		"# sbx doctor --fix: user namespaces for this sbx binary, nothing else.\nprofile sbx-0e45138f35cc /usr/bin/sbx flags=(unconfined) {\n  userns,\n}\nEOF\n" +
		"sudo apparmor_parser -r /etc/apparmor.d/sbx-0e45138f35cc\n"
	if !strings.HasPrefix(out, "diagnosis:        apparmor-userns: ") || strings.Count(out, "diagnosis:") != 1 || !strings.Contains(out, want) {
		t.Errorf("got\n%s\nwant one diagnosis line and\n%s", out, want)
	}
	if !strings.Contains(out, "\n                  sbx doctor --fix --yes runs the first fix (as root, or through sudo -n) and checks it.\n") {
		t.Errorf("doctor does not point to --fix:\n%s", out)
	}
	if strings.Count(out, "\nfix:") != 3 {
		t.Errorf("want three fixes (profile, sysctl, --weaker-nested):\n%s", out)
	}
}

// TestDoctorAgreesWithTheRun: where the kernel refuses a user namespace
// for its count — user.max_user_namespaces=0 here, or the limit of a
// namespace above a nested one — under a seccomp filter (as inside
// another sandbox or a container; this host may also have a
// /.dockerenv), a run fails with exit 125 and a message that names the
// same reason `sbx doctor` names, and neither blames a container.
func TestDoctorAgreesWithTheRun(t *testing.T) {
	for _, tc := range []struct {
		name, script, id, says string
	}{
		{"max_user_namespaces=0", `echo 0 > /proc/sys/user/max_user_namespaces || exit 99; exec ` + attackBin + ` filtered "$@"`,
			"max-user-namespaces", "user.max_user_namespaces is 0"},
		{"the limit above a nested namespace", `echo 1 > /proc/sys/user/max_user_namespaces || exit 99; exec unshare -U -r ` + attackBin + ` filtered "$@"`,
			"userns-limit", "nested user namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := checkDoctor(t, inUserNS(t, tc.script, "doctor"), inUserNS(t, tc.script, "doctor", "--json"), "weaker-only", tc.id)
			if !strings.Contains(d.Diagnosis.Message, tc.says) {
				t.Errorf("doctor: want %q in %q", tc.says, d.Diagnosis.Message)
			}
			r := inUserNS(t, tc.script, "--", "/bin/echo", "ran")
			if r.code != 125 || strings.Contains(r.stdout, "ran") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("the run: want 125 and one line, got %s", r)
			}
			if !strings.Contains(r.stderr, d.Diagnosis.Message) {
				t.Errorf("the run and doctor disagree:\nrun:    %s\ndoctor: %s", r.stderr, d.Diagnosis.Message)
			}
			for _, s := range []string{"Docker", "container"} {
				if strings.Contains(r.stderr, s) || strings.Contains(d.Diagnosis.Message, s) {
					t.Errorf("%q blamed: %s / %s", s, r.stderr, d.Diagnosis.Message)
				}
			}
		})
	}
}
