package telemetry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// field identifies one known top-level key of a TelemetryEvent record.
type field uint8

const (
	fSchemaVersion field = iota
	fSessionID
	fTimestampNs
	fEventType
	fCollector
	fSamplingIntervalMs
	fPID
	fHost
	fDeviceID
	fAllocatorAllocatedBytes
	fAllocatorReservedBytes
	fAllocatorActiveBytes
	fAllocatorInactiveBytes
	fAllocatorChangeBytes
	fDeviceUsedBytes
	fDeviceFreeBytes
	fDeviceTotalBytes
	fContext
	fMetadata
	fJobID
	fRank
	fLocalRank
	fWorldSize
	numFields
)

// fieldNames lists the keys in the reference's declaration order: required
// fields first (REQUIRED_V3_FIELDS; v2 lacks session_id), then the optional
// identity fields. "Missing required telemetry fields" lists in this order.
var fieldNames = [numFields]string{
	"schema_version", "session_id", "timestamp_ns", "event_type", "collector",
	"sampling_interval_ms", "pid", "host", "device_id",
	"allocator_allocated_bytes", "allocator_reserved_bytes",
	"allocator_active_bytes", "allocator_inactive_bytes", "allocator_change_bytes",
	"device_used_bytes", "device_free_bytes", "device_total_bytes",
	"context", "metadata",
	"job_id", "rank", "local_rank", "world_size",
}

// quotedFieldNames are the keys as JSON strings.
var quotedFieldNames = func() (q [numFields]string) {
	for f, name := range fieldNames {
		q[f] = `"` + name + `"`
	}
	return q
}()

// lookupField maps a key to its field; a switch on the key text beats a map
// lookup on the hot path (every key of every record).
func lookupField(key []byte) (field, bool) {
	switch string(key) {
	case "schema_version":
		return fSchemaVersion, true
	case "session_id":
		return fSessionID, true
	case "timestamp_ns":
		return fTimestampNs, true
	case "event_type":
		return fEventType, true
	case "collector":
		return fCollector, true
	case "sampling_interval_ms":
		return fSamplingIntervalMs, true
	case "pid":
		return fPID, true
	case "host":
		return fHost, true
	case "device_id":
		return fDeviceID, true
	case "allocator_allocated_bytes":
		return fAllocatorAllocatedBytes, true
	case "allocator_reserved_bytes":
		return fAllocatorReservedBytes, true
	case "allocator_active_bytes":
		return fAllocatorActiveBytes, true
	case "allocator_inactive_bytes":
		return fAllocatorInactiveBytes, true
	case "allocator_change_bytes":
		return fAllocatorChangeBytes, true
	case "device_used_bytes":
		return fDeviceUsedBytes, true
	case "device_free_bytes":
		return fDeviceFreeBytes, true
	case "device_total_bytes":
		return fDeviceTotalBytes, true
	case "context":
		return fContext, true
	case "metadata":
		return fMetadata, true
	case "job_id":
		return fJobID, true
	case "rank":
		return fRank, true
	case "local_rank":
		return fLocalRank, true
	case "world_size":
		return fWorldSize, true
	}
	return 0, false
}

// kind is the JSON type of a decoded value as Python would see it.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt    // integer that fits int64
	kBigInt // integer outside int64 (valid in Python, not representable here)
	kFloat  // number with a fraction or exponent
	kString
	kObject
	kArray
	// kRankText is a session id or host left as its text, data[i:end]
	// without the quotes, for decodeInto to take from its rank's strings
	// (rankstrings.go): a kString once the record is scanned.
	kRankText
)

type slot struct {
	present bool
	kind    kind
	i       int64
	end     int // kRankText: the text's end
	s       string
	meta    map[string]any // metadata object
	text    metadataText   // metadata object's text (lazy decoders)
}

// Decoder decodes TelemetryEvent records. Its zero value is ready to use; a
// Decoder reused across records (one per goroutine) interns the repeated
// short strings of a stream so decoding allocates almost nothing per record.
//
// Events decoded by one Decoder share one Metadata map per distinct metadata
// text: treat Event.Metadata as read-only.
type Decoder struct {
	sc       scanner
	slots    [numFields]slot
	unknown  []string
	metadata map[string]map[string]any // interned metadata by raw text
	last     [numFields]string         // previous string value per field …
	lastRaw  [numFields][]byte         // … and its JSON text when that is the value quoted
	// follows[f] is the key that followed f in the previous record
	// (follows[numFields]: its first key). Records of one writer list their
	// keys in one order: the predicted key is checked with one comparison
	// instead of being scanned and looked up.
	follows  [numFields + 1]field
	lastMeta []byte         // previous metadata text …
	lastMap  map[string]any // … and its map
	// metadataMisses counts metadata texts decoded since the last one
	// found in the interning table.
	metadataMisses int

	// lazy: keep metadata as its text (Stream's decoders).
	lazy         bool
	lastMetaText metadataText // the previous non-empty metadata text (lazy)

	// ranks, when set, holds the session ids and hosts by rank
	// (rankstrings.go), which scanField leaves as text (kRankText).
	ranks *rankStrings
}

