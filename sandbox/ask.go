package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// DefaultAskTimeout is how long --ask-fd waits for an answer.
const DefaultAskTimeout = 30 * time.Second

// asker is --ask-fd: for a host no rule allows or denies, it writes
// {"id", "host", "port", "command"} as one JSON line to the descriptor and
// waits for {"id", "allow", "remember"} on it. A timeout, a dead peer or a
// malformed answer is a refusal. "remember" keeps the answer for that
// host:port for the rest of the run. Questions about the same host:port
// wait for one answer.
type asker struct {
	f       *os.File
	timeout time.Duration
	command string
	stderr  io.Writer

	wmu     sync.Mutex // one line at a time
	mu      sync.Mutex
	next    int
	waiting map[string]chan bool // id → its answer
	pending map[string]chan struct{}
	known   map[string]bool // remembered host:port answers
	dead    bool
}

func newAsker(fd int, timeout time.Duration, command string, stderr io.Writer) *asker {
	a := &asker{f: os.NewFile(uintptr(fd), "ask-fd"), timeout: timeout, command: command, stderr: stderr,
		waiting: map[string]chan bool{}, pending: map[string]chan struct{}{}, known: map[string]bool{}}
	go a.read()
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
		ch := a.waiting[ans.ID]
		delete(a.waiting, ans.ID)
		a.mu.Unlock()
		if ch != nil {
			ch <- ans.Allow
			if ans.Remember {
				ch <- true // the asker reads this as "remember"
			}
			close(ch)
		}
	}
	a.mu.Lock()
	a.dead = true
	for id, ch := range a.waiting {
		close(ch)
		delete(a.waiting, id)
	}
	a.mu.Unlock()
}

// ask is netproxy.Config.Ask.
func (a *asker) ask(ctx context.Context, host string, port int) bool {
	key := host + ":" + strconv.Itoa(port)
	for {
		a.mu.Lock()
		if v, ok := a.known[key]; ok {
			a.mu.Unlock()
			return v
		}
		if a.dead {
			a.mu.Unlock()
			return false
		}
		if wait, busy := a.pending[key]; busy {
			// Another request asks about this host:port: wait for it,
			// then look again (its answer may have been remembered).
			a.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return false
			}
			a.mu.Lock()
			_, ok := a.known[key]
			a.mu.Unlock()
			if ok {
				continue
			}
		} else {
			a.mu.Unlock()
		}
		break
	}
	a.mu.Lock()
	a.next++
	id := strconv.Itoa(a.next)
	ch := make(chan bool, 2)
	done := make(chan struct{})
	a.waiting[id] = ch
	if _, busy := a.pending[key]; !busy {
		a.pending[key] = done
		defer func() {
			a.mu.Lock()
			delete(a.pending, key)
			a.mu.Unlock()
			close(done)
		}()
	}
	a.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"id": id, "host": host, "port": port, "command": a.command})
	a.wmu.Lock()
	_, err := a.f.Write(append(line, '\n'))
	a.wmu.Unlock()
	if err != nil {
		a.forget(id)
		return false
	}
	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	select {
	case allow, ok := <-ch:
		if !ok {
			return false
		}
		if _, remember := <-ch; remember {
			a.mu.Lock()
			a.known[key] = allow
			a.mu.Unlock()
		}
		return allow
	case <-timer.C:
	case <-ctx.Done():
	}
	a.forget(id)
	return false
}

func (a *asker) forget(id string) {
	a.mu.Lock()
	delete(a.waiting, id)
	a.mu.Unlock()
}
