package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/credentials"
	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/learn"
	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/seccomp"
)

// Plan is everything the sandbox's stages apply, computed once in the
// supervisor.
type Plan struct {
	Weaker   bool             `json:"weaker"`
	HostNet  bool             `json:"hostNet"`
	Mounts   ns.MountPlan     `json:"mounts"`
	Landlock landlock.Ruleset `json:"landlock"`
	Seccomp  seccomp.Config   `json:"seccomp"`
	// Filter is the compiled seccomp program (BPF).
	Filter  seccomp.Program `json:"filter"`
	Argv    []string        `json:"argv"`
	Env     []string        `json:"env"`
	Dir     string          `json:"dir"`
	KeepFDs []int           `json:"keepFds,omitempty"`
	UID     int             `json:"uid"`
	GID     int             `json:"gid"`
	Timeout time.Duration   `json:"timeout,omitempty"`
	// Tty: the command gets a pseudo-terminal of its own (tty_linux.go).
	Tty bool    `json:"tty,omitempty"`
	Net NetPlan `json:"net"`
	// ControlFD is --control-fd: the supervisor reads network-list
	// updates there (never passed to the sandbox).
	ControlFD int `json:"controlFd,omitempty"`
	// SaveChanges is where init keeps the discard overlays' changes.
	SaveChanges string `json:"saveChanges,omitempty"`
	// AskFD is --ask-fd: the supervisor asks there about unlisted hosts.
	AskFD      int           `json:"askFd,omitempty"`
	AskTimeout time.Duration `json:"askTimeout,omitempty"`
	// Limits is how each limit is enforced here (limits.go).
	Limits *LimitPlan `json:"limits,omitempty"`

	// The supervisor's side of credentials masking: the real values
	// (never serialised), the masked files' copies (turned into mount ops
	// by enforcement), and what the proxy needs to inject.
	secrets         []credentials.Secret
	maskedFiles     []maskedFile
	injectHosts     []string
	plainInject     bool
	awsPairs        []credentials.AWSPair
	awsHosts        [][]string
	sigv4           credentials.SigV4Policy
	credentialNotes []string
	// saveWritable is the allowWrite path holding SaveChanges, if any:
	// refused, as the command could write there.
	saveWritable string
	// writable are the writable roots, where the after-run check looks
	// (afterrun_linux.go), in both modes.
	writable []string
	// observe: the run is observed for sbx learn (LaunchObserved); nil
	// otherwise.
	observe *Observe
}

// Observe is how `sbx learn` observes a run (LaunchObserved).
type Observe struct {
	// Recorder is filled with what the command touched, reached and
	// was refused.
	Recorder *learn.Recorder
	// Net lets through the proxy and the capture every host that no
	// entry allows or denies, and notes it once it has passed the
	// address guard; off, the policy's network applies as it is.
	Net bool
}

// Compute builds the Plan for p.
func Compute(p *policy.Policy) (*Plan, error) {
	pl, err := basePlan(p)
	if err != nil {
		return nil, err
	}
	if err := pl.enforcement(p); err != nil {
		return nil, err
	}
	return pl, nil
}

