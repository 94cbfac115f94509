package learn

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/sbx-sh/sbx/policy"
)

// collapse is the collapsing rule (docs/learn.md): each path of set
// becomes its highest ancestor D such that every ancestor from the path
// up to D is covered; a directory is covered when may allows it, the
// command touched it or something in it, and every entry in it on the
// host is covered in turn (a file or link: touched; a link also when its
// target is covered; an empty directory: touched itself). In a
// directory of set (one the command listed), an entry that have says
// the policy shows anyway (the start policy's grants, the learned
// writes) is covered too: naming the directory shows nothing new there,
// and the listing needs it named. With whole,
// a directory in set is a grant of all of it (a directory that must be
// writable) and covered as it is. A directory of set that is not
// covered is returned in open rather than granted: granting it would
// show entries the command never touched.
//
// Only the host is read (Lstat, directory names), and every result is
// sorted: the same set on the same host gives the same lists.
func collapse(set map[string]bool, may, have func(string) bool, whole, allowGitConfig bool) (grants, open []string) {
	anc := map[string]bool{}
	for p := range set {
		for q := filepath.Dir(p); !anc[q]; q = filepath.Dir(q) {
			anc[q] = true
			if q == "/" {
				break
			}
		}
	}
	memo := map[string]bool{}
	var covered func(p string) bool
	covered = func(p string) bool {
		if v, ok := memo[p]; ok {
			return v
		}
		memo[p] = false // a link cycle ends here
		st, err := os.Lstat(p)
		v := false
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			v = set[p]
			if t, err := filepath.EvalSymlinks(p); !v && err == nil && t != p {
				v = set[t] || covered(t)
			}
		case !st.IsDir():
			v = set[p]
		case whole && set[p]:
			v = true
		case !set[p] && !anc[p]:
		case !may(p), whole && policy.ProtectedRoot(p, allowGitConfig) != "":
		default:
			names, err := readNames(p)
			if err != nil {
				break
			}
			v = len(names) > 0 || set[p]
			for _, n := range names {
				e := filepath.Join(p, n)
				if !covered(e) && !(set[p] && have != nil && have(e)) {
					v = false
					break
				}
			}
		}
		memo[p] = v
		return v
	}
	keys := make([]string, 0, len(set))
	for p := range set {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		g := p
		for q := filepath.Dir(p); q != "/" && covered(q); q = filepath.Dir(q) {
			g = q
		}
		if g == p && !covered(p) {
			if st, err := os.Lstat(p); err == nil && st.IsDir() {
				open = append(open, p)
				continue
			}
		}
		grants = append(grants, g)
	}
	return outermost(grants), outermost(open)
}

// outermost sorts ps and drops every entry that lies within another.
func outermost(ps []string) []string {
	sort.Strings(ps)
	var out []string
	for _, p := range ps {
		if len(out) > 0 && policy.Within(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
