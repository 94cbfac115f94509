package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Grants and symlinks.
//
// A grant (allowRead, allowWrite, discardWrites, from any source) is
// resolved through symlinks before use, so a link can make a grant mean
// more than its text says. Two rules keep paths meaning what they say:
//
//   - a grant whose literal path crosses a symlink that lies inside the
//     working tree and points outside it is refused (one line naming the
//     link and its target); when a Claude Code rule, a preset or a glob
//     produced it, it is skipped with a note. A checkout is the
//     repository's: whoever can push a branch can plant a link there.
//   - a built-in credential mask (DefaultDenyRead) is re-opened only by a
//     grant whose literal path is the mask or lies inside it; one that
//     reaches the mask through a symlink is dropped with a note.

// grantLog records, while the grant lists are resolved, the literal
// paths each resolved grant came from.
type grantLog struct {
	// trees are the working trees, resolved: the working directory and,
	// with --claude-settings DIR, DIR.
	trees []string
	// lits maps a list's key, then a resolved path, to the literal
	// (absolute, cleaned, unresolved) paths that gave it.
	lits map[string]map[string][]string
	// trusted is lits for the entries of trusted sources only (see
	// trust.go): which grants the user, not a repository, spelled.
	trusted map[string]map[string][]string
	// managed is lits for the managed layer's entries only.
	managed map[string]map[string][]string
	// scopes maps a list's key, then a resolved path, to the
	// directories whose untrusted Claude Code project scopes granted it
	// (see ClaudeProject).
	scopes map[string]map[string][]string
}

func newGrantLog(dirs ...string) *grantLog {
	g := &grantLog{lits: map[string]map[string][]string{}, trusted: map[string]map[string][]string{}, managed: map[string]map[string][]string{}, scopes: map[string]map[string][]string{}}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		g.trees = append(g.trees, filepath.Clean(d))
	}
	return g
}

func (g *grantLog) record(key, real, lit string, trusted, managed bool) {
	add := func(lits map[string]map[string][]string) {
		m := lits[key]
		if m == nil {
			m = map[string][]string{}
			lits[key] = m
		}
		m[real] = append(m[real], lit)
	}
	add(g.lits)
	if trusted {
		add(g.trusted)
	}
	if managed {
		add(g.managed)
	}
}

// linkOut is a symlink inside the working tree that points outside it.
type linkOut struct{ link, target string }

func (l *linkOut) Error() string {
	return fmt.Sprintf("it crosses the symlink %s, which lies in the working tree and points outside it, to %s; name the target itself if you mean it", l.link, l.target)
}

