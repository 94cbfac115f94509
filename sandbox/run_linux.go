//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// Run executes the plan and returns sbx's exit status. stderr receives
// sbx's own one-line errors and notices; col (which may be nil) receives
// every denial the supervisor sees.
func Run(pl *Plan, stderr io.Writer, col *violations.Collector) int {
	if pl.Weaker {
		return runWeaker(pl, stderr)
	}
	code, _ := runFull(pl, stderr, col, nil, nil)
	return code
}

// Launch is Compute followed by Run. In the full mode the sandbox's first
// process is normally started raw (package rawexec: the complete plan is
// compiled into one program of system calls, and no second Go runtime
// starts); a plan too large for one program falls back to sbx's Go init,
// which is started before the expensive part of the plan (mount view,
// Landlock rules, seccomp program) is computed, so that its start-up
// overlaps that work. ready, when not nil, gets the complete plan just
// before the sandbox starts (cmd/sbx prints its notices there). A plan
// that cannot be computed is returned as the error and nothing runs;
// otherwise the int is sbx's exit status.
//
// cmd/sbx runs the start on one P (GOMAXPROCS 1), which on two cores is
// measurably faster. Once the command runs, Launch gives the Go runtime
// its default GOMAXPROCS back when the supervisor relays traffic (the
// proxy, published ports), which wants every CPU; see afterStart.
func Launch(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	if p.WeakerNested {
		DropPrespawn()
		pl, err := Compute(p)
		if err != nil {
			return 125, err
		}
		if ready != nil {
			ready(pl)
		}
		return runWeaker(pl, stderr), nil
	}
	pl, err := basePlan(p)
	if err != nil {
		return 125, err
	}
	for _, n := range pl.credentialNotes {
		fmt.Fprintln(stderr, "sbx: "+n)
	}
	if rawCandidate(pl) {
		// The raw start needs the complete plan before the clone (there
		// is no init start to overlap it with).
		if err := pl.enforcement(p); err != nil {
			return 125, err
		}
		return withSaveDir(pl, func() (int, error) {
			code, err := runRaw(pl, stderr, col, ready)
			if !errors.Is(err, errNotRaw) {
				return code, err
			}
			DropPrespawn()
			return runFull(pl, stderr, col, nil, ready)
		})
	}
	DropPrespawn()
	return withSaveDir(pl, func() (int, error) {
		return runFull(pl, stderr, col, func() error { return pl.enforcement(p) }, ready)
	})
}

// withSaveDir makes the --save-changes directory (if any) for run, and
// removes it again when nothing ran.
func withSaveDir(pl *Plan, run func() (int, error)) (int, error) {
	if pl.SaveChanges == "" {
		return run()
	}
	if d := pl.saveWritable; d != "" {
		return 125, fmt.Errorf("--save-changes %s is inside %s, where the sandboxed command can write (it could plant links there for sbx to follow); name a directory outside every allowWrite path", pl.SaveChanges, d)
	}
	if err := os.Mkdir(pl.SaveChanges, 0o700); err != nil {
		return 125, fmt.Errorf("--save-changes: %w", err)
	}
	code, err := run()
	if code == 125 || err != nil {
		_ = os.Remove(pl.SaveChanges) // nothing ran: leave nothing (it is empty)
	}
	return code, err
}

