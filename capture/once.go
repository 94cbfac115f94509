package capture

import "sync"

// maxReported bounds the memory of what was reported already.
const maxReported = 4096

// onceSet answers "first time?" for each key, so that a refusal the
// client repeats (a lookup asks A and AAAA, often twice; a datagram is
// retried) is one record. It remembers at most maxReported keys; past
// that every key counts as new again, so a flood costs records, not
// memory. The zero value is ready.
type onceSet[K comparable] struct {
	mu   sync.Mutex
	seen map[K]bool
}

// first reports whether k is new, and remembers it.
func (o *onceSet[K]) first(k K) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[k] {
		return false
	}
	if o.seen == nil {
		o.seen = map[K]bool{}
	}
	if len(o.seen) < maxReported {
		o.seen[k] = true
	}
	return true
}
