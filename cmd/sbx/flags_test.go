package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs sbx in this process (a flag error ends it before anything
// starts) and returns the exit status and stderr.
func runIn(args ...string) (int, string) {
	var out, errb strings.Builder
	code := run(args, &out, &errb)
	return code, errb.String()
}

// sampleValue is a value fl's own Set accepts ("" for a boolean flag).
func sampleValue(t *testing.T, profile bool, name string) string {
	t.Helper()
	fl := newRunFlags(profile).fs.Lookup(name)
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	for _, v := range []string{"none", "on", "1s", "3", "8080", "darwin", "all", "writes", "refuse", "/x", "x.test", "64M"} {
		if newRunFlags(profile).fs.Lookup(name).Value.Set(v) == nil {
			return v
		}
	}
	t.Fatalf("no sample value for --%s", name)
	return ""
}

// flagArgs is name given once with value (none for a boolean flag).
func flagArgs(name, value string) []string {
	if value == "" {
		return []string{flagName(name)}
	}
	return []string{flagName(name), value}
}

func oneLine125(t *testing.T, args []string, code int, stderr string, want ...string) {
	t.Helper()
	if code != 125 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("%q: want exit 125 and one line, got %d %q", args, code, stderr)
		return
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%q: want %q in %q", args, w, stderr)
		}
	}
}

// TestScalarFlagTwice: every flag that takes one value, found in the
// flag set itself (so a flag added later is covered), given twice is exit
// 125 with one line naming it, as a settings file's duplicate key is; a
// list flag given twice is not refused for it.
func TestScalarFlagTwice(t *testing.T) {
	for _, profile := range []bool{false, true} {
		scalars, lists := 0, 0
		newRunFlags(profile).fs.VisitAll(func(fl *flag.Flag) {
			v := sampleValue(t, profile, fl.Name)
			once := flagArgs(fl.Name, v)
			args := append(append([]string{}, once...), once...)
			if profile {
				args = append([]string{"profile"}, args...)
			} else if fl.Name != "dry-run" {
				args = append(args, "--dry-run", "--", "true")
			} else {
				args = append(args, "--", "true")
			}
			code, stderr := runIn(args...)
			if scalar(fl) {
				scalars++
				oneLine125(t, args, code, stderr, flagName(fl.Name)+" given twice")
				return
			}
			lists++
			if strings.Contains(stderr, "given twice") {
				t.Errorf("%q: a list flag refused as given twice: %q", args, stderr)
			}
		})
		if scalars < 25 || lists < 15 {
			t.Fatalf("profile=%v: %d scalar and %d list flags found: the flag set was not read", profile, scalars, lists)
		}
	}
	// The same value twice is refused too (as a settings file refuses a
	// duplicate key whatever its value); a list keeps both.
	args := []string{"--violations", "a.jsonl", "--violations", "b.jsonl", "--", "true"}
	code, stderr := runIn(args...)
	oneLine125(t, args, code, stderr, "--violations given twice")
	code, stderr = runIn("--allow-domain", "a.test", "--allow-domain", "b.test", "--dry-run", "--", "true")
	if code != 0 {
		t.Errorf("two --allow-domain: exit %d %q", code, stderr)
	}
}

// TestFlagConflicts: flags that contradict each other are exit 125 with
// one line naming both; the combinations that do mean something run.
func TestFlagConflicts(t *testing.T) {
	n := 0
	for _, c := range flagConflicts {
		for _, o := range c.others {
			n++
			args := append(flagArgs(c.name, strings.TrimSuffix(c.value, "true")), flagArgs(o, sampleValue(t, false, o))...)
			args = append(args, "--dry-run", "--", "true")
			code, stderr := runIn(args...)
			oneLine125(t, args, code, stderr, flagName(c.name), flagName(o), "contradict", "drop one of them")
		}
	}
	if n < 12 {
		t.Fatalf("only %d conflicts", n)
	}
	for _, args := range [][]string{
		{"--net", "host", "--allow-domain", "x.test"},
		{"--net", "host", "--deny-domain", "x.test"},
		{"--net", "host", "--allow-registry", "npm"},
		{"--net", "host", "--capture", "off"},
		{"--net", "none", "--capture", "on"},
		{"--ask-timeout", "5s"},
		{"--allow-all-unix-sockets", "--allow-unix-socket", "/run/x.sock"},
	} {
		code, stderr := runIn(append(args, "--dry-run", "--", "true")...)
		oneLine125(t, args, code, stderr)
	}
	for _, args := range [][]string{
		{"--net", "filtered", "--allow-domain", "x.test", "--capture", "off"},
		{"--net", "none", "--deny-domain", "x.test"}, // nothing is reachable, as it asks
		{"--net", "host"},
		{"--allow-all-unix-sockets=false", "--allow-unix-socket", "/run/x.sock"},
	} {
		if code, stderr := runIn(append(args, "--dry-run", "--", "true")...); code != 0 {
			t.Errorf("%q: want it to run, got %d %q", args, code, stderr)
		}
	}
	// A settings file's deny, or any managed network rule, would not
	// hold on the host's network either.
	dir := t.TempDir()
	deny := filepath.Join(dir, "deny.json")
	os.WriteFile(deny, []byte(`{"filesystem": {}, "network": {"deniedDomains": ["x.test"]}}`), 0o644)
	for _, args := range [][]string{
		{"--net", "host", "--settings", deny},
		{"--net", "host", "--managed-settings", deny},
	} {
		code, stderr := runIn(append(args, "--", "true")...)
		oneLine125(t, args, code, stderr, "deniedDomains x.test", "drop --net host")
	}
}

// TestFlagErrors: a mistyped flag is named with two dashes and the
// nearest real one; the flag package's other errors name flags with two
// dashes too.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		arg, want, without string
	}{
		{"--allow-wrte", "unknown flag --allow-wrte (did you mean --allow-write?)", ""},
		{"-allow-wrte", "unknown flag --allow-wrte (did you mean --allow-write?)", ""},
		{"--allow-domian", "(did you mean --allow-domain?)", ""},
		{"--violation", "(did you mean --violations?)", ""},
		{"--obsrve-files=writes", "unknown flag --obsrve-files (did you mean --observe-files?)", ""},
		{"--Allow-Write", "(did you mean --allow-write?)", ""},
		{"--xyzzy", "unknown flag --xyzzy", "did you mean"},
		{"--ne", "unknown flag --ne", "did you mean"},
	} {
		args := []string{c.arg, "x", "--", "true"}
		code, stderr := runIn(args...)
		oneLine125(t, args, code, stderr, c.want)
		if strings.Contains(stderr, " -"+strings.TrimLeft(c.arg, "-")) {
			t.Errorf("%q: a one-dash name in %q", c.arg, stderr)
		}
		if c.without != "" && strings.Contains(stderr, c.without) {
			t.Errorf("%q: %q should not be in %q", c.arg, c.without, stderr)
		}
	}
	args := []string{"--keep-fd", "x", "--", "true"}
	code, stderr := runIn(args...)
	oneLine125(t, args, code, stderr, "for flag --keep-fd")
	args = []string{"--ask-timeout", "soon", "--", "true"}
	code, stderr = runIn(args...)
	oneLine125(t, args, code, stderr, "for flag --ask-timeout")
}
