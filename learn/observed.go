package learn

import (
	"sort"
	"sync"
)

// Access is how the command touched a path: a set of bits.
type Access uint16

const (
	// Read: opened for reading, mapped, or read as a link.
	Read Access = 1 << iota
	// Stat: looked up without being opened (stat, access, readlink of a
	// parent's entry).
	Stat
	// List: opened as a directory (its entries' names were read).
	List
	// Exec: executed.
	Exec
	// Write: opened for writing, truncated, or changed in place.
	Write
	// Create: created by the command (it was not there before).
	Create
	// Remove: removed, or renamed away.
	Remove
	// Connect: a Unix socket the command connected to.
	Connect
	// Dir: the path is a directory (with Create: the command made it
	// with mkdir). Without it, a created path with nothing observed
	// below it is taken to be a file.
	Dir
)

// Refusal is one thing the observed run refused and learning must not
// grant: a masked credential, a protected name, a managed deny, a host
// the resolved-address guard refused.
type Refusal struct {
	Kind  string `json:"kind"`            // violations.Kind*: file-read, file-write, network, unix-socket, ...
	What  string `json:"what"`            // the path, or host:port
	Rule  string `json:"rule,omitempty"`  // the rule that refused it
	Grant string `json:"grant,omitempty"` // the explicit flag that would grant it; "" when none can
}

// Recorder collects one run's observations. It is safe for concurrent
// use; the zero value is not: use NewRecorder.
type Recorder struct {
	mu      sync.Mutex
	paths   map[string]Access
	hosts   map[string]bool
	refused map[Refusal]bool
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{paths: map[string]Access{}, hosts: map[string]bool{}, refused: map[Refusal]bool{}}
}

// Path notes that the command touched the absolute host path p (as the
// kernel resolved it) with a.
func (r *Recorder) Path(p string, a Access) {
	if r == nil || p == "" {
		return
	}
	r.mu.Lock()
	r.paths[p] |= a
	r.mu.Unlock()
}

// Host notes a host:port the command reached (or asked for) through the
// proxy or the capture and learning let through.
func (r *Recorder) Host(hostport string) {
	if r == nil || hostport == "" {
		return
	}
	r.mu.Lock()
	r.hosts[hostport] = true
	r.mu.Unlock()
}

// Refuse notes something the run refused that learning does not grant.
func (r *Recorder) Refuse(f Refusal) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.refused[f] = true
	r.mu.Unlock()
}

// Observed is what one run saw, in a stable order.
type Observed struct {
	Paths   map[string]Access `json:"paths"`   // absolute host paths
	Hosts   []string          `json:"hosts"`   // host:port, sorted
	Refused []Refusal         `json:"refused"` // sorted by kind, then what
}

// Observed returns a copy of what r has noted so far.
func (r *Recorder) Observed() Observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := Observed{Paths: make(map[string]Access, len(r.paths))}
	for p, a := range r.paths {
		o.Paths[p] = a
	}
	for h := range r.hosts {
		o.Hosts = append(o.Hosts, h)
	}
	sort.Strings(o.Hosts)
	for f := range r.refused {
		o.Refused = append(o.Refused, f)
	}
	sort.Slice(o.Refused, func(i, j int) bool {
		a, b := o.Refused[i], o.Refused[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.What != b.What {
			return a.What < b.What
		}
		return a.Rule < b.Rule
	})
	return o
}