// DecodeRecord decodes and validates one JSON object holding a TelemetryEvent
// record of schema version 2, 3 or 4 (reference §1.3, §1.5). Malformed JSON
// yields a *SyntaxError; a well-formed record that breaks a rule yields a
// *ValidationError whose text is the reference's message (e.g. "rank must be
// < world_size"); a well-formed non-object yields ErrNotObject.
//
// Checks run in the reference's order, the first failure wins: the schema
// version (it selects the required and known keys, as in R2), missing keys
// (declaration order), unknown keys (sorted), session_id (v3/v4), process
// fields, identity fields, counters, context, metadata, v4 capabilities, and
// last the cross-field identity rules. Decisions where the reference is
// loose or where it cannot be followed:
//   - integers are integer lexemes only: 1.0, 1e3, true and "1" are not;
//     integers outside int64 are rejected (Python would accept them);
//   - v4 records must carry metadata.memory_capabilities, as the v4 schema
//     says (R2's loader would infer one and add its strings to metadata,
//     which can create marker tokens: reference open question 20);
//   - records without schema_version (legacy tracker output) are rejected
//     rather than converted;
//   - NaN and Infinity literals are rejected (Python's json accepts them);
//     invalid UTF-8 inside strings becomes U+FFFD; duplicate keys keep the
//     last value, as in Python.
func DecodeRecord(data []byte) (Event, error) {
	var d Decoder
	return d.Decode(data)
}

