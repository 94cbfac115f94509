package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Flags mean one thing. A flag that takes one value (a "scalar": every
// flag whose value is not a list) given twice is refused, as a settings
// file's duplicate key is: the last one winning silently hides a
// mistake, or an injected second value. Flags that contradict each other
// are refused too (flagConflicts). Both are decided from the flag set
// itself (onceFlags wraps every scalar once all flags are defined), so a
// flag added later is covered without a change here.

// repeatable marks a flag value that collects every use (list, fdList).
type repeatable interface{ repeatable() }

func (*list) repeatable()   {}
func (*fdList) repeatable() {}

// counted wraps a scalar flag's value and counts its uses.
type counted struct {
	flag.Value
	n int
}

func (c *counted) Set(v string) error { c.n++; return c.Value.Set(v) }

// countedBool is counted for a boolean flag, which the flag package
// recognises by IsBoolFlag.
type countedBool struct{ counted }

func (c *countedBool) IsBoolFlag() bool { return true }

// onceFlags wraps every scalar flag of fs so that parseOnce can refuse
// one given twice.
func onceFlags(fs *flag.FlagSet) {
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := fl.Value.(repeatable); ok {
			return
		}
		c := counted{Value: fl.Value}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			fl.Value = &countedBool{c}
			return
		}
		fl.Value = &c
	})
}

// scalar reports whether fl takes one value (onceFlags wrapped it).
func scalar(fl *flag.Flag) bool {
	switch fl.Value.(type) {
	case *counted, *countedBool:
		return true
	}
	return false
}

func uses(fl *flag.Flag) int {
	switch v := fl.Value.(type) {
	case *counted:
		return v.n
	case *countedBool:
		return v.n
	}
	return 0
}

// flagName is a flag as the help writes it: --name, or -c and -h.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// checkOnce refuses a scalar flag given more than once.
func checkOnce(fs *flag.FlagSet) error {
	var twice []string
	fs.Visit(func(fl *flag.Flag) {
		if scalar(fl) && uses(fl) > 1 {
			times := fmt.Sprintf("%d times", uses(fl))
			if uses(fl) == 2 {
				times = "twice"
			}
			twice = append(twice, flagName(fl.Name)+" given "+times)
		}
	})
	if len(twice) > 0 {
		return fmt.Errorf("%s; it takes one value: give it once (a list flag such as --allow-write repeats)", strings.Join(twice, ", "))
	}
	return nil
}

// flagConflict is a flag value that leaves other flags without effect.
type flagConflict struct {
	name, value string // the flag and its value ("" any)
	others      []string
	why         string // why each of others does nothing then
}

// flagConflicts are the flags that contradict each other. Under --net
// host the command uses the host's network directly: nothing filters it,
// so a domain rule, a registry, the capture, termination, the ask and
// control descriptors and published ports would all do nothing — and a
// deny rule that does nothing is a hole the user believes closed. Under
// --net none there is no proxy: the capture and the ask descriptor have
// nothing to serve (a --deny-domain there is not refused: nothing is
// reachable, as it asks). --allow-all-unix-sockets makes a list of
// allowed sockets meaningless, and --ask-timeout means nothing without
// --ask-fd. (The policy refuses more combinations, from settings files
// too: --allow-domain with --net none, --save-changes without a discard
// region, what --weaker-nested cannot do.)
var flagConflicts = []flagConflict{
	{"net", "host", []string{"allow-domain", "deny-domain", "allow-registry", "capture", "tls-terminate", "ask-fd", "ask-timeout", "control-fd", "publish"},
		"--net host gives the command the host's network unfiltered"},
	{"net", "none", []string{"capture", "ask-fd", "ask-timeout"},
		"--net none has no proxy to capture for or to ask about"},
	{"allow-all-unix-sockets", "true", []string{"allow-unix-socket"},
		"--allow-all-unix-sockets allows every socket the view reaches"},
}

// checkConflicts refuses flags that contradict each other.
func checkConflicts(fs *flag.FlagSet) error {
	set := map[string]string{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = fl.Value.String() })
	for _, c := range flagConflicts {
		v, ok := set[c.name]
		if !ok || c.value != "" && v != c.value {
			continue
		}
		for _, o := range c.others {
			if _, ok := set[o]; ok {
				given := flagName(c.name)
				if v != "true" {
					given += " " + v
				}
				return fmt.Errorf("%s and %s contradict each other: %s, so %s would do nothing; drop one of them",
					given, flagName(o), c.why, flagName(o))
			}
		}
	}
	if _, ok := set["ask-timeout"]; ok {
		if _, ok := set["ask-fd"]; !ok {
			return errors.New("--ask-timeout without --ask-fd does nothing: add --ask-fd N or drop it")
		}
	}
	return nil
}

// flagError rewrites the flag package's parse errors in sbx's terms: the
// two-dash name, and for an unknown flag the nearest known one.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		if name, _, _ = strings.Cut(name, "="); name == "" {
			return errors.New("unknown flag")
		}
		out := "unknown flag " + flagName(name)
		if near := nearestFlag(fs, name); near != "" {
			out += " (did you mean " + flagName(near) + "?)"
		}
		return errors.New(out)
	}
	// "invalid value "x" for flag -net: …", "flag needs an argument: -net"
	for _, marker := range []string{"for flag -", "argument: -", "syntax: -"} {
		if i := strings.Index(msg, marker); i >= 0 {
			j := i + len(marker)
			k := j
			for k < len(msg) && msg[k] != ':' && msg[k] != ' ' {
				k++
			}
			msg = msg[:j-1] + flagName(msg[j:k]) + msg[k:]
		}
	}
	return errors.New(msg)
}

// nearestFlag is the defined flag closest to name (by edit distance, a
// transposition counting one), or "" when none is close: at most 2 edits,
// and fewer than half of name's letters.
func nearestFlag(fs *flag.FlagSet, name string) string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	fs.VisitAll(func(fl *flag.Flag) {
		d := editDistance(strings.ToLower(name), fl.Name)
		if d <= 2 && 2*d < len(name) {
			cs = append(cs, cand{fl.Name, d})
		}
	})
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	if len(cs) == 0 {
		return ""
	}
	return cs[0].name
}

// editDistance is the optimal string alignment distance of a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// fdOne is a flag that takes one descriptor number of 3 or more.
type fdOne struct {
	set bool
	n   int
}

func (o *fdOne) String() string {
	if !o.set {
		return ""
	}
	return strconv.Itoa(o.n)
}

func (o *fdOne) Set(v string) error {
	var l fdList
	if err := l.Set(v); err != nil {
		return err
	}
	o.set, o.n = true, l[0]
	return nil
}
