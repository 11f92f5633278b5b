package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// record returns a valid one-line v2 record with the given timestamp and rank.
func record(ts, rank int) string {
	return fmt.Sprintf(`{"schema_version":2,"timestamp_ns":%d,"event_type":"sample","collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","rank":%d,"world_size":4,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`, ts, rank)
}

func timestamps(events []Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.TimestampNs
	}
	return out
}

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    []int64
		wantErr string
	}{
		{"empty", "", []int64{}, ""},
		{"blank lines skipped", "\n" + record(1, 0) + "\n  \n\r\n" + record(2, 1) + "\n", []int64{1, 2}, ""},
		{"crlf", record(1, 0) + "\r\n" + record(2, 0) + "\r\n", []int64{1, 2}, ""},
		{"last line without newline", record(1, 0) + "\n" + record(2, 0), []int64{1, 2}, ""},
		{"truncated tail dropped", record(1, 0) + "\n" + record(2, 0)[:50], []int64{1}, ""},
		{"truncated line with newline is an error", record(1, 0) + "\n" + record(2, 0)[:50] + "\n", nil, "line 2: malformed JSON record"},
		{"malformed middle line", record(1, 0) + "\n{oops\n" + record(3, 0) + "\n", nil, "line 2: malformed JSON record"},
		{"invalid record names its line", record(1, 0) + "\n\n" + strings.Replace(record(3, 0), `"rank":0`, `"rank":7`, 1) + "\n", nil, "line 3: rank must be < world_size"},
		{"invalid last line without newline is not a tail", record(1, 0) + "\n" + strings.Replace(record(3, 0), `"pid":1`, `"pid":-5`, 1), nil, "line 2: pid must be >= -1"},
		{"non-object line", record(1, 0) + "\n[1]\n", nil, "line 2: record must be an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events, err := ReadJSONL(strings.NewReader(tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want prefix %q", err, tc.wantErr)
				}
				var re *RecordError
				if !errors.As(err, &re) || re.Line == 0 {
					t.Fatalf("error %T should be a RecordError with a line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := timestamps(events); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("timestamps %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDecodeJSONLParallelMatchesSequential decodes an input large enough to
// be split across goroutines and checks order and error reporting.
func TestDecodeJSONLParallelMatchesSequential(t *testing.T) {
	var buf bytes.Buffer
	n := 0
	for buf.Len() < 3*blockBytes {
		buf.WriteString(record(n, n%4))
		buf.WriteByte('\n')
		n++
	}
	events, err := DecodeJSONL(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != n {
		t.Fatalf("%d events, want %d", len(events), n)
	}
	for i, e := range events {
		if e.TimestampNs != int64(i) {
			t.Fatalf("event %d has timestamp %d", i, e.TimestampNs)
		}
	}
	// Two bad lines in different chunks: the first one is reported.
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	first, second := len(lines)/3, 2*len(lines)/3+5
	lines[second] = "{bad"
	lines[first] = strings.Replace(lines[first], `"pid":1`, `"pid":-9`, 1)
	_, err = DecodeJSONL([]byte(strings.Join(lines, "\n") + "\n"))
	want := fmt.Sprintf("line %d: pid must be >= -1", first+1)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestReadDocument(t *testing.T) {
	bad := strings.Replace(record(2, 0), `"rank":0`, `"rank":4`, 1)
	tests := []struct {
		name    string
		input   string
		want    int
		wantErr string
	}{
		{"array", "[" + record(1, 0) + ",\n" + record(2, 1) + "]", 2, ""},
		{"events object", `{"events":[` + record(1, 0) + `]}`, 1, ""},
		{"single record", record(1, 0), 1, ""},
		{"empty array", "[]", 0, ""},
		{"bad element names line and index", "[" + record(1, 0) + ",\n" + bad + "]", 0, "line 2 (event at index 1): rank must be < world_size"},
		{"non-object element", "[" + record(1, 0) + ",3]", 0, "line 1 (event at index 1): must be an object"},
		{"bad element in events wrapper", "{\"events\": [\n\n" + bad + "]}", 0, "line 3 (event at index 0): rank must be < world_size"},
		{"last events key wins", `{"events": [3], "events": [` + record(1, 0) + `]}`, 1, ""},
		{"malformed names the line", "[\n" + record(1, 0) + ",\n{oops}]", 0, "line 3: malformed JSON: expected object key"},
		{"object without events", `{"foo":1}`, 0, "JSON payload does not contain telemetry events"},
		{"scalar", `3`, 0, "Telemetry payload must be a JSON object or array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events, err := ReadDocument([]byte(tc.input))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(events) != tc.want {
				t.Fatalf("%d events, err %v; want %d", len(events), err, tc.want)
			}
		})
	}
}

func TestReadAutoPicksFormat(t *testing.T) {
	pretty := strings.ReplaceAll(record(5, 0), ",", ",\n  ")
	// Inputs whose format shows only past the first 64 KiB: json.dump
	// writes a whole {"events": [...]} document on one line.
	many := make([]string, 300)
	for i := range many {
		many[i] = record(5+i, 0)
	}
	longRecord := strings.Replace(record(5, 0), `"metadata":{}`, `"metadata":{"note":"`+strings.Repeat("x", 70<<10)+`"}`, 1)
	for name, tc := range map[string]struct {
		in   string
		want int
	}{
		"jsonl":                   {record(5, 0) + "\n" + record(6, 0) + "\n", 2},
		"array":                   {"  [" + record(5, 0) + "," + record(6, 0) + "]", 2},
		"events":                  {`{"events":[` + record(5, 0) + "," + record(6, 0) + `]}`, 2},
		"pretty single":           {"\n" + pretty + "\n", 1},
		"long events line":        {`{"events":[` + strings.Join(many, ",") + `]}`, len(many)},
		"long events line and LF": {`{"events":[` + strings.Join(many, ",") + "]}\n", len(many)},
		"blanks before an array":  {strings.Repeat(" \n", 40<<10) + "[" + record(5, 0) + "]", 1},
		"long first jsonl line":   {longRecord + "\n" + record(6, 0) + "\n", 2},
		"long lone record":        {longRecord, 1},
		"last events key decides": {`{"events":3,"events":[` + record(5, 0) + `]}`, 1},
	} {
		events, err := ReadAuto(strings.NewReader(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(events) != tc.want || events[0].TimestampNs != 5 {
			t.Fatalf("%s: %d events %v, want %d from 5", name, len(events), timestamps(events)[:min(len(events), 3)], tc.want)
		}
	}
}

// TestReadAutoOneLineDocumentMemory: telling a one-line document from JSON
// Lines must not build it. Building its tree cost 9x its size on top of
// the decode; reading the head costs at most 4x (doubling).
func TestReadAutoOneLineDocumentMemory(t *testing.T) {
	many := make([]string, 8000)
	for i := range many {
		many[i] = record(5+i, 0)
	}
	doc := []byte(`{"events":[` + strings.Join(many, ",") + `]}`)
	allocated := func(read func() ([]Event, error)) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		events, err := read()
		runtime.ReadMemStats(&after)
		if err != nil || len(events) != len(many) {
			t.Fatalf("%d events, err %v", len(events), err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	decode := allocated(func() ([]Event, error) { return ReadDocument(doc) })
	auto := allocated(func() ([]Event, error) { return ReadAuto(bytes.NewReader(doc)) })
	if extra := float64(auto) - float64(decode); extra > 6*float64(len(doc)) {
		t.Fatalf("ReadAuto allocated %.1fx the document's size beyond ReadDocument's %.1fx", extra/float64(len(doc)), float64(decode)/float64(len(doc)))
	}
}

// TestReadAutoMalformedFirstLine: a first line that does not parse is not
// mistaken for a pretty-printed document; the error names the line.
func TestReadAutoMalformedFirstLine(t *testing.T) {
	_, err := ReadAuto(strings.NewReader(`{"schema_version": 2,` + "\n" + record(1, 0) + "\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 1: malformed JSON record") {
		t.Fatalf("error %v", err)
	}
	_, err = ReadAuto(strings.NewReader("[\n" + record(1, 0) + ",\n{oops}\n]"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: malformed JSON") {
		t.Fatalf("malformed array: error %v", err)
	}
}
