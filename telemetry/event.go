// Package telemetry holds stormlog TelemetryEvent records (schema v2, v3 and v4),
// their strict JSON codec and readers for JSON Lines and JSON documents.
//
// The package imports nothing from the OpenTelemetry Collector: it is the pure
// data layer shared by the attribution engine, the CLI and the processor.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md.
package telemetry

// OptInt is a nullable integer field (JSON integer or null).
type OptInt struct {
	Value int64
	Valid bool
}

// Int returns a present OptInt.
func Int(v int64) OptInt { return OptInt{Value: v, Valid: true} }

// Event is one TelemetryEvent record. Which fields may be null depends on
// SchemaVersion (reference §1.1, §1.5); a decoded Event has passed that
// validation.
type Event struct {
	SchemaVersion int
	// SessionID is "" for v2 records, which have no session (v3/v4 require a
	// non-empty one).
	SessionID          string
	TimestampNs        int64
	EventType          string
	Collector          string
	SamplingIntervalMs int64
	PID                int64
	Host               string
	// JobID is "" when the record's job_id is null or absent.
	JobID     string
	Rank      int64
	LocalRank int64
	WorldSize int64
	DeviceID  int64

	AllocatorAllocatedBytes OptInt
	AllocatorReservedBytes  OptInt
	AllocatorActiveBytes    OptInt
	AllocatorInactiveBytes  OptInt
	AllocatorChangeBytes    OptInt
	DeviceUsedBytes         OptInt
	DeviceFreeBytes         OptInt
	DeviceTotalBytes        OptInt

	// Context is the free-text line; HasContext is false when it was null.
	Context    string
	HasContext bool
	// Metadata is the metadata object of an event built in code or decoded
	// by DecodeRecord, Decoder.Decode and the readers that return every
	// event: values are string, json.Number, bool, nil, []any or
	// map[string]any; nil means an empty object. Stream's events leave it
	// nil and keep the object's text: read metadata with the Metadata*
	// methods (metadata.go), which handle both.
	Metadata map[string]any
	// metadataJSON is the text of a streamed event's non-empty metadata
	// object (empty otherwise).
	metadataJSON metadataText
}
