package window

import (
	"bytes"
	"encoding/json"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// encodeEvent writes a buffered stormlog record (a phase boundary) whole.
// Its metadata is JSON: the decoded object's values (string, json.Number,
// bool, nil, slices and maps of them) come back as they were when read
// with UseNumber.
func encodeEvent(w *CheckpointWriter, e *telemetry.Event) {
	w.varint(int64(e.SchemaVersion))
	w.str(e.SessionID)
	w.varint(e.TimestampNs)
	w.str(e.EventType)
	w.str(e.Collector)
	w.varint(e.SamplingIntervalMs)
	w.varint(e.PID)
	w.str(e.Host)
	w.str(e.JobID)
	w.varint(e.Rank)
	w.varint(e.LocalRank)
	w.varint(e.WorldSize)
	w.varint(e.DeviceID)
	for _, v := range eventInts(e) {
		w.bool(v.Valid)
		w.varint(v.Value)
	}
	w.str(e.Context)
	w.bool(e.HasContext)
	var meta []byte
	if len(e.Metadata) > 0 {
		// A decoded object always marshals; on the impossible failure the
		// metadata is left out rather than the checkpoint.
		meta, _ = json.Marshal(e.Metadata)
	}
	w.bytes(meta)
}

func decodeEvent(r *CheckpointReader) telemetry.Event {
	e := telemetry.Event{
		SchemaVersion:      int(r.varint()),
		SessionID:          r.str(),
		TimestampNs:        r.varint(),
		EventType:          r.str(),
		Collector:          r.str(),
		SamplingIntervalMs: r.varint(),
		PID:                r.varint(),
		Host:               r.str(),
		JobID:              r.str(),
		Rank:               r.varint(),
		LocalRank:          r.varint(),
		WorldSize:          r.varint(),
		DeviceID:           r.varint(),
	}
	for _, v := range eventInts(&e) {
		v.Valid = r.bool()
		v.Value = r.varint()
	}
	e.Context = r.str()
	e.HasContext = r.bool()
	if meta := r.raw(r.count(1)); len(meta) > 0 {
		d := json.NewDecoder(bytes.NewReader(meta))
		d.UseNumber()
		if err := d.Decode(&e.Metadata); err != nil {
			r.fail("event metadata: %v", err)
		}
	}
	return e
}

// eventInts are the nullable integer fields of e, in checkpoint order.
func eventInts(e *telemetry.Event) []*telemetry.OptInt {
	return []*telemetry.OptInt{
		&e.AllocatorAllocatedBytes, &e.AllocatorReservedBytes, &e.AllocatorActiveBytes, &e.AllocatorInactiveBytes,
		&e.AllocatorChangeBytes, &e.DeviceUsedBytes, &e.DeviceFreeBytes, &e.DeviceTotalBytes,
	}
}
