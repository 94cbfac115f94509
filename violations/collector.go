package violations

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultQueue        = 4096
	DefaultQueueBytes   = 2 << 20
	DefaultKeep         = 5
	DefaultCloseTimeout = 5 * time.Second
)

// MaxKinds bounds Summary.ByKind: records of further distinct kinds are
// counted under "other".
const MaxKinds = 64

// Options configure a Collector. The zero value is usable: no sinks, the
// defaults below, no ignore rules.
type Options struct {
	// Command is the sbx command line as one string. Add stores it in
	// every record sanitised and truncated to MaxCommand bytes (on a rune
	// boundary, ending in Ellipsis); the ignore rules see it whole.
	Command string

	// Queue bounds the number of records between Add and the sinks;
	// default DefaultQueue (4096).
	Queue int

	// QueueBytes bounds the string bytes those queued records hold;
	// default DefaultQueueBytes (2 MiB). With MaxField capping each field,
	// the queue's memory is at most about Queue×216 bytes (preallocated)
	// plus QueueBytes.
	QueueBytes int

	// Keep is how many of the first records the Summary keeps; default
	// DefaultKeep (5), negative for none.
	Keep int

	// Ignore is srt's ignoreViolations: command substring ("*" = every
	// command) → path substrings. A record whose command contains a key
	// and whose path or host contains one of that key's values is
	// dropped silently: counted in Summary.Ignored, not in Total or
	// Dropped. The path is Resolved when set, Path otherwise. See the
	// package documentation.
	Ignore map[string][]string

	// Sinks receive every accepted record, in order.
	Sinks []Sink

	// CloseTimeout bounds how long Close waits for the sinks to drain the
	// queue; records still queued then are counted as dropped. Default
	// DefaultCloseTimeout (5s); negative waits for ever.
	CloseTimeout time.Duration

	// Now stamps records that come without a time; default time.Now.
	Now func() time.Time

	// Probes writes the records marked Probe (a runtime's refused feature
	// probe, seccomp.Probes) to the sinks, with "probe":true. Either way
	// they are counted only in Summary.Probes: never in Total, ByKind,
	// First or Dropped, so they make no summary and no
	// --fail-on-violation.
	Probes bool
}

// Summary is what a Collector saw, returned by Close.
type Summary struct {
	Total   int            // records accepted and handed to the sinks
	ByKind  map[string]int // Total by Record.Kind (at most MaxKinds keys, then "other")
	First   []Record       // the first Options.Keep accepted records
	Dropped int            // records lost: queue full, queue bytes exhausted, Add after Close, or left when Close timed out
	Ignored int            // records matched by Options.Ignore
	Probes  int            // probe records (Record.Probe), reported or not; in no other count
	SinkErr error          // the first error of each sink, close errors, a drain timeout; nil if none
}

// Collector gathers records from any number of goroutines and writes them
// to its sinks from one goroutine of its own. Add never blocks; memory is
// bounded by Options.Queue and Options.QueueBytes. A nil *Collector is
// valid: Add does nothing and Close returns an empty Summary, so a source
// can hold one unconditionally.
type Collector struct {
	now          func() time.Time
	command      string   // sanitised, truncated: stored in records
	ignore       []ignore // sanitised Options.Ignore
	ignoreSubs   []string // values that apply to command
	queueBytes   int64    // Options.QueueBytes
	keep         int      // Options.Keep
	sinks        []Sink   // Options.Sinks
	closeTimeout time.Duration
	showProbes   bool // Options.Probes

	mu     sync.RWMutex // Add holds it shared around the send, Close exclusively to close ch
	closed bool
	ch     chan item

	pending atomic.Int64 // string bytes in ch
	dropped atomic.Int64 // Add's drops
	ignored atomic.Int64
	probes  atomic.Int64

	smu          sync.Mutex // guards the writer's tallies below
	total        int
	byKind       map[string]int
	first        []Record
	abandoned    bool // Close timed out: count what is left as dropped
	closeDropped int
	sinkErrs     []error

	done      chan struct{} // closed when the writer returns
	closeOnce sync.Once
	summary   Summary
}

