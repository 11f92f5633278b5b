// Package cdp drives a headless Chromium through the DevTools protocol over
// --remote-debugging-pipe (NUL-terminated JSON messages on file descriptors 3
// and 4), enough for tests to load a page, evaluate script, collect console
// errors and take screenshots. It needs no WebSocket and no module beyond
// the standard library.
package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// Browser is a running Chromium.
type Browser struct {
	cmd    *exec.Cmd
	toPipe *os.File
	stderr *lockedBuffer

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan message
	events  []Event
	waiters []*waiter
	readErr error
	done    chan struct{}
}

// Event is a protocol event.
type Event struct {
	Method    string
	SessionID string
	Params    json.RawMessage
}

type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type waiter struct {
	match func(Event) bool
	ch    chan Event
}

// Launch starts Chromium headless with a fresh profile in userDataDir.
func Launch(path, userDataDir string, extraArgs ...string) (*Browser, error) {
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		return nil, err
	}
	args := append([]string{
		"--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
		"--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking",
		"--user-data-dir=" + userDataDir, "about:blank",
	}, extraArgs...)
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{toR, fromW} // fd 3: commands in, fd 4: replies out
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		toR.Close()
		toW.Close()
		fromR.Close()
		fromW.Close()
		return nil, err
	}
	toR.Close()
	fromW.Close()
	b := &Browser{cmd: cmd, toPipe: toW, stderr: stderr, pending: map[int64]chan message{}, done: make(chan struct{})}
	go b.read(fromR)
	return b, nil
}

func (b *Browser) read(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var raw []byte
		raw, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m message
		if err = json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			break
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				delete(b.pending, m.ID)
				ch <- m
			}
		} else {
			ev := Event{Method: m.Method, SessionID: m.SessionID, Params: m.Params}
			b.events = append(b.events, ev)
			kept := b.waiters[:0]
			for _, w := range b.waiters {
				if w.match(ev) {
					w.ch <- ev
				} else {
					kept = append(kept, w)
				}
			}
			b.waiters = kept
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.readErr = err
	for id, ch := range b.pending {
		close(ch)
		delete(b.pending, id)
	}
	b.mu.Unlock()
	close(b.done)
}

// Call sends a command (to the browser when sessionID is "", else to that
// session) and decodes its result into result (may be nil).
func (b *Browser) Call(ctx context.Context, sessionID, method string, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan message, 1)
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("cdp: browser gone: %v", b.readErr)
	}
	b.nextID++
	id := b.nextID
	b.pending[id] = ch
	b.mu.Unlock()
	out, err := json.Marshal(message{ID: id, Method: method, SessionID: sessionID, Params: p})
	if err != nil {
		return err
	}
	if _, err := b.toPipe.Write(append(out, 0)); err != nil {
		return fmt.Errorf("cdp: %s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("cdp: %s: browser closed the pipe", method)
		}
		if m.Error != nil {
			return fmt.Errorf("cdp: %s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("cdp: %s: %w", method, ctx.Err())
	}
}

// Expect registers, now, interest in the first event match accepts, and
// returns a function that waits for it. Registering before sending the
// command that causes the event means the event cannot be missed.
func (b *Browser) Expect(match func(Event) bool) func(context.Context) (Event, error) {
	w := &waiter{match: match, ch: make(chan Event, 1)}
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	return func(ctx context.Context) (Event, error) {
		select {
		case ev := <-w.ch:
			return ev, nil
		case <-b.done:
			return Event{}, errors.New("cdp: browser closed the pipe")
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Events returns the events received so far.
func (b *Browser) Events() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.events...)
}

// Stderr is what the browser wrote to its standard error.
func (b *Browser) Stderr() string { return b.stderr.String() }

// Close asks the browser to exit and waits for it, killing it if it does
// not exit.
func (b *Browser) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	_ = b.Call(ctx, "", "Browser.close", struct{}{}, nil)
	b.toPipe.Close()
	waited := make(chan error, 1)
	go func() { waited <- b.cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-ctx.Done():
		_ = b.cmd.Process.Kill()
		return <-waited
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) < 1<<20 {
		l.buf = append(l.buf, p...)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}
