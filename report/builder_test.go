package report

import (
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

func TestBuilder(t *testing.T) {
	events := []telemetry.Event{
		sample(1, 300, 5*mib),
		boundary(1, 100, true, "s:0", 0, "train"),
		sample(1, 100, 2*gib),
		marker(1, 150, map[string]any{"nccl.op": "all_reduce", "nccl.comm.id": "0xc0"}),
		sample(0, 200, 1*gib),
		marker(0, 210, map[string]any{"nccl_comm_id": "legacy"}),
		boundary(1, 120, true, "s:1", 1, "train", "forward"),
		boundary(1, 180, false, "s:1", 2, "train", "forward"),
		marker(1, 250, map[string]any{"nccl.op": "all_reduce", "nccl.comm.id": "0xc0"}),
	}
	// A sample whose device used is below reserved has no hidden memory.
	neg := sample(0, 250, 0)
	neg.DeviceUsedBytes = telemetry.Int(neg.AllocatorReservedBytes.Value - 5)
	events = append(events, neg)

	b := NewBuilder(true)
	for i := range events {
		b.Add(&events[i])
	}
	job := b.Job()
	if job.StartNs != 100 || job.EndNs != 300 || job.Events != int64(len(events)) || !slices.Equal(job.JobIDs, []string{"job-1"}) {
		t.Errorf("job %d..%d, %d events, ids %v", job.StartNs, job.EndNs, job.Events, job.JobIDs)
	}
	if len(job.Lanes) != 2 || job.Lanes[0].Rank != 0 || job.Lanes[1].Rank != 1 {
		t.Fatalf("lanes %+v", job.Lanes)
	}
	l1 := job.Lanes[1]
	if !slices.Equal(l1.TimesNs, []int64{100, 300}) || !slices.Equal(l1.HiddenBytes, []int64{2 * gib, 5 * mib}) {
		t.Errorf("rank 1 samples %v %v, want time order", l1.TimesNs, l1.HiddenBytes)
	}
	if got := job.Lanes[0].HiddenBytes; !slices.Equal(got, []int64{1 * gib, 0}) {
		t.Errorf("rank 0 hidden %v", got)
	}
	labels := func(l Lane) []string {
		var out []string
		for _, m := range l.Markers {
			out = append(out, job.MarkerLabels[m.Label].String())
		}
		return out
	}
	if got := labels(l1); !slices.Equal(got, []string{"all_reduce · comm 0xc0", "all_reduce · comm 0xc0"}) {
		t.Errorf("rank 1 markers %v", got)
	}
	if got := labels(job.Lanes[0]); !slices.Equal(got, []string{"collective · comm legacy"}) {
		t.Errorf("rank 0 markers %v", got)
	}
	// forward closes at 180; train never exits and ends at rank 1's last
	// event (300), as the attribution's replay ends it.
	want := []PhaseSpan{
		{StartNs: 100, EndNs: 300, Path: []string{"train"}, SyntheticEnd: true},
		{StartNs: 120, EndNs: 180, Path: []string{"train", "forward"}},
	}
	if len(l1.Phases) != len(want) {
		t.Fatalf("phases %+v, want %+v", l1.Phases, want)
	}
	for i := range want {
		g := l1.Phases[i]
		if g.StartNs != want[i].StartNs || g.EndNs != want[i].EndNs || !slices.Equal(g.Path, want[i].Path) || g.SyntheticEnd != want[i].SyntheticEnd {
			t.Errorf("phase %d = %+v, want %+v", i, g, want[i])
		}
	}
}

func TestBuilderWithoutPhasesKeepsNoBoundaries(t *testing.T) {
	b := NewBuilder(false)
	e := boundary(0, 1, true, "s:0", 0, "train")
	b.Add(&e)
	if job := b.Job(); len(job.Lanes[0].Phases) != 0 || job.PhasesKnown {
		t.Errorf("phases replayed without --phases: %+v", job.Lanes[0].Phases)
	}
}

func TestBuilderEmpty(t *testing.T) {
	job := NewBuilder(true).Job()
	if job.StartNs != 0 || job.EndNs != 0 || len(job.Lanes) != 0 {
		t.Errorf("empty job %+v", job)
	}
}
