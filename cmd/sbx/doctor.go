package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/sbx-sh/sbx/doctor"
	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/sandbox"
	"github.com/sbx-sh/sbx/seccomp"
)

// cmdVersion prints one line: the version and commit (from -ldflags -X,
// else from the build information the go command stamped in), the digest
// of the embedded seccomp programs, the toolchain and platform, and what
// doctor.Probe reports of seccomp and Landlock — without its user
// namespace probe, which starts a process.
func cmdVersion(w io.Writer) int {
	v, c := version, commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version // go install …@v1.2.3, or a build in a git checkout
		}
		if c == "" {
			modified := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					c = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if c != "" && modified {
				c += "-dirty"
			}
		}
		if c == "" {
			// A pseudo-version (go install …@COMMIT or @master) ends with
			// the commit's first 12 hex digits: vX.Y.Z-[pre.0.]YYYYMMDDhhmmss-abcdef123456.
			p := strings.Split(strings.SplitN(bi.Main.Version, "+", 2)[0], "-")
			if n := len(p); n >= 3 && len(p[n-1]) == 12 && strings.Trim(p[n-1], "0123456789abcdef") == "" &&
				len(p[n-2]) >= 14 && strings.Trim(p[n-2][len(p[n-2])-14:], "0123456789") == "" {
				c = p[n-1]
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	digest := seccomp.Digest()
	if len(digest) > 12 {
		digest = digest[:12]
	}
	lib := "none"
	if runtime.GOOS == "linux" {
		if _, err := seccomp.Compile(seccomp.Config{}); err != nil {
			lib = err.Error()
		} else {
			lib = "built in, compiled with libseccomp " + seccomp.LibraryVersion()
		}
	}
	fmt.Fprintf(w, "sbx %s (commit %s, seccomp %s; %s, %s/%s; %s; landlock ABI %d)\n",
		v, c, digest, runtime.Version(), runtime.GOOS, runtime.GOARCH, lib, landlock.ABI())
	return 0
}

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	fix := fs.Bool("fix", false, "")
	yes := fs.Bool("yes", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || (*yes && !*fix) || (*fix && *asJSON) {
		return fail(stderr, "usage: sbx doctor [--json | --fix [--yes]]")
	}
	r := doctor.Probe()
	if *fix {
		return doctorFix(r.Diagnosis, fixer{exe: realExe(), env: os.Environ(), yes: *yes, stdout: stdout, stderr: stderr})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			doctor.Report
			Limits []string `json:"limits"`
		}{r, sandbox.LimitMechanisms()})
		return 0
	}
	writeDoctor(stdout, r)
	writeLimits(stdout)
	return 0
}
