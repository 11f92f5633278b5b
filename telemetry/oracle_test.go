// The decoder and readers as of commit 8c9c5f4, before the streaming
// decoder, with every name prefixed "old": the oracle the differential
// tests compare Stream, ReadAuto, DecodeJSONL and the Decoder with.

package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// ---- decode.go ----

// oldField identifies one known top-level key of a TelemetryEvent record.
type oldField uint8

const (
	oldFSchemaVersion oldField = iota
	oldFSessionID
	oldFTimestampNs
	oldFEventType
	oldFCollector
	oldFSamplingIntervalMs
	oldFPID
	oldFHost
	oldFDeviceID
	oldFAllocatorAllocatedBytes
	oldFAllocatorReservedBytes
	oldFAllocatorActiveBytes
	oldFAllocatorInactiveBytes
	oldFAllocatorChangeBytes
	oldFDeviceUsedBytes
	oldFDeviceFreeBytes
	oldFDeviceTotalBytes
	oldFContext
	oldFMetadata
	oldFJobID
	oldFRank
	oldFLocalRank
	oldFWorldSize
	oldNumFields
)

// oldFieldNames lists the keys in the reference's declaration order: required
// fields first (REQUIRED_V3_FIELDS; v2 lacks session_id), then the optional
// identity fields. "Missing required telemetry fields" lists in this order.
var oldFieldNames = [oldNumFields]string{
	"schema_version", "session_id", "timestamp_ns", "event_type", "collector",
	"sampling_interval_ms", "pid", "host", "device_id",
	"allocator_allocated_bytes", "allocator_reserved_bytes",
	"allocator_active_bytes", "allocator_inactive_bytes", "allocator_change_bytes",
	"device_used_bytes", "device_free_bytes", "device_total_bytes",
	"context", "metadata",
	"job_id", "rank", "local_rank", "world_size",
}

// oldLookupField maps a key to its oldField; a switch on the key text beats a map
// lookup on the hot path (every key of every record).
func oldLookupField(key []byte) (oldField, bool) {
	switch string(key) {
	case "schema_version":
		return oldFSchemaVersion, true
	case "session_id":
		return oldFSessionID, true
	case "timestamp_ns":
		return oldFTimestampNs, true
	case "event_type":
		return oldFEventType, true
	case "collector":
		return oldFCollector, true
	case "sampling_interval_ms":
		return oldFSamplingIntervalMs, true
	case "pid":
		return oldFPID, true
	case "host":
		return oldFHost, true
	case "device_id":
		return oldFDeviceID, true
	case "allocator_allocated_bytes":
		return oldFAllocatorAllocatedBytes, true
	case "allocator_reserved_bytes":
		return oldFAllocatorReservedBytes, true
	case "allocator_active_bytes":
		return oldFAllocatorActiveBytes, true
	case "allocator_inactive_bytes":
		return oldFAllocatorInactiveBytes, true
	case "allocator_change_bytes":
		return oldFAllocatorChangeBytes, true
	case "device_used_bytes":
		return oldFDeviceUsedBytes, true
	case "device_free_bytes":
		return oldFDeviceFreeBytes, true
	case "device_total_bytes":
		return oldFDeviceTotalBytes, true
	case "context":
		return oldFContext, true
	case "metadata":
		return oldFMetadata, true
	case "job_id":
		return oldFJobID, true
	case "rank":
		return oldFRank, true
	case "local_rank":
		return oldFLocalRank, true
	case "world_size":
		return oldFWorldSize, true
	}
	return 0, false
}

// oldKind is the JSON type of a decoded value as Python would see it.
type oldKind uint8

const (
	oldKNull oldKind = iota
	oldKBool
	oldKInt    // integer that fits int64
	oldKBigInt // integer outside int64 (valid in Python, not representable here)
	oldKFloat  // number with a fraction or exponent
	oldKString
	oldKObject
	oldKArray
)

type oldSlot struct {
	present bool
	oldKind oldKind
	i       int64
	s       string
	meta    map[string]any // metadata object
}

// OldDecoder decodes TelemetryEvent records. Its zero value is ready to use; a
// OldDecoder reused across records (one per goroutine) interns the repeated
// short strings of a stream so decoding allocates almost nothing per record.
//
// Events decoded by one OldDecoder share one Metadata map per distinct metadata
// text: treat Event.Metadata as read-only.
type OldDecoder struct {
	sc       oldScanner
	slots    [oldNumFields]oldSlot
	unknown  []string
	metadata map[string]map[string]any // interned metadata by raw text
	last     [oldNumFields]string      // previous string value per oldField
	lastMeta []byte                    // previous metadata text …
	lastMap  map[string]any            // … and its map
}

