package ns

import "github.com/sbx-sh/sbx/policy"

// The planner asks, for every path of one list, which paths of another
// list hold it: policy.PathSet answers in time proportional to the
// path's depth (a scan of the other list made the plan quadratic).

// hider answers hidden for one deny list and the lists that bring paths
// back (allowRead, the writable roots).
type hider struct{ deny, open policy.PathSet }

func newHider(deny, allow, writable []string) hider {
	return hider{deny: policy.NewPathSet(deny), open: policy.NewPathSet(allow, writable)}
}

// hidden reports whether nothing of p is in the view: p lies inside a
// denied-read path (p itself too, when self is set) that no allowRead or
// writable path inside it brings back over p. Such a path needs no mask
// of its own, and must get no bind from the host.
func (h hider) hidden(p string, self bool) bool {
	inside := h.deny.Deepest(p, self)
	if inside == "" {
		return false
	}
	back := false
	policy.Up(p, func(a string) bool {
		if a == inside {
			return false
		}
		if h.open.Has(a) && a != "/tmp" { // ("/tmp" is the private one, never the host's)
			back = true
			return false
		}
		return true
	})
	return !back
}
