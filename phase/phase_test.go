package phase

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// boundary builds a phase_enter/phase_exit event the way stormlog's
// PhaseRecorder writes it.
func boundary(action string, ts, rank, thread, seq int64, scopeID string, path ...string) telemetry.Event {
	evType := EnterEvent
	if action == "exit" {
		evType = ExitEvent
	}
	p := make([]any, len(path))
	for i, s := range path {
		p[i] = s
	}
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "sess", TimestampNs: ts, EventType: evType, Rank: rank, WorldSize: 4,
		Metadata: map[string]any{"phase_scope": map[string]any{
			"action": action, "name": path[len(path)-1], "path": p, "depth": json.Number("1"),
			"scope_id": scopeID, "parent_scope_id": nil, "thread_id": json.Number(itoa(thread)),
			"thread_name": "thread-" + itoa(thread), "sequence": json.Number(itoa(seq)),
		}},
	}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func sample(ts, rank int64) telemetry.Event {
	return telemetry.Event{SchemaVersion: 3, SessionID: "sess", TimestampNs: ts, EventType: "sample", Rank: rank, WorldSize: 4}
}

func scope(e *telemetry.Event) map[string]any { return e.Metadata["phase_scope"].(map[string]any) }

func TestParseBoundary(t *testing.T) {
	ok := boundary("enter", 10, 0, 1, 1, "sess:1", "train", "step")
	b, valid := ParseBoundary(&ok)
	if !valid || b.Action != "enter" || b.Depth != 2 || !slices.Equal(b.Path, []string{"train", "step"}) || b.Sequence != 1 || b.ThreadID != 1 {
		t.Fatalf("%+v %v", b, valid)
	}
	tests := []struct {
		name  string
		edit  func(e *telemetry.Event)
		valid bool
	}{
		{"exit with enter action", func(e *telemetry.Event) { e.EventType = ExitEvent }, false},
		{"other event type", func(e *telemetry.Event) { e.EventType = "sample" }, false},
		{"no session (v2)", func(e *telemetry.Event) { e.SessionID = "" }, false},
		{"blank name", func(e *telemetry.Event) { scope(e)["name"] = " \t" }, false},
		{"name trimmed", func(e *telemetry.Event) { scope(e)["name"] = " step " }, true},
		{"path not a list", func(e *telemetry.Event) { scope(e)["path"] = "train / step" }, false},
		{"path entries filtered", func(e *telemetry.Event) { scope(e)["path"] = []any{"", json.Number("3"), " ", "x"} }, true},
		{"no usable path entry", func(e *telemetry.Event) { scope(e)["path"] = []any{"", nil} }, false},
		{"float sequence", func(e *telemetry.Event) { scope(e)["sequence"] = json.Number("1.0") }, false},
		{"boolean thread id passes like Python", func(e *telemetry.Event) { scope(e)["thread_id"] = true }, true},
		{"string thread id", func(e *telemetry.Event) { scope(e)["thread_id"] = "1" }, false},
		{"largest 64-bit thread id", func(e *telemetry.Event) { scope(e)["thread_id"] = json.Number("9223372036854775807") }, true},
		// A departure (README): Python's ints have no bound, ours stop at 64 bits.
		{"thread id beyond 64 bits", func(e *telemetry.Event) { scope(e)["thread_id"] = json.Number("9223372036854775808") }, false},
		{"sequence beyond 64 bits", func(e *telemetry.Event) { scope(e)["sequence"] = json.Number("-9223372036854775809") }, false},
		{"numeric parent", func(e *telemetry.Event) { scope(e)["parent_scope_id"] = json.Number("1") }, false},
		{"string parent", func(e *telemetry.Event) { scope(e)["parent_scope_id"] = "sess:0" }, true},
		{"missing scope id", func(e *telemetry.Event) { delete(scope(e), "scope_id") }, false},
		{"phase_scope not an object", func(e *telemetry.Event) { e.Metadata = map[string]any{"phase_scope": "x"} }, false},
	}
	for _, tc := range tests {
		e := boundary("enter", 10, 0, 1, 1, "sess:1", "train", "step")
		tc.edit(&e)
		got, valid := ParseBoundary(&e)
		if valid != tc.valid {
			t.Errorf("%s: valid %v, want %v", tc.name, valid, tc.valid)
		}
		switch tc.name {
		case "name trimmed":
			if got.Name != "step" {
				t.Errorf("name %q", got.Name)
			}
		case "path entries filtered":
			if !slices.Equal(got.Path, []string{" ", "x"}) || got.Depth != 2 {
				t.Errorf("path %q depth %d", got.Path, got.Depth)
			}
		case "boolean thread id passes like Python":
			if got.ThreadID != 1 {
				t.Errorf("thread %d", got.ThreadID)
			}
		}
	}
}