// Decode decodes and validates one JSON object holding a TelemetryEvent
// record of schema version 2, 3 or 4 (reference §1.3, §1.5). Malformed JSON
// yields a *OldSyntaxError; a well-formed record that breaks a rule yields a
// *OldValidationError whose text is the reference's message (e.g. "rank must be
// < world_size"); a well-formed non-object yields OldErrNotObject.
//
// Checks run in the reference's order, the first failure wins: the schema
// version (it selects the required and known keys, as in R2), missing keys
// (declaration order), unknown keys (sorted), session_id (v3/v4), process
// fields, identity fields, counters, context, metadata, v4 capabilities, and
// last the cross-oldField identity rules. Decisions where the reference is
// loose or where it cannot be followed:
//   - integers are integer lexemes only: 1.0, 1e3, true and "1" are not;
//     integers outside int64 are rejected (Python would accept them);
//   - v4 records must carry metadata.memory_capabilities, as the v4 schema
//     says (R2's loader would infer one and add its strings to metadata,
//     which can create marker tokens: reference open question 20);
//   - records without schema_version (legacy tracker output) are rejected
//     rather than converted;
//   - NaN and Infinity literals are rejected (Python's json accepts them);
//     oldInvalid UTF-8 inside strings becomes U+FFFD; duplicate keys keep the
//     last value, as in Python.
//
// Strings are interned across calls.
func (d *OldDecoder) Decode(data []byte) (Event, error) {
	var e Event
	if err := d.decodeInto(data, &e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// decodeInto decodes into *e in place (readers decode straight into their
// result slice); on error *e holds a partial record.
func (d *OldDecoder) decodeInto(data []byte, e *Event) error {
	if d.sc.intern == nil {
		d.sc.intern = make(map[string]string, 64)
	}
	d.sc.data, d.sc.pos, d.sc.depth = data, 0, 0
	isObject, err := d.scanRecord()
	d.sc.data = nil
	if err != nil {
		return err
	}
	if !isObject {
		return OldErrNotObject
	}
	*e = Event{}
	return d.validate(e)
}

// OldErrNotObject is returned for a well-formed JSON value that is not an
// object.
var OldErrNotObject = errors.New("record must be an object")

// scanRecord parses the whole value into slots before any validation, so a
// syntax error anywhere wins over a validation error, as with json.loads.
func (d *OldDecoder) scanRecord() (bool, error) {
	s := &d.sc
	for i := range d.slots {
		d.slots[i] = oldSlot{}
	}
	d.unknown = d.unknown[:0]
	if s.peek() != '{' {
		if _, err := s.value(); err != nil {
			return false, err
		}
		return false, s.expectEnd()
	}
	s.pos++
	if s.peek() == '}' {
		s.pos++
		return true, s.expectEnd()
	}
	for {
		if s.peek() != '"' {
			return false, s.fail("expected object key")
		}
		kb, err := s.stringBytes()
		if err != nil {
			return false, err
		}
		f, known := oldLookupField(kb)
		if !known {
			d.unknown = append(d.unknown, string(kb))
		}
		if s.peek() != ':' {
			return false, s.fail("expected ':' after object key")
		}
		s.pos++
		if known {
			if err := d.scanField(f); err != nil {
				return false, err
			}
		} else if err := s.skipValue(); err != nil {
			return false, err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true, s.expectEnd()
		default:
			return false, s.fail("expected ',' or '}' in object")
		}
	}
}

func (d *OldDecoder) scanField(f oldField) error {
	s := &d.sc
	sl := &d.slots[f]
	*sl = oldSlot{present: true}
	switch c := s.peek(); {
	case c == '"':
		sl.oldKind = oldKString
		if f == oldFContext {
			v, err := s.str(false)
			sl.s = v
			return err
		}
		// Consecutive records almost always repeat event_type, collector,
		// host and the ids: compare with this oldField's previous value before
		// consulting the intern table.
		b, err := s.stringBytes()
		if err != nil {
			return err
		}
		if last := d.last[f]; string(b) == last {
			sl.s = last
			return nil
		}
		sl.s = s.internBytes(b)
		d.last[f] = sl.s
		return nil
	case c == 'n':
		sl.oldKind = oldKNull
		return s.literal("null")
	case c == 't':
		sl.oldKind, sl.i = oldKBool, 1
		return s.literal("true")
	case c == 'f':
		sl.oldKind = oldKBool
		return s.literal("false")
	case c == '-' || (c >= '0' && c <= '9'):
		_, nk, v, err := s.number()
		switch nk {
		case oldNumInt:
			sl.oldKind, sl.i = oldKInt, v
		case oldNumBigInt:
			sl.oldKind = oldKBigInt
		default:
			sl.oldKind = oldKFloat
		}
		return err
	case c == '{':
		sl.oldKind = oldKObject
		if f != oldFMetadata {
			return s.skipValue()
		}
		return d.scanMetadata(sl)
	case c == '[':
		sl.oldKind = oldKArray
		return s.skipValue()
	case c == 0:
		return s.fail("unexpected end of input")
	default:
		return s.fail(fmt.Sprintf("invalid character %q", c))
	}
}

// oldMaxInternedMetadata bounds the metadata interning table (entries, and bytes
// per entry) so a stream of all-distinct metadata costs only the misses.
const (
	oldMaxInternedMetadata      = 1024
	oldMaxInternedMetadataBytes = 4096
)

// scanMetadata decodes the metadata object. Records of one stream usually
// repeat the same metadata text (backend, capabilities, …): identical text
// yields the same shared map, decoded once, which saves both time and memory
// and lets the engine scan each distinct map for markers once.
func (d *OldDecoder) scanMetadata(sl *oldSlot) error {
	s := &d.sc
	start := s.pos
	if err := s.skipValue(); err != nil {
		return err
	}
	raw := s.data[start:s.pos]
	if d.lastMeta != nil && string(raw) == string(d.lastMeta) {
		sl.meta = d.lastMap
		return nil
	}
	if m, ok := d.metadata[string(raw)]; ok {
		sl.meta = m
		d.lastMeta, d.lastMap = append(d.lastMeta[:0], raw...), m
		return nil
	}
	sub := oldScanner{data: raw, intern: s.intern}
	m, err := sub.object()
	if err != nil {
		return err
	}
	if len(m) == 0 {
		m = nil
	}
	sl.meta = m
	d.lastMeta, d.lastMap = append(d.lastMeta[:0], raw...), m
	if len(raw) <= oldMaxInternedMetadataBytes {
		if d.metadata == nil {
			d.metadata = make(map[string]map[string]any)
		}
		if len(d.metadata) < oldMaxInternedMetadata {
			d.metadata[string(raw)] = m
		}
	}
	return nil
}

// OldValidationError is a well-formed record that breaks a TelemetryEvent rule.
// Its text is the reference loader's message.
type OldValidationError struct{ Msg string }

func (e *OldValidationError) Error() string { return e.Msg }

func oldInvalid(format string, args ...any) error {
	return &OldValidationError{Msg: fmt.Sprintf(format, args...)}
}

// integer returns the oldSlot's integer value or the reference's type error.
// Booleans, floats (1.0, 1e3), strings and null are not integers.
func (d *OldDecoder) integer(f oldField) (int64, error) {
	sl := &d.slots[f]
	switch sl.oldKind {
	case oldKInt:
		return sl.i, nil
	case oldKBigInt:
		return 0, oldInvalid("%s is outside the signed 64-bit integer range", oldFieldNames[f])
	}
	return 0, oldInvalid("%s must be an integer", oldFieldNames[f])
}

// optInteger is integer for a nullable oldField.
func (d *OldDecoder) optInteger(f oldField) (OptInt, error) {
	if d.slots[f].oldKind == oldKNull {
		return OptInt{}, nil
	}
	v, err := d.integer(f)
	return OptInt{Value: v, Valid: err == nil}, err
}

// requiredString applies _coerce_required_string: null or blank → "must be a
// non-empty string", another type → "must be a string".
func (d *OldDecoder) requiredString(f oldField) (string, error) {
	sl := &d.slots[f]
	switch {
	case sl.oldKind == oldKNull:
		return "", oldInvalid("%s must be a non-empty string", oldFieldNames[f])
	case sl.oldKind != oldKString:
		return "", oldInvalid("%s must be a string", oldFieldNames[f])
	case IsBlank(sl.s):
		return "", oldInvalid("%s must be a non-empty string", oldFieldNames[f])
	}
	return sl.s, nil
}

func (d *OldDecoder) validate(e *Event) error {
	sl := &d.slots

	// Schema version first: it selects the required and known key sets.
	if !sl[oldFSchemaVersion].present {
		return d.missing(oldFieldsV2)
	}
	version, err := d.integer(oldFSchemaVersion)
	if err != nil {
		return oldInvalid("schema_version must be an integer")
	}
	var required []oldField
	switch version {
	case 2:
		required = oldFieldsV2
	case 3, 4:
		required = oldFieldsV3
	default:
		return oldInvalid("Unsupported schema_version: %d", version)
	}
	if err := d.missing(required); err != nil {
		return err
	}
	if version == 2 && sl[oldFSessionID].present {
		d.unknown = append(d.unknown, "session_id")
	}
	if len(d.unknown) > 0 {
		// Python's json keeps one entry per key: a repeated unknown key is
		// named once.
		slices.Sort(d.unknown)
		d.unknown = slices.Compact(d.unknown)
		return oldInvalid("Unknown telemetry fields: %s", strings.Join(d.unknown, ", "))
	}
	e.SchemaVersion = int(version)
	if version != 2 {
		if e.SessionID, err = d.requiredString(oldFSessionID); err != nil {
			return err
		}
	}

	if e.TimestampNs, err = d.integer(oldFTimestampNs); err != nil {
		return err
	}
	if e.TimestampNs < 0 {
		return oldInvalid("timestamp_ns must be >= 0")
	}
	if e.EventType, err = d.requiredString(oldFEventType); err != nil {
		return err
	}
	if e.Collector, err = d.requiredString(oldFCollector); err != nil {
		return err
	}
	if e.SamplingIntervalMs, err = d.integer(oldFSamplingIntervalMs); err != nil {
		return err
	}
	if e.SamplingIntervalMs < 0 {
		return oldInvalid("sampling_interval_ms must be >= 0")
	}
	if e.PID, err = d.integer(oldFPID); err != nil {
		return err
	}
	if e.PID < -1 {
		return oldInvalid("pid must be >= -1")
	}
	if e.Host, err = d.requiredString(oldFHost); err != nil {
		return err
	}

	// Identity fields, each only when present (null job_id is allowed; a
	// null rank/local_rank/world_size is not an integer).
	if sl[oldFJobID].present && sl[oldFJobID].oldKind != oldKNull {
		if e.JobID, err = d.requiredString(oldFJobID); err != nil {
			return err
		}
	}
	e.Rank, e.WorldSize = 0, 1
	if sl[oldFRank].present {
		if e.Rank, err = d.integer(oldFRank); err != nil {
			return err
		}
		if e.Rank < 0 {
			return oldInvalid("rank must be >= 0")
		}
	}
	e.LocalRank = e.Rank
	if sl[oldFLocalRank].present {
		if e.LocalRank, err = d.integer(oldFLocalRank); err != nil {
			return err
		}
		if e.LocalRank < 0 {
			return oldInvalid("local_rank must be >= 0")
		}
	}
	if sl[oldFWorldSize].present {
		if e.WorldSize, err = d.integer(oldFWorldSize); err != nil {
			return err
		}
		if e.WorldSize < 1 {
			return oldInvalid("world_size must be >= 1")
		}
	}

	if e.DeviceID, err = d.integer(oldFDeviceID); err != nil {
		return err
	}

	// Counters: v4 makes the core counters nullable.
	core := d.integer
	coreOpt := func(f oldField) (OptInt, error) {
		v, err := core(f)
		return OptInt{Value: v, Valid: true}, err
	}
	if version == 4 {
		coreOpt = d.optInteger
	}
	if e.AllocatorAllocatedBytes, err = coreOpt(oldFAllocatorAllocatedBytes); err != nil {
		return err
	}
	if e.AllocatorReservedBytes, err = coreOpt(oldFAllocatorReservedBytes); err != nil {
		return err
	}
	if e.AllocatorActiveBytes, err = d.optInteger(oldFAllocatorActiveBytes); err != nil {
		return err
	}
	if e.AllocatorInactiveBytes, err = d.optInteger(oldFAllocatorInactiveBytes); err != nil {
		return err
	}
	if e.AllocatorChangeBytes, err = coreOpt(oldFAllocatorChangeBytes); err != nil {
		return err
	}
	if oldNegative(e.AllocatorAllocatedBytes) {
		return oldInvalid("allocator_allocated_bytes must be >= 0")
	}
	if oldNegative(e.AllocatorReservedBytes) {
		return oldInvalid("allocator_reserved_bytes must be >= 0")
	}
	if oldNegative(e.AllocatorActiveBytes) {
		return oldInvalid("allocator_active_bytes must be >= 0 when provided")
	}
	if oldNegative(e.AllocatorInactiveBytes) {
		return oldInvalid("allocator_inactive_bytes must be >= 0 when provided")
	}

	if e.DeviceUsedBytes, err = coreOpt(oldFDeviceUsedBytes); err != nil {
		return err
	}
	if e.DeviceFreeBytes, err = d.optInteger(oldFDeviceFreeBytes); err != nil {
		return err
	}
	if e.DeviceTotalBytes, err = d.optInteger(oldFDeviceTotalBytes); err != nil {
		return err
	}
	if oldNegative(e.DeviceUsedBytes) {
		return oldInvalid("device_used_bytes must be >= 0")
	}
	if oldNegative(e.DeviceFreeBytes) {
		return oldInvalid("device_free_bytes must be >= 0 when provided")
	}
	if oldNegative(e.DeviceTotalBytes) {
		return oldInvalid("device_total_bytes must be >= 0 when provided")
	}
	if e.DeviceTotalBytes.Valid {
		if e.DeviceUsedBytes.Valid && e.DeviceUsedBytes.Value > e.DeviceTotalBytes.Value {
			return oldInvalid("device_used_bytes cannot exceed device_total_bytes")
		}
		if e.DeviceFreeBytes.Valid && e.DeviceFreeBytes.Value > e.DeviceTotalBytes.Value {
			return oldInvalid("device_free_bytes cannot exceed device_total_bytes")
		}
	}

	switch ctx := sl[oldFContext]; ctx.oldKind {
	case oldKNull:
	case oldKString:
		e.Context, e.HasContext = ctx.s, true
	default:
		return oldInvalid("context must be a string")
	}

	if sl[oldFMetadata].oldKind != oldKObject {
		return oldInvalid("metadata must be an object")
	}
	e.Metadata = sl[oldFMetadata].meta
	if version == 4 {
		if err := oldValidateCapabilities(e); err != nil {
			return err
		}
	}

	// Cross-oldField identity rules (resolve_distributed_identity).
	switch {
	case e.Rank >= e.WorldSize:
		return oldInvalid("rank must be < world_size")
	case e.LocalRank >= e.WorldSize:
		return oldInvalid("local_rank must be < world_size")
	case e.WorldSize == 1 && e.Rank != 0:
		return oldInvalid("rank must be 0 when world_size is 1")
	case e.WorldSize == 1 && e.LocalRank != 0:
		return oldInvalid("local_rank must be 0 when world_size is 1")
	}
	return nil
}

func oldNegative(v OptInt) bool { return v.Valid && v.Value < 0 }

var (
	oldFieldsV3 = []oldField{
		oldFSchemaVersion, oldFSessionID, oldFTimestampNs, oldFEventType, oldFCollector,
		oldFSamplingIntervalMs, oldFPID, oldFHost, oldFDeviceID,
		oldFAllocatorAllocatedBytes, oldFAllocatorReservedBytes, oldFAllocatorActiveBytes,
		oldFAllocatorInactiveBytes, oldFAllocatorChangeBytes,
		oldFDeviceUsedBytes, oldFDeviceFreeBytes, oldFDeviceTotalBytes, oldFContext, oldFMetadata,
	}
	oldFieldsV2 = slices.DeleteFunc(slices.Clone(oldFieldsV3), func(f oldField) bool { return f == oldFSessionID })
)

func (d *OldDecoder) missing(required []oldField) error {
	var names []string
	for _, f := range required {
		if !d.slots[f].present {
			names = append(names, oldFieldNames[f])
		}
	}
	if names == nil {
		return nil
	}
	return oldInvalid("Missing required telemetry fields: %s", strings.Join(names, ", "))
}

// Capability keys of metadata.memory_capabilities (schema v4), in the
// reference's order: strings, then booleans.
var (
	oldCapabilityStrings  = []string{"backend", "telemetry_collector", "sampling_source"}
	oldCapabilityBooleans = []string{
		"supports_allocator_allocated", "supports_allocator_reserved",
		"supports_allocator_active", "supports_allocator_inactive",
		"supports_device_used", "supports_device_free", "supports_device_total",
		"supports_native_allocator_history", "supports_fragmentation_analysis",
		"supports_allocator_attribution", "supports_bounded_profiling",
	}
)

// oldValidateCapabilities applies the v4 rules: metadata.memory_capabilities
// holds exactly the known keys with the right types, and a counter whose
// supports_* flag is false must be null.
func oldValidateCapabilities(e *Event) error {
	caps, ok := e.Metadata["memory_capabilities"].(map[string]any)
	if !ok {
		return oldInvalid("metadata.memory_capabilities must be an object")
	}
	var missing []string
	for _, k := range oldCapabilityStrings {
		if _, ok := caps[k]; !ok {
			missing = append(missing, k)
		}
	}
	for _, k := range oldCapabilityBooleans {
		if _, ok := caps[k]; !ok {
			missing = append(missing, k)
		}
	}
	if missing != nil {
		return oldInvalid("Missing memory capability fields: %s", strings.Join(missing, ", "))
	}
	var unknown []string
	for k := range caps {
		if !slices.Contains(oldCapabilityStrings, k) && !slices.Contains(oldCapabilityBooleans, k) {
			unknown = append(unknown, k)
		}
	}
	if unknown != nil {
		slices.Sort(unknown)
		return oldInvalid("Unknown memory capability fields: %s", strings.Join(unknown, ", "))
	}
	for _, k := range oldCapabilityStrings {
		switch v := caps[k].(type) {
		case string:
			if IsBlank(v) {
				return oldInvalid("metadata.memory_capabilities.%s must be a non-empty string", k)
			}
		case nil:
			return oldInvalid("metadata.memory_capabilities.%s must be a non-empty string", k)
		default:
			return oldInvalid("metadata.memory_capabilities.%s must be a string", k)
		}
	}
	for _, k := range oldCapabilityBooleans {
		if _, ok := caps[k].(bool); !ok {
			return oldInvalid("metadata.memory_capabilities.%s must be a boolean", k)
		}
	}
	counters := []struct {
		name, capability string
		value            OptInt
	}{
		{"allocator_allocated_bytes", "supports_allocator_allocated", e.AllocatorAllocatedBytes},
		{"allocator_reserved_bytes", "supports_allocator_reserved", e.AllocatorReservedBytes},
		{"allocator_active_bytes", "supports_allocator_active", e.AllocatorActiveBytes},
		{"allocator_inactive_bytes", "supports_allocator_inactive", e.AllocatorInactiveBytes},
		{"device_used_bytes", "supports_device_used", e.DeviceUsedBytes},
		{"device_free_bytes", "supports_device_free", e.DeviceFreeBytes},
		{"device_total_bytes", "supports_device_total", e.DeviceTotalBytes},
	}
	for _, c := range counters {
		if c.value.Valid && !caps[c.capability].(bool) {
			return oldInvalid("%s must be null when metadata.memory_capabilities.%s is false", c.name, c.capability)
		}
	}
	if e.AllocatorChangeBytes.Valid && !caps["supports_allocator_allocated"].(bool) {
		return oldInvalid("allocator_change_bytes must be null when allocator allocated memory is unsupported")
	}
	return nil
}

// ---- scanner.go ----

// oldMaxNesting bounds the depth of nested arrays/objects in one record so a
// hostile line cannot exhaust the stack (Python's json raises RecursionError
// at a similar depth).
const oldMaxNesting = 10000

// OldSyntaxError reports malformed JSON (as opposed to a well-formed record that
// fails validation). Readers use the distinction for the truncated-tail rule.
type OldSyntaxError struct {
	Offset int // byte offset in the record
	Msg    string
}

func (e *OldSyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at offset %d: %s", e.Offset, e.Msg)
}

// oldScanner is a strict RFC 8259 JSON oldScanner over one in-memory record. It is
// hand-written because decoding stormlog JSONL dominates the CLI's run time:
// it decodes straight into Event fields and interns the few distinct short
// strings (event_type, collector, host, ids) instead of allocating each.
type oldScanner struct {
	data   []byte
	pos    int
	depth  int
	intern map[string]string
	buf    []byte // scratch for strings with escapes
}

func (s *oldScanner) fail(msg string) error {
	return &OldSyntaxError{Offset: s.pos, Msg: msg}
}

func (s *oldScanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// expectEnd checks that only whitespace follows the value.
func (s *oldScanner) expectEnd() error {
	s.skipWS()
	if s.pos != len(s.data) {
		return s.fail("unexpected data after the JSON value")
	}
	return nil
}

// peek returns the next non-whitespace byte, or 0 at the end.
func (s *oldScanner) peek() byte {
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *oldScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// stringBytes scans a JSON string starting at the opening quote and returns
// its decoded bytes. The slice aliases the input when the string has no
// escapes and is valid UTF-8; otherwise it aliases s.buf and is only valid
// until the next call.
func (s *oldScanner) stringBytes() ([]byte, error) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, s.fail("expected string")
	}
	s.pos++
	start := s.pos
	ascii := true
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			out := s.data[start:s.pos]
			s.pos++
			if !ascii && !utf8.Valid(out) {
				s.buf = oldAppendValidUTF8(s.buf[:0], out)
				return s.buf, nil
			}
			return out, nil
		case c == '\\':
			return s.slowString(start)
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c >= 0x80:
			ascii = false
		}
		s.pos++
	}
	return nil, s.fail("unterminated string")
}

