//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-sh/sbx/doctor"
	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// Run executes the complete plan pl and returns sbx's exit status.
// stderr receives sbx's own one-line errors and notices; col (which may be
// nil) receives every denial the supervisor sees.
func Run(pl *Plan, stderr io.Writer, col *violations.Collector) int {
	if pl.Weaker {
		return runWeaker(pl, stderr, col)
	}
	DropPrespawn() // made for a plan not known yet: this one may differ
	code, _ := withSaveDir(pl, func() (int, error) { return run(pl, stderr, col, nil) })
	return code
}

// Launch is Compute followed by Run. In the full mode the sandbox's first
// process is started raw (start_linux.go: the complete plan is compiled into
// one program of system calls, and no second Go runtime starts). ready,
// when not nil, gets the complete plan just before the sandbox starts
// (cmd/sbx prints its notices there). A plan that cannot be computed is
// returned as the error and nothing runs; otherwise the int is sbx's exit
// status.
//
// cmd/sbx runs the start on one P (GOMAXPROCS 1), which on two cores is
// measurably faster. The Go runtime gets half its default GOMAXPROCS on
// the first connection the supervisor relays (the proxy, published ports,
// the capture), and the command keeps the other CPUs; see relaying.
func Launch(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	return launchWith(p, nil, stderr, col, ready)
}

// LaunchObserved is Launch for `sbx learn`: the run fills o.Recorder
// (observe_linux.go says what is noted), the proxy lets through the
// hosts no entry allows or denies when o.Net is set, and no credential
// is injected. The caller has made the policy one for observation
// (every writable place a discard region, file calls observed); the
// weaker mode, which has no discard overlays, is refused.
func LaunchObserved(p *policy.Policy, o Observe, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	if o.Recorder == nil {
		return 125, errors.New("sbx learn: no recorder")
	}
	if p.WeakerNested {
		return 125, errors.New("sbx learn needs the full sandbox (its discard overlays keep the host unchanged); --weaker-nested cannot learn")
	}
	return launchWith(p, &o, stderr, col, ready)
}

func launchWith(p *policy.Policy, o *Observe, stderr io.Writer, col *violations.Collector, ready func(*Plan)) (int, error) {
	if p.WeakerNested {
		DropPrespawn()
		pl, err := Compute(p)
		if err != nil {
			return 125, err
		}
		if ready != nil {
			ready(pl)
		}
		return runWeaker(pl, stderr, col), nil
	}
	pl, err := basePlan(p)
	if err != nil {
		DropPrespawn()
		return 125, err
	}
	pl.observe = o
	if o != nil && !pl.Seccomp.AllowUnixSockets {
		// Every connect is decided by the supervisor, which lets the
		// project's own sockets through (learnSocket).
		pl.Seccomp.UnixConnect = true
	}
	for _, n := range pl.credentialNotes {
		fmt.Fprintln(stderr, "sbx: "+n)
	}
	if err := pl.enforcement(p); err != nil {
		DropPrespawn()
		return 125, err
	}
	return withSaveDir(pl, func() (int, error) { return run(pl, stderr, col, ready) })
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

// discardRecord is the record of one write a discard overlay took.
func discardRecord(c ns.Change) violations.Record {
	return violations.Record{Kind: violations.KindFileWrite, Action: ActionDiscard, Source: SourceOverlay,
		Path: c.Path, Detail: c.Detail, Rule: "discardWrites"}
}

func failf(w io.Writer, format string, a ...any) int {
	fmt.Fprintf(w, "sbx: "+format+"\n", a...)
	return 125
}

// usernsProblem explains why a user namespace could not be created: the
// reason `sbx doctor` gives (doctor.Explain reads the same files and
// takes err for its probe's result, so the two never disagree), and the
// first fix in one line.
func usernsProblem(err error) string {
	var errno unix.Errno
	if !errors.As(err, &errno) || errno != unix.EPERM && errno != unix.EACCES && errno != unix.ENOSPC {
		// Not a refusal of the namespace (out of memory, of processes).
		return fmt.Sprintf("cannot start the sandbox: %v", err)
	}
	d := doctor.Explain(err)
	msg := "cannot create a user namespace: " + d.Message
	var fixes []string
	for i, f := range d.Fixes {
		if i > 0 && !strings.HasPrefix(f.Say, "or, changing nothing") {
			continue // the first fix, and the weaker mode
		}
		switch {
		case len(f.Commands) > 0 && strings.HasPrefix(f.Commands[0], "sbx --weaker-nested"):
			fixes = append(fixes, "run with --weaker-nested (Landlock + seccomp only)")
		case len(f.Commands) > 0 && !strings.Contains(f.Commands[0], "\n"):
			fixes = append(fixes, f.Commands[0])
		default:
			fixes = append(fixes, f.Say)
		}
	}
	if len(fixes) > 0 {
		msg += "; fix: " + strings.Join(fixes, ", or ")
	}
	return msg
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

// relaying is called on the first connection the supervisor relays (a
// proxy client accepted, a published port's connection, the capture's
// first packet): from then on the Go runtime gets half its default
// GOMAXPROCS, at least one P, and the other CPUs stay the command's; with
// TLS termination, its whole default. A run whose command never uses the
// network keeps one P to its end and never pays for the change, which
// stops the world and starts a thread per new P (2.5 ms of the
// supervisor's CPU per run on a machine where a new thread
// costs 0.2-0.4 ms; see docs/benchmarks.md).
//
// Why half: the command and the servers it talks to need CPUs too, and a
// supervisor with a P per CPU spends them on its scheduler (threads that
// spin looking for work, and wake-ups between them) just when the command
// wants them. On two CPUs (so one P), against the default's two, a
// download through the capture ran at 863 against 606 MB/s with 1.02
// against 1.59 s of the supervisor's CPU per GiB, a new captured
// connection took 0.62 against 0.86 ms, and the proxy's rows did not
// move (bench/netcompare, interleaved). Only two CPUs were measured:
// with four or more the supervisor gets half.
//
// Why the whole default with TLS termination: a terminated connection
// decrypts and encrypts every byte, in a goroutine for each direction,
// which a second P runs side by side. On two CPUs a terminated download
// ran at 289-369 MB/s on one P against 390-414 on two (bench/tlscompare,
// alternating runs); a new terminated connection took the same time.
//
// Below four CPUs (by affinity) half is one P, and setting the one P the
// supervisor has stops nothing. From four, the default (which follows a
// cgroup's CPU quota) is set and then halved: with a quota of two or
// three on a larger machine that is two stops of the world for one P.
func relaying() {
	relayOnce.Do(func() {
		switch {
		case relayAllCPUs.Load():
			runtime.SetDefaultGOMAXPROCS()
		case runtime.NumCPU() < 4:
			runtime.GOMAXPROCS(1)
		default:
			runtime.SetDefaultGOMAXPROCS()
			runtime.GOMAXPROCS(relayProcs(runtime.GOMAXPROCS(0)))
		}
	})
}

// relayAllCPUs: the run terminates TLS, and relaying gives the runtime
// its whole default (set by run, before anything is relayed).
var relayAllCPUs atomic.Bool

// relayProcs is the supervisor's GOMAXPROCS while it relays, given the
// runtime's default: half, at least one.
func relayProcs(dflt int) int { return max(1, dflt/2) }

var relayOnce sync.Once

// relayListener calls relaying on its first accepted connection.
type relayListener struct{ net.Listener }

func (l relayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		relaying()
	}
	return c, err
}