func TestReplayAndResolve(t *testing.T) {
	events := []telemetry.Event{
		boundary("enter", 100, 0, 1, 1, "s:1", "train"),
		boundary("enter", 200, 0, 1, 2, "s:2", "train", "step"),
		sample(250, 0),
		boundary("exit", 300, 0, 1, 3, "s:2", "train", "step"),
		// An exit that does not close the top scope is ignored: "train"
		// stays open to the group's last event (1000).
		boundary("exit", 400, 0, 1, 4, "s:bogus", "train"),
		sample(1000, 0),
		// Rank 1: two threads inside different phases.
		boundary("enter", 100, 1, 1, 1, "s:1", "train", "forward"),
		boundary("enter", 120, 1, 2, 2, "s:2", "train", "loader"),
		sample(900, 1),
	}
	ix := NewIndex(events, nil)
	spans := ix.Spans("sess", 0)
	if len(spans) != 2 || spans[0].ScopeID != "s:1" || !spans[0].SyntheticEnd || spans[0].EndNs != 1000 ||
		spans[1].ScopeID != "s:2" || spans[1].EndNs != 300 || spans[1].SyntheticEnd || spans[1].ThreadName != "thread-1" {
		t.Fatalf("spans %+v", spans)
	}
	checkPayload(t, "deepest span", ix.Resolve(250, "sess", 0),
		`{"phase_resolution":"unique","phase_paths":["train / step"],"phase_source":"heuristic","phase_path":"train / step","scope_id":"s:2","thread_id":1,"thread_name":"thread-1"}`)
	checkPayload(t, "exit time is inclusive", ix.Resolve(300, "sess", 0),
		`{"phase_resolution":"unique","phase_paths":["train / step"],"phase_source":"heuristic","phase_path":"train / step","scope_id":"s:2","thread_id":1,"thread_name":"thread-1"}`)
	checkPayload(t, "synthetic end", ix.Resolve(1000, "sess", 0),
		`{"phase_resolution":"unique","phase_paths":["train"],"phase_source":"heuristic","phase_path":"train","scope_id":"s:1","thread_id":1,"thread_name":"thread-1"}`)
	checkPayload(t, "before any phase", ix.Resolve(50, "sess", 0), `null`)
	checkPayload(t, "no session", ix.Resolve(250, "", 0), `null`)
	checkPayload(t, "other session", ix.Resolve(250, "other", 0), `null`)
	checkPayload(t, "two threads, two paths", ix.Resolve(500, "sess", 1),
		`{"phase_resolution":"ambiguous","phase_paths":["train / forward","train / loader"],"phase_summary":{"phase_path":"train / loader","source":"heuristic"}}`)
	if s := Summarize(ix.Resolve(500, "sess", 1)); s == nil || *s != "(likely) train / loader" {
		t.Errorf("summary %v", s)
	}

	// Origin hints (resolve_for_event): exact scope, then thread.
	probe := sample(500, 1)
	probe.Metadata = map[string]any{"origin_phase_scope_id": "s:1"}
	checkPayload(t, "exact", ix.ResolveForEvent(&probe),
		`{"phase_resolution":"unique","phase_paths":["train / forward"],"phase_source":"exact","phase_path":"train / forward","scope_id":"s:1","thread_id":1,"thread_name":"thread-1"}`)
	probe.Metadata = map[string]any{"origin_thread_id": json.Number("2")}
	checkPayload(t, "thread local", ix.ResolveForEvent(&probe),
		`{"phase_resolution":"unique","phase_paths":["train / loader"],"phase_source":"thread_local","phase_path":"train / loader","scope_id":"s:2","thread_id":2,"thread_name":"thread-2"}`)

	// Two threads in the same path: ambiguous with one path and no summary.
	same := NewIndex(nil, []Span{
		{SessionID: "j", Rank: 0, ThreadID: 1, ScopeID: "a", Path: []string{"train"}, StartNs: 0, EndNs: 10, Sequence: 1},
		{SessionID: "j", Rank: 0, ThreadID: 2, ScopeID: "b", Path: []string{"train"}, StartNs: 0, EndNs: 10, Sequence: 2},
	})
	checkPayload(t, "same path on two threads", same.Resolve(5, "j", 0), `{"phase_resolution":"ambiguous","phase_paths":["train"]}`)
	if s := Summarize(same.Resolve(5, "j", 0)); s == nil || *s != "(ambiguous) train" {
		t.Errorf("summary %v", s)
	}
	var nilIndex *Index
	if nilIndex.Resolve(1, "j", 0) != nil {
		t.Error("nil index resolves nothing")
	}
}

