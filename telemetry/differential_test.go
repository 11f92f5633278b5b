package telemetry

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sameOutcome fails unless got matches want: the same error text, or no
// error and equal events in the same order.
func sameOutcome(t *testing.T, name string, got []Event, gotErr error, want []Event, wantErr error) {
	t.Helper()
	if wantErr != nil || gotErr != nil {
		if wantErr == nil || gotErr == nil || gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, want %v", name, gotErr, wantErr)
		}
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", name, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: event %d\ngot  %+v\nwant %+v", name, i, got[i], want[i])
		}
	}
}

// checkAgainstOracle reads input with ReadAuto (the stream) and with the
// readers and decoder as of 8c9c5f4, as JSON Lines too, and compares.
func checkAgainstOracle(t *testing.T, name string, input []byte) {
	t.Helper()
	got, gotErr := ReadAuto(bytes.NewReader(input))
	want, wantErr := OldReadAuto(bytes.NewReader(input))
	sameOutcome(t, name+" (auto)", got, gotErr, want, wantErr)
	checkStreamAgainst(t, name+" (stream)", input, want, wantErr)
	got, gotErr = DecodeJSONL(input)
	want, wantErr = OldDecodeJSONL(input)
	sameOutcome(t, name+" (jsonl)", got, gotErr, want, wantErr)
}

// checkStreamAgainst reads input with Stream, whose events keep their
// metadata as text, and compares with the oracle's events: each event's
// metadata read through every accessor is the oracle's map, and the event
// with that map built is the oracle's event.
func checkStreamAgainst(t *testing.T, name string, input []byte, want []Event, wantErr error) {
	t.Helper()
	var got []Event
	gotErr := Stream(bytes.NewReader(input), func(chunk []Event) error {
		got = append(got, chunk...)
		return nil
	})
	if gotErr != nil || wantErr != nil {
		sameOutcome(t, name, nil, gotErr, nil, wantErr)
		return
	}
	built := make([]Event, len(got))
	for i := range got {
		if i < len(want) {
			checkMetadataViews(t, fmt.Sprintf("%s: event %d", name, i), &got[i], want[i].Metadata)
		}
		built[i] = got[i]
		built[i].Metadata, built[i].metadataJSON = got[i].MetadataMap(), metadataText{}
	}
	sameOutcome(t, name, built, nil, want, nil)
}

// corpusLines are valid records of the shapes the decoder meets: eventgen
// samples and markers, simulated stormlog records with per-call metadata
// and phase boundaries, v2/v3/v4, pretty spacing, escapes.
func corpusLines() []string {
	lines := []string{
		record(1, 0), record(2, 1), record(3, 2),
		strings.Join(strings.Fields(example), " "),
		strings.Replace(record(4, 3), `"event_type":"sample"`, `"event_type":"s\u0061mple"`, 1),
		strings.Replace(record(5, 0), `"host":"h"`, `"host":"h\u00e9\ud83d\ude00"`, 1),
		strings.Replace(record(6, 1), `"schema_version":2`, `"schema\u005fversion":2`, 1),
		strings.Replace(record(7, 2), `"metadata":{}`, `"metadata":{"phase_scope":{"action":"enter","depth":1,"name":"train","parent_scope_id":null,"path":["train"],"scope_id":"s:0","sequence":0,"thread_id":1,"thread_name":"MainThread"}}`, 1),
		strings.Replace(record(8, 3), `"metadata":{}`, `"metadata":{"message_size_bytes":536870912,"nccl_comm_id":"70f87e153d7cb89c","nccl_seq":7,"x":[1,2.5e3,true,null,{"k":"v"}],"big":123456789012345678901234567890}`, 1),
		strings.Replace(record(9, 0), `"context":null`, `"context":"NCCL all_reduce \"quoted\" \u2028"`, 1),
		strings.Replace(record(10, 1), `"metadata":{}`, `"metadata":{"a":1,"a":2,"b":{"c":{}}}`, 1),
		`{"schema_version": 3, "session_id": "sess", "timestamp_ns": 11, "event_type": "collective", "collector": "c", "sampling_interval_ms": 0, "pid": -1, "host": "h", "device_id": 0, "allocator_allocated_bytes": 0, "allocator_reserved_bytes": 0, "allocator_active_bytes": null, "allocator_inactive_bytes": null, "allocator_change_bytes": 0, "device_used_bytes": 0, "device_free_bytes": null, "device_total_bytes": null, "context": "c", "metadata": {}}`,
	}
	// Keys in another order than the previous record's.
	lines = append(lines, `{"metadata":{},"context":null,"device_total_bytes":null,"device_free_bytes":null,"device_used_bytes":1,"allocator_change_bytes":0,"allocator_inactive_bytes":null,"allocator_active_bytes":null,"allocator_reserved_bytes":1,"allocator_allocated_bytes":1,"device_id":0,"world_size":4,"rank":1,"host":"h","pid":1,"sampling_interval_ms":0,"collector":"c","event_type":"sample","timestamp_ns":12,"schema_version":2}`)
	return lines
}

