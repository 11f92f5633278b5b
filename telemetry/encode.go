package telemetry

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends e as one TelemetryEvent record (no trailing newline) in
// the reference's key order. Nullable fields that are unset are written as
// null; v2 records omit session_id.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"schema_version":`...)
	dst = strconv.AppendInt(dst, int64(e.SchemaVersion), 10)
	if e.SchemaVersion != 2 {
		dst = append(dst, `,"session_id":`...)
		dst = AppendString(dst, e.SessionID)
	}
	dst = append(dst, `,"timestamp_ns":`...)
	dst = strconv.AppendInt(dst, e.TimestampNs, 10)
	dst = append(dst, `,"event_type":`...)
	dst = AppendString(dst, e.EventType)
	dst = append(dst, `,"collector":`...)
	dst = AppendString(dst, e.Collector)
	dst = append(dst, `,"sampling_interval_ms":`...)
	dst = strconv.AppendInt(dst, e.SamplingIntervalMs, 10)
	dst = append(dst, `,"pid":`...)
	dst = strconv.AppendInt(dst, e.PID, 10)
	dst = append(dst, `,"host":`...)
	dst = AppendString(dst, e.Host)
	dst = append(dst, `,"job_id":`...)
	if e.JobID == "" {
		dst = append(dst, "null"...)
	} else {
		dst = AppendString(dst, e.JobID)
	}
	dst = append(dst, `,"rank":`...)
	dst = strconv.AppendInt(dst, e.Rank, 10)
	dst = append(dst, `,"local_rank":`...)
	dst = strconv.AppendInt(dst, e.LocalRank, 10)
	dst = append(dst, `,"world_size":`...)
	dst = strconv.AppendInt(dst, e.WorldSize, 10)
	dst = append(dst, `,"device_id":`...)
	dst = strconv.AppendInt(dst, e.DeviceID, 10)
	counters := [...]struct {
		key string
		v   OptInt
	}{
		{`,"allocator_allocated_bytes":`, e.AllocatorAllocatedBytes},
		{`,"allocator_reserved_bytes":`, e.AllocatorReservedBytes},
		{`,"allocator_active_bytes":`, e.AllocatorActiveBytes},
		{`,"allocator_inactive_bytes":`, e.AllocatorInactiveBytes},
		{`,"allocator_change_bytes":`, e.AllocatorChangeBytes},
		{`,"device_used_bytes":`, e.DeviceUsedBytes},
		{`,"device_free_bytes":`, e.DeviceFreeBytes},
		{`,"device_total_bytes":`, e.DeviceTotalBytes},
	}
	for _, c := range counters {
		dst = append(dst, c.key...)
		if c.v.Valid {
			dst = strconv.AppendInt(dst, c.v.Value, 10)
		} else {
			dst = append(dst, "null"...)
		}
	}
	dst = append(dst, `,"context":`...)
	if e.HasContext {
		dst = AppendString(dst, e.Context)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"metadata":`...)
	if md := e.MetadataMap(); md == nil {
		dst = append(dst, "{}"...)
	} else {
		dst = appendJSONValue(dst, md)
	}
	return append(dst, '}')
}

// MarshalJSON encodes the event as a TelemetryEvent record (see AppendJSON).
func (e *Event) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e), nil }

// appendJSONValue encodes a decoded metadata value; object keys are sorted so
// the output is deterministic.
func appendJSONValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		return AppendString(dst, x)
	case json.Number:
		return append(dst, x...)
	case []any:
		dst = append(dst, '[')
		for i, it := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, it)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONValue(dst, x[k])
		}
		return append(dst, '}')
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case float64:
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way Python's json.dumps does by
// default (ensure_ascii): every non-ASCII character is a \uXXXX escape
// (astral characters as a surrogate pair), so output is plain ASCII.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				dst = append(dst, '\\', '"')
			case c == '\\':
				dst = append(dst, '\\', '\\')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c < 0x20 || c == 0x7f:
				dst = appendU(dst, rune(c))
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r >= 0x10000 {
			r -= 0x10000
			dst = appendU(dst, 0xd800+(r>>10))
			dst = appendU(dst, 0xdc00+(r&0x3ff))
			continue
		}
		dst = appendU(dst, r)
	}
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
}