// slowString decodes a string containing escapes; s.pos is at the first
// backslash and start is the first content byte.
func (s *oldScanner) slowString(start int) ([]byte, error) {
	b := append(s.buf[:0], s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			if !utf8.Valid(b) {
				b = oldAppendValidUTF8(nil, b)
			}
			s.buf = b
			return b, nil
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c != '\\':
			b = append(b, c)
			s.pos++
			continue
		}
		s.pos++
		if s.pos >= len(s.data) {
			break
		}
		e := s.data[s.pos]
		s.pos++
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A valid pair becomes one rune; a lone surrogate becomes
				// U+FFFD (Go strings cannot hold surrogates).
				save := s.pos
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					s.pos += 2
					if r2, ok := s.hex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					s.pos = save
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
		default:
			return nil, s.fail("invalid escape")
		}
	}
	return nil, s.fail("unterminated string")
}

func (s *oldScanner) hex4() (rune, bool) {
	if len(s.data)-s.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.pos += 4
	return r, true
}

func oldAppendValidUTF8(dst, src []byte) []byte {
	for len(src) > 0 {
		r, n := utf8.DecodeRune(src)
		dst = utf8.AppendRune(dst, r)
		src = src[n:]
	}
	return dst
}

// str scans a string value and returns it as a Go string, interning short
// values when asked and an intern table is set.
func (s *oldScanner) str(intern bool) (string, error) {
	b, err := s.stringBytes()
	if err != nil {
		return "", err
	}
	if intern {
		return s.internBytes(b), nil
	}
	return string(b), nil
}