// check walks the literal path lit (absolute, clean) that resolved to
// real, and returns a *linkOut for the first symlink on the way that
// lies inside the working tree and points outside it.
func (g *grantLog) check(lit, real string) error {
	if lit == real {
		return nil // no symlink on the way
	}
	cur := "/"
	comps := strings.Split(strings.TrimPrefix(lit, "/"), "/")
	for _, c := range comps {
		if c == "" {
			continue
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
			return nil // the rest does not exist: no more links
		}
		if err != nil {
			return nil // Resolve reported what it could; nothing to add
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, _, err := Resolve(next)
		if err != nil {
			return nil
		}
		for _, t := range g.trees {
			if Within(next, t) && !Within(target, t) {
				return &linkOut{link: next, target: target}
			}
		}
		cur = target
	}
	return nil
}

// grant is called by resolver.all for each grant entry (or glob match)
// lit, resolved to real: it refuses or skips (skip true, with a note) a
// link out of the working tree, else records the literal path.
func (r resolver) grant(key string, e pathEntry, lit, real string, fromGlob bool) (skip bool, err error) {
	g := r.grants
	if g == nil {
		return false, nil
	}
	if err := g.check(lit, real); err != nil {
		switch {
		case fromGlob:
			r.note(fmt.Sprintf("%s %q: match %s skipped: %v", key, e.path, lit, err))
			return true, nil
		case e.optional:
			r.note(fmt.Sprintf("%s %s (from %s) skipped: %v", key, e.path, e.from, err))
			return true, nil
		}
		return false, fmt.Errorf("%s %q: %w", key, e.path, err)
	}
	g.record(key, real, lit, !e.untrusted, e.managed)
	if e.untrusted && e.scope != "" {
		m := g.scopes[key]
		if m == nil {
			m = map[string][]string{}
			g.scopes[key] = m
		}
		m[real] = append(m[real], e.scope)
	}
	return false, nil
}

// maskLiterals maps each built-in credential mask in masks (resolved) to
// its literal paths, under each of homes.
func maskLiterals(masks []string, homes ...string) map[string][]string {
	in := map[string]bool{}
	for _, m := range masks {
		in[m] = true
	}
	out := map[string][]string{}
	seen := map[string]bool{}
	add := func(lit string) {
		lit = filepath.Clean(lit)
		if seen[lit] {
			return
		}
		seen[lit] = true
		if real, _, err := Resolve(lit); err == nil && in[real] {
			out[real] = append(out[real], lit)
		}
	}
	for _, d := range DefaultDenyRead {
		if !strings.HasPrefix(d, "~/") {
			add(d)
			continue
		}
		for _, h := range homes {
			if h != "" && filepath.IsAbs(h) {
				add(filepath.Join(h, d[2:]))
			}
		}
	}
	return out
}

// dropMaskedThroughLinks removes from the grant lists every entry that
// lies in a built-in mask (masks, resolved) but reached it only through
// a symlink: no literal path it came from is the mask or lies inside it
// (under any spelling of the mask: the literal one, or the resolved one).
func (g *grantLog) dropMaskedThroughLinks(lists map[string]*[]string, masks []string, homes []string, notes *[]string) {
	if g == nil {
		return
	}
	spell := maskSpellings(masks, homes)
	for _, key := range []string{"allowRead", "allowWrite", "discardWrites"} {
		list := lists[key]
		if list == nil {
			continue
		}
		kept := (*list)[:0]
		for _, a := range *list {
			if m := g.throughLink(key, a, masks, spell); m != "" {
				*notes = append(*notes, fmt.Sprintf("%s %s reaches the built-in credential mask %s through a symlink (from %s): dropped; re-opening a credential mask takes its literal path", key, a, m, strings.Join(g.lits[key][a], ", ")))
				continue
			}
			kept = append(kept, a)
		}
		*list = kept
	}
}

// throughLink returns the mask the grant a (resolved, of list key) lies
// in without any of its literal paths lying in that mask's, or "".
func (g *grantLog) throughLink(key, a string, masks []string, maskLits func() map[string][]string) string {
	from, ok := g.lits[key][a]
	if !ok {
		return "" // not from an entry (undeclared regions): nothing to judge
	}
	for _, m := range masks {
		if !Within(a, m) {
			continue
		}
		direct := true
		for _, l := range from {
			direct = direct && Within(l, m)
		}
		if direct {
			continue // every literal path lies in the mask itself
		}
		spellings := append([]string{m}, maskLits()[m]...)
		literal := false
		for _, l := range from {
			for _, s := range spellings {
				literal = literal || Within(l, s)
			}
		}
		if !literal {
			return m
		}
	}
	return ""
}

// dropUnmanagedIn returns list without the grants of key that lie inside
// one of denied (and not at it; "/", strict reads, aside) and that no
// managed entry spelled, with a note each (allowManagedReadPathsOnly).
func (g *grantLog) dropUnmanagedIn(key string, list, denied []string, notes *[]string) []string {
	if g == nil {
		return list
	}
	var kept []string
	for _, a := range list {
		drop := ""
		for _, d := range denied {
			if d != a && d != "/" && Within(a, d) && len(g.managed[key][a]) == 0 {
				drop = d
			}
		}
		if drop != "" {
			*notes = append(*notes, fmt.Sprintf("allowManagedReadPathsOnly: %s %s dropped: it would re-open %s for reading, which only the managed settings may", key, a, drop))
			continue
		}
		kept = append(kept, a)
	}
	return kept
}

// maskSpellings returns maskLiterals(masks, homes...), made on its first
// call only: the masks' other spellings cost a walk of every built-in
// location (some 50 lstats of HOME), needed only when a grant lies in a
// mask by a literal path outside it, which takes a symlink.
func maskSpellings(masks, homes []string) func() map[string][]string {
	var lits map[string][]string
	return func() map[string][]string {
		if lits == nil {
			lits = maskLiterals(masks, homes...)
		}
		return lits
	}
}

// userGranted reports whether a trusted source (see trust.go) spelled
// the grant a of key in a way the masks keep: it has a trusted literal
// path, and they do not all reach one of masks only through a symlink
// (dropMaskedThroughLinks would drop such a grant were it the only one).
func (g *grantLog) userGranted(key, a string, masks []string, spell func() map[string][]string) bool {
	tl := g.trusted[key][a]
	if len(tl) == 0 {
		return false
	}
	tg := &grantLog{lits: map[string]map[string][]string{key: {a: tl}}}
	return tg.throughLink(key, a, masks, spell) == ""
}
