package telemetry

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// example is the reference's §1.7 record (passes R1 validation).
const example = `{
  "schema_version": 2,
  "timestamp_ns": 1767225600123456789,
  "event_type": "sample",
  "collector": "stormlog.cuda_tracker",
  "sampling_interval_ms": 100,
  "pid": 4242,
  "host": "node-a",
  "job_id": "run-7f3c",
  "rank": 1,
  "local_rank": 1,
  "world_size": 8,
  "device_id": 1,
  "allocator_allocated_bytes": 9663676416,
  "allocator_reserved_bytes": 10737418240,
  "allocator_active_bytes": null,
  "allocator_inactive_bytes": null,
  "allocator_change_bytes": 0,
  "device_used_bytes": 12884901888,
  "device_free_bytes": 73014444032,
  "device_total_bytes": 85899345920,
  "context": null,
  "metadata": {"backend": "cuda", "sampling_source": "nvml"}
}`

// mutate decodes the example into a generic map, applies f and re-encodes.
func mutate(t *testing.T, base string, f func(m map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(base))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeExample(t *testing.T) {
	e, err := DecodeRecord([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if e.SchemaVersion != 2 || e.SessionID != "" || e.TimestampNs != 1767225600123456789 ||
		e.EventType != "sample" || e.JobID != "run-7f3c" || e.Rank != 1 || e.LocalRank != 1 ||
		e.WorldSize != 8 || e.DeviceID != 1 || e.AllocatorReservedBytes != Int(10737418240) ||
		e.AllocatorActiveBytes.Valid || e.DeviceTotalBytes != Int(85899345920) || e.HasContext ||
		e.Metadata["backend"] != "cuda" {
		t.Fatalf("decoded %+v", e)
	}
}

// TestValidationMessages covers the reference's mutations (§1.7) and the
// order of checks (§1.3, §1.5): the first failing rule's message wins.
func TestValidationMessages(t *testing.T) {
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	del := func(keys ...string) func(map[string]any) {
		return func(m map[string]any) {
			for _, k := range keys {
				delete(m, k)
			}
		}
	}
	v4caps := map[string]any{
		"backend": "cuda", "telemetry_collector": "stormlog.cuda_tracker", "sampling_source": "nvml",
		"supports_allocator_allocated": true, "supports_allocator_reserved": true,
		"supports_allocator_active": false, "supports_allocator_inactive": false,
		"supports_device_used": true, "supports_device_free": true, "supports_device_total": true,
		"supports_native_allocator_history": false, "supports_fragmentation_analysis": true,
		"supports_allocator_attribution": true, "supports_bounded_profiling": false,
	}
	asV4 := func(extra func(map[string]any, map[string]any)) func(map[string]any) {
		return func(m map[string]any) {
			m["schema_version"] = 4
			m["session_id"] = "s-1"
			caps := map[string]any{}
			for k, v := range v4caps {
				caps[k] = v
			}
			m["metadata"] = map[string]any{"memory_capabilities": caps}
			if extra != nil {
				extra(m, caps)
			}
		}
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		want   string // "" = valid
	}{
		{"rank 8 of 8", set("rank", 8), "rank must be < world_size"},
		{"float timestamp", set("timestamp_ns", json.Number("1.0")), "timestamp_ns must be an integer"},
		{"exponent timestamp", set("timestamp_ns", json.Number("1e3")), "timestamp_ns must be an integer"},
		{"world_size 1 with rank 1", set("world_size", 1), "rank must be < world_size"},
		{"extra key", set("extra", 1), "Unknown telemetry fields: extra"},
		{"unknown keys sorted", func(m map[string]any) { m["zz"] = 1; m["aa"] = 2 }, "Unknown telemetry fields: aa, zz"},
		{"used above total", set("device_used_bytes", json.Number("85899345921")), "device_used_bytes cannot exceed device_total_bytes"},
		{"free above total", set("device_free_bytes", json.Number("85899345921")), "device_free_bytes cannot exceed device_total_bytes"},
		{"empty job_id", set("job_id", ""), "job_id must be a non-empty string"},
		{"blank job_id", set("job_id", " \t"), "job_id must be a non-empty string"},
		{"null job_id", set("job_id", nil), ""},
		{"numeric job_id", set("job_id", 7), "job_id must be a string"},
		{"boolean rank", set("rank", true), "rank must be an integer"},
		{"null local_rank", set("local_rank", nil), "local_rank must be an integer"},
		{"null world_size", set("world_size", nil), "world_size must be an integer"},
		{"no identity", del("rank", "local_rank", "world_size", "job_id"), ""},
		{"negative rank", set("rank", -1), "rank must be >= 0"},
		{"zero world size", set("world_size", 0), "world_size must be >= 1"},
		{"local_rank too big", set("local_rank", 8), "local_rank must be < world_size"},
		{"missing fields in declaration order", del("metadata", "pid", "timestamp_ns"), "Missing required telemetry fields: timestamp_ns, pid, metadata"},
		{"missing before unknown", func(m map[string]any) { delete(m, "host"); m["x"] = 1 }, "Missing required telemetry fields: host"},
		{"schema version 5", set("schema_version", 5), "Unsupported schema_version: 5"},
		{"schema version string", set("schema_version", "2"), "schema_version must be an integer"},
		{"schema version float", set("schema_version", json.Number("2.0")), "schema_version must be an integer"},
		{"no schema version", del("schema_version"), "Missing required telemetry fields: schema_version"},
		{"v2 with session_id", set("session_id", "s"), "Unknown telemetry fields: session_id"},
		{"v3 without session_id", set("schema_version", 3), "Missing required telemetry fields: session_id"},
		{"v3 blank session_id", func(m map[string]any) { m["schema_version"] = 3; m["session_id"] = " " }, "session_id must be a non-empty string"},
		{"v3 ok", func(m map[string]any) { m["schema_version"] = 3; m["session_id"] = "s" }, ""},
		{"v3 null counter", func(m map[string]any) {
			m["schema_version"] = 3
			m["session_id"] = "s"
			m["device_used_bytes"] = nil
		}, "device_used_bytes must be an integer"},
		{"negative timestamp", set("timestamp_ns", -1), "timestamp_ns must be >= 0"},
		{"blank event_type", set("event_type", "  "), "event_type must be a non-empty string"},
		{"null event_type", set("event_type", nil), "event_type must be a non-empty string"},
		{"numeric collector", set("collector", 3), "collector must be a string"},
		{"negative sampling", set("sampling_interval_ms", -1), "sampling_interval_ms must be >= 0"},
		{"pid -1 ok", set("pid", -1), ""},
		{"pid -2", set("pid", -2), "pid must be >= -1"},
		{"host with U+001F only", set("host", "\x1f"), "host must be a non-empty string"},
		{"device_id float", set("device_id", json.Number("0.5")), "device_id must be an integer"},
		{"negative allocated", set("allocator_allocated_bytes", -1), "allocator_allocated_bytes must be >= 0"},
		{"negative active", set("allocator_active_bytes", -1), "allocator_active_bytes must be >= 0 when provided"},
		{"negative change ok", set("allocator_change_bytes", -5), ""},
		{"null change", set("allocator_change_bytes", nil), "allocator_change_bytes must be an integer"},
		{"negative total", set("device_total_bytes", -1), "device_total_bytes must be >= 0 when provided"},
		{"type error before range error", func(m map[string]any) {
			m["allocator_allocated_bytes"] = -1
			m["allocator_reserved_bytes"] = "x"
		}, "allocator_reserved_bytes must be an integer"},
		{"context number", set("context", 1), "context must be a string"},
		{"empty context ok", set("context", ""), ""},
		{"metadata array", set("metadata", []any{}), "metadata must be an object"},
		{"metadata null", set("metadata", nil), "metadata must be an object"},
		{"huge integer", set("device_id", json.Number("99999999999999999999")), "device_id is outside the signed 64-bit integer range"},
		{"v4 ok", asV4(nil), ""},
		{"v4 null counters", asV4(func(m, caps map[string]any) {
			caps["supports_device_used"] = false
			m["device_used_bytes"] = nil
		}), ""},
		{"v4 counter despite capability", asV4(func(m, caps map[string]any) { caps["supports_device_total"] = false }),
			"device_total_bytes must be null when metadata.memory_capabilities.supports_device_total is false"},
		{"v4 change without allocated support", asV4(func(m, caps map[string]any) {
			caps["supports_allocator_allocated"] = false
			m["allocator_allocated_bytes"] = nil
		}), "allocator_change_bytes must be null when allocator allocated memory is unsupported"},
		{"v4 without capabilities", func(m map[string]any) {
			m["schema_version"] = 4
			m["session_id"] = "s"
		}, "metadata.memory_capabilities must be an object"},
		{"v4 missing capability", asV4(func(m, caps map[string]any) { delete(caps, "sampling_source"); delete(caps, "supports_device_free") }),
			"Missing memory capability fields: sampling_source, supports_device_free"},
		{"v4 unknown capability", asV4(func(m, caps map[string]any) { caps["zeta"] = true; caps["alpha"] = 1 }),
			"Unknown memory capability fields: alpha, zeta"},
		{"v4 capability not boolean", asV4(func(m, caps map[string]any) { caps["supports_device_free"] = 1 }),
			"metadata.memory_capabilities.supports_device_free must be a boolean"},
		{"v4 capability blank string", asV4(func(m, caps map[string]any) { caps["backend"] = "" }),
			"metadata.memory_capabilities.backend must be a non-empty string"},
		{"v4 identity checked last", asV4(func(m, caps map[string]any) {
			m["rank"] = 9
			caps["supports_device_free"] = 1
		}), "metadata.memory_capabilities.supports_device_free must be a boolean"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRecord(mutate(t, example, tc.mutate))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("error %T is not a ValidationError", err)
				}
			}
		})
	}
}

