package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/sbx-sh/sbx/learn"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// learnFlags are the flags sbx learn adds to a run's.
type learnFlags struct {
	output, format, net string
}

func (l *learnFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.output, "output", "", "")
	fs.StringVar(&l.format, "format", "sbx", "")
	fs.StringVar(&l.net, "learn-net", "on", "")
}

// cmdLearn is `sbx learn [run flags] [--output FILE] [--format F]
// [--learn-net on|off] -- COMMAND`: the flags and settings build the
// starting policy exactly as a run builds it; learnPolicy changes it for
// the observation; the command runs once, observed (package sandbox
// fills a learn.Recorder, and the refusals arrive as records); package
// learn turns what was seen into the narrowest policy, written to
// --output (atomically) or stdout, with the report on stderr. The exit
// status is the command's; a failed command still writes the policy.
func cmdLearn(args []string, stdout, stderr io.Writer) int {
	var lf learnFlags
	f := newRunFlags(false, lf.register)
	if err := f.parse(args); err != nil {
		return fail(stderr, "%v; see 'sbx --help'", err)
	}
	if *f.help {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err := lf.check(); err != nil {
		return fail(stderr, "%v", err)
	}
	if *f.dryRun {
		return fail(stderr, "sbx learn runs the command to observe it; --dry-run shows a run's plan: use it without learn")
	}
	if f.in.SaveChanges != "" {
		return fail(stderr, "sbx learn discards every write and reports it; --save-changes is for a run: use it without learn")
	}
	if err := f.command(false); err != nil || len(f.in.Argv) == 0 {
		if err == nil || strings.HasPrefix(err.Error(), "no command given") {
			return fail(stderr, "no command given; usage: sbx learn [flags] [--output FILE] [--format sbx|srt|claude|flags] -- COMMAND [ARG...]")
		}
		return fail(stderr, "%v", err)
	}
	if err := f.context(); err != nil {
		return fail(stderr, "%v", err)
	}
	in := &f.in
	existing, err := lf.existing(in.Settings, in.Cwd)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	start, err := policy.Build(*in)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if f.shellSet {
		if err := gate(start, in.Cwd, *f.shell); err != nil {
			return fail(stderr, "%v", err)
		}
	}
	p, err := learnPolicy(*in, start, lf.net == "on")
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer policy.RemovePlaceholders(p)
	defer policy.RemovePlaceholders(start)
	rec := learn.NewRecorder()
	f.vf.extra = []violations.Sink{refusalSink{rec}}
	col, err := f.vf.open(p, args)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	code, err := startObserved(p, rec, lf.net == "on", stderr, col)
	if err != nil {
		f.vf.abort(col)
		return fail(stderr, "%v", err)
	}
	if sum := col.Close(); sum.SinkErr != nil {
		fmt.Fprintf(stderr, "sbx: writing violations: %v\n", sum.SinkErr)
	}
	if code == 125 {
		// sbx failed before the command ran: nothing was observed.
		return code
	}
	st := learn.Start{
		Policy: start, Argv: in.Argv, Environ: in.Environ, Cwd: in.Cwd, Home: in.Home,
		Existing: existing, Status: code,
	}
	replay := func(pol []string) []string { return replayLine(f.fs, args, lf, existing != nil, pol) }
	if err := writeLearned(st, rec.Observed(), lf, replay, stdout, stderr); err != nil {
		return fail(stderr, "sbx learn: %v", err)
	}
	return code
}

// check refuses a bad --format, --learn-net or --output before anything
// runs.
func (l *learnFlags) check() error {
	ok := false
	for _, f := range learn.Formats() {
		ok = ok || l.format == f
	}
	if !ok {
		return fmt.Errorf("--format %q: use %s", l.format, strings.Join(learn.Formats(), ", "))
	}
	if l.net != "on" && l.net != "off" {
		return fmt.Errorf("--learn-net %q: use on (the default) or off", l.net)
	}
	if l.output == "" {
		return nil
	}
	abs, err := filepath.Abs(l.output)
	if err != nil {
		return fmt.Errorf("--output %q: %w", l.output, err)
	}
	l.output = abs
	st, err := os.Lstat(abs)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("--output %s is a symbolic link; name the file itself (sbx learn never writes through a link)", abs)
	case err == nil && !st.Mode().IsRegular():
		return fmt.Errorf("--output %s is not a regular file; name a file", abs)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--output %s: %w", abs, err)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return fmt.Errorf("--output %s: its directory must exist", abs)
	}
	return nil
}

