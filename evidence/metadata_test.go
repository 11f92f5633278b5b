package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestRecordReadersReadStreamedMetadataAsBuilt: the record readers
// (MetadataMarker, AccountingOf) read Stream's events, whose metadata
// stays text, as they read the same records with their metadata maps
// built — keys given twice (the last value counts), integers written as
// floats or strings, escaped keys, members in any order, markers without
// identity, accounting with and without a total — and intern the same
// collectives.
func TestRecordReadersReadStreamedMetadataAsBuilt(t *testing.T) {
	metadata := []struct{ eventType, md string }{
		{"sample", `{}`},
		{"nccl:all_reduce", `{"nccl.comm.id":"0xab","nccl.seq":7,"nccl.op":"all_reduce","nccl.duration_ns":40,"nccl.comm.nranks":2,"nccl.comm.ranks":[1,0],"nccl.message_bytes":1024,"nccl.time_approximate":true}`},
		{"nccl:all_reduce", `{"nccl.seq":7.0,"nccl.op":"all_reduce","nccl.comm.id":"0xab"}`},
		{"collective", `{"nccl.comm.id":"0xab","nccl.seq":"8","nccl.op":"all_gather"}`},
		{"collective", `{"nccl.comm.id":"0xab","nccl.seq":9,"nccl.seq":"x","nccl.op":"all_reduce"}`},
		{"collective", `{"nccl.comm.id":1,"nccl.comm.id":"0xcd","nccl.seq":1,"nccl.op":"send","nccl.comm.ranks":[3,"a",2.0]}`},
		{"collective", `{"nccl.comm.id":"0xab","nccl.comm.id":"0xef","nccl.seq":3,"nccl.seq":4}`},
		{"collective", `{"nccl\u002ecomm.id":"0xcd","nccl.seq":1,"nccl.op":"recv","nccl.duration_ns":-5}`},
		{"collective", `{"nccl.comm.id":"0xcd","nccl.seq":2,"nccl.time_approximate":"yes","nccl.duration_ns":9223372036854775807}`},
		{"ncclKernel", `{}`},
		{"step_begin", `{"step":3,"note":"all_reduce"}`},
		{"step_begin", `{"note":"all_reduce","note":"plain"}`},
		{AccountingEventType, `{"nccl.comm.id":"0xab","nccl.comm.memory.total_bytes":4096}`},
		{AccountingEventType, `{"nccl.comm.memory.total_bytes":4096.0,"nccl.comm.id":"0xcd"}`},
		{AccountingEventType, `{"nccl.comm.id":"0xab"}`},
		{AccountingEventType, `{"nccl.comm.id":"0xab","nccl.comm.memory.total_bytes":-1}`},
		{AccountingEventType, `{"nccl.comm.id":"0xab","nccl.comm.memory.total_bytes":8192,"nccl.comm.memory.total_bytes":null}`},
	}
	var jsonl bytes.Buffer
	for i := range 3000 {
		m := metadata[i%len(metadata)]
		e := event(int64(i%4), int64(1000+i*10), m.eventType, nil)
		e.Collector, e.Host = "c", "h"
		e.AllocatorAllocatedBytes, e.AllocatorChangeBytes = telemetry.Int(1), telemetry.Int(0)
		line := string(telemetry.AppendJSON(nil, &e))
		line = strings.Replace(line, `"metadata":{}`, `"metadata":`+m.md, 1)
		line = strings.ReplaceAll(line, `"nccl.seq":7,`, fmt.Sprintf(`"nccl.seq":%d,`, 7+i/len(metadata)))
		jsonl.WriteString(line + "\n")
	}
	want, got := readBuiltAndStreamed(t, jsonl.Bytes(), func(chunk []telemetry.Event) {
		for i := range chunk {
			if chunk[i].Metadata != nil {
				t.Fatal("a streamed event has a metadata map")
			}
		}
	})
	if len(want.table.List) < 3 || len(want.markers) == 0 || len(want.accounting) == 0 || want.skipped == 0 {
		t.Fatalf("the records make %d collectives, %d markers, %d accounting points, %d skips",
			len(want.table.List), len(want.markers), len(want.accounting), want.skipped)
	}
	// The texts the streamed lists were read from are the table's cache.
	got.table.listText = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed records read\n%+v\nwant\n%+v", got, want)
	}
}

