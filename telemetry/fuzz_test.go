package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeRecord: no panic; syntax errors exactly when encoding/json finds
// the text invalid; every other failure is a validation error or "not an
// object"; an accepted record respects the identity and counter rules and
// survives an encode/decode round trip unchanged; Stream's decoder, which
// keeps metadata as text, gives the same outcome and the same metadata
// through every accessor.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(record(1, 0)))
	f.Add([]byte(strings.Replace(example, `"schema_version": 2`, `"schema_version": 3, "session_id": "s"`, 1)))
	f.Add([]byte(`{"metadata":{"a":[{"b":"\ud800"}]}}`))
	f.Add([]byte(`[1, 2.5e3, "x", null, true]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeRecord(data)
		lazy := Decoder{lazy: true}
		le, lerr := lazy.Decode(data)
		if (err == nil) != (lerr == nil) || (err != nil && err.Error() != lerr.Error()) {
			t.Fatalf("lazy decoder: %v, want %v", lerr, err)
		}
		if err == nil {
			checkMetadataViews(t, "lazy", &le, e.Metadata)
			le.Metadata, le.metadataJSON = le.MetadataMap(), metadataText{}
			if !reflect.DeepEqual(le, e) {
				t.Fatalf("lazy decoder: %+v, want %+v", le, e)
			}
		}
		var se *SyntaxError
		var ve *ValidationError
		isSyntax := errors.As(err, &se)
		if isSyntax == json.Valid(data) {
			t.Fatalf("syntax error %v, but json.Valid = %v", err, json.Valid(data))
		}
		if err != nil {
			if !isSyntax && !errors.As(err, &ve) && !errors.Is(err, ErrNotObject) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if e.Rank < 0 || e.Rank >= e.WorldSize || e.LocalRank < 0 || e.LocalRank >= e.WorldSize {
			t.Fatalf("identity rules broken: %+v", e)
		}
		if e.TimestampNs < 0 || (e.SchemaVersion != 2 && IsBlank(e.SessionID)) {
			t.Fatalf("accepted %+v", e)
		}
		if e.DeviceTotalBytes.Valid && e.DeviceUsedBytes.Valid && e.DeviceUsedBytes.Value > e.DeviceTotalBytes.Value {
			t.Fatalf("used above total accepted")
		}
		out := AppendJSON(nil, &e)
		again, err := DecodeRecord(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if !bytes.Equal(out, AppendJSON(nil, &again)) {
			t.Fatalf("round trip changed %s", out)
		}
	})
}