// internBytes returns b as a string, shared with earlier equal short strings.
func (s *oldScanner) internBytes(b []byte) string {
	if s.intern == nil || len(b) > 64 {
		return string(b)
	}
	if v, ok := s.intern[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.intern) < 4096 {
		s.intern[v] = v
	}
	return v
}

// oldNumberKind classifies a JSON number lexeme.
type oldNumberKind uint8

const (
	oldNumInt      oldNumberKind = iota // integer lexeme that fits int64
	oldNumBigInt                        // integer lexeme outside int64
	oldNumFraction                      // has a fraction or exponent (a Python float)
)

// number scans a JSON number and returns its lexeme and oldKind; for oldNumInt the
// value is returned too.
func (s *oldScanner) number() ([]byte, oldNumberKind, int64, error) {
	start := s.pos
	d := s.data
	i := s.pos
	neg := false
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	if i >= len(d) {
		s.pos = i
		return nil, 0, 0, s.fail("invalid number")
	}
	var v uint64
	overflow := false
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			digit := uint64(d[i] - '0')
			if v > (1<<63)/10 || v*10 > (1<<63)-digit {
				overflow = true
			} else {
				v = v*10 + digit
			}
			i++
		}
	default:
		s.pos = i
		return nil, 0, 0, s.fail("invalid number")
	}
	oldKind := oldNumInt
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			return nil, 0, 0, s.fail("invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		oldKind = oldNumFraction
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			return nil, 0, 0, s.fail("invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		oldKind = oldNumFraction
	}
	s.pos = i
	lex := d[start:i]
	if oldKind == oldNumFraction {
		return lex, oldKind, 0, nil
	}
	if overflow || (!neg && v > 1<<63-1) {
		return lex, oldNumBigInt, 0, nil
	}
	if neg {
		return lex, oldNumInt, -int64(v), nil
	}
	return lex, oldNumInt, int64(v), nil
}

