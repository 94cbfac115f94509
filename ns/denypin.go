package ns

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// denyWriteOps protects the denyWrite entries inside a place that takes
// writes (a writable root or a discard region) the way protected names
// are protected:
//
//   - one that does not exist yet is pinned at its first missing
//     component, with a stub (see stub_linux.go): a missing .env is
//     stubbed as an empty read-only file, a missing x of x/y/.env as an
//     empty read-only directory, so the command can create it neither by
//     open, rename, link nor mkdir; the stub is gone after the run;
//   - the directories between the writable root and the entry (or its
//     stub) are pinned, so that a rename of a parent cannot carry the
//     protection away and let the name be made anew.
//
// An existing entry is bound read-only by PlanMounts itself. readOnly
// are the paths bound read-only already (existing denyWrite entries and
// protected names): nothing inside one that lies in the entry's writable
// root needs, or gets, a stub.
func denyWriteOps(denyWrite, takesWrites, readOnly []string) []Op {
	var ops []Op
	roots, ro := policy.NewPathSet(takesWrites), policy.NewPathSet(readOnly)
	for _, d := range denyWrite {
		root := roots.Deepest(d, true)
		if root == "" || root == d || insideOther(d, root, ro) {
			continue
		}
		at, dir, ok := firstMissing(root, d)
		if !ok {
			continue // a file on the way: nothing can be made below it
		}
		if at != "" {
			why := "denyWrite " + d + " (missing)"
			if at != d {
				why = "denyWrite " + d + " (missing from here)"
			}
			ops = append(ops, Op{Kind: OpStub, Path: at, Dir: dir, Why: why, Protected: true})
		} else {
			at = d
		}
		for p := filepath.Dir(at); p != root && policy.Within(p, root); p = filepath.Dir(p) {
			ops = append(ops, Op{Kind: OpPin, Path: p, Dir: true, Why: "ancestor of denyWrite " + d})
		}
	}
	return ops
}

// deepestRoot is the deepest of roots that holds p, or "".
func deepestRoot(p string, roots []string) string {
	best := ""
	for _, r := range roots {
		if policy.Within(p, r) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// firstMissing walks from root (which exists) down to p: at is the first
// component that does not exist ("" when p exists), dir whether it stands
// for a directory (p lies below it). ok is false when a component on the
// way is not a directory, or cannot be examined.
func firstMissing(root, p string) (at string, dir, ok bool) {
	steps := stepsBelow(root, p)
	for i, cur := range steps {
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return cur, i < len(steps)-1, true
		case err != nil:
			return "", false, false
		case i < len(steps)-1 && !st.IsDir():
			return "", false, false
		}
	}
	return "", false, true
}

// stepsBelow are the paths from root down to p (which lies in root), one
// a component below root: for /a, /a/b/c: /a/b, /a/b/c.
func stepsBelow(root, p string) []string {
	rest := strings.TrimPrefix(p, root+"/")
	if root == "/" {
		rest = strings.TrimPrefix(p, "/")
	}
	var out []string
	cur := root
	for _, c := range strings.Split(rest, "/") {
		cur = filepath.Join(cur, c)
		out = append(out, cur)
	}
	return out
}

// insideOther reports whether p lies strictly inside one of paths that
// lies inside root (a read-only bind above root is overridden by root's).
func insideOther(p, root string, paths policy.PathSet) bool {
	inside := false
	policy.Up(p, func(q string) bool {
		if q == root {
			return false
		}
		if q != p && paths.Has(q) {
			inside = true
			return false
		}
		return true
	})
	return inside && policy.Within(p, root)
}