func TestDecodeDefaultsAndNulls(t *testing.T) {
	b := mutate(t, example, func(m map[string]any) {
		delete(m, "rank")
		delete(m, "local_rank")
		delete(m, "world_size")
		m["job_id"] = nil
		m["context"] = "NCCL all_reduce"
	})
	e, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if e.Rank != 0 || e.LocalRank != 0 || e.WorldSize != 1 || e.JobID != "" || !e.HasContext || e.Context != "NCCL all_reduce" {
		t.Fatalf("got %+v", e)
	}
	b = mutate(t, example, func(m map[string]any) { delete(m, "local_rank") })
	if e, err = DecodeRecord(b); err != nil || e.LocalRank != 1 {
		t.Fatalf("local_rank should default to rank: %+v %v", e, err)
	}
}

func TestDecodeSyntax(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"schema_version":2,}`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`,
		`{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a":NaN}`, `{} {}`, `{"a":[1,]}`,
		`{"metadata":{"x":[}}`, `{"a":"\u12"}`,
	} {
		_, err := DecodeRecord([]byte(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v, want a SyntaxError", in, err)
		}
	}
	for _, in := range []string{`[]`, `1`, `"x"`, `null`} {
		if _, err := DecodeRecord([]byte(in)); !errors.Is(err, ErrNotObject) {
			t.Errorf("%q: error %v, want ErrNotObject", in, err)
		}
	}
}

