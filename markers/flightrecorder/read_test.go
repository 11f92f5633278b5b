package flightrecorder

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/markers"
)

func TestReadDump(t *testing.T) {
	f, err := os.Open("testdata/nccl_trace_rank_1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1767225610000000000)
	want := []markers.Marker{
		{StartNs: t0 + 2_000_000, EndNs: t0 + 240_000_000, Op: "all_reduce", Name: "nccl:all_reduce", CommID: "0", Seq: 1, HasSeq: true,
			NRanks: 4, Ranks: []int64{0, 1, 2, 3}, MessageBytes: 64 << 20, Approximate: true},
		// P2P: no identity (its collective_seq_id is not its counter).
		{StartNs: t0 + 1_000_000_000, EndNs: t0 + 1_100_000_000, Op: "send", Name: "nccl:send 0->1", CommID: "1",
			NRanks: 2, Ranks: []int64{1, 3}, MessageBytes: 2048, Approximate: true},
		// Started, not seen completing: its enqueue time only.
		{StartNs: t0 + 2_000_000_000, EndNs: t0 + 2_000_000_000, Op: "all_gather", Name: "nccl:_allgather_base", CommID: "0", Seq: 2, HasSeq: true,
			NRanks: 4, Ranks: []int64{0, 1, 2, 3}, MessageBytes: 4096, Approximate: true},
	}
	if !reflect.DeepEqual(d.Markers, want) {
		t.Fatalf("markers\n got %+v\nwant %+v", d.Markers, want)
	}
	if d.Version != "2.10" || d.Stats.Entries != 4 || d.Stats.Scheduled != 1 || d.Stats.Skipped != 0 {
		t.Fatalf("version %q stats %+v", d.Version, d.Stats)
	}
}

func TestReadBadDumps(t *testing.T) {
	good := `{"version": "2.10", "pg_config": {}, "entries": [{"process_group": ["0", "default_pg"], "collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "time_created_ns": 5, "state": "completed"}]}`
	var syntax *SyntaxError
	for _, tc := range []struct {
		name, dump string
		check      func(*Dump, error) bool
	}{
		{"pickle", "\x80\x04\x95...", func(_ *Dump, err error) bool { return errors.Is(err, ErrPickle) }},
		{"torn", good[:40], func(_ *Dump, err error) bool { return errors.As(err, &syntax) }},
		{"trailing data", good + "{}", func(_ *Dump, err error) bool { return errors.As(err, &syntax) }},
		{"entries not a list", `{"entries": 3}`, func(_ *Dump, err error) bool { return err != nil && strings.Contains(err.Error(), "entries") }},
		{"entry with a string seq", strings.Replace(good, `"collective_seq_id": 1`, `"collective_seq_id": "1"`, 1),
			func(d *Dump, err error) bool { return err == nil && d.Stats.Skipped == 1 && len(d.Markers) == 0 }},
		{"entry without a time", strings.Replace(good, `"time_created_ns": 5`, `"time_created_ns": 0`, 1),
			func(d *Dump, err error) bool { return err == nil && d.Stats.Skipped == 1 && d.Stats.FirstSkip != "" }},
		{"no entries (JSON leaves the key out)", `{"version": "2.10", "pg_config": {}}`,
			func(d *Dump, err error) bool { return err == nil && len(d.Markers) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Read(strings.NewReader(tc.dump))
			if !tc.check(d, err) {
				t.Fatalf("dump %+v, error %v", d, err)
			}
		})
	}
}