// basePlan is the cheap part of Compute: everything but the mount view,
// the Landlock rules and the seccomp program, and every check that refuses
// a policy outright. It is all the supervisor needs to start init.
func basePlan(p *policy.Policy) (*Plan, error) {
	pl := &Plan{
		Weaker:      p.WeakerNested,
		HostNet:     p.Network.Mode == "host",
		Argv:        p.Process.Argv,
		Env:         p.Process.Env,
		Dir:         p.Process.Dir,
		KeepFDs:     p.Process.KeepFDs,
		UID:         p.Process.UID,
		GID:         p.Process.GID,
		Timeout:     p.Process.Timeout,
		Tty:         p.Process.Tty,
		ControlFD:   p.Process.ControlFD,
		SaveChanges: p.Filesystem.SaveChanges,
		saveWritable: func() string {
			for _, w := range p.Filesystem.AllowWrite {
				if p.Filesystem.SaveChanges != "" && policy.Within(p.Filesystem.SaveChanges, w) {
					return w
				}
			}
			return ""
		}(),
		AskFD:      p.Process.AskFD,
		AskTimeout: p.Process.AskTimeout,
	}
	if err := computeNet(pl, p); err != nil {
		return nil, err
	}
	var err error
	if pl.Limits, err = hostLimits(p.Limits, pl.Weaker); err != nil {
		return nil, err
	}
	secrets, notes, err := maskSecrets(pl, p)
	if err != nil {
		return nil, err
	}
	pl.secrets, pl.credentialNotes = secrets, notes
	maskConfigCopies(pl, p)
	if p.Credentials != nil {
		pl.injectHosts, pl.plainInject = p.Network.TrustedDomains, p.Credentials.AllowPlaintextInject
		pl.awsPairs, pl.awsHosts = pairAWS(p, secrets)
		sv := p.Credentials.SigV4
		pl.sigv4 = credentials.SigV4Policy{Streaming: sv.Streaming, Presigned: sv.Presigned, SigV4A: sv.SigV4A}
		if len(pl.maskedFiles) > 0 && pl.Weaker {
			return nil, errors.New("credentials.files in mode mask needs the full sandbox (a masked copy is bound over the file); use mode deny with --weaker-nested")
		}
		if len(secrets) > 0 && pl.Net.Proxy && pl.Net.TLS == nil {
			pl.credentialNotes = append(pl.credentialNotes, "credentials: masked values are put back only inside terminated TLS (--tls-terminate / network.tlsTerminate)"+map[bool]string{true: " or on plain HTTP", false: ""}[pl.plainInject]+"; elsewhere the sentinel is sent as it is")
		}
		p.Notes = append(p.Notes, pl.credentialNotes...)
	}
	pl.Seccomp = seccomp.Config{
		AllowUnixSockets: p.Network.AllowAllUnixSockets,
		AllowDatagram:    !pl.Weaker || pl.HostNet,
		// Refused calls are answered by the supervisor, which records
		// them; the weaker mode (often nested in another sandbox that
		// may hold the one listener a filter stack can have) does not.
		Notify:        !pl.Weaker,
		ObserveWrites: p.ObserveFiles == "writes" || p.ObserveFiles == "all",
		ObserveReads:  p.ObserveFiles == "reads" || p.ObserveFiles == "all",
		// With no network (--net none) the namespace holds loopback
		// alone: a connect or send to any other address fails, and the
		// supervisor records it (netRecord).
		ObserveNet: !pl.Weaker && !pl.HostNet && p.Network.Mode != "filtered",
	}
	if len(p.Network.AllowUnixSockets) > 0 && !p.Network.AllowAllUnixSockets {
		if pl.Weaker {
			return nil, errors.New("network.allowUnixSockets / --allow-unix-socket needs the full sandbox (its supervisor decides each connect); with --weaker-nested use allowAllUnixSockets or none")
		}
		pl.Seccomp.UnixConnect = true
		pl.Net.UnixSockets = p.Network.AllowUnixSockets
	}
	if !pl.Weaker {
		pl.Net.Control = true
	}
	return pl, nil
}

// enforcement computes the expensive part of the plan: the mount view, the
// Landlock rules and the seccomp program.
func (pl *Plan) enforcement(p *policy.Policy) error {
	writable := landlock.WritableRoots(p)
	pl.writable = writable
	var err error
	if !pl.Weaker {
		if pl.Mounts, err = ns.PlanMounts(p, writable); err != nil {
			return err
		}
		for _, f := range pl.maskedFiles {
			why := f.why
			if why == "" {
				why = "credentials.files (masked)"
			}
			pl.Mounts.Ops = append(pl.Mounts.Ops, ns.Op{Kind: ns.OpContent, Path: f.Path, Content: f.Content, Why: why})
		}
		pl.captureViewOps(p)
		if _, ok := pl.Limits.uses("tmpSize"); ok {
			pl.Mounts.TmpSize = p.Limits.TmpSize
		}
		for _, op := range pl.Mounts.Ops {
			if op.Kind == ns.OpStub && filepath.Base(op.Path) == ".git" {
				pl.Env = goVCSOff(pl.Env)
				break
			}
		}
	}
	if pl.Weaker {
		if err := weakerDenyReads(p, writable); err != nil {
			return err
		}
	}
	lo := landlock.Options{Weaker: pl.Weaker, Capture: pl.Net.Capture}
	if pl.Net.Proxy {
		lo.ProxyPorts = []uint16{pl.Net.HTTPPort, pl.Net.SOCKSPort}
	}
	for _, pb := range pl.Net.Publish {
		lo.BindPorts = append(lo.BindPorts, pb.Port)
	}
	pl.Landlock = landlock.Plan(p, lo)
	pl.Filter, err = seccomp.Compile(pl.Seccomp)
	return err
}