func TestDecodeStringsAndMetadata(t *testing.T) {
	b := []byte(strings.Replace(example, `"metadata": {"backend": "cuda", "sampling_source": "nvml"}`,
		`"metadata": {"a": {"b": [1, 2.5, true, null, "x\u00e9\ud83d\ude00"]}, "dup": 1, "dup": 2, "e": {}}`, 1))
	b = []byte(strings.Replace(string(b), `"host": "node-a"`, `"h\u006fst": "n\"o\\d\u0065"`, 1))
	e, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if e.Host != `n"o\de` {
		t.Fatalf("host %q", e.Host)
	}
	arr := e.Metadata["a"].(map[string]any)["b"].([]any)
	if arr[0] != json.Number("1") || arr[1] != json.Number("2.5") || arr[2] != true || arr[3] != nil || arr[4] != "xé😀" {
		t.Fatalf("metadata %#v", arr)
	}
	if e.Metadata["dup"] != json.Number("2") {
		t.Fatalf("duplicate keys keep the last value, got %v", e.Metadata["dup"])
	}
	if m, ok := e.Metadata["e"].(map[string]any); !ok || len(m) != 0 {
		t.Fatalf("empty nested object %#v", e.Metadata["e"])
	}
}

// TestDecoderSharesMetadata checks the interning contract: equal metadata
// text decodes to one shared map, different text to different maps.
func TestDecoderSharesMetadata(t *testing.T) {
	var d Decoder
	a, _ := d.Decode([]byte(example))
	other := strings.Replace(example, `"nvml"`, `"dcgm"`, 1)
	b, _ := d.Decode([]byte(other))
	c, _ := d.Decode([]byte(example))
	if c.Metadata["sampling_source"] != "nvml" || b.Metadata["sampling_source"] != "dcgm" {
		t.Fatal("wrong metadata")
	}
	a.Metadata["probe"] = 1
	if _, ok := c.Metadata["probe"]; !ok {
		t.Fatal("equal metadata text should share one map")
	}
	if _, ok := b.Metadata["probe"]; ok {
		t.Fatal("different metadata text must not share a map")
	}
}