// value decodes any JSON value into the metadata representation: string,
// json.Number, bool, nil, []any or map[string]any.
func (s *oldScanner) value() (any, error) {
	switch c := s.peek(); {
	case c == '"':
		return s.str(false)
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lex, _, _, err := s.number()
		if err != nil {
			return nil, err
		}
		return json.Number(lex), nil
	case c == 0:
		return nil, s.fail("unexpected end of input")
	default:
		return nil, s.fail(fmt.Sprintf("invalid character %q", c))
	}
}

func (s *oldScanner) enter() error {
	s.depth++
	if s.depth > oldMaxNesting {
		return s.fail("nesting too deep")
	}
	return nil
}

// object decodes an object; duplicate keys keep the last value, as Python's
// json does.
func (s *oldScanner) object() (map[string]any, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer func() { s.depth-- }()
	s.pos++ // '{'
	var m map[string]any
	if s.peek() == '}' {
		s.pos++
		return map[string]any{}, nil
	}
	for {
		if s.peek() != '"' {
			return nil, s.fail("expected object key")
		}
		k, err := s.str(true)
		if err != nil {
			return nil, err
		}
		if s.peek() != ':' {
			return nil, s.fail("expected ':' after object key")
		}
		s.pos++
		v, err := s.value()
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = make(map[string]any, 4)
		}
		m[k] = v
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return m, nil
		default:
			return nil, s.fail("expected ',' or '}' in object")
		}
	}
}

