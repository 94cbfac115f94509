package oracle

import "encoding/json"

// Shrink returns a smaller case for which still(c) holds: it drops
// layers, then single entries, then extra tree nodes and scalars, for as
// long as the failure persists (greedy, to a fixed point). still must
// hold for c itself.
func Shrink(c *Case, still func(*Case) bool) *Case {
	cur := clone(c)
	for changed := true; changed; {
		changed = false
		for _, cand := range smaller(cur) {
			if still(cand) {
				cur, changed = cand, true
				break
			}
		}
	}
	return cur
}

// smaller lists every case one step smaller than c, biggest steps first.
func smaller(c *Case) []*Case {
	var out []*Case
	for i := range c.Layers {
		d := clone(c)
		d.Layers = append(d.Layers[:i], d.Layers[i+1:]...)
		out = append(out, d)
	}
	if c.Claude && !hasScope(c) {
		d := clone(c)
		d.Claude, d.Cwd = false, ""
		out = append(out, d)
	}
	for i := range c.Layers {
		for _, list := range []func(*Layer) *[]string{
			func(l *Layer) *[]string { return &l.AllowRead }, func(l *Layer) *[]string { return &l.DenyRead },
			func(l *Layer) *[]string { return &l.AllowWrite }, func(l *Layer) *[]string { return &l.DenyWrite },
			func(l *Layer) *[]string { return &l.ReadDeny }, func(l *Layer) *[]string { return &l.EditDeny },
			func(l *Layer) *[]string { return &l.EditAllow }, func(l *Layer) *[]string { return &l.AddDirs },
			func(l *Layer) *[]string { return &l.Presets },
		} {
			for j := range *list(&c.Layers[i]) {
				d := clone(c)
				s := list(&d.Layers[i])
				*s = append((*s)[:j], (*s)[j+1:]...)
				out = append(out, d)
			}
		}
		for _, flag := range []func(*Layer) *bool{
			func(l *Layer) *bool { return &l.Disabled }, func(l *Layer) *bool { return &l.IgnoreViolations },
			func(l *Layer) *bool { return &l.ManagedReadOnly }, func(l *Layer) *bool { return &l.ReadsDeclared },
			func(l *Layer) *bool { return &l.InTree },
		} {
			if *flag(&c.Layers[i]) {
				d := clone(c)
				*flag(&d.Layers[i]) = false
				out = append(out, d)
			}
		}
	}
	for i := range c.Extra {
		d := clone(c)
		d.Extra = append(d.Extra[:i], d.Extra[i+1:]...)
		out = append(out, d)
	}
	if c.Cwd != "" {
		d := clone(c)
		d.Cwd = ""
		out = append(out, d)
	}
	return out
}

func hasScope(c *Case) bool {
	for _, l := range c.Layers {
		if l.Source == SrcUser || l.Source == SrcProject || l.Source == SrcLocal {
			return true
		}
	}
	return false
}

func clone(c *Case) *Case {
	b, _ := json.Marshal(c)
	var d Case
	_ = json.Unmarshal(b, &d)
	return &d
}