type item struct {
	r Record
	n int64 // its stringBytes
}

type ignore struct {
	cmd  string // "*" for all
	subs []string
}

// New returns a running Collector. Call Close exactly when no more records
// are wanted (more calls return the same Summary).
func New(o Options) *Collector {
	c := &Collector{
		now:          o.Now,
		queueBytes:   int64(o.QueueBytes),
		keep:         o.Keep,
		sinks:        append([]Sink(nil), o.Sinks...),
		closeTimeout: o.CloseTimeout,
		showProbes:   o.Probes,
		byKind:       map[string]int{},
		done:         make(chan struct{}),
	}
	if c.now == nil {
		c.now = time.Now
	}
	q := o.Queue
	if q <= 0 {
		q = DefaultQueue
	}
	if c.queueBytes <= 0 {
		c.queueBytes = DefaultQueueBytes
	}
	switch {
	case c.keep == 0:
		c.keep = DefaultKeep
	case c.keep < 0:
		c.keep = 0
	}
	if c.closeTimeout == 0 {
		c.closeTimeout = DefaultCloseTimeout
	}
	keys := make([]string, 0, len(o.Ignore))
	for k := range o.Ignore {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ig := ignore{cmd: k}
		if k != "*" {
			ig.cmd = Sanitize(k, MaxField)
		}
		for _, v := range o.Ignore[k] {
			ig.subs = append(ig.subs, Sanitize(v, MaxField))
		}
		c.ignore = append(c.ignore, ig)
	}
	full := Sanitize(o.Command, 1<<20)
	c.command = Sanitize(full, MaxCommand)
	c.ignoreSubs = c.subsFor(full)
	c.ch = make(chan item, q)
	go c.run()
	return c
}

// subsFor returns the ignore values that apply to command.
func (c *Collector) subsFor(command string) []string {
	var subs []string
	for _, ig := range c.ignore {
		if ig.cmd == "*" || strings.Contains(command, ig.cmd) {
			subs = append(subs, ig.subs...)
		}
	}
	return subs
}

func ignored(subs []string, r *Record) bool {
	path := r.Resolved
	if path == "" {
		path = r.Path
	}
	for _, s := range subs {
		if s == "" ||
			path != "" && strings.Contains(path, s) ||
			r.Host != "" && strings.Contains(r.Host, s) {
			return true
		}
	}
	return false
}

// Add records one denial. It is safe from any goroutine and never blocks
// on the sinks: it sanitises every string field (see Sanitize), fills an
// empty Time (Options.Now, then UTC), Action ("deny"), Kind and Source
// ("unknown") and Command (Options.Command), applies Options.Ignore, and
// queues the record; when the queue is full — or after Close — the record
// is counted as dropped. A record that comes with its own Command keeps it
// (sanitised, truncated), and the ignore rules are matched against it.
func (c *Collector) Add(r Record) {
	if c == nil {
		return
	}
	r.sanitize()
	if r.Time.IsZero() {
		r.Time = c.now()
	}
	r.Time = r.Time.UTC()
	if r.Action == "" {
		r.Action = ActionDeny
	}
	if r.Kind == "" {
		r.Kind = Unknown
	}
	if r.Source == "" {
		r.Source = Unknown
	}
	subs := c.ignoreSubs
	if r.Command == "" {
		r.Command = c.command
	} else {
		cmd := Sanitize(r.Command, MaxField)
		subs = c.subsFor(cmd)
		r.Command = Sanitize(cmd, MaxCommand)
	}
	if r.Probe {
		// A probe is counted here, once, whatever becomes of it below;
		// it is queued only to be written out.
		c.probes.Add(1)
		if !c.showProbes {
			return
		}
	}
	if len(subs) > 0 && ignored(subs, &r) {
		if !r.Probe {
			c.ignored.Add(1)
		}
		return
	}
	n := r.stringBytes()
	if r.Command != c.command {
		n += int64(len(r.Command))
	}
	if c.pending.Add(n) > c.queueBytes {
		c.pending.Add(-n)
		if !r.Probe {
			c.dropped.Add(1)
		}
		return
	}
	c.mu.RLock()
	sent := false
	if !c.closed {
		select {
		case c.ch <- item{r, n}:
			sent = true
		default:
		}
	}
	c.mu.RUnlock()
	if !sent {
		c.pending.Add(-n)
		if !r.Probe {
			c.dropped.Add(1)
		}
	}
}

