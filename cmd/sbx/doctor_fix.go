package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/doctor"
)

// fixer is what `sbx doctor --fix` needs besides the diagnosis; tests give
// it a fake binary and a PATH of fake commands.
type fixer struct {
	// exe is the sbx binary the fix is for (its real path): the check
	// starts it afresh, as `exe doctor --json`.
	exe string
	// env is the commands' environment; its PATH finds sudo, tee, sysctl
	// and apparmor_parser.
	env []string
	// yes: apply the fix (--yes); without it the commands are printed.
	yes            bool
	stdout, stderr io.Writer
}

// doctorFix prints the commands that fix the diagnosed cause and, with
// --yes, runs them (as root, or through `sudo -n` where the diagnosis was
// taken as another user), then checks the result with a fresh start of
// sbx. Only a fix with steps is applied: the first of apparmor-userns
// (a profile for this binary), userns-clone and max-user-namespaces (their
// sysctls, persisted in /etc/sysctl.d) and capture-tun (chmod 0666
// /dev/net/tun, or its node made); never the system-wide AppArmor
// sysctl, which stays the printed fallback. Exit 0: nothing to fix, the
// commands printed, or the fix applied and checked; 1: no fix sbx can
// apply here, a command failed, or sbx still cannot start.
func doctorFix(d doctor.Diagnosis, f fixer) int {
	w := f.stdout
	if d.ID == "ok" {
		fmt.Fprintf(w, "nothing to fix: %s\n", d.Message)
		return 0
	}
	fmt.Fprintf(w, "diagnosis:        %s: %s\n", d.ID, d.Message)
	for i, e := range d.Evidence {
		fmt.Fprintf(w, "%s%s\n", map[bool]string{true: "seen:             ", false: doctorIndent}[i == 0], e)
	}
	if len(d.Fixes) == 0 || len(d.Fixes[0].Steps) == 0 {
		for _, x := range d.Fixes {
			fmt.Fprintf(w, "fix:              %s\n", x.Say)
			for _, c := range x.Commands {
				fmt.Fprintln(w, c)
			}
		}
		fmt.Fprintf(f.stderr, "sbx: doctor --fix: sbx cannot apply a fix for %s itself; the fixes above are yours to apply (README, \"When sbx cannot start\")\n", d.ID)
		return 1
	}
	fx := d.Fixes[0]
	fmt.Fprintf(w, "fix:              %s\n", fx.Say)
	for _, c := range fx.Commands {
		fmt.Fprintln(w, c)
	}
	fmt.Fprintf(w, "check:            %s doctor, started afresh, must say ok\n", f.exe)
	notApplied := func() {
		for _, x := range d.Fixes[1:] {
			fmt.Fprintf(w, "not applied:      %s\n", x.Say)
			for _, c := range x.Commands {
				fmt.Fprintln(w, c)
			}
		}
	}
	if !f.yes {
		notApplied()
		fmt.Fprintf(w, "to apply:         sbx doctor --fix --yes (as root, or as a user whose sudo needs no password)\n")
		return 0
	}
	var prefix []string
	if fx.Sudo {
		if _, err := f.run([]string{"sudo", "-n", "true"}, ""); err != nil {
			fmt.Fprintf(f.stderr, "sbx: doctor --fix --yes: the fix needs root, and sudo does not run without a password here (sudo -n true: %v); run the commands above yourself, or rerun as root\n", err)
			return 1
		}
		prefix = []string{"sudo", "-n"}
	}
	for _, st := range fx.Steps {
		argv := append(append([]string(nil), prefix...), st.Argv...)
		fmt.Fprintf(w, "run:              %s\n", doctor.Step{Argv: argv}.Command(""))
		if _, err := f.run(argv, st.Stdin); err != nil {
			fmt.Fprintf(f.stderr, "sbx: doctor --fix --yes: %s failed: %v; nothing after it ran\n", argv[len(prefix)], err)
			return 1
		}
	}
	after, err := f.check()
	switch {
	case err != nil:
		fmt.Fprintf(f.stderr, "sbx: doctor --fix --yes: the fix ran, but checking it failed: %v\n", err)
		return 1
	case after.ID != "ok":
		notApplied()
		fmt.Fprintf(f.stderr, "sbx: doctor --fix --yes: the fix ran, but %s started afresh still cannot start its sandbox: %s: %s\n", f.exe, after.ID, after.Message)
		return 1
	}
	fmt.Fprintf(w, "fixed:            %s starts its sandbox: %s\n", f.exe, after.Message)
	return 0
}

// run runs argv (its program found in f.env's PATH) with stdin, and
// returns its output; an error carries the exit status and the first line
// of what it printed.
func (f fixer) run(argv []string, stdin string) ([]byte, error) {
	path, err := f.lookPath(argv[0])
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Env = f.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		if line, _, _ := strings.Cut(msg, "\n"); line != "" {
			return nil, fmt.Errorf("%w: %s", err, line)
		}
		return nil, err
	}
	return out.Bytes(), nil
}

// lookPath finds name in f.env's PATH (exec.LookPath reads this
// process's).
func (f fixer) lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range f.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH (%s)", name, path)
}

// check starts the binary afresh, `exe doctor --json`, and returns its
// diagnosis: an AppArmor profile applies to a process from its exec on,
// so this process (started before the profile was loaded) cannot tell.
func (f fixer) check() (doctor.Diagnosis, error) {
	out, err := f.run([]string{f.exe, "doctor", "--json"}, "")
	if err != nil {
		return doctor.Diagnosis{}, err
	}
	var r struct {
		Diagnosis doctor.Diagnosis `json:"diagnosis"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Diagnosis.ID == "" {
		return doctor.Diagnosis{}, errors.Join(fmt.Errorf("%s doctor --json: no diagnosis in its output", f.exe), err)
	}
	return r.Diagnosis, nil
}

// realExe is this binary's path with symlinks resolved.
func realExe() string {
	exe, err := os.Executable()
	if err != nil {
		return "sbx"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		return real
	}
	return exe
}
