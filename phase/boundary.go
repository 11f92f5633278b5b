package phase

import (
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Boundary event types written by stormlog's PhaseRecorder.
const (
	EnterEvent = "phase_enter"
	ExitEvent  = "phase_exit"
)

// Boundary is a parsed phase boundary (the reference's PhaseBoundaryRecord).
type Boundary struct {
	Action        string // "enter" or "exit"
	Name          string // trimmed
	Path          []string
	Depth         int
	ScopeID       string
	ParentScopeID *string
	ThreadID      int64
	// ThreadIDBool says thread_id was a JSON boolean: Python lets it through
	// as the int (true is 1) and writes it back as the boolean.
	ThreadIDBool bool
	ThreadName   string
	Sequence     int64
	SessionID    string
	TimestampNs  int64
	Attributes   map[string]any // nil when absent or not an object
}

// ParseBoundary is parse_phase_boundary (§3.1): it accepts a phase_enter /
// phase_exit event whose metadata.phase_scope is well formed, and reports
// false (the event is silently not a boundary) otherwise. Events without a
// session (v2) are never boundaries. As in Python, booleans pass as the ints
// sequence and thread_id (true is 1).
func ParseBoundary(e *telemetry.Event) (Boundary, bool) {
	var b Boundary
	if e.EventType != EnterEvent && e.EventType != ExitEvent {
		return b, false
	}
	if e.SessionID == "" {
		return b, false
	}
	v, _ := e.MetadataLookup("phase_scope")
	scope, ok := v.Value().(map[string]any)
	if !ok {
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
	if e.EventType == ExitEvent {
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
