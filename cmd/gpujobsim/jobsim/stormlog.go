package jobsim

import (
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
)

// stormlogEvent is a stormlog TelemetryEvent v3 record: every field of the schema, in its
// declaration order, nothing else (the schema forbids unknown fields).
type stormlogEvent struct {
	SchemaVersion           int            `json:"schema_version"`
	SessionID               string         `json:"session_id"`
	TimestampNs             int64          `json:"timestamp_ns"`
	EventType               string         `json:"event_type"`
	Collector               string         `json:"collector"`
	SamplingIntervalMs      int64          `json:"sampling_interval_ms"`
	PID                     int64          `json:"pid"`
	Host                    string         `json:"host"`
	JobID                   string         `json:"job_id"`
	Rank                    int            `json:"rank"`
	LocalRank               int            `json:"local_rank"`
	WorldSize               int            `json:"world_size"`
	DeviceID                int            `json:"device_id"`
	AllocatorAllocatedBytes int64          `json:"allocator_allocated_bytes"`
	AllocatorReservedBytes  int64          `json:"allocator_reserved_bytes"`
	AllocatorActiveBytes    int64          `json:"allocator_active_bytes"`
	AllocatorInactiveBytes  int64          `json:"allocator_inactive_bytes"`
	AllocatorChangeBytes    int64          `json:"allocator_change_bytes"`
	DeviceUsedBytes         int64          `json:"device_used_bytes"`
	DeviceFreeBytes         int64          `json:"device_free_bytes"`
	DeviceTotalBytes        int64          `json:"device_total_bytes"`
	Context                 *string        `json:"context"`
	Metadata                map[string]any `json:"metadata"`
}

const stormlogThreadID = 1 // the training loop's thread

// StormlogSessionID is the stormlog session of rank r: one tracker session per process.
func (s *Scenario) StormlogSessionID(r int) string {
	return s.Config.JobID + "-rank" + strconv.Itoa(r)
}

// WriteStormlog writes, as JSON Lines in time order, what stormlog's tracker would record
// in [from, to) for every reporting rank: samples, a "collective" event at the start and at
// the end of each NCCL call, and phase_enter / phase_exit boundaries (metadata.phase_scope).
func (s *Scenario) WriteStormlog(w io.Writer, from, to time.Duration, epoch time.Time) error {
	var events []stormlogEvent
	interval := s.samplePeriod().Milliseconds()
	for r := range s.Ranks {
		rk := &s.Ranks[r]
		base := func(t time.Duration, eventType string, smp Sample) stormlogEvent {
			return stormlogEvent{
				SchemaVersion: 3, SessionID: s.StormlogSessionID(r), TimestampNs: s.UnixNano(epoch, r, t),
				EventType: eventType, Collector: "stormlog.cuda_tracker", SamplingIntervalMs: interval,
				PID: s.PID(r), Host: rk.Host, JobID: s.Config.JobID, Rank: r, LocalRank: rk.LocalRank,
				WorldSize: s.Config.Ranks, DeviceID: rk.GPU,
				AllocatorAllocatedBytes: smp.Allocated, AllocatorReservedBytes: smp.Reserved,
				AllocatorActiveBytes: smp.Active, AllocatorInactiveBytes: smp.Inactive,
				DeviceUsedBytes: smp.DeviceUsed, DeviceFreeBytes: smp.DeviceFree, DeviceTotalBytes: smp.DeviceTotal,
				Metadata: map[string]any{},
			}
		}
		var prevAllocated int64
		for i, t := range s.sampleTimesIn(r, from, to) {
			smp := s.SampleAt(r, t)
			ev := base(t, "sample", smp)
			if i > 0 {
				ev.AllocatorChangeBytes = smp.Allocated - prevAllocated
			}
			prevAllocated = smp.Allocated
			events = append(events, ev)
			if s.Config.NCCLStats {
				events = append(events, s.commStatsEvent(ev, r, t))
			}
		}
		for _, step := range s.stepsEndingIn(r, from, to) {
			st := s.stepSpans(r, step)
			for _, c := range st.Collectives {
				for _, edge := range []struct {
					t    time.Duration
					word string
				}{{c.Start, "start"}, {c.End, "end"}} {
					ev := base(edge.t, "collective", s.SampleAt(r, edge.t))
					ctx := "NCCL " + c.Op + " " + edge.word
					ev.Context = &ctx
					ev.Metadata = map[string]any{"nccl_comm_id": s.CommID, "nccl_seq": c.Seq, "message_size_bytes": c.MsgBytes}
					if edge.word == "start" {
						// The launch record carries the identity and the duration (one
						// interval per op); the end record stays a bare timestamp.
						maps.Copy(ev.Metadata, s.worldIdentity(r, c).Metadata(int64(c.End-c.Start)))
					}
					events = append(events, ev)
				}
			}
			// One phase recorder per rank: its sequence counts every enter and exit.
			seq := int64(step) * 2 * int64(1+len(st.Phases))
			session := s.StormlogSessionID(r)
			boundary := func(p PhaseSpan, enter bool, scopeSeq int64, parent *string) {
				t, action, eventType, word := p.Start, "enter", "phase_enter", "entered"
				if !enter {
					t, action, eventType, word = p.End, "exit", "phase_exit", "exited"
				}
				ev := base(t, eventType, s.SampleAt(r, t))
				ctx := "Phase " + word + ": " + p.PathString()
				ev.Context = &ctx
				scope := map[string]any{
					"action": action, "name": p.Name, "path": p.Path, "depth": len(p.Path),
					"scope_id": session + ":" + strconv.Itoa(int(scopeSeq)), "parent_scope_id": parent,
					"thread_id": stormlogThreadID, "thread_name": "MainThread", "sequence": seq,
				}
				seq++
				ev.Metadata = map[string]any{"phase_scope": scope}
				events = append(events, ev)
			}
			rootSeq := seq
			boundary(st.Root, true, rootSeq, nil)
			rootScope := session + ":" + strconv.Itoa(int(rootSeq))
			for _, p := range st.Phases {
				enterSeq := seq
				boundary(p, true, enterSeq, &rootScope)
				boundary(p, false, enterSeq, &rootScope)
			}
			boundary(st.Root, false, rootSeq, nil)
		}
	}
	// Sorting indices moves 4 bytes a swap instead of a whole event.
	order := make([]int32, len(events))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(events[a].TimestampNs, events[b].TimestampNs) })
	enc := json.NewEncoder(w)
	var line []byte
	for _, i := range order {
		var ok bool
		if line, ok = appendStormlogJSON(line[:0], &events[i]); !ok {
			if err := enc.Encode(&events[i]); err != nil {
				return err
			}
			continue
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}
