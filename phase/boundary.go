package phase

import (
	"strings"

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
	scope, _ := e.MetadataLookup("phase_scope")
	if !scope.IsObject() {
		return b, false
	}
	// One walk reads the members; a key given twice keeps its last value,
	// as in the decoded map.
	var action, name, scopeID, threadName, rawPath, sequence, threadID, parent, attributes telemetry.MetadataValue
	for k, v := range scope.Members() {
		switch k {
		case "action":
			action = v
		case "name":
			name = v
		case "scope_id":
			scopeID = v
		case "thread_name":
			threadName = v
		case "path":
			rawPath = v
		case "sequence":
			sequence = v
		case "thread_id":
			threadID = v
		case "parent_scope_id":
			parent = v
		case "attributes":
			attributes = v
		}
	}
	act, ok1 := action.AsString()
	nm, ok2 := name.AsString()
	sid, ok3 := scopeID.AsString()
	tname, ok4 := threadName.AsString()
	if !ok1 || !ok2 || !ok3 || !ok4 || !rawPath.IsArray() || telemetry.IsBlank(nm) {
		return b, false
	}
	want := "enter"
	if e.EventType == ExitEvent {
		want = "exit"
	}
	if act != want {
		return b, false
	}
	var path []string
	for p := range rawPath.Elements() {
		if s, ok := p.AsString(); ok && s != "" {
			path = append(path, strings.Clone(s))
		}
	}
	if len(path) == 0 {
		return b, false
	}
	seq, ok := sequence.AsInt()
	if !ok {
		return b, false
	}
	thread, ok := threadID.AsInt()
	if !ok {
		return b, false
	}
	if !parent.IsNull() {
		p, ok := parent.AsString()
		if !ok {
			return b, false
		}
		p = strings.Clone(p)
		b.ParentScopeID = &p
	}
	// The strings kept are copied: a streamed event's share a block of
	// text with other records'.
	b.Action = want
	b.Name = strings.Clone(telemetry.TrimSpace(nm))
	b.Path = path
	b.Depth = len(path)
	b.ScopeID = strings.Clone(sid)
	b.ThreadID = thread
	_, b.ThreadIDBool = threadID.AsBool()
	b.ThreadName = strings.Clone(tname)
	b.Sequence = seq
	b.SessionID = e.SessionID
	b.TimestampNs = e.TimestampNs
	if attributes.IsObject() {
		b.Attributes, _ = attributes.Value().(map[string]any)
	}
	return b, true
}