func TestMergeAndSummarize(t *testing.T) {
	str := func(s string) *string { return &s }
	id := func(v int64) *int64 { return &v }
	u := func(path, scopeID string, thread int64) *Attribution {
		return &Attribution{Resolution: Unique, Paths: []string{path}, Source: str(SourceHeuristic), Path: str(path),
			ScopeID: str(scopeID), ThreadID: id(thread), ThreadName: str("main")}
	}
	a := u("train / step", "s:1", 1)
	withSummary := &Attribution{Resolution: Ambiguous, Paths: []string{"a", "b"}, Summary: &Summary{PhasePath: "b", Source: SourceHeuristic}}
	tests := []struct {
		name string
		x, y *Attribution
		want string
	}{
		{"nil nil", nil, nil, "null"},
		{"nil keeps other with its summary", nil, withSummary, `{"phase_resolution":"ambiguous","phase_paths":["a","b"],"phase_summary":{"phase_path":"b","source":"heuristic"}}`},
		{"same unique scope keeps first", a, u("train / step", "s:1", 1), `{"phase_resolution":"unique","phase_paths":["train / step"],"phase_source":"heuristic","phase_path":"train / step","scope_id":"s:1","thread_id":1,"thread_name":"main"}`},
		{"same path, other scope", a, u("train / step", "s:9", 1), `{"phase_resolution":"ambiguous","phase_paths":["train / step"]}`},
		{"different paths sorted", u("z", "s:1", 1), u("a", "s:2", 1), `{"phase_resolution":"ambiguous","phase_paths":["a","z"]}`},
		{"empty paths on one side", &Attribution{Resolution: Ambiguous}, a, `{"phase_resolution":"unique","phase_paths":["train / step"],"phase_source":"heuristic","phase_path":"train / step","scope_id":"s:1","thread_id":1,"thread_name":"main"}`},
		{"summary dropped on real merge", withSummary, u("c", "s:3", 2), `{"phase_resolution":"ambiguous","phase_paths":["a","b","c"]}`},
	}
	for _, tc := range tests {
		b, _ := json.Marshal(Merge(tc.x, tc.y))
		if string(b) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, b, tc.want)
		}
	}
	if s := Summarize(a); s == nil || *s != "train / step" {
		t.Errorf("unique summary %v", s)
	}
	if s := Summarize(&Attribution{Resolution: Ambiguous, Paths: []string{"a", "", "b"}}); s == nil || *s != "(ambiguous) a | b" {
		t.Errorf("ambiguous summary %v", s)
	}
	if Summarize(nil) != nil || Summarize(&Attribution{Resolution: Ambiguous}) != nil {
		t.Error("nothing to summarise")
	}
	if got := FormatPath([]string{"a", "", "b"}); got != "a / b" {
		t.Errorf("FormatPath %q", got)
	}
}

// TestBooleanThreadID: Python lets a boolean thread_id through as the int
// (true == 1, same stack and same thread group) and writes the boolean back
// into the payload, taken from the record that closed the span (or opened
// it, for a scope still open at the session's end).
func TestBooleanThreadID(t *testing.T) {
	boolThread := func(e telemetry.Event, v bool) telemetry.Event {
		scope(&e)["thread_id"] = v
		return e
	}
	events := []telemetry.Event{
		boundary("enter", 100, 0, 1, 1, "s:1", "train"),
		boolThread(boundary("enter", 200, 0, 1, 2, "s:2", "train", "step"), true),
		// The int 1 closes the scope a boolean true opened: one stack.
		boundary("exit", 300, 0, 1, 3, "s:2", "train", "step"),
		boolThread(boundary("exit", 400, 0, 1, 4, "s:1", "train"), true),
		boolThread(boundary("enter", 500, 0, 0, 5, "s:5", "eval"), false),
		sample(900, 0),
	}
	ix := NewIndex(events, nil)
	checkPayload(t, "closed by an int", ix.Resolve(250, "sess", 0),
		`{"phase_resolution":"unique","phase_paths":["train / step"],"phase_source":"heuristic","phase_path":"train / step","scope_id":"s:2","thread_id":1,"thread_name":"thread-1"}`)
	checkPayload(t, "closed by true", ix.Resolve(350, "sess", 0),
		`{"phase_resolution":"unique","phase_paths":["train"],"phase_source":"heuristic","phase_path":"train","scope_id":"s:1","thread_id":true,"thread_name":"thread-1"}`)
	checkPayload(t, "opened by false, still open", ix.Resolve(600, "sess", 0),
		`{"phase_resolution":"unique","phase_paths":["eval"],"phase_source":"heuristic","phase_path":"eval","scope_id":"s:5","thread_id":false,"thread_name":"thread-0"}`)
}

// checkPayload compares an attribution's payload JSON with want.
func checkPayload(t *testing.T, name string, got *Attribution, want string) {
	t.Helper()
	b, _ := json.Marshal(got)
	if string(b) != want {
		t.Errorf("%s: %s, want %s", name, b, want)
	}
}
