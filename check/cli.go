package check

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// Exit codes of [Main].
const (
	ExitOK       = 0   // acceptable: nothing printed
	ExitRefused  = 1   // refused: the findings printed on stdout
	ExitBadInput = 125 // bad input to sbx itself: one line on stderr
)

const usage = `usage:
  sbx check [--settings FILE] [--root DIR] [--json] [--env KEY=VALUE]... [--cwd DIR] -- 'COMMAND STRING'
  sbx check [--json] [--verb add|remove] --name NAME --confirm 'ADD NAME'

Checks COMMAND STRING (and the task environment and working directory, when
given) against the command gate configured by the "commands" section of the
settings file. Exit 0 with nothing on stdout when acceptable; exit 1 with one
reason a line (a JSON array with --json) when not; exit 125 on bad input.

With --confirm, checks a confirmation string instead: exit 0 iff it is
exactly "ADD NAME" (--verb add) or "REMOVE NAME" (--verb remove).

flags:
  --settings FILE  settings JSON; reads "commands" or "sandbox.commands"
  --root DIR       directory paths must stay in (default: working directory)
  --json           print findings as a JSON array of {rule, token, position, message}
  --env KEY=VALUE  an environment variable the task sets (repeatable)
  --cwd DIR        the task's working directory, relative to --root or absolute
  --verb VERB      add or remove (with --confirm)
  --name NAME      the name being added or removed (with --confirm)
  --confirm TEXT   the confirmation string to verify
`

// envFlag collects repeated --env KEY=VALUE flags.
type envFlag map[string]string

func (e envFlag) String() string { return "" }

func (e envFlag) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q: want KEY=VALUE", kv)
	}
	if _, dup := e[k]; dup {
		return fmt.Errorf("%q: %s given twice", kv, k)
	}
	e[k] = v
	return nil
}

// cliArgs are the parsed arguments of `sbx check`.
type cliArgs struct {
	settings, root, cwd string
	verb, name, confirm string
	json                bool
	env                 envFlag
	set                 map[string]bool // flags given
	rest                []string        // positional arguments
}

// Main implements `sbx check`; args are the arguments after "check". It
// returns the exit code: [ExitOK], [ExitRefused] or [ExitBadInput].
func Main(args []string, stdout, stderr io.Writer) int {
	a, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "sbx check: %s\n", oneLine(err.Error()))
		return ExitBadInput
	}
	findings, err := run(a)
	if err != nil {
		fmt.Fprintf(stderr, "sbx check: %s\n", oneLine(err.Error()))
		return ExitBadInput
	}
	if len(findings) == 0 {
		return ExitOK
	}
	if err := report(stdout, findings, a.json); err != nil {
		fmt.Fprintf(stderr, "sbx check: writing findings: %s\n", oneLine(err.Error()))
		return ExitBadInput
	}
	return ExitRefused
}

// parseArgs parses and validates the command line; errors say what to do.
func parseArgs(args []string) (cliArgs, error) {
	a := cliArgs{env: envFlag{}, set: map[string]bool{}}
	fs := flag.NewFlagSet("sbx check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.settings, "settings", "", "")
	fs.StringVar(&a.root, "root", "", "")
	fs.StringVar(&a.cwd, "cwd", "", "")
	fs.StringVar(&a.verb, "verb", "", "")
	fs.StringVar(&a.name, "name", "", "")
	fs.StringVar(&a.confirm, "confirm", "", "")
	fs.BoolVar(&a.json, "json", false, "")
	fs.Var(a.env, "env", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return a, err
		}
		return a, fmt.Errorf("%w; run 'sbx check -h' for usage", err)
	}
	fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	a.rest = fs.Args()

	if a.set["confirm"] || a.set["verb"] || a.set["name"] {
		switch {
		case !a.set["confirm"] || !a.set["name"]:
			return a, errors.New("--confirm and --name go together (--verb is optional); give both")
		case len(a.rest) > 0 || a.set["env"] || a.set["cwd"]:
			return a, errors.New("--confirm checks a confirmation string only; drop the COMMAND STRING, --env and --cwd")
		}
		return a, nil
	}
	switch len(a.rest) {
	case 0:
		return a, errors.New("missing COMMAND STRING; usage: sbx check [flags] -- 'COMMAND STRING'")
	case 1:
	default:
		return a, fmt.Errorf("want one COMMAND STRING after --, got %d arguments; quote the whole command", len(a.rest))
	}
	if a.set["root"] {
		if err := checkRootDir(a.root); err != nil {
			return a, fmt.Errorf("--root %q: %w; pass an existing directory", a.root, err)
		}
	}
	return a, nil
}

// run performs the checks; an error means bad input.
func run(a cliArgs) ([]Finding, error) {
	if a.set["confirm"] {
		verb := a.verb
		if verb == "" {
			// No --verb: the string names it, and must still be exact.
			verb = VerbAdd
			if strings.HasPrefix(a.confirm, "REMOVE ") {
				verb = VerbRemove
			}
		}
		findings, err := CheckConfirm(verb, a.name, a.confirm)
		if err != nil {
			return nil, fmt.Errorf("--verb/--name: %w", err)
		}
		return findings, nil
	}
	cfg := Default()
	if a.set["settings"] {
		var err error
		if cfg, err = LoadFile(a.settings); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("--settings: %w; check the path", err)
			}
			return nil, fmt.Errorf("--settings: %w; fix the file or leave --settings out for the defaults", err)
		}
	}
	findings := cfg.Check(a.root, a.rest[0])
	findings = append(findings, CheckEnv(a.env)...)
	findings = append(findings, CheckCwd(a.root, a.cwd)...)
	return findings, nil
}

// report prints findings one a line, or as a JSON array.
func report(w io.Writer, findings []Finding, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(findings); err != nil {
			return fmt.Errorf("encoding JSON: %w", err)
		}
		return nil
	}
	for _, f := range findings {
		if _, err := fmt.Fprintln(w, oneLine(f.String())); err != nil {
			return err
		}
	}
	return nil
}

// oneLine escapes line breaks so that each reason stays on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}