func (s *oldScanner) array() ([]any, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer func() { s.depth-- }()
	s.pos++ // '['
	out := []any{}
	if s.peek() == ']' {
		s.pos++
		return out, nil
	}
	for {
		v, err := s.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return out, nil
		default:
			return nil, s.fail("expected ',' or ']' in array")
		}
	}
}

// skipValue validates and skips one value without building it.
func (s *oldScanner) skipValue() error {
	switch c := s.peek(); {
	case c == '"':
		_, err := s.stringBytes()
		return err
	case c == '{' || c == '[':
		if err := s.enter(); err != nil {
			return err
		}
		defer func() { s.depth-- }()
		s.pos++
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		if s.peek() == closer {
			s.pos++
			return nil
		}
		for {
			if c == '{' {
				if s.peek() != '"' {
					return s.fail("expected object key")
				}
				if _, err := s.stringBytes(); err != nil {
					return err
				}
				if s.peek() != ':' {
					return s.fail("expected ':' after object key")
				}
				s.pos++
			}
			if err := s.skipValue(); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.pos++
			case closer:
				s.pos++
				return nil
			default:
				return s.fail("expected ',' or closing bracket")
			}
		}
	default:
		_, err := s.value()
		return err
	}
}

// ---- readers.go ----

// OldRecordError is a bad record: Line is the 1-based line it starts on (0 when
// unknown), Index its 0-based position in a JSON document (-1 for JSON
// Lines).
type OldRecordError struct {
	Line  int
	Index int
	Err   error
}

func (e *OldRecordError) Error() string {
	switch {
	case e.Line > 0 && e.Index >= 0:
		return fmt.Sprintf("line %d (event at index %d): %s", e.Line, e.Index, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Err)
	}
	return fmt.Sprintf("event at index %d: %s", e.Index, e.Err)
}

func (e *OldRecordError) Unwrap() error { return e.Err }

// OldDecodeJSONL reads TelemetryEvent records, one JSON object per line (the
// reference's JSONL loader): blank lines are skipped; an unparsable last line
// without a trailing newline is a truncated tail (a writer still appending)
// and is dropped; any other bad line fails the whole read with a
// *OldRecordError naming the line, e.g. "line 7: rank must be < world_size".
//
// Lines are split on "\n" only ("\r\n" works: "\r" is JSON whitespace);
// Python's splitlines would also split inside a raw U+2028 in a string.
//
// The buffer is held in memory; events share one Metadata map per distinct
// metadata text: treat Metadata as read-only.
func OldDecodeJSONL(data []byte) ([]Event, error) {
	var jr oldJsonlReader
	if err := jr.decodeChunk(data, true); err != nil {
		return nil, err
	}
	return jr.out[:len(jr.out):len(jr.out)], nil
}

const (
	// oldChunkBytes is the streaming read size.
	oldChunkBytes = 8 << 20
	// oldMinParallelBytes is the chunk size below which splitting across
	// goroutines costs more than it saves.
	oldMinParallelBytes = 1 << 20
)