// runFull runs pl in the full sandbox. With finish set, pl is not complete
// yet: finish completes it while init starts; a finish error is returned
// as the error (init killed, nothing run).
func runFull(pl *Plan, stderr io.Writer, col *violations.Collector, finish func() error, ready func(*Plan)) (int, error) {
	closeExtraFDs()
	planR, planW, err := os.Pipe()
	if err != nil {
		return failf(stderr, "pipe: %v", err), nil
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return failf(stderr, "pipe: %v", err), nil
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		return failf(stderr, "pipe: %v", err), nil
	}
	// Kept descriptors keep their numbers; our pipes go after them.
	extra := make([]*os.File, 0, 8)
	top := 2
	for _, k := range pl.KeepFDs {
		if k > top {
			top = k
		}
	}
	for fd := 3; fd <= top; fd++ {
		var f *os.File
		for _, k := range pl.KeepFDs {
			if k == fd {
				f = os.NewFile(uintptr(fd), "kept")
			}
		}
		extra = append(extra, f)
	}
	ctlSup, ctlInit, err := controlPair()
	if err != nil {
		return failf(stderr, "%v", err), nil
	}
	var nw *ctlSide
	if pl.Net.Control {
		if nw, err = prepareControl(pl, col, stderr); err != nil {
			return failf(stderr, "%v", err), nil
		}
		defer nw.close()
	}
	base := 3 + len(extra)
	extra = append(extra, planR, lifeR, statW, ctlInit)
	self, err := os.Executable()
	if err != nil {
		return failf(stderr, "finding the sbx executable: %v", err), nil
	}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if !pl.HostNet {
		flags |= unix.CLONE_NEWNET
	}
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{"sbx", InitArg, strconv.Itoa(base), strconv.Itoa(base + 1), strconv.Itoa(base + 2), strconv.Itoa(base + 3)},
		Env:        []string{},
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                idMap(pl.UID),
			GidMappings:                idMap(pl.GID),
			GidMappingsEnableSetgroups: false,
			AmbientCaps:                allCaps(),
			Setsid:                     true,
		},
	}
	sigs := make(chan os.Signal, 32)
	notified := notifyAsync(sigs, forwarded...)
	defer func() {
		// Stop waits for the runtime's signal machinery: not on sbx's
		// way out.
		go func() { <-notified; signal.Stop(sigs) }()
	}()
	startErr := cmd.Start()
	afterStart(pl)
	if finish != nil && startErr == nil {
		// Init is exec'd (Start returns once it is): its start-up (the
		// Go runtime, package initialisation) runs while the plan is
		// completed here. Not before: until the child has exec'd, it
		// shares this process's pages copy-on-write, and planning would
		// fault on every page it writes.
		if err := finish(); err != nil {
			planW.Close() // init gets no plan: it does nothing and exits
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return 125, err
		}
	}
	if startErr != nil {
		return failf(stderr, "%s; 'sbx doctor' shows the exact fix for this host", usernsProblem(startErr)), nil
	}
	if ready != nil {
		ready(pl)
	}
	planR.Close()
	lifeR.Close()
	statW.Close()
	ctlInit.Close()
	if nw != nil {
		if err := nw.start(ctlSup); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return failf(stderr, "%v", err), nil
		}
	} else {
		ctlSup.Close()
	}
	<-notified // signals reach the command from here on
	enc := json.NewEncoder(planW)
	if err := enc.Encode(pl); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return failf(stderr, "handing the plan to the sandbox: %v", err), nil
	}
	planW.Close()

	rl := startRelay(sigs, notified, pl.Timeout, lifeW,
		func(s os.Signal) { _ = cmd.Process.Signal(s) }, func() { _ = cmd.Process.Kill() })
	defer rl.end()

	var last status
	started, final := false, false
	sc := bufio.NewScanner(statR)
	sc.Buffer(make([]byte, 64<<10), maxStatusLine)
	for sc.Scan() {
		var s status
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			continue
		}
		if s.Started != 0 {
			started = true
		}
		if len(s.Discarded) > 0 {
			for _, c := range s.Discarded {
				col.Add(discardRecord(c))
			}
			continue
		}
		last = s
		if s.Exit || s.Error != "" {
			// Init's last word: it sends Exit once every process of
			// the sandbox is gone and its stubs are removed, Error
			// when nothing ran, and then only exits. Its exit (a Go
			// process and the sandbox's namespaces torn down) takes
			// milliseconds that sbx need not wait for.
			final = true
			break
		}
	}
	if err := sc.Err(); err != nil {
		// Keep reading so that init, blocked on a write, can end.
		fmt.Fprintf(stderr, "sbx: reading the sandbox's status: %v\n", err)
		go func() { _, _ = io.Copy(io.Discard, statR) }()
	}
	rl.end()
	if final {
		go func() { _ = cmd.Wait() }()
	} else {
		_ = cmd.Wait()
	}
	lifeW.Close()
	nw.close()
	switch {
	case rl.timedOut.Load():
		fmt.Fprintf(stderr, "sbx: timed out after %v; the sandbox was killed\n", pl.Timeout)
		return 124, nil
	case last.Error != "":
		fmt.Fprintf(stderr, "sbx: %s\n", last.Error)
		return last.Code, nil
	case last.Exit:
		return last.Code, nil
	case started:
		fmt.Fprintln(stderr, "sbx: the sandbox's init died unexpectedly; the command was killed")
		return 125, nil
	}
	return failf(stderr, "the sandbox failed to start (init exited: %v)", cmd.ProcessState), nil
}