// badLines break one rule each: syntax, validation, not an object.
var badLines = []string{
	`{oops`,
	`{"schema_version":2,`,
	`[1]`,
	`"text"`,
	strings.Replace(record(1, 0), `"rank":0`, `"rank":7`, 1),
	strings.Replace(record(1, 0), `"pid":1`, `"pid":-5`, 1),
	strings.Replace(record(1, 0), `"pid":1`, `"pid":1,"zz":1,"aa":2`, 1),
	strings.Replace(record(1, 0), `"host":"h",`, ``, 1),
	strings.Replace(record(1, 0), `"pid":1`, `"pid":1.0`, 1),
	strings.Replace(record(1, 0), `"pid":1`, `"pid":NaN`, 1),
	strings.Replace(record(1, 0), `"pid":1`, `"pid":99999999999999999999`, 1),
	strings.Replace(record(1, 0), `"host":"h"`, "\"host\":\"h\x01\"", 1),
	strings.Replace(record(1, 0), `"host":"h"`, `"host":"h\x"`, 1),
	strings.Replace(record(1, 0), `"metadata":{}`, `"metadata":{"a":[1,}`, 1),
	strings.Replace(record(1, 0), `"metadata":{}`, `"metadata":[]`, 1),
	strings.Replace(record(1, 0), `}`, `} x`, 1),
}

func TestStreamMatchesOracleOnForms(t *testing.T) {
	lines := corpusLines()
	jsonl := strings.Join(lines, "\n") + "\n"
	array := "[" + strings.Join(lines, ",") + "]"
	pretty := "[\n  " + strings.Join(lines, ",\n  ") + "\n]\n"
	wrapper := `{"events": [` + strings.Join(lines, ", ") + `]}`
	forms := map[string]string{
		"jsonl":                        jsonl,
		"jsonl without final newline":  strings.TrimSuffix(jsonl, "\n"),
		"jsonl crlf and blank lines":   "\r\n  \n" + strings.ReplaceAll(jsonl, "\n", "\r\n\n \t\n"),
		"jsonl truncated tail":         jsonl + lines[0][:40],
		"array":                        array,
		"pretty array":                 pretty,
		"empty array":                  " [ ] ",
		"events wrapper":               wrapper,
		"events wrapper newline":       wrapper + "\n",
		"events wrapper extra members": `{"meta": {"k": [1, {"events": 2}]}, "events": [` + strings.Join(lines, ",") + `], "n": null}`,
		"second events key wins":       `{"events": [` + lines[0] + `], "events": [` + lines[1] + `]}`,
		"events not an array":          `{"events": [` + lines[0] + `], "events": 5}`,
		"events wrapper plus lines":    wrapper + "\n" + jsonl,
		"pretty record":                example,
		"pretty record then a line":    example + "\n" + lines[0] + "\n",
		"empty":                        "",
		"blank":                        " \n\t\n",
		"not json":                     "hello\n",
		"empty object":                 "{}",
		"object without events":        `{"a": 1}` + "\n",
	}
	for name, in := range forms {
		checkAgainstOracle(t, name, []byte(in))
	}
	// Every bad record, in each form, at the start, the middle and the end.
	for i, bad := range badLines {
		for _, at := range []int{0, len(lines) / 2, len(lines)} {
			with := append(append(append([]string{}, lines[:at]...), bad), lines[at:]...)
			name := fmt.Sprintf("bad %d at %d", i, at)
			checkAgainstOracle(t, name+" jsonl", []byte(strings.Join(with, "\n")+"\n"))
			checkAgainstOracle(t, name+" jsonl tail", []byte(strings.Join(with, "\n")))
			checkAgainstOracle(t, name+" array", []byte("[\n"+strings.Join(with, ",\n")+"\n]"))
			checkAgainstOracle(t, name+" wrapper", []byte(`{"events": [`+strings.Join(with, ", ")+`]}`))
			checkAgainstOracle(t, name+" wrapper newline", []byte(`{"events": [`+strings.Join(with, ", ")+"]}\n"))
		}
	}
}

// largeInput is n bytes or more of records cycling through the corpus.
func largeInput(n int) []string {
	lines := corpusLines()
	var out []string
	size := 0
	for i := 0; size < n; i++ {
		l := lines[i%len(lines)]
		out = append(out, l)
		size += len(l) + 1
	}
	return out
}

