package store

import (
	"encoding/json"
	"math"
)

// metadataInt reads an integral metadata value as evidence.Builder does: a
// JSON integer (json.Number), a Go integer, or a float with an integral
// value.
func metadataInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		if f, err := x.Float64(); err == nil {
			return integralFloat(f)
		}
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		return integralFloat(x)
	}
	return 0, false
}

func integralFloat(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}
