//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sbx-sh/sbx/seccomp"
)

// createdCalls are the calls the filter notifies under Notify whatever
// their arguments (seccomp.Config.Notify): those, other than an open,
// that put a new entry in a directory.
var createdCalls = map[string]bool{
	"mkdir": true, "mkdirat": true, "mknod": true, "mknodat": true,
	"rename": true, "renameat": true, "renameat2": true,
	"link": true, "linkat": true, "symlink": true, "symlinkat": true,
}

// createdMax bounds how many entries a run's notes hold. A command that
// makes more leaves the after-run check unable to follow each one: it
// says so, as a violation record.
const createdMax = 1 << 16

// createdNotes are where the command made directory entries, from the
// notified calls: the after-run check looks there, and only there, below
// the top level of the writable places, so its cost follows what the
// command did, not the size of the tree.
type createdNotes struct {
	mu       sync.Mutex
	fi       *seccomp.FileInspector
	paths    map[string]bool // path → made by mkdir (its contents are new)
	overflow bool
}

// createdEntry is one noted entry: its path in the command's view (the
// host's, for a writable root, which is bound at its own path) and
// whether a mkdir made it.
type createdEntry struct {
	path string
	dir  bool
}

func newCreatedNotes() *createdNotes {
	return &createdNotes{fi: seccomp.NewFileInspector(), paths: map[string]bool{}}
}

// note records the new names of r, a notified created-entry call, looked
// up through fi (the observer's, when --observe-files has one). A name
// that exists already is left out when the call would only fail on it
// (EEXIST); a rename's new name is kept: it replaces what was there.
func (c *createdNotes) note(r *seccomp.Request, fi *seccomp.FileInspector) {
	if fi == nil {
		fi = c.fi
	}
	fc, ok, err := fi.Inspect(r)
	if !ok || err != nil {
		return
	}
	mkdir := strings.HasPrefix(fc.Syscall, "mkdir")
	for _, n := range fc.Names {
		if n.Effect != seccomp.EffectCreate && n.Effect != seccomp.EffectReplace {
			continue
		}
		p := n.Resolved
		if p == "" {
			p = n.Abs
		}
		if p == "" || p[0] != '/' {
			continue
		}
		p = filepath.Clean(p)
		if n.Effect == seccomp.EffectCreate {
			if _, err := os.Lstat(p); err == nil {
				continue
			}
		}
		c.mu.Lock()
		if _, seen := c.paths[p]; !seen && len(c.paths) >= createdMax {
			c.overflow = true
		} else {
			c.paths[p] = c.paths[p] || mkdir
		}
		c.mu.Unlock()
	}
}

// list is the notes in path order (a parent before what is below it),
// and whether some were dropped.
func (c *createdNotes) list() ([]createdEntry, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]createdEntry, 0, len(c.paths))
	for p, d := range c.paths {
		out = append(out, createdEntry{p, d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, c.overflow
}

func (c *createdNotes) close() {
	if c != nil {
		c.fi.Close()
	}
}

// createdList is the notes of ns (nil: no control side).
func (ns *ctlSide) createdList() ([]createdEntry, bool) {
	if ns == nil {
		return nil, false
	}
	return ns.created.list()
}