// TestStreamMatchesOracleAtBlockBoundaries: inputs of several blocks, and
// documents of several batches, with bad records on the lines around each
// block boundary, two bad records in different blocks (the first wins), a
// line longer than a block, and the one-line document a long first line
// makes.
func TestStreamMatchesOracleAtBlockBoundaries(t *testing.T) {
	lines := largeInput(3*blockBytes + blockBytes/2)
	// The lines holding the bytes at each multiple of the block size.
	var boundaries []int
	off := 0
	for i, l := range lines {
		next := off + len(l) + 1
		if off/blockBytes != next/blockBytes || next%blockBytes == 0 {
			boundaries = append(boundaries, i)
		}
		off = next
	}
	if len(boundaries) < 3 {
		t.Fatalf("boundaries %v", boundaries)
	}
	forms := func(ls []string) map[string][]byte {
		return map[string][]byte{
			"jsonl":   []byte(strings.Join(ls, "\n") + "\n"),
			"array":   []byte("[" + strings.Join(ls, ",\n") + "]"),
			"wrapper": []byte(`{"events": [` + strings.Join(ls, ", ") + `]}`),
		}
	}
	for name, in := range forms(lines) {
		checkAgainstOracle(t, "large "+name, in)
	}
	checked := boundaries[:2]
	if testing.Short() {
		checked = boundaries[:1]
	}
	for _, b := range checked {
		for _, at := range []int{b - 1, b, b + 1} {
			for _, bad := range []string{badLines[0], badLines[4]} {
				with := append([]string{}, lines...)
				with[at] = bad
				for name, in := range forms(with) {
					checkAgainstOracle(t, fmt.Sprintf("%s bad %q at line %d", name, bad[:min(len(bad), 12)], at), in)
				}
			}
		}
	}
	two := append([]string{}, lines...)
	two[boundaries[2]+3] = badLines[0]
	two[boundaries[0]+3] = badLines[5]
	for name, in := range forms(two) {
		checkAgainstOracle(t, "two bad "+name, in)
	}
	long := append([]string{}, lines[:50]...)
	long[20] = strings.Replace(record(1, 0), `"metadata":{}`, `"metadata":{"blob":"`+strings.Repeat("x", 2*blockBytes)+`"}`, 1)
	for name, in := range forms(long) {
		checkAgainstOracle(t, "long line "+name, in)
	}
}

// TestStreamMatchesOracleOnMutations applies random byte edits to valid
// inputs of each form and compares outcomes.
func TestStreamMatchesOracleOnMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 4))
	lines := corpusLines()
	edits := []string{"", " ", "\n", "\r\n", ",", "}", "{", "]", "[", `"`, `\`, "0", "-", "\x00", "\xff", `\u0000`, "null", "true", `"events":`}
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for round := range rounds {
		ls := make([]string, 1+rng.IntN(6))
		for i := range ls {
			ls[i] = lines[rng.IntN(len(lines))]
		}
		var in string
		switch rng.IntN(4) {
		case 0:
			in = strings.Join(ls, "\n") + "\n"
		case 1:
			in = "[" + strings.Join(ls, ", ") + "]"
		case 2:
			in = `{"events": [` + strings.Join(ls, ",") + `]}`
		default:
			in = "[\n" + strings.Join(ls, ",\n") + "\n]\n"
		}
		b := []byte(in)
		for range 1 + rng.IntN(3) {
			pos := rng.IntN(len(b) + 1)
			cut := min(len(b), pos+rng.IntN(3))
			b = append(b[:pos:pos], append([]byte(edits[rng.IntN(len(edits))]), b[cut:]...)...)
		}
		checkAgainstOracle(t, fmt.Sprintf("round %d: %q", round, b), b)
	}
}

// FuzzStreamMatchesOracle: any input gives the outcome of the readers and
// decoder as of 8c9c5f4.
func FuzzStreamMatchesOracle(f *testing.F) {
	lines := corpusLines()
	f.Add([]byte(strings.Join(lines, "\n") + "\n"))
	f.Add([]byte("[" + strings.Join(lines[:3], ",") + "]"))
	f.Add([]byte(`{"events": [` + strings.Join(lines[:3], ", ") + `]}`))
	f.Add([]byte(example))
	for _, bad := range badLines[:4] {
		f.Add([]byte(lines[0] + "\n" + bad + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstOracle(t, "fuzz", data)
	})
}

// TestNumberBoundariesMatchOracle: integers around the int64 limits, with
// 18, 19 and 20 digits, as the old scanner classified them.
func TestNumberBoundariesMatchOracle(t *testing.T) {
	for _, lex := range []string{
		"0", "7", "999999999999999999", "1000000000000000000", "9223372036854775807",
		"9223372036854775808", "9999999999999999999", "10000000000000000000",
		"-9223372036854775808", "-9223372036854775809", "-1", "12.5", "1e3", "123456789012345678901234567890",
	} {
		s := &scanner{data: []byte(lex + ",")}
		o := &oldScanner{data: []byte(lex + ",")}
		gotLex, gotKind, gotV, gotErr := s.number()
		wantLex, wantKind, wantV, wantErr := o.number()
		if string(gotLex) != string(wantLex) || int(gotKind) != int(wantKind) || gotV != wantV || (gotErr == nil) != (wantErr == nil) || s.pos != o.pos {
			t.Errorf("%s: got %q %d %d %v at %d, want %q %d %d %v at %d", lex, gotLex, gotKind, gotV, gotErr, s.pos, wantLex, wantKind, wantV, wantErr, o.pos)
		}
	}
}