// existing is the bytes of the --settings file that --output names, when
// one does: sbx learn adds to that policy. nil otherwise.
func (l *learnFlags) existing(settings []string, cwd string) ([]byte, error) {
	if l.output == "" {
		return nil, nil
	}
	out, err := os.Stat(l.output)
	if err != nil {
		return nil, nil // a new file
	}
	for _, s := range settings {
		if !filepath.IsAbs(s) {
			s = filepath.Join(cwd, s)
		}
		if st, err := os.Stat(s); err == nil && os.SameFile(st, out) {
			b, err := os.ReadFile(s)
			if err != nil {
				return nil, fmt.Errorf("--output %s: %w", l.output, err)
			}
			return b, nil
		}
	}
	return nil, nil
}

// learnPolicy is the policy the observed run runs under: the start
// input with the normal view for reads (--reads all), every file call
// observed, HOME, the working directory and /var/tmp discard regions
// (--undeclared-writes discard), filtered networking unless --learn-net
// off; and then every allowWrite path moved into a discard region (a
// file's own directory), so that the host is unchanged after the run.
// Masks, protected names and managed denies are built as for the run.
func learnPolicy(in policy.Input, start *policy.Policy, learnNet bool) (*policy.Policy, error) {
	in.Reads = ""
	in.UndeclaredWrites = "discard"
	in.ObserveFiles = "all"
	if learnNet {
		if start.Network.Mode == "host" {
			return nil, errors.New("sbx learn: --net host shares the host's network unfiltered, so there is nothing to learn; drop it, or add --learn-net off")
		}
		in.NetMode = "filtered"
	}
	p, err := policy.Build(in)
	if err != nil {
		return nil, err
	}
	fs := &p.Filesystem
	if fs.Disabled {
		return nil, errors.New("sbx learn: filesystem.disabled leaves the host writable, so the run could not leave it unchanged; drop it")
	}
	regions := append([]string(nil), fs.DiscardWrites...)
	for _, w := range fs.AllowWrite {
		d := w
		if st, err := os.Stat(w); err == nil && !st.IsDir() {
			d = filepath.Dir(w)
		} else if err != nil {
			return nil, fmt.Errorf("sbx learn: allowWrite %s: %w", w, err)
		}
		if d == "/" || policy.Within(d, "/tmp") || policy.Within(d, "/proc") || policy.Within(d, "/dev") {
			return nil, fmt.Errorf("sbx learn: allowWrite %s cannot be a discard region (the sandbox has its own /tmp, /proc and /dev, and / cannot be overlaid), so writes there would reach the host; learn without it, in a project outside /tmp", w)
		}
		regions = append(regions, d)
	}
	var outer []string
	for _, d := range regions {
		inside := false
		for _, e := range regions {
			inside = inside || (e != d && policy.Within(d, e))
		}
		if !inside && !contains(outer, d) {
			outer = append(outer, d)
		}
	}
	fs.DiscardWrites, fs.AllowWrite = outer, nil
	return p, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// replayLine is the command that checks the learned policy: pol (the
// policy's flags, or nil for --settings OUTPUT --reads declared),
// --fail-on-violation, the start flags (less sbx learn's own, --reads
// and --fail-on-violation, and less the --settings FILE that --output
// added to) and the command.
func replayLine(fs *flag.FlagSet, args []string, lf learnFlags, addedTo bool, pol []string) []string {
	out := lf.output
	if out == "" {
		out = "POLICY.json" // written to stdout: saved by the caller
	}
	var start, cmd []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			cmd = args[i:]
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := fs.Lookup(name)
		takesValue := fl != nil && !isBool(fl) && !hasValue
		var val string
		if takesValue && i+1 < len(args) {
			val = args[i+1]
		}
		switch {
		case name == "c":
			cmd = []string{"-c", settingValue(a, val)}
		case name == "output" || name == "format" || name == "learn-net":
		case name == "reads" || name == "fail-on-violation":
		case name == "settings" && addedTo && sameFile(settingValue(a, val), out):
		default:
			start = append(start, a)
			if takesValue {
				start = append(start, val)
			}
		}
		if takesValue {
			i++
		}
	}
	line := []string{"sbx"}
	if pol != nil {
		line = append(line, pol...)
	} else {
		line = append(line, "--settings", out, "--reads", "declared")
	}
	line = append(line, "--fail-on-violation")
	line = append(line, start...)
	if len(cmd) > 0 && cmd[0] != "--" && cmd[0] != "-c" {
		cmd = append([]string{"--"}, cmd...)
	}
	return append(line, cmd...)
}