// run is the writer goroutine.
func (c *Collector) run() {
	defer close(c.done)
	failed := make([]bool, len(c.sinks))
	for it := range c.ch {
		c.pending.Add(-it.n)
		c.smu.Lock()
		if c.abandoned {
			if !it.r.Probe {
				c.closeDropped++
			}
			c.smu.Unlock()
			continue
		}
		if it.r.Probe {
			c.smu.Unlock()
			c.write(failed, it.r)
			continue
		}
		c.total++
		k := it.r.Kind
		if _, ok := c.byKind[k]; !ok && len(c.byKind) >= MaxKinds {
			k = "other"
		}
		c.byKind[k]++
		if len(c.first) < c.keep {
			c.first = append(c.first, it.r)
		}
		c.smu.Unlock()
		c.write(failed, it.r)
	}
}

// write hands r to every sink that has not failed.
func (c *Collector) write(failed []bool, r Record) {
	for i, s := range c.sinks {
		if failed[i] {
			continue
		}
		if err := s.Write(r); err != nil {
			failed[i] = true
			c.smu.Lock()
			c.sinkErrs = append(c.sinkErrs, fmt.Errorf("violations: sink %d: %w", i, err))
			c.smu.Unlock()
		}
	}
}

// Close stops accepting records, waits (at most Options.CloseTimeout) for
// the queue to reach the sinks, closes the sinks and returns the Summary.
// Later calls return the same Summary; Add after Close counts the record as
// dropped (in no Summary already returned).
func (c *Collector) Close() Summary {
	if c == nil {
		return Summary{ByKind: map[string]int{}}
	}
	c.closeOnce.Do(c.close)
	s := c.summary
	s.ByKind = maps.Clone(s.ByKind)
	s.First = append([]Record(nil), s.First...)
	return s
}

func (c *Collector) close() {
	c.mu.Lock()
	c.closed = true
	close(c.ch)
	c.mu.Unlock()

	var errs []error
	if c.closeTimeout < 0 {
		<-c.done
	} else {
		t := time.NewTimer(c.closeTimeout)
		select {
		case <-c.done:
		case <-t.C:
			c.smu.Lock()
			c.abandoned = true
			c.smu.Unlock()
			for it := range c.ch { // the writer is stuck in a sink; take the rest
				c.pending.Add(-it.n)
				if it.r.Probe {
					continue
				}
				c.smu.Lock()
				c.closeDropped++
				c.smu.Unlock()
			}
			errs = append(errs, fmt.Errorf("violations: sinks did not drain within %v", c.closeTimeout))
		}
		t.Stop()
	}
	for i, s := range c.sinks {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("violations: sink %d: close: %w", i, err))
		}
	}

	c.smu.Lock()
	defer c.smu.Unlock()
	c.summary = Summary{
		Total:   c.total,
		ByKind:  maps.Clone(c.byKind),
		First:   append([]Record(nil), c.first...),
		Dropped: int(c.dropped.Load()) + c.closeDropped,
		Ignored: int(c.ignored.Load()),
		Probes:  int(c.probes.Load()),
		SinkErr: errors.Join(append(append([]error(nil), c.sinkErrs...), errs...)...),
	}
}