// discardRecord is the record of one write a discard overlay took.
func discardRecord(c ns.Change) violations.Record {
	return violations.Record{Kind: violations.KindFileWrite, Action: ActionDiscard, Source: SourceOverlay,
		Path: c.Path, Detail: c.Detail, Rule: "discardWrites"}
}

// idMap maps the caller's id to itself. For root it maps every id to
// itself: init (root in the sandbox's user namespace) then has its
// capabilities over files of other owners too, so it can build the mount
// view inside a writable directory another user owns. The command drops
// every capability, so it gains nothing from this.
func idMap(id int) []syscall.SysProcIDMap {
	if id == 0 && os.Geteuid() == 0 {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	}
	return []syscall.SysProcIDMap{{ContainerID: id, HostID: id, Size: 1}}
}

func failf(w io.Writer, format string, a ...any) int {
	fmt.Fprintf(w, "sbx: "+format+"\n", a...)
	return 125
}

// usernsProblem explains why a user namespace could not be created.
func usernsProblem(err error) string {
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return strings.TrimSpace(string(b))
	}
	switch {
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return fmt.Sprintf("cannot create a user namespace (%v): AppArmor restricts unprivileged user namespaces (Ubuntu 24.04+); fix: an AppArmor profile for sbx granting 'userns', or sysctl kernel.apparmor_restrict_unprivileged_userns=0, or run with --weaker-nested (Landlock + seccomp only)", err)
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return fmt.Sprintf("cannot create a user namespace (%v): user.max_user_namespaces is 0; fix: sysctl user.max_user_namespaces=15000, or run with --weaker-nested (Landlock + seccomp only)", err)
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return fmt.Sprintf("cannot create a user namespace (%v): kernel.unprivileged_userns_clone is 0; fix: sysctl kernel.unprivileged_userns_clone=1, or run with --weaker-nested (Landlock + seccomp only)", err)
	case errors.Is(err, unix.ENOSPC):
		return fmt.Sprintf("cannot create a user namespace (%v): the user-namespace limit is reached (user.max_user_namespaces, or nesting deeper than 32); fix: raise the limit, or run with --weaker-nested (Landlock + seccomp only)", err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Sprintf("cannot create a user namespace (%v): not permitted here (a container without user namespaces, or a seccomp profile that blocks them); fix: allow user namespaces, or run with --weaker-nested (Landlock + seccomp only)", err)
	}
	return fmt.Sprintf("cannot start the sandbox: %v", err)
}

// relay passes sbx's signals on to the sandbox's PID 1 and keeps its
// timeout: when it expires the lifeline is closed (PID 1 kills everything
// and cleans up) and, should PID 1 still be there 3 s later, it is killed.
type relay struct {
	timedOut atomic.Bool
	done     chan struct{}
	once     sync.Once
	timer    *time.Timer
}

// startRelay starts relaying sigs (once notified is closed) through
// signal, with the timeout (0: none) on lifeW, kill as the last resort.
func startRelay(sigs <-chan os.Signal, notified <-chan struct{}, timeout time.Duration, lifeW *os.File, signal func(os.Signal), kill func()) *relay {
	r := &relay{done: make(chan struct{})}
	if timeout > 0 {
		r.timer = time.AfterFunc(timeout, func() {
			r.timedOut.Store(true)
			lifeW.Close()
			time.AfterFunc(3*time.Second, kill)
		})
	}
	go func() {
		<-notified
		for {
			select {
			case s := <-sigs:
				signal(s)
			case <-r.done:
				return
			}
		}
	}()
	return r
}

// end stops relaying and the timeout.
func (r *relay) end() {
	r.once.Do(func() {
		close(r.done)
		if r.timer != nil {
			r.timer.Stop()
		}
	})
}

// notifyAsync is signal.Notify(c, sigs...) in the background; the returned
// channel is closed once it is in effect. Enabling a signal is a round
// trip to the runtime's signal thread, so Notify costs the better part of
// a millisecond that start-up need not wait for.
func notifyAsync(c chan<- os.Signal, sigs ...os.Signal) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		signal.Notify(c, sigs...)
		close(done)
	}()
	return done
}

// afterStart runs once the command has started. A run that relays
// traffic gets the runtime's default GOMAXPROCS back (the change stops
// the world, 0.05-0.2 ms, so runs without a proxy keep one P: their
// supervisor only waits).
func afterStart(pl *Plan) {
	if pl.Net.Proxy || len(pl.Net.Publish) > 0 {
		runtime.SetDefaultGOMAXPROCS()
	}
}
