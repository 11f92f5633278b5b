package jobsim

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// appendStormlogJSON appends e as encoding/json's Encoder writes it (fields
// in declaration order, map keys sorted, HTML characters escaped, a newline
// after), without reflection: a large job's stormlog is hundreds of
// megabytes a minute, and the simulator must outpace what reads it. ok is
// false, and dst's new bytes are to be dropped, when the metadata holds a
// value of another type than those appendJSONValue knows.
func appendStormlogJSON(dst []byte, e *stormlogEvent) (_ []byte, ok bool) {
	dst = append(dst, `{"schema_version":`...)
	dst = strconv.AppendInt(dst, int64(e.SchemaVersion), 10)
	dst = append(dst, `,"session_id":`...)
	dst = appendJSONString(dst, e.SessionID)
	dst = append(dst, `,"timestamp_ns":`...)
	dst = strconv.AppendInt(dst, e.TimestampNs, 10)
	dst = append(dst, `,"event_type":`...)
	dst = appendJSONString(dst, e.EventType)
	dst = append(dst, `,"collector":`...)
	dst = appendJSONString(dst, e.Collector)
	dst = append(dst, `,"sampling_interval_ms":`...)
	dst = strconv.AppendInt(dst, e.SamplingIntervalMs, 10)
	dst = append(dst, `,"pid":`...)
	dst = strconv.AppendInt(dst, e.PID, 10)
	dst = append(dst, `,"host":`...)
	dst = appendJSONString(dst, e.Host)
	dst = append(dst, `,"job_id":`...)
	dst = appendJSONString(dst, e.JobID)
	for _, f := range [...]struct {
		key string
		v   int64
	}{
		{`,"rank":`, int64(e.Rank)}, {`,"local_rank":`, int64(e.LocalRank)}, {`,"world_size":`, int64(e.WorldSize)},
		{`,"device_id":`, int64(e.DeviceID)},
		{`,"allocator_allocated_bytes":`, e.AllocatorAllocatedBytes}, {`,"allocator_reserved_bytes":`, e.AllocatorReservedBytes},
		{`,"allocator_active_bytes":`, e.AllocatorActiveBytes}, {`,"allocator_inactive_bytes":`, e.AllocatorInactiveBytes},
		{`,"allocator_change_bytes":`, e.AllocatorChangeBytes},
		{`,"device_used_bytes":`, e.DeviceUsedBytes}, {`,"device_free_bytes":`, e.DeviceFreeBytes},
		{`,"device_total_bytes":`, e.DeviceTotalBytes},
	} {
		dst = append(dst, f.key...)
		dst = strconv.AppendInt(dst, f.v, 10)
	}
	dst = append(dst, `,"context":`...)
	if e.Context == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendJSONString(dst, *e.Context)
	}
	dst = append(dst, `,"metadata":`...)
	if dst, ok = appendJSONValue(dst, e.Metadata); !ok {
		return dst, false
	}
	return append(dst, "}\n"...), true
}

// appendJSONValue appends v as encoding/json marshals it, for the types the
// simulator's metadata holds; ok is false for any other (or a json.Number
// that is not an integer).
func appendJSONValue(dst []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendJSONString(dst, v), true
	case *string:
		if v == nil {
			return append(dst, "null"...), true
		}
		return appendJSONString(dst, *v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return append(dst, v...), true
		}
	case []string:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, s)
		}
		return append(dst, ']'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendJSONValue(dst, x); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, ok = appendJSONValue(dst, v[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// appendJSONString appends s quoted; a string with anything encoding/json
// escapes (control characters, quotes, backslashes, <, >, &, non-ASCII)
// goes through json.Marshal.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