// kindCounts returns ByKind as "2 file-write, 1 network", largest first.
func (s Summary) kindCounts() string {
	kinds := make([]string, 0, len(s.ByKind))
	for k, n := range s.ByKind {
		if n > 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Slice(kinds, func(i, j int) bool {
		a, b := s.ByKind[kinds[i]], s.ByKind[kinds[j]]
		if a != b {
			return a > b
		}
		return kinds[i] < kinds[j]
	})
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(s.ByKind[k]))
		b.WriteByte(' ')
		b.Write(appendWord(nil, Sanitize(k, MaxField)))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// headline is the summary sentence without the "sbx: " prefix and without
// the list of first records.
func (s Summary) headline() string {
	var parts []string
	if s.Total > 0 {
		h := plural(s.Total, "violation", "violations")
		if kc := s.kindCounts(); kc != "" {
			h += " (" + kc + ")"
		}
		parts = append(parts, h)
	}
	if s.Dropped > 0 {
		if s.Total > 0 {
			parts = append(parts, strconv.Itoa(s.Dropped)+" more not recorded (queue full)")
		} else {
			parts = append(parts, plural(s.Dropped, "violation", "violations")+" not recorded (queue full)")
		}
	}
	return strings.Join(parts, "; ")
}

// WriteText writes the short human summary meant for stderr after the
// command exits. It writes nothing at all when Total and Dropped are both
// zero. Otherwise, for any format but "github":
//
//	sbx: 3 violations (2 file-write, 1 network); first:
//	  file-write deny /home/u/.bashrc (rule: denyWrite) pid 12 /usr/bin/tee
//	  file-write deny /etc/hosts (rule: default) pid 12 /usr/bin/tee
//	  network deny example.com:443 (CONNECT) (rule: deniedDomains) pid 14 /usr/bin/curl
//	sbx: 95 more not recorded (queue full)
//	sbx: writing violations: <Summary.SinkErr>
//
// ("first 5:" when there were more records than were kept; the last two
// lines only when they apply). For "github" it writes one ::warning
// workflow command a kept record and one for the totals, escaped by the
// Actions rules (EscapeGitHubData, EscapeGitHubProperty). Write errors are
// ignored: this is the last word of a run.
func (s Summary) WriteText(w io.Writer, format string) {
	if s.Total <= 0 && s.Dropped <= 0 {
		return
	}
	var b []byte
	if strings.EqualFold(strings.TrimSpace(format), FormatGitHub) {
		for i := range s.First {
			b = appendGitHubRecord(b, &s.First[i])
			b = append(b, '\n')
		}
		msg := s.headline()
		if s.SinkErr != nil {
			msg += "; writing violations: " + strings.ReplaceAll(s.SinkErr.Error(), "\n", "; ")
		}
		b = appendGitHubCommand(b, "warning", "sbx violations", Sanitize(msg, 4*MaxField))
		b = append(b, '\n')
	} else {
		if s.Total > 0 {
			b = append(b, "sbx: "...)
			b = append(b, plural(s.Total, "violation", "violations")...)
			if kc := s.kindCounts(); kc != "" {
				b = append(b, " ("...)
				b = append(b, kc...)
				b = append(b, ')')
			}
			switch {
			case len(s.First) == 0:
			case len(s.First) < s.Total:
				b = append(b, "; first "...)
				b = strconv.AppendInt(b, int64(len(s.First)), 10)
				b = append(b, ':')
			default:
				b = append(b, "; first:"...)
			}
			b = append(b, '\n')
			for i := range s.First {
				b = append(b, "  "...)
				b = s.First[i].appendLine(b)
				b = append(b, '\n')
			}
		}
		if s.Dropped > 0 {
			b = append(b, "sbx: "...)
			if s.Total > 0 {
				b = strconv.AppendInt(b, int64(s.Dropped), 10)
				b = append(b, " more not recorded (queue full)"...)
			} else {
				b = append(b, plural(s.Dropped, "violation", "violations")...)
				b = append(b, " not recorded (queue full)"...)
			}
			b = append(b, '\n')
		}
		if s.SinkErr != nil {
			for _, l := range strings.Split(s.SinkErr.Error(), "\n") {
				b = append(b, "sbx: writing violations: "...)
				b = append(b, Sanitize(l, MaxField)...)
				b = append(b, '\n')
			}
		}
	}
	_, _ = w.Write(b)
}