// weakerDenyReads refuses, in the weaker mode, a read-denied path that
// lies in a place that takes writes: Landlock grants a writable root
// whole (its rules only add up), and without the mount view nothing
// hides the path inside it, so the command would read it. The built-in
// masks count too (a writable HOME would expose ~/.ssh).
func weakerDenyReads(p *policy.Policy, writable []string) error {
	takes := append(append([]string(nil), writable...), p.Filesystem.DiscardWrites...)
	for _, d := range p.Filesystem.DenyRead {
		if _, err := os.Lstat(d); err != nil {
			continue // nothing there to read
		}
		for _, w := range takes {
			if policy.WithinAny(d, []string{w}) {
				return fmt.Errorf("--weaker-nested cannot hide %s: it lies in the writable %s, which Landlock grants whole (there is no mount view to mask it); deny it outside writable places, make less writable, or run the full sandbox", d, w)
			}
		}
	}
	return nil
}

// lookPath finds argv0 the way a shell would, with the command's PATH, in
// the caller's current filesystem view; relative names (./run.sh, a "."
// in PATH) are taken from dir, the command's working directory, whatever
// the caller's own. It returns the sbx exit status for a failure: 127 not
// found, 126 found but not executable.
func lookPath(argv0 string, env []string, dir string) (string, int, error) {
	if strings.Contains(argv0, "/") {
		if !filepath.IsAbs(argv0) {
			argv0 = filepath.Join(dir, argv0)
		}
		if err := checkExec(argv0); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", 127, fmt.Errorf("%s: no such file", argv0)
			}
			return "", 126, err
		}
		return argv0, 0, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	var firstErr error
	for _, pdir := range filepath.SplitList(pathVar) {
		if pdir == "" {
			pdir = "."
		}
		if !filepath.IsAbs(pdir) {
			pdir = filepath.Join(dir, pdir)
		}
		cand := filepath.Join(pdir, argv0)
		err := checkExec(cand)
		if err == nil {
			return cand, 0, nil
		}
		// A file that exists but cannot be run makes 126; a directory we
		// cannot search is simply not where the command is (as in sh).
		var pe *os.PathError
		if !errors.As(err, &pe) && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", 126, fmt.Errorf("%s: %w", argv0, firstErr)
	}
	return "", 127, fmt.Errorf("%s: command not found", argv0)
}

func checkExec(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s: is a directory: %w", p, exec.ErrNotFound)
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: permission denied", p)
	}
	return nil
}

// execStatus maps a failure to start the command to an exit status.
func execStatus(err error) int {
	if errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

// goVCSOff adds -buildvcs=false to GOFLAGS unless the caller chose a
// -buildvcs setting. A stub .git (pinning a missing .git so the command
// cannot create hooks) makes the go command find a repository that git
// then refuses, and every go build fail with "error obtaining VCS status".
func goVCSOff(env []string) []string {
	out := append([]string(nil), env...)
	for i, kv := range out {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			if !strings.Contains(v, "-buildvcs") {
				out[i] = strings.TrimSpace("GOFLAGS=-buildvcs=false " + v)
			}
			return out
		}
	}
	return append(out, "GOFLAGS=-buildvcs=false")
}