func isBool(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func settingValue(a, next string) string {
	if _, v, ok := strings.Cut(a, "="); ok {
		return v
	}
	return next
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// refusalSink turns each record the observed run makes into a
// learn.Refusal with the explicit flag that would grant it: what the
// command tried and the sandbox refused (a mask, a protected name, a
// managed deny, a write outside every writable place, a host the guard
// or a deny refused, a Unix socket outside the list). The discard
// overlays' records are writes the run took, not refusals.
type refusalSink struct{ rec *learn.Recorder }

func (s refusalSink) Write(r violations.Record) error {
	if r.Action == "discard" || r.Probe {
		return nil
	}
	if f, ok := refusalOf(r); ok {
		s.rec.Refuse(f)
	}
	return nil
}

func (refusalSink) Close() error { return nil }

// resolvesTo finds the refused address in a guard's reason.
var resolvesTo = regexp.MustCompile(`resolves to ([0-9a-fA-F.:]+):`)

// refusalOf is r as a refusal; false for records that are none.
func refusalOf(r violations.Record) (learn.Refusal, bool) {
	f := learn.Refusal{Kind: r.Kind, Rule: r.Rule}
	path := r.Resolved
	if path == "" {
		path = r.Path
	}
	managed := strings.Contains(r.Rule, "managed")
	switch r.Kind {
	case violations.KindFileRead:
		f.What = path
		if !managed {
			f.Grant = "--allow-read " + path
		}
	case violations.KindFileWrite:
		f.What = path
		switch {
		case managed:
		case strings.Contains(r.Rule, ".git/config"):
			f.Grant = "--allow-git-config"
		case strings.HasPrefix(r.Rule, "filesystem: writes only"):
			f.Grant = "--allow-write " + existingDir(path)
		case strings.HasPrefix(r.Rule, "denyWrite"):
			// The user's own deny: lifting it is theirs to decide.
		case strings.Contains(r.Rule, "protected"):
			// A protected name has no flag (but .git/config's).
		default:
			f.Grant = "--allow-write " + existingDir(path)
		}
	case violations.KindNetwork:
		if r.Host == "" {
			f.What = r.Detail
			break
		}
		hp := r.Host
		if r.Port != 0 {
			hp = netJoin(r.Host, r.Port)
		}
		f.What = hp
		switch {
		case managed:
		case r.Rule == "address-guard":
			if m := resolvesTo.FindStringSubmatch(r.Detail); m != nil && r.Port != 0 {
				f.Grant = "--allow-domain " + hp + " --allow-domain " + netJoin(m[1], r.Port)
			}
		case r.Rule == "default-deny" || r.Rule == "net-none":
			f.Grant = "--allow-domain " + hp
		}
	case violations.KindUnixSocket:
		f.What = path
		if path != "" && strings.HasPrefix(path, "/") && !managed {
			f.Grant = "--allow-unix-socket " + path
		}
	default:
		f.What = strings.TrimSpace(r.Syscall + " " + r.Detail)
	}
	if f.What == "" {
		return f, false
	}
	return f, true
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// existingDir is p when it is a directory on the host, else its nearest
// ancestor that is.
func existingDir(p string) string {
	for d := p; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		if d == "/" || d == "." {
			return d
		}
	}
}