// oldReadJSONL streams r; head holds bytes already read from r.
func oldReadJSONL(r io.Reader, head []byte) ([]Event, error) {
	var sizeHint int64
	if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			sizeHint = fi.Size()
		}
	}
	var jr oldJsonlReader
	buf := make([]byte, max(oldChunkBytes, 2*len(head)))
	n := copy(buf, head)
	consumed := int64(0)
	for {
		m, err := io.ReadFull(r, buf[n:])
		n += m
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return nil, err
		}
		if eof {
			if err := jr.decodeChunk(buf[:n], true); err != nil {
				return nil, err
			}
			return jr.out[:len(jr.out):len(jr.out)], nil
		}
		cut := bytes.LastIndexByte(buf[:n], '\n') + 1
		if cut == 0 { // one line longer than the buffer
			buf = append(buf, make([]byte, len(buf))...)
			continue
		}
		if err := jr.decodeChunk(buf[:cut], false); err != nil {
			return nil, err
		}
		consumed += int64(cut)
		if sizeHint > 0 && consumed == int64(cut) && len(jr.out) > 0 {
			// Size the result once from the first chunk's bytes per event,
			// instead of growing (and copying) it repeatedly.
			want := int(float64(sizeHint)/float64(cut)*float64(len(jr.out))*1.02) + 16
			jr.out = slices.Grow(jr.out, want-len(jr.out))
		}
		n = copy(buf, buf[cut:n])
	}
}

// oldJsonlReader decodes successive chunks of complete lines into out.
type oldJsonlReader struct {
	decoders []OldDecoder // one per worker, kept across chunks for interning
	out      []Event
	filled   []bool
	line     int // lines before the current chunk
}

// decodeChunk decodes the lines of data (which ends at a line boundary
// unless final) and appends the events.
func (jr *oldJsonlReader) decodeChunk(data []byte, final bool) error {
	lines := bytes.Count(data, []byte{'\n'})
	if final && len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	workers := runtime.GOMAXPROCS(0)
	if len(data) < oldMinParallelBytes || workers < 2 {
		workers = 1
	}
	for len(jr.decoders) < workers {
		jr.decoders = append(jr.decoders, OldDecoder{})
	}
	base := len(jr.out)
	jr.out = slices.Grow(jr.out, lines)[:base+lines]
	out := jr.out[base:]
	if cap(jr.filled) < lines {
		jr.filled = make([]bool, lines)
	}
	filled := jr.filled[:lines]
	clear(filled)

	type part struct {
		start, end, firstLine int
		err                   *OldRecordError
	}
	parts := make([]part, 0, workers)
	start, line := 0, 0
	for w := 1; w <= workers; w++ {
		end := len(data)
		if w < workers {
			end = max(start, len(data)*w/workers)
			if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = len(data)
			}
		}
		parts = append(parts, part{start: start, end: end, firstLine: line})
		line += bytes.Count(data[start:end], []byte{'\n'})
		start = end
	}
	var wg sync.WaitGroup
	for i := range parts {
		p := &parts[i]
		d := &jr.decoders[i]
		wg.Go(func() {
			p.err = d.decodeLines(data, p.start, p.end, p.firstLine, lines, final, jr.line, out, filled)
		})
	}
	wg.Wait()
	for _, p := range parts {
		if p.err != nil {
			return p.err
		}
	}
	// Compact away blank and dropped lines.
	n := 0
	for i := range out {
		if filled[i] {
			out[n] = out[i]
			n++
		}
	}
	clear(out[n:])
	jr.out = jr.out[:base+n]
	jr.line += lines
	return nil
}

// decodeLines decodes data[start:end] whose first line has index line within
// the chunk; lineBase is the number of lines before the chunk.
func (d *OldDecoder) decodeLines(data []byte, start, end, line, chunkLines int, final bool, lineBase int, out []Event, filled []bool) *OldRecordError {
	for pos := start; pos < end; line++ {
		next := end
		lineEnd := end
		if i := bytes.IndexByte(data[pos:end], '\n'); i >= 0 {
			lineEnd = pos + i
			next = lineEnd + 1
		}
		text := data[pos:lineEnd]
		pos = next
		if oldIsBlankLine(text) {
			continue
		}
		if err := d.decodeInto(text, &out[line]); err != nil {
			var syn *OldSyntaxError
			truncatedTail := final && line == chunkLines-1 && lineEnd == len(data)
			if errors.As(err, &syn) && truncatedTail {
				continue
			}
			if errors.As(err, &syn) {
				err = fmt.Errorf("malformed JSON record: %s", syn.Msg)
			}
			return &OldRecordError{Line: lineBase + line + 1, Index: -1, Err: err}
		}
		filled[line] = true
	}
	return nil
}

func oldIsBlankLine(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// OldReadDocument reads a JSON document holding TelemetryEvent records: an array
// of records, an object with an "events" array, or a single record object
// (the reference's JSON loader). A bad record fails the read with a
// *OldRecordError naming its index and the line it starts on; malformed JSON
// names the line of the error.
func OldReadDocument(data []byte) ([]Event, error) {
	// The whole text must be valid JSON first, as for json.load.
	s := &oldScanner{data: data}
	err := s.skipValue()
	if err == nil {
		err = s.expectEnd()
	}
	var syn *OldSyntaxError
	if errors.As(err, &syn) {
		return nil, &OldRecordError{Line: oldLineAt(data, syn.Offset), Index: -1, Err: fmt.Errorf("malformed JSON: %s", syn.Msg)}
	}
	spans, err := oldDocumentRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(spans))
	var d OldDecoder
	for i, sp := range spans {
		rec := data[sp[0]:sp[1]]
		if rec[0] != '{' {
			return nil, &OldRecordError{Line: oldLineAt(data, sp[0]), Index: i, Err: errors.New("must be an object")}
		}
		ev, err := d.Decode(rec)
		if err != nil {
			return nil, &OldRecordError{Line: oldLineAt(data, sp[0]), Index: i, Err: err}
		}
		out = append(out, ev)
	}
	return out, nil
}

