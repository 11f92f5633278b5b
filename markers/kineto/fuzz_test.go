package kineto

import (
	"bytes"
	"os"
	"testing"
)

// FuzzRead: Read never panics, and what it accepts is consistent:
// markers, phases and memory samples with ordered, epoch-placed times.
func FuzzRead(f *testing.F) {
	if data, err := os.ReadFile("testdata/rank1.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"baseTimeNanoseconds": 1767225600000000000, "traceEvents": [` + allReduceAt("5.125") + `]}`))
	f.Add([]byte(`[{"name": "gloo:all_reduce", "ph": "X", "ts": 1767225600000002.000, "dur": 40.5, "tid": 7, "pid": "CPU functions", "args": {}}]`))
	f.Add([]byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING", "ts": -1, "dur": 1e308, "args": {"External id": 1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, m := range tr.Markers {
			if m.EndNs < m.StartNs || m.Op == "" || (m.HasSeq && m.Seq < 0) || m.MessageBytes < 0 {
				t.Fatalf("bad marker %+v", m)
			}
			if tr.HasRank && m.Rank != tr.Rank {
				t.Fatalf("marker of rank %d in a trace of rank %d", m.Rank, tr.Rank)
			}
		}
		for _, p := range tr.Phases {
			if p.EndNs < p.StartNs || len(p.Path) == 0 || p.Path[len(p.Path)-1] != p.Name {
				t.Fatalf("bad phase %+v", p)
			}
		}
		for _, s := range tr.Memory {
			if s.ReservedBytes < 0 || s.AllocatedBytes < 0 {
				t.Fatalf("bad memory sample %+v", s)
			}
		}
	})
}