// Decode is DecodeRecord with string interning across calls.
func (d *Decoder) Decode(data []byte) (Event, error) {
	var e Event
	if err := d.decodeInto(data, &e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// decodeInto decodes into *e in place (readers decode straight into their
// result slice); on error *e holds a partial record.
func (d *Decoder) decodeInto(data []byte, e *Event) error {
	if d.sc.intern == nil {
		d.sc.intern = newInternTables()
	}
	d.sc.data, d.sc.pos, d.sc.depth = data, 0, 0
	isObject, err := d.scanRecord()
	if err == nil && d.ranks != nil {
		d.stringsByRank()
	}
	d.sc.data = nil
	if err != nil {
		return err
	}
	if !isObject {
		return ErrNotObject
	}
	*e = Event{}
	return d.validate(e)
}

// ErrNotObject is returned for a well-formed JSON value that is not an
// object.
var ErrNotObject = errors.New("record must be an object")

// scanRecord parses the whole value into slots before any validation, so a
// syntax error anywhere wins over a validation error, as with json.loads.
func (d *Decoder) scanRecord() (bool, error) {
	s := &d.sc
	// Only present is read of a field the record lacks; scanField sets
	// what is read of a field it has.
	for i := range d.slots {
		d.slots[i].present = false
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
	prev := field(numFields)
	for {
		if s.peek() != '"' {
			return false, s.fail("expected object key")
		}
		f, known := d.follows[prev], true
		if q := quotedFieldNames[f]; len(s.data)-s.pos >= len(q) && string(s.data[s.pos:s.pos+len(q)]) == q {
			s.pos += len(q)
		} else {
			kb, err := s.stringBytes()
			if err != nil {
				return false, err
			}
			if f, known = lookupField(kb); !known {
				d.unknown = append(d.unknown, string(kb))
			}
		}
		if known {
			d.follows[prev], prev = f, f
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

func (d *Decoder) scanField(f field) error {
	s := &d.sc
	sl := &d.slots[f]
	sl.present = true
	switch c := s.peek(); {
	case c == '"':
		sl.kind = kString
		if f == fContext {
			if d.lazy {
				b, err := s.stringBytes()
				sl.s = string(b)
				return err
			}
			v, err := s.str(false)
			sl.s = v
			return err
		}
		// Consecutive records almost always repeat event_type, collector,
		// host and the ids: compare with this field's previous value, first
		// as text, before consulting the intern table.
		if raw := d.lastRaw[f]; raw != nil && len(s.data)-s.pos >= len(raw) && string(s.data[s.pos:s.pos+len(raw)]) == string(raw) {
			s.pos += len(raw)
			sl.s = d.last[f]
			return nil
		}
		start := s.pos
		b, err := s.stringBytes()
		if err != nil {
			return err
		}
		if last := d.last[f]; string(b) == last {
			sl.s = last
		} else if d.ranks != nil && (f == fSessionID || f == fHost) && len(b) > 0 && &b[0] == &s.data[start+1] {
			// The value is its text (no escapes): its rank's strings
			// have it when the rank's records repeat it.
			sl.kind, sl.i, sl.end = kRankText, int64(start+1), s.pos-1
			return nil
		} else {
			sl.s = s.internBytes(b)
			d.last[f] = sl.s
		}
		// The text stands for the value only without escapes or invalid
		// UTF-8: it is then the value quoted.
		if raw := s.data[start:s.pos]; string(raw[1:len(raw)-1]) == sl.s {
			d.lastRaw[f] = append(d.lastRaw[f][:0], raw...)
		} else {
			d.lastRaw[f] = nil
		}
		return nil
	case c == 'n':
		sl.kind = kNull
		return s.literal("null")
	case c == 't':
		sl.kind, sl.i = kBool, 1
		return s.literal("true")
	case c == 'f':
		sl.kind, sl.i = kBool, 0
		return s.literal("false")
	case c == '-' || (c >= '0' && c <= '9'):
		_, nk, v, err := s.number()
		switch nk {
		case numInt:
			sl.kind, sl.i = kInt, v
		case numBigInt:
			sl.kind = kBigInt
		default:
			sl.kind = kFloat
		}
		return err
	case c == '{':
		sl.kind = kObject
		if f != fMetadata {
			return s.skipValue()
		}
		return d.scanMetadata(sl)
	case c == '[':
		sl.kind = kArray
		return s.skipValue()
	case c == 0:
		return s.fail("unexpected end of input")
	default:
		return s.fail(fmt.Sprintf("invalid character %q", c))
	}
}

// maxInternedMetadata bounds the metadata interning table (entries, and bytes
// per entry) so a stream of all-distinct metadata costs only the misses.
const (
	maxInternedMetadata      = 1024
	maxInternedMetadataBytes = 4096
)

// scanMetadata decodes the metadata object. Records of one stream usually
// repeat the same metadata text (backend, capabilities, …): identical text
// yields the same shared map, decoded once, which saves both time and memory
// and lets the engine scan each distinct map for markers once.
func (d *Decoder) scanMetadata(sl *slot) error {
	if d.lazy {
		return d.keepMetadata(sl)
	}
	s := &d.sc
	start := s.pos
	// The previous record's text again: it is a whole object, so the value
	// here is exactly that text.
	if n := len(d.lastMeta); n > 0 && len(s.data)-start >= n && string(s.data[start:start+n]) == string(d.lastMeta) {
		s.pos += n
		sl.meta = d.lastMap
		return nil
	}
	if d.lookUpMetadata() {
		if err := s.skipValue(); err != nil {
			return err
		}
		if m, ok := d.metadata[string(s.data[start:s.pos])]; ok {
			d.metadataMisses = 0
			sl.meta = m
			d.lastMeta, d.lastMap = append(d.lastMeta[:0], s.data[start:s.pos]...), m
			return nil
		}
		s.pos = start
	}
	d.metadataMisses++
	m, err := s.object()
	if err != nil {
		// skipValue words some errors differently, and its words are the
		// ones this decoder has always reported.
		s.pos, s.depth = start, 0
		if err := s.skipValue(); err != nil {
			return err
		}
		return err
	}
	raw := s.data[start:s.pos]
	if len(m) == 0 {
		m = nil
	}
	sl.meta = m
	d.lastMeta, d.lastMap = append(d.lastMeta[:0], raw...), m
	if len(raw) <= maxInternedMetadataBytes {
		if d.metadata == nil {
			d.metadata = make(map[string]map[string]any)
		}
		if len(d.metadata) < maxInternedMetadata {
			d.metadata[string(raw)] = m
		}
	}
	return nil
}

// keepMetadata checks the metadata object's syntax and keeps its text when
// it has a member; a record repeating the previous record's text shares its
// string, and a member list the scanner keeps is shared, not copied.
func (d *Decoder) keepMetadata(sl *slot) error {
	s := &d.sc
	start := s.pos
	if n := d.lastMetaText.prefixLen(s.data[start:]); n > 0 {
		s.pos += n
		sl.text = d.lastMetaText
		return nil
	}
	// The object's members are one level deeper than the object.
	s.splice, s.spliceDepth = listSplice{}, s.depth+2
	err := s.skipValue()
	s.spliceDepth = 0
	if err != nil {
		return err
	}
	raw := s.data[start:s.pos]
	inner := &scanner{data: raw, pos: 1}
	sl.text = metadataText{}
	if inner.peek() != '}' {
		if sp := s.splice; sp.list != "" {
			at := sp.start - start
			var text strings.Builder // one allocation for both parts
			text.Grow(len(raw) - len(sp.list))
			text.Write(raw[:at])
			text.Write(raw[at+len(sp.list):])
			sl.text = metadataText{text: text.String(), list: sp.list, at: at}
		} else {
			sl.text = metadataText{text: string(raw)}
		}
		d.lastMetaText = sl.text
	}
	return nil
}

// lookUpMetadata says whether to look a metadata text up in the interning
// table: always while it fills, then while lookups hit now and then. A
// stream whose metadata are all distinct (a sequence number in each) would
// otherwise hash every text for nothing; one lookup in 16 keeps watching.
func (d *Decoder) lookUpMetadata() bool {
	return len(d.metadata) < maxInternedMetadata || d.metadataMisses < 64 || d.metadataMisses%16 == 0
}

// ValidationError is a well-formed record that breaks a TelemetryEvent rule.
// Its text is the reference loader's message.
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &ValidationError{Msg: fmt.Sprintf(format, args...)}
}

// integer returns the slot's integer value or the reference's type error.
// Booleans, floats (1.0, 1e3), strings and null are not integers.
func (d *Decoder) integer(f field) (int64, error) {
	sl := &d.slots[f]
	switch sl.kind {
	case kInt:
		return sl.i, nil
	case kBigInt:
		return 0, invalid("%s is outside the signed 64-bit integer range", fieldNames[f])
	}
	return 0, invalid("%s must be an integer", fieldNames[f])
}

// optInteger is integer for a nullable field.
func (d *Decoder) optInteger(f field) (OptInt, error) {
	if d.slots[f].kind == kNull {
		return OptInt{}, nil
	}
	v, err := d.integer(f)
	return OptInt{Value: v, Valid: err == nil}, err
}

// requiredString applies _coerce_required_string: null or blank → "must be a
// non-empty string", another type → "must be a string".
func (d *Decoder) requiredString(f field) (string, error) {
	sl := &d.slots[f]
	switch {
	case sl.kind == kNull:
		return "", invalid("%s must be a non-empty string", fieldNames[f])
	case sl.kind != kString:
		return "", invalid("%s must be a string", fieldNames[f])
	case IsBlank(sl.s):
		return "", invalid("%s must be a non-empty string", fieldNames[f])
	}
	return sl.s, nil
}

func (d *Decoder) validate(e *Event) error {
	sl := &d.slots

	// Schema version first: it selects the required and known key sets.
	if !sl[fSchemaVersion].present {
		return d.missing(fieldsV2)
	}
	version, err := d.integer(fSchemaVersion)
	if err != nil {
		return invalid("schema_version must be an integer")
	}
	var required []field
	switch version {
	case 2:
		required = fieldsV2
	case 3, 4:
		required = fieldsV3
	default:
		return invalid("Unsupported schema_version: %d", version)
	}
	if err := d.missing(required); err != nil {
		return err
	}
	if version == 2 && sl[fSessionID].present {
		d.unknown = append(d.unknown, "session_id")
	}
	if len(d.unknown) > 0 {
		// Python's json keeps one entry per key: a repeated unknown key is
		// named once.
		slices.Sort(d.unknown)
		d.unknown = slices.Compact(d.unknown)
		return invalid("Unknown telemetry fields: %s", strings.Join(d.unknown, ", "))
	}
	e.SchemaVersion = int(version)
	if version != 2 {
		if e.SessionID, err = d.requiredString(fSessionID); err != nil {
			return err
		}
	}

	if e.TimestampNs, err = d.integer(fTimestampNs); err != nil {
		return err
	}
	if e.TimestampNs < 0 {
		return invalid("timestamp_ns must be >= 0")
	}
	if e.EventType, err = d.requiredString(fEventType); err != nil {
		return err
	}
	if e.Collector, err = d.requiredString(fCollector); err != nil {
		return err
	}
	if e.SamplingIntervalMs, err = d.integer(fSamplingIntervalMs); err != nil {
		return err
	}
	if e.SamplingIntervalMs < 0 {
		return invalid("sampling_interval_ms must be >= 0")
	}
	if e.PID, err = d.integer(fPID); err != nil {
		return err
	}
	if e.PID < -1 {
		return invalid("pid must be >= -1")
	}
	if e.Host, err = d.requiredString(fHost); err != nil {
		return err
	}

	// Identity fields, each only when present (null job_id is allowed; a
	// null rank/local_rank/world_size is not an integer).
	if sl[fJobID].present && sl[fJobID].kind != kNull {
		if e.JobID, err = d.requiredString(fJobID); err != nil {
			return err
		}
	}
	e.Rank, e.WorldSize = 0, 1
	if sl[fRank].present {
		if e.Rank, err = d.integer(fRank); err != nil {
			return err
		}
		if e.Rank < 0 {
			return invalid("rank must be >= 0")
		}
	}
	e.LocalRank = e.Rank
	if sl[fLocalRank].present {
		if e.LocalRank, err = d.integer(fLocalRank); err != nil {
			return err
		}
		if e.LocalRank < 0 {
			return invalid("local_rank must be >= 0")
		}
	}
	if sl[fWorldSize].present {
		if e.WorldSize, err = d.integer(fWorldSize); err != nil {
			return err
		}
		if e.WorldSize < 1 {
			return invalid("world_size must be >= 1")
		}
	}

	if e.DeviceID, err = d.integer(fDeviceID); err != nil {
		return err
	}

	// Counters: v4 makes the core counters nullable.
	core := d.integer
	coreOpt := func(f field) (OptInt, error) {
		v, err := core(f)
		return OptInt{Value: v, Valid: true}, err
	}
	if version == 4 {
		coreOpt = d.optInteger
	}
	if e.AllocatorAllocatedBytes, err = coreOpt(fAllocatorAllocatedBytes); err != nil {
		return err
	}
	if e.AllocatorReservedBytes, err = coreOpt(fAllocatorReservedBytes); err != nil {
		return err
	}
	if e.AllocatorActiveBytes, err = d.optInteger(fAllocatorActiveBytes); err != nil {
		return err
	}
	if e.AllocatorInactiveBytes, err = d.optInteger(fAllocatorInactiveBytes); err != nil {
		return err
	}
	if e.AllocatorChangeBytes, err = coreOpt(fAllocatorChangeBytes); err != nil {
		return err
	}
	if negative(e.AllocatorAllocatedBytes) {
		return invalid("allocator_allocated_bytes must be >= 0")
	}
	if negative(e.AllocatorReservedBytes) {
		return invalid("allocator_reserved_bytes must be >= 0")
	}
	if negative(e.AllocatorActiveBytes) {
		return invalid("allocator_active_bytes must be >= 0 when provided")
	}
	if negative(e.AllocatorInactiveBytes) {
		return invalid("allocator_inactive_bytes must be >= 0 when provided")
	}

	if e.DeviceUsedBytes, err = coreOpt(fDeviceUsedBytes); err != nil {
		return err
	}
	if e.DeviceFreeBytes, err = d.optInteger(fDeviceFreeBytes); err != nil {
		return err
	}
	if e.DeviceTotalBytes, err = d.optInteger(fDeviceTotalBytes); err != nil {
		return err
	}
	if negative(e.DeviceUsedBytes) {
		return invalid("device_used_bytes must be >= 0")
	}
	if negative(e.DeviceFreeBytes) {
		return invalid("device_free_bytes must be >= 0 when provided")
	}
	if negative(e.DeviceTotalBytes) {
		return invalid("device_total_bytes must be >= 0 when provided")
	}
	if e.DeviceTotalBytes.Valid {
		if e.DeviceUsedBytes.Valid && e.DeviceUsedBytes.Value > e.DeviceTotalBytes.Value {
			return invalid("device_used_bytes cannot exceed device_total_bytes")
		}
		if e.DeviceFreeBytes.Valid && e.DeviceFreeBytes.Value > e.DeviceTotalBytes.Value {
			return invalid("device_free_bytes cannot exceed device_total_bytes")
		}
	}

	switch ctx := sl[fContext]; ctx.kind {
	case kNull:
	case kString:
		e.Context, e.HasContext = ctx.s, true
	default:
		return invalid("context must be a string")
	}

	if sl[fMetadata].kind != kObject {
		return invalid("metadata must be an object")
	}
	e.Metadata, e.metadataJSON = sl[fMetadata].meta, sl[fMetadata].text
	if version == 4 {
		if err := validateCapabilities(e); err != nil {
			return err
		}
	}

	// Cross-field identity rules (resolve_distributed_identity).
	switch {
	case e.Rank >= e.WorldSize:
		return invalid("rank must be < world_size")
	case e.LocalRank >= e.WorldSize:
		return invalid("local_rank must be < world_size")
	case e.WorldSize == 1 && e.Rank != 0:
		return invalid("rank must be 0 when world_size is 1")
	case e.WorldSize == 1 && e.LocalRank != 0:
		return invalid("local_rank must be 0 when world_size is 1")
	}
	return nil
}

func negative(v OptInt) bool { return v.Valid && v.Value < 0 }

var (
	fieldsV3 = []field{
		fSchemaVersion, fSessionID, fTimestampNs, fEventType, fCollector,
		fSamplingIntervalMs, fPID, fHost, fDeviceID,
		fAllocatorAllocatedBytes, fAllocatorReservedBytes, fAllocatorActiveBytes,
		fAllocatorInactiveBytes, fAllocatorChangeBytes,
		fDeviceUsedBytes, fDeviceFreeBytes, fDeviceTotalBytes, fContext, fMetadata,
	}
	fieldsV2 = slices.DeleteFunc(slices.Clone(fieldsV3), func(f field) bool { return f == fSessionID })
)

func (d *Decoder) missing(required []field) error {
	var names []string
	for _, f := range required {
		if !d.slots[f].present {
			names = append(names, fieldNames[f])
		}
	}
	if names == nil {
		return nil
	}
	return invalid("Missing required telemetry fields: %s", strings.Join(names, ", "))
}

// Capability keys of metadata.memory_capabilities (schema v4), in the
// reference's order: strings, then booleans.
var (
	capabilityStrings  = []string{"backend", "telemetry_collector", "sampling_source"}
	capabilityBooleans = []string{
		"supports_allocator_allocated", "supports_allocator_reserved",
		"supports_allocator_active", "supports_allocator_inactive",
		"supports_device_used", "supports_device_free", "supports_device_total",
		"supports_native_allocator_history", "supports_fragmentation_analysis",
		"supports_allocator_attribution", "supports_bounded_profiling",
	}
)

// validateCapabilities applies the v4 rules: metadata.memory_capabilities
// holds exactly the known keys with the right types, and a counter whose
// supports_* flag is false must be null.
func validateCapabilities(e *Event) error {
	v, _ := e.MetadataLookup("memory_capabilities")
	caps, ok := v.Value().(map[string]any)
	if !ok {
		return invalid("metadata.memory_capabilities must be an object")
	}
	var missing []string
	for _, k := range capabilityStrings {
		if _, ok := caps[k]; !ok {
			missing = append(missing, k)
		}
	}
	for _, k := range capabilityBooleans {
		if _, ok := caps[k]; !ok {
			missing = append(missing, k)
		}
	}
	if missing != nil {
		return invalid("Missing memory capability fields: %s", strings.Join(missing, ", "))
	}
	var unknown []string
	for k := range caps {
		if !slices.Contains(capabilityStrings, k) && !slices.Contains(capabilityBooleans, k) {
			unknown = append(unknown, k)
		}
	}
	if unknown != nil {
		slices.Sort(unknown)
		return invalid("Unknown memory capability fields: %s", strings.Join(unknown, ", "))
	}
	for _, k := range capabilityStrings {
		switch v := caps[k].(type) {
		case string:
			if IsBlank(v) {
				return invalid("metadata.memory_capabilities.%s must be a non-empty string", k)
			}
		case nil:
			return invalid("metadata.memory_capabilities.%s must be a non-empty string", k)
		default:
			return invalid("metadata.memory_capabilities.%s must be a string", k)
		}
	}
	for _, k := range capabilityBooleans {
		if _, ok := caps[k].(bool); !ok {
			return invalid("metadata.memory_capabilities.%s must be a boolean", k)
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
			return invalid("%s must be null when metadata.memory_capabilities.%s is false", c.name, c.capability)
		}
	}
	if e.AllocatorChangeBytes.Valid && !caps["supports_allocator_allocated"].(bool) {
		return invalid("allocator_change_bytes must be null when allocator allocated memory is unsupported")
	}
	return nil
}
