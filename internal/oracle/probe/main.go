// Command probe is the policy oracle's probe: run inside a sandbox, it
// tries each access a spec file lists and prints what the kernel allowed,
// as JSON on stdout. It changes nothing but what a write or create probe
// writes (a line appended, a new empty file) and the mode of a chmod
// probe's directory.
//
// Usage: probe SPEC, where SPEC is (a file holding) a JSON array of
// {"op": "read"|"write"|"create"|"list"|"chmod", "path": "/abs/path"}
// (chmod: a directory an earlier run left closed, to 0755).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// Probe is one access to try.
type Probe struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// Result is what the kernel said.
type Result struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	OK   bool   `json:"ok"`
	Err  string `json:"err,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe SPEC.json")
		os.Exit(2)
	}
	// The spec is inline JSON (so that no file has to be visible in the
	// sandbox), or a file's name.
	data := []byte(os.Args[1])
	if !strings.HasPrefix(os.Args[1], "[") {
		var err error
		if data, err = os.ReadFile(os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(2)
		}
	}
	var probes []Probe
	if err := json.Unmarshal(data, &probes); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(2)
	}
	out := make([]Result, 0, len(probes))
	for _, p := range probes {
		err := try(p)
		r := Result{Op: p.Op, Path: p.Path, OK: err == nil}
		if err != nil {
			r.Err = errName(err)
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		os.Exit(2)
	}
}

// try performs one probe. Reads read the whole file, writes append one
// line to an existing file (never creating it), creates make a new file
// (never opening an existing one), lists read a directory's entries.
func try(p Probe) error {
	switch p.Op {
	case "read":
		f, err := os.Open(p.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	case "write":
		f, err := os.OpenFile(p.Path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString("probe\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case "create":
		f, err := os.OpenFile(p.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case "chmod":
		return os.Chmod(p.Path, 0o755)
	case "list":
		f, err := os.Open(p.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Readdirnames(-1)
		return err
	}
	return fmt.Errorf("unknown op %q", p.Op)
}

// errName is the errno's name when there is one (EACCES, EROFS, ENOENT).
func errName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EACCES:
			return "EACCES"
		case syscall.EPERM:
			return "EPERM"
		case syscall.EROFS:
			return "EROFS"
		case syscall.ENOENT:
			return "ENOENT"
		case syscall.EEXIST:
			return "EEXIST"
		case syscall.ENOTDIR:
			return "ENOTDIR"
		case syscall.EISDIR:
			return "EISDIR"
		}
		return errno.Error()
	}
	return err.Error()
}
