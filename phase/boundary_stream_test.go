package phase_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestParseBoundaryOfStreamedEvents: ParseBoundary reads a streamed
// event's phase_scope text, and a decoded map, as ParseBoundary as of
// 1872e50 read the map (oracleParseBoundary), on well-formed and
// malformed scopes: keys given twice, booleans and floats as ints, null and
// non-string parents, paths with empty and non-string parts, attributes,
// escapes.
func TestParseBoundaryOfStreamedEvents(t *testing.T) {
	scopes := []string{
		`{"action":"enter","depth":1,"name":"train","parent_scope_id":null,"path":["train"],"scope_id":"s:0","sequence":0,"thread_id":1,"thread_name":"MainThread"}`,
		`{"action":"enter","name":" fwd ","parent_scope_id":"s:0","path":["train","",3,"fwd"],"scope_id":"s:1","sequence":true,"thread_id":false,"thread_name":"T","attributes":{"k":[1,"v"]}}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T"}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1.0,"thread_id":1,"thread_name":"T"}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1e0,"thread_name":"T"}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":99999999999999999999,"thread_id":1,"thread_name":"T"}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T","parent_scope_id":7}`,
		`{"action":"enter","name":"x","path":[],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T"}`,
		`{"action":"enter","name":"x","path":"x","scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T"}`,
		`{"action":"enter","name":"  ","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T"}`,
		`{"action":"exit","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T"}`,
		`{"action":"exit","action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T","name":"y","path":["a"],"path":["b"]}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":null}`,
		`{"action":"enter","n\u0061me":"\u00e9t\u00e9","path":["\ud83d\ude00"],"scope_id":"s","sequence":-3,"thread_id":1,"thread_name":"T","attributes":[1]}`,
		`{"action":"enter","name":"x","path":["x"],"scope_id":"s","sequence":1,"thread_id":1,"thread_name":"T","parent_scope_id":"p","parent_scope_id":null}`,
		`[1]`, `"scope"`, `{}`,
	}
	base := `{"schema_version":3,"session_id":"s","timestamp_ns":5,"event_type":"phase_enter","collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","device_id":0,"allocator_allocated_bytes":0,"allocator_reserved_bytes":0,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":0,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{"phase_scope":SCOPE}}`
	accepted := 0
	for _, scope := range scopes {
		for _, eventType := range []string{"phase_enter", "phase_exit"} {
			line := strings.Replace(strings.Replace(base, "SCOPE", scope, 1), "phase_enter", eventType, 1)
			built, err := telemetry.DecodeRecord([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", scope, err)
			}
			var streamed []telemetry.Event
			err = telemetry.Stream(strings.NewReader(line), func(chunk []telemetry.Event) error {
				streamed = append(streamed, chunk...)
				return nil
			})
			if err != nil || len(streamed) != 1 || streamed[0].Metadata != nil {
				t.Fatalf("%s: streamed %d events, %v", scope, len(streamed), err)
			}
			want, wantOK := oracleParseBoundary(&built)
			for name, e := range map[string]*telemetry.Event{"built": &built, "streamed": &streamed[0]} {
				got, gotOK := phase.ParseBoundary(e)
				if gotOK != wantOK || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %s %s:\ngot  %v %+v\nwant %v %+v", name, eventType, scope, gotOK, got, wantOK, want)
				}
			}
			if wantOK {
				accepted++
			}
		}
	}
	if accepted < 5 {
		t.Fatalf("only %d boundaries accepted: the cases test little", accepted)
	}
}

// oracleParseBoundary is ParseBoundary as of 1872e50, which read the
// decoded metadata map.
func oracleParseBoundary(e *telemetry.Event) (phase.Boundary, bool) {
	var b phase.Boundary
	if e.EventType != phase.EnterEvent && e.EventType != phase.ExitEvent {
		return b, false
	}
	scope, ok := e.Metadata["phase_scope"].(map[string]any)
	if !ok || e.SessionID == "" {
		return b, false
	}
	action, ok1 := scope["action"].(string)
	name, ok2 := scope["name"].(string)
	scopeID, ok3 := scope["scope_id"].(string)
	threadName, ok4 := scope["thread_name"].(string)
	rawPath, ok5 := scope["path"].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || telemetry.IsBlank(name) {
		return b, false
	}
	want := "enter"
	if e.EventType == phase.ExitEvent {
		want = "exit"
	}
	if action != want {
		return b, false
	}
	path := make([]string, 0, len(rawPath))
	for _, p := range rawPath {
		if s, ok := p.(string); ok && s != "" {
			path = append(path, s)
		}
	}
	if len(path) == 0 {
		return b, false
	}
	seq, ok := telemetry.IntValue(scope["sequence"])
	if !ok {
		return b, false
	}
	threadID, ok := telemetry.IntValue(scope["thread_id"])
	if !ok {
		return b, false
	}
	switch p := scope["parent_scope_id"].(type) {
	case nil:
	case string:
		b.ParentScopeID = &p
	default:
		return b, false
	}
	b.Action = action
	b.Name = telemetry.TrimSpace(name)
	b.Path = path
	b.Depth = len(path)
	b.ScopeID = scopeID
	b.ThreadID = threadID
	_, b.ThreadIDBool = scope["thread_id"].(bool)
	b.ThreadName = threadName
	b.Sequence = seq
	b.SessionID = e.SessionID
	b.TimestampNs = e.TimestampNs
	if attrs, ok := scope["attributes"].(map[string]any); ok {
		b.Attributes = attrs
	}
	return b, true
}
