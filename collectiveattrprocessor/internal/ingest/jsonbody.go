package ingest

import (
	"encoding/base64"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// maxJSONDepth bounds the nesting of a map body (the decoder has its own
// limit; this one protects the recursion here).
const maxJSONDepth = 64

// appendJSONValue writes a pcommon value as JSON. A map body has no number
// lexemes, so a double with an integral value in the int64 range is written
// as an integer: receivers that parse JSON (filelog's json_parser) turn every
// number into a double, and stormlog's integer fields would otherwise all
// fail. Such a parser has already rounded integers above 2^53 (nanosecond
// timestamps, to about 0.1 µs): ship the line as a string body for exact
// values. Bytes are
// written as base64 strings; NaN and infinities cannot be JSON and make the
// record invalid.
func appendJSONValue(dst []byte, v pcommon.Value, depth int) ([]byte, string) {
	if depth > maxJSONDepth {
		return dst, "log body nested too deeply"
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return telemetry.AppendString(dst, v.Str()), ""
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10), ""
	case pcommon.ValueTypeDouble:
		d := v.Double()
		switch {
		case math.IsNaN(d) || math.IsInf(d, 0):
			return dst, "log body holds NaN or an infinity"
		case d == math.Trunc(d) && d >= math.MinInt64 && d < math.MaxInt64:
			return strconv.AppendInt(dst, int64(d), 10), ""
		default:
			return strconv.AppendFloat(dst, d, 'g', -1, 64), ""
		}
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(dst, v.Bool()), ""
	case pcommon.ValueTypeBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes().AsRaw())
		return append(dst, '"'), ""
	case pcommon.ValueTypeMap:
		dst = append(dst, '{')
		first := true
		var detail string
		for k, e := range v.Map().All() {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = telemetry.AppendString(dst, k)
			dst = append(dst, ':')
			if dst, detail = appendJSONValue(dst, e, depth+1); detail != "" {
				return dst, detail
			}
		}
		return append(dst, '}'), ""
	case pcommon.ValueTypeSlice:
		dst = append(dst, '[')
		s := v.Slice()
		var detail string
		for i := 0; i < s.Len(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, detail = appendJSONValue(dst, s.At(i), depth+1); detail != "" {
				return dst, detail
			}
		}
		return append(dst, ']'), ""
	default:
		return append(dst, "null"...), ""
	}
}