func oldLineAt(data []byte, off int) int {
	return 1 + bytes.Count(data[:min(off, len(data))], []byte{'\n'})
}

// oldDocumentRecords returns the byte spans of the records of a valid JSON
// document: the elements of a top-level array, of the (last) "events" array
// of a top-level object, or the object itself when it looks like a record.
func oldDocumentRecords(data []byte) ([][2]int, error) {
	s := &oldScanner{data: data}
	switch s.peek() {
	case '[':
		return oldArrayElements(s), nil
	case '{':
	default:
		return nil, errors.New("Telemetry payload must be a JSON object or array")
	}
	start := s.pos
	var spans [][2]int
	hasEvents, looksLike := false, false
	oldMembers(s, func(key string) {
		if key == "events" && s.peek() == '[' {
			spans, hasEvents = oldArrayElements(s), true
		} else {
			if key == "events" {
				hasEvents = false
			}
			_ = s.skipValue()
		}
		switch key {
		case "schema_version", "event_type", "type", "memory_allocated", "memory_mb", "timestamp", "timestamp_ns":
			looksLike = true
		}
	})
	switch {
	case hasEvents:
		return spans, nil
	case looksLike:
		return [][2]int{{start, s.pos}}, nil
	}
	return nil, errors.New("JSON payload does not contain telemetry events")
}

// oldMembers walks the oldMembers of the (valid) object at s.pos, calling member
// with each key and s at its value, which member must move past; s ends
// past the object.
func oldMembers(s *oldScanner, member func(key string)) {
	s.peek()
	s.pos++ // '{'
	for s.peek() != '}' {
		kb, _ := s.stringBytes()
		s.peek()
		s.pos++ // ':'
		member(string(kb))
		if s.peek() == ',' {
			s.pos++
		}
	}
	s.pos++
}

// oldEventsIsArray reports whether the (valid) object text holds an "events"
// array, the last "events" key deciding as in json.loads.
func oldEventsIsArray(object []byte) bool {
	s := &oldScanner{data: object}
	isArray := false
	oldMembers(s, func(key string) {
		if key == "events" {
			isArray = s.peek() == '['
		}
		_ = s.skipValue()
	})
	return isArray
}

// oldArrayElements returns the spans of the elements of the (valid) array at
// s.pos and moves past it.
func oldArrayElements(s *oldScanner) [][2]int {
	var spans [][2]int
	s.pos++ // '['
	for s.peek() != ']' {
		start := s.pos
		_ = s.skipValue()
		spans = append(spans, [2]int{start, s.pos})
		if s.peek() == ',' {
			s.pos++
		}
	}
	s.pos++
	return spans
}

// OldReadAuto reads either JSON Lines or one JSON document, deciding by content:
// input whose first non-blank byte is '[' is a document; so is one object with
// an "events" array, or one object spread over several lines (a pretty-printed
// record); anything else is streamed as JSON Lines.
func OldReadAuto(r io.Reader) ([]Event, error) {
	head, err := oldReadHead(r)
	if err != nil {
		return nil, err
	}
	s := &oldScanner{data: head}
	switch s.peek() {
	case '[':
		return oldReadDocument(r, head, false)
	case '{':
		switch oldFirstLineKind(head[s.pos:]) {
		case oldEventsWrapper:
			return oldReadDocument(r, head, false)
		case oldIncompleteLine:
			return oldReadDocument(r, head, true)
		}
	}
	return oldReadJSONL(r, head)
}

// oldReadHead reads the start of r that tells its format: 64 KiB, or more
// until the first non-blank byte and, when that opens an object, the end of
// its line. json.dump writes a whole {"events": [...]} document on one line,
// and from its first 64 KiB alone it would pass for a record line.
func oldReadHead(r io.Reader) ([]byte, error) {
	head := make([]byte, 64<<10)
	n := 0
	for {
		m, err := io.ReadFull(r, head[n:])
		n += m
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return head[:n], nil
		}
		if err != nil {
			return nil, err
		}
		s := &oldScanner{data: head[:n]}
		if c := s.peek(); c != 0 && (c != '{' || bytes.IndexByte(head[s.pos:n], '\n') >= 0) {
			return head[:n], nil
		}
		head = append(head, make([]byte, len(head))...)
	}
}

// oldReadDocument reads the rest of r and decodes one document. When the
// document shape was only a guess (an incomplete first line) and the text is
// not valid JSON, it is decoded as JSON Lines instead, so the error names
// the bad line.
func oldReadDocument(r io.Reader, head []byte, guessed bool) ([]Event, error) {
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data := append(head, rest...)
	if guessed {
		s := &oldScanner{data: data}
		if s.skipValue() != nil || s.expectEnd() != nil {
			return OldDecodeJSONL(data)
		}
	}
	return OldReadDocument(data)
}

type oldLineKind int

const (
	oldRecordLine     oldLineKind = iota // a complete value: JSON Lines
	oldEventsWrapper                     // {"events": [...]} on one line
	oldIncompleteLine                    // the value continues past the first line
)

// oldFirstLineKind classifies the first line of text (which starts at '{').
// It builds nothing: that line may be a whole document.
func oldFirstLineKind(text []byte) oldLineKind {
	first := text
	i := bytes.IndexByte(text, '\n')
	if i >= 0 {
		first = text[:i]
	}
	s := &oldScanner{data: first}
	if s.skipValue() == nil && s.expectEnd() == nil {
		if oldEventsIsArray(first) {
			return oldEventsWrapper
		}
		return oldRecordLine
	}
	if i < 0 {
		return oldRecordLine // a lone unterminated line: JSON Lines' truncated tail
	}
	return oldIncompleteLine
}
