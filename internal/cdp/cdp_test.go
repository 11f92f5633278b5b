package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain turns the test binary into a fake browser when asked: it reads
// commands from fd 3 and answers on fd 4 as Chromium does, echoing each
// command's params as its result, failing "Fail.me", and sending an event
// before answering "Emit.event".
func TestMain(m *testing.M) {
	if os.Getenv("CDP_FAKE_BROWSER") == "1" {
		fakeBrowser()
		return
	}
	os.Exit(m.Run())
}

func fakeBrowser() {
	in := bufio.NewReader(os.NewFile(3, "in"))
	out := os.NewFile(4, "out")
	write := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, 0))
	}
	for {
		raw, err := in.ReadBytes(0)
		if err != nil {
			return
		}
		var m message
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			return
		}
		switch m.Method {
		case "Browser.close":
			write(map[string]any{"id": m.ID, "result": map[string]any{}})
			return
		case "Fail.me":
			write(map[string]any{"id": m.ID, "error": map[string]any{"code": -32000, "message": "no such method"}})
		case "Emit.event":
			write(map[string]any{"method": "Page.loadEventFired", "sessionId": m.SessionID, "params": map[string]any{"timestamp": 1}})
			write(map[string]any{"id": m.ID, "result": map[string]any{}})
		default:
			write(map[string]any{"id": m.ID, "result": m.Params})
		}
	}
}

func TestBrowserProtocol(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CDP_FAKE_BROWSER", "1")
	b, err := Launch(exe, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var echo struct{ X int }
	if err := b.Call(ctx, "s1", "Echo.me", map[string]int{"X": 7}, &echo); err != nil || echo.X != 7 {
		t.Fatalf("echo %+v, %v", echo, err)
	}
	if err := b.Call(ctx, "", "Fail.me", struct{}{}, nil); err == nil || !strings.Contains(err.Error(), "no such method") {
		t.Errorf("a protocol error came back as %v", err)
	}
	loaded := b.Expect(func(e Event) bool { return e.Method == "Page.loadEventFired" && e.SessionID == "s2" })
	if err := b.Call(ctx, "s2", "Emit.event", struct{}{}, nil); err != nil {
		t.Fatal(err)
	}
	if ev, err := loaded(ctx); err != nil || ev.SessionID != "s2" {
		t.Errorf("event %+v, %v", ev, err)
	}
	if n := len(b.Events()); n != 1 {
		t.Errorf("%d events recorded, want 1", n)
	}
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := b.Call(ctx, "", "Echo.me", struct{}{}, nil); err == nil {
		t.Error("a call after close succeeded")
	}
}
