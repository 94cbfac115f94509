package policy

import "strings"

// PathSet answers "which of these paths holds p" in time proportional
// to p's depth, by walking up p's own components, whatever the size of
// the set. Settings may list tens of thousands of paths; the planners
// (policy, ns, landlock) asking it of every entry by a scan of another
// list (WithinAny) made a start quadratic: 20,000 denyRead entries took
// seconds. The paths are clean and absolute, as Build hands them over.
// The value is each path's first index in the lists it was made from.
type PathSet map[string]int

// NewPathSet is the set of the paths in lists, numbered in order.
func NewPathSet(lists ...[]string) PathSet {
	s := PathSet{}
	i := 0
	for _, l := range lists {
		for _, p := range l {
			if _, ok := s[p]; !ok {
				s[p] = i
			}
			i++
		}
	}
	return s
}

// Has reports whether p is in s.
func (s PathSet) Has(p string) bool {
	_, ok := s[p]
	return ok
}

// Deepest is the deepest path of s that holds p (p itself too, when
// self is set), or "". Deepest(p, true) != "" is WithinAny(p, list).
func (s PathSet) Deepest(p string, self bool) string {
	found := ""
	Up(p, func(a string) bool {
		if _, ok := s[a]; ok && (self || a != p) {
			found = a
			return false
		}
		return true
	})
	return found
}

// Up calls fn with p and each of its ancestors, deepest first, up to
// and including "/", until fn returns false.
func Up(p string, fn func(a string) bool) {
	for {
		if !fn(p) || p == "/" || p == "" {
			return
		}
		i := strings.LastIndexByte(p, '/')
		switch {
		case i < 0:
			return
		case i == 0:
			p = "/"
		default:
			p = p[:i]
		}
	}
}
