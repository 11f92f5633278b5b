package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// A bare marker naming the communicator and sequence number of an op its
// rank opened is that op's end: it takes the op's label and no label
// "collective" is made; a bare marker of no open op stays one of its own.
func TestMarkerEnds(t *testing.T) {
	b := NewBuilder(false)
	for _, e := range []telemetry.Event{
		marker(0, 10, map[string]any{"nccl.op": "all_reduce", "nccl_comm_id": "c1", "nccl_seq": int64(7)}),
		marker(1, 11, map[string]any{"nccl.op": "all_reduce", "nccl_comm_id": "c1", "nccl_seq": int64(7)}),
		marker(0, 20, map[string]any{"nccl_comm_id": "c1", "nccl_seq": int64(7)}),
		marker(1, 21, map[string]any{"nccl_comm_id": "c1", "nccl_seq": int64(8)}), // opens nothing
		marker(0, 30, map[string]any{"nccl_comm_id": "c1", "nccl_seq": int64(7)}), // already closed
	} {
		b.Add(&e)
	}
	job := b.Job()
	r0, r1 := job.Lanes[0].Markers, job.Lanes[1].Markers
	op := job.MarkerLabels[r0[0].Label]
	if op.Op != "all_reduce" || r0[0].End || !r0[1].End || r0[1].Label != r0[0].Label {
		t.Errorf("rank 0 markers %+v (labels %+v): want the all_reduce, then its end", r0, job.MarkerLabels)
	}
	if r0[2].End || job.MarkerLabels[r0[2].Label].Op != "collective" {
		t.Errorf("a second end of a closed op: %+v, want a bare marker", r0[2])
	}
	if r1[1].End || job.MarkerLabels[r1[1].Label].Op != "collective" {
		t.Errorf("rank 1's end of an op it never opened: %+v, want a bare marker", r1[1])
	}
}

// NCCL's accounting records become one series per communicator of the
// rank, in time order; records without a communicator or a byte count are
// left out; the page draws a line per series and names the communicator.
func TestAccountingSeries(t *testing.T) {
	acct := func(rank, ts int64, md map[string]any) telemetry.Event {
		e := sample(rank, ts, 0)
		e.EventType, e.Metadata = "comm_memory_stats", md
		return e
	}
	b := NewBuilder(false)
	for _, e := range []telemetry.Event{
		sample(0, 5, 300*mib),
		acct(0, 20, map[string]any{"nccl.comm.id": "c1", "nccl.comm.memory.total_bytes": int64(300 * mib)}),
		acct(0, 10, map[string]any{"nccl.comm.id": "c1", "nccl.comm.memory.total_bytes": int64(200 * mib)}),
		acct(0, 15, map[string]any{"nccl.comm.id": "c2", "nccl.comm.memory.total_bytes": int64(64 * mib)}),
		acct(0, 16, map[string]any{"nccl.comm.memory.total_bytes": int64(1)}),
		acct(0, 17, map[string]any{"nccl.comm.id": "c1", "nccl.comm.memory.total_bytes": "lots"}),
		sample(0, 30, 400*mib),
	} {
		b.Add(&e)
	}
	job := b.Job()
	got := job.Lanes[0].Accounting
	if len(got) != 2 || got[0].Comm != "c1" || got[1].Comm != "c2" ||
		len(got[0].TimesNs) != 2 || got[0].TimesNs[0] != 10 || got[0].Bytes[0] != 200*mib || got[0].Bytes[1] != 300*mib {
		t.Fatalf("accounting %+v: want c1 (10: 200 MiB, 20: 300 MiB) and c2", got)
	}
	var page bytes.Buffer
	if err := Render(&page, job, nil, Options{Columns: 200}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if n := strings.Count(html, `<path class="acct `); n != 2 {
		t.Errorf("%d accounting paths, want 2", n)
	}
	for _, want := range []string{"NCCL accounting, comm c1", "NCCL accounting, comm c2", "400.0 MiB"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}
