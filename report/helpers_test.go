package report

import (
	"github.com/collectiveattr/collectiveattr/telemetry"
)

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

// sample is a sample event of rank at t with the given hidden memory.
func sample(rank, t, hidden int64) telemetry.Event {
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "s", TimestampNs: t, EventType: "sample",
		Rank: rank, WorldSize: 2, Host: "node-a", JobID: "job-1",
		AllocatorReservedBytes: telemetry.Int(10 * gib),
		DeviceUsedBytes:        telemetry.Int(10*gib + hidden),
		DeviceTotalBytes:       telemetry.Int(80 * gib),
	}
}

// marker is a collective marker event with the given metadata.
func marker(rank, t int64, metadata map[string]any) telemetry.Event {
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "s", TimestampNs: t, EventType: "collective",
		Rank: rank, WorldSize: 2, Host: "node-a", JobID: "job-1", Metadata: metadata,
	}
}

// boundary is a phase_enter or phase_exit event of one scope.
func boundary(rank, t int64, enter bool, scopeID string, seq int64, path ...string) telemetry.Event {
	et, action := "phase_enter", "enter"
	if !enter {
		et, action = "phase_exit", "exit"
	}
	p := make([]any, len(path))
	for i, s := range path {
		p[i] = s
	}
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "s", TimestampNs: t, EventType: et,
		Rank: rank, WorldSize: 2, Host: "node-a", JobID: "job-1",
		Metadata: map[string]any{"phase_scope": map[string]any{
			"action": action, "name": path[len(path)-1], "path": p, "depth": int64(len(path)),
			"scope_id": scopeID, "parent_scope_id": nil, "thread_id": int64(1),
			"thread_name": "MainThread", "sequence": seq,
		}},
	}
}
