package netproxy

import "sync"

// maxOnce bounds the memory of what was reported already.
const maxOnce = 4096

// OnceSet answers "first time?" for each key, so that a refusal the
// client repeats (a lookup asks A and AAAA, often twice; a datagram is
// retried; a connection is tried on each address of a name) is one
// record. It remembers at most 4,096 keys; past that every key counts as
// new again, so a flood costs records, not memory. The zero value is
// ready.
type OnceSet[K comparable] struct {
	mu   sync.Mutex
	seen map[K]bool
}

// First reports whether k is new, and remembers it.
func (o *OnceSet[K]) First(k K) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[k] {
		return false
	}
	if o.seen == nil {
		o.seen = map[K]bool{}
	}
	if len(o.seen) < maxOnce {
		o.seen[k] = true
	}
	return true
}