func TestAppendJSONRoundTrip(t *testing.T) {
	e, err := DecodeRecord([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	e.Context, e.HasContext = "quote \" and \u2028 and 😀", true
	again, err := DecodeRecord(AppendJSON(nil, &e))
	if err != nil {
		t.Fatal(err)
	}
	if string(AppendJSON(nil, &e)) != string(AppendJSON(nil, &again)) {
		t.Fatal("round trip changed the record")
	}
	if got := string(AppendString(nil, "é\x01😀")); got != `"\u00e9\u0001\ud83d\ude00"` {
		t.Fatalf("AppendString = %s", got)
	}
}

func TestPythonWhitespace(t *testing.T) {
	if TrimSpace("\x1c\u3000 a \x1f") != "a" || !IsBlank("\u2028\x1e") || IsBlank("\u200b") {
		t.Fatal("Python str.strip semantics")
	}
	if v, ok := IntValue(json.Number("12")); !ok || v != 12 {
		t.Fatal("integer lexeme")
	}
	if _, ok := IntValue(json.Number("1.0")); ok {
		t.Fatal("1.0 is a float in Python")
	}
	if v, ok := IntValue(true); !ok || v != 1 {
		t.Fatal("Python bool is an int")
	}
	if _, ok := IntValue("1"); ok {
		t.Fatal("string is not an int")
	}
}

// TestDecodeRepeatedKeys: Python's json keeps the last value of a repeated
// key, so a record holds each key once: a repeated known key takes its last
// value, and a repeated unknown key is named once.
func TestDecodeRepeatedKeys(t *testing.T) {
	head := example[:strings.LastIndex(example, "}")]
	e, err := DecodeRecord([]byte(head + `, "rank": 2, "host": "node-b"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Rank != 2 || e.Host != "node-b" {
		t.Fatalf("rank %d host %q: the last value wins", e.Rank, e.Host)
	}
	_, err = DecodeRecord([]byte(head + `, "extra": 1, "extra": 2, "aa": 0}`))
	if err == nil || err.Error() != "Unknown telemetry fields: aa, extra" {
		t.Fatalf("error %v", err)
	}
}

// TestRepeatedMemberListsValidatedOnce: a long flat array repeated on
// later records (a communicator's member list on every marker) is
// recognised and skipped, and a list that only begins like it is still
// validated in full: a bad entry after the shared part is an error, a
// longer list decodes whole.
func TestRepeatedMemberListsValidatedOnce(t *testing.T) {
	var list strings.Builder
	for r := range 40 {
		if r > 0 {
			list.WriteByte(',')
		}
		list.WriteString(strconv.Itoa(r))
	}
	withList := func(ranks string) []byte {
		return []byte(strings.Replace(record(1, 0), `"metadata":{}`, `"metadata":{"nccl.comm.ranks":[`+ranks+`],"nccl.seq":1}`, 1))
	}
	d := Decoder{lazy: true}
	for range 3 {
		e, err := d.Decode(withList(list.String()))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := e.MetadataLookup("nccl.comm.ranks")
		if got := len(v.Value().([]any)); got != 40 {
			t.Fatalf("%d members, want 40", got)
		}
	}
	if len(d.sc.keptLists) == 0 {
		t.Fatal("the list was not kept")
	}
	if _, err := d.Decode(withList(list.String() + ",x")); err == nil {
		t.Fatal("a list with a bad entry after the repeated part decoded")
	}
	e, err := d.Decode(withList(list.String() + ",40"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := e.MetadataLookup("nccl.comm.ranks")
	if got := len(v.Value().([]any)); got != 41 {
		t.Fatalf("%d members, want 41", got)
	}
}
