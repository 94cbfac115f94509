package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// DefaultAskTimeout is how long --ask-fd waits for an answer.
const DefaultAskTimeout = 30 * time.Second

// maxAskQueue is how many questions may wait to be written to --ask-fd;
// a question beyond it is refused at once (the caller is not reading).
const maxAskQueue = 64

// asker is --ask-fd: for a host no rule allows or denies, it writes
// {"id", "host", "port", "command"} as one JSON line to the descriptor and
// waits for {"id", "allow", "remember"} on it. A timeout, a dead peer or a
// malformed answer is a refusal. "remember" keeps the answer for that
// host:port for the rest of the run.
//
// The caller may read slowly, or not at all, and the command must not be
// able to hold sbx through it. So:
//   - each question has one deadline, the ask timeout from when it was
//     first asked; its line is written by one writer goroutine through a
//     queue of at most maxAskQueue questions, with that deadline as the
//     write deadline, and a question asked when the queue is full is
//     refused at once;
//   - the connections that ask about one host:port while its question is
//     pending share that question and its answer (one line per host:port
//     at a time, whatever the number of connections);
//   - a question whose connections have all ended (or whose deadline has
//     passed) before its turn to be written is dropped, never written:
//     the approver is not asked about a connection that no longer exists.
type asker struct {
	f       *os.File
	timeout time.Duration
	command string
	stderr  io.Writer

	queue chan *question // to the writer, at most maxAskQueue

	mu      sync.Mutex
	next    int
	waiting map[string]*question // id → question, until answered or given up
	pending map[string]*question // host:port → its question
	known   map[string]bool      // remembered host:port answers
	dead    bool
}

// question is one line on --ask-fd and everyone waiting for its answer.
type question struct {
	id, key  string
	line     []byte
	deadline time.Time
	waiters  int  // connections still waiting (guarded by asker.mu)
	written  bool // the line went out (guarded by asker.mu)
	allow    bool // the answer, valid once done is closed
	done     chan struct{}
}

func newAsker(fd int, timeout time.Duration, command string, stderr io.Writer) *asker {
	// Non-blocking, so the runtime's poller serves the descriptor and
	// write deadlines work (a socket or a pipe; anything else blocks, and
	// only the writer goroutine waits on it).
	_ = syscall.SetNonblock(fd, true)
	a := &asker{f: os.NewFile(uintptr(fd), "ask-fd"), timeout: timeout, command: command, stderr: stderr,
		queue:   make(chan *question, maxAskQueue),
		waiting: map[string]*question{}, pending: map[string]*question{}, known: map[string]bool{}}
	go a.read()
	go a.write()
	return a
}

type askAnswer struct {
	ID       string `json:"id"`
	Allow    bool   `json:"allow"`
	Remember bool   `json:"remember"`
}

// read takes answers until the peer closes; then every question is
// refused.
func (a *asker) read() {
	sc := bufio.NewScanner(a.f)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		var ans askAnswer
		if err := json.Unmarshal(sc.Bytes(), &ans); err != nil || ans.ID == "" {
			fmt.Fprintf(a.stderr, "sbx: --ask-fd: a malformed answer was dropped; send {\"id\": …, \"allow\": true|false, \"remember\": true|false}\n")
			continue
		}
		a.mu.Lock()
		if q := a.waiting[ans.ID]; q != nil {
			if ans.Remember {
				a.known[q.key] = ans.Allow
			}
			a.resolve(q, ans.Allow)
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.dead = true
	for _, q := range a.waiting {
		a.resolve(q, false)
	}
	a.mu.Unlock()
}

// resolve ends q with allow; a.mu is held.
func (a *asker) resolve(q *question, allow bool) {
	if a.waiting[q.id] != q {
		return // already resolved
	}
	delete(a.waiting, q.id)
	if a.pending[q.key] == q {
		delete(a.pending, q.key)
	}
	q.allow = allow
	close(q.done)
}

// write sends the queued questions' lines, each with its own deadline as
// the write deadline, skipping those nobody waits for any more. A line
// cut short by its deadline is finished before the next one, so the
// stream stays one JSON object per line.
func (a *asker) write() {
	var tail []byte
	for q := range a.queue {
		a.mu.Lock()
		if a.waiting[q.id] != q || q.waiters == 0 || !time.Now().Before(q.deadline) {
			a.resolve(q, false) // ended or expired before its turn: never asked
			a.mu.Unlock()
			continue
		}
		q.written = true
		a.mu.Unlock()
		_ = a.f.SetWriteDeadline(q.deadline)
		if len(tail) > 0 {
			n, err := a.f.Write(tail)
			tail = tail[n:]
			if err != nil {
				a.failed(q, err)
				continue
			}
		}
		n, err := a.f.Write(q.line)
		if err != nil {
			if n > 0 {
				tail = q.line[n:]
			}
			a.failed(q, err)
		}
	}
}

// failed refuses q, whose line could not be written; a peer that is gone
// (not merely slow) refuses every later question too.
func (a *asker) failed(q *question, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		a.dead = true
	}
	a.resolve(q, false)
}

// ask is netproxy.Config.Ask.
func (a *asker) ask(ctx context.Context, host string, port int) bool {
	key := host + ":" + strconv.Itoa(port)
	a.mu.Lock()
	if v, ok := a.known[key]; ok {
		a.mu.Unlock()
		return v
	}
	if a.dead {
		a.mu.Unlock()
		return false
	}
	q := a.pending[key]
	if q == nil {
		a.next++
		q = &question{id: strconv.Itoa(a.next), key: key, deadline: time.Now().Add(a.timeout), done: make(chan struct{})}
		q.line, _ = json.Marshal(map[string]any{"id": q.id, "host": host, "port": port, "command": a.command})
		q.line = append(q.line, '\n')
		select {
		case a.queue <- q:
		default:
			a.mu.Unlock()
			return false // maxAskQueue questions unwritten: the caller is not reading
		}
		a.waiting[q.id] = q
		a.pending[key] = q
	}
	q.waiters++
	a.mu.Unlock()

	timer := time.NewTimer(time.Until(q.deadline))
	defer timer.Stop()
	select {
	case <-q.done:
		return q.allow
	case <-timer.C:
	case <-ctx.Done():
	}
	a.mu.Lock()
	q.waiters--
	if q.waiters == 0 && (q.written || !time.Now().Before(q.deadline)) {
		a.resolve(q, false)
	}
	a.mu.Unlock()
	return false
}