// recordsRead is what the record readers make of a run of records.
// readBuiltAndStreamed reads jsonl's records twice, as built events (with
// their metadata maps) and streamed ones, each chunk of the stream shown to
// inspect first when it is not nil.
func readBuiltAndStreamed(t *testing.T, jsonl []byte, inspect func([]telemetry.Event)) (built, streamed *recordsRead) {
	t.Helper()
	events, err := telemetry.ReadAuto(bytes.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	built, streamed = &recordsRead{}, &recordsRead{}
	built.read(events)
	if err := telemetry.Stream(bytes.NewReader(jsonl), func(chunk []telemetry.Event) error {
		if inspect != nil {
			inspect(chunk)
		}
		streamed.read(chunk)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return built, streamed
}

type recordsRead struct {
	markers    []Marker
	accounting []accountingRead
	skipped    int
	table      CollectiveTable
}

type accountingRead struct {
	comm  string
	total int64
}

// read reads each record of events as the window does: a sample is none
// of the readers' business, an accounting record is a point, any other
// record a marker when it has an identity or a collective token.
func (r *recordsRead) read(events []telemetry.Event) {
	for i := range events {
		e := &events[i]
		switch {
		case attribution.IsSample(e):
		case IsAccountingType(e.EventType):
			comm, total, ok := AccountingOf(e)
			if !ok {
				r.skipped++
				continue
			}
			r.accounting = append(r.accounting, accountingRead{comm, total})
		default:
			m, ok := MetadataMarker(e, func() bool { return attribution.IsMarker(e) }, &r.table)
			if !ok {
				r.skipped++
				continue
			}
			r.markers = append(r.markers, m)
		}
	}
}

// TestMetadataMarkerReadsGoNumbersInBuiltMetadata: metadata built in code
// may hold Go integers and floats; they read as the JSON numbers they
// stand for.
func TestMetadataMarkerReadsGoNumbersInBuiltMetadata(t *testing.T) {
	read := func(md map[string]any) Collective {
		var table CollectiveTable
		e := event(0, 100, "collective", md)
		if _, ok := MetadataMarker(&e, func() bool { return false }, &table); !ok || len(table.List) != 1 {
			t.Fatalf("%v: marker %v, %d collectives", md, ok, len(table.List))
		}
		return table.List[0]
	}
	want := read(map[string]any{KeyCommID: "c", KeySeq: json.Number("7"), KeyMessageBytes: json.Number("64"), KeyCommNRanks: json.Number("2")})
	for _, md := range []map[string]any{
		{KeyCommID: "c", KeySeq: int64(7), KeyMessageBytes: 64, KeyCommNRanks: int32(2)},
		{KeyCommID: "c", KeySeq: 7.0, KeyMessageBytes: int64(64), KeyCommNRanks: 2.0},
	} {
		if got := read(md); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: %+v, want %+v", md, got, want)
		}
	}
}

// TestStreamedMemberListsFollowEachDeclaration: markers listing a
// communicator's members, the list changing and changing back, streamed
// (the decoder shares one text per list, which the table recognises
// without parsing) give each instance the members its own markers list,
// as the same records read with their metadata built do.
func TestStreamedMemberListsFollowEachDeclaration(t *testing.T) {
	list := func(from, to int) string {
		var b strings.Builder
		for r := from; r < to; r++ {
			if r > from {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(r))
		}
		return "[" + b.String() + "]"
	}
	lists := []string{list(0, 40), list(0, 40), list(0, 41), list(0, 40), "[]", list(5, 45), list(0, 40)}
	var jsonl bytes.Buffer
	for seq, ranks := range lists {
		for rank := range 4 {
			e := event(int64(rank), int64(1000+seq*100+rank), "collective", nil)
			e.Collector, e.Host = "c", "h"
			e.AllocatorAllocatedBytes, e.AllocatorChangeBytes = telemetry.Int(1), telemetry.Int(0)
			line := string(telemetry.AppendJSON(nil, &e))
			md := fmt.Sprintf(`{"nccl.comm.id":"0xab","nccl.seq":%d,"nccl.op":"all_reduce","nccl.comm.ranks":%s}`, seq, ranks)
			jsonl.WriteString(strings.Replace(line, `"metadata":{}`, `"metadata":`+md, 1) + "\n")
		}
	}
	want, got := readBuiltAndStreamed(t, jsonl.Bytes(), nil)
	if len(got.table.List) != len(lists) {
		t.Fatalf("%d collectives, want %d", len(got.table.List), len(lists))
	}
	for i, c := range got.table.List {
		if w := want.table.List[i].Ranks; !slices.Equal(c.Ranks, w) {
			t.Errorf("seq %d: members %v, want %v", c.Seq, c.Ranks, w)
		}
	}
	if n := len(got.table.List[2].Ranks); n != 41 {
		t.Errorf("seq 2: %d members, want 41", n)
	}
}
