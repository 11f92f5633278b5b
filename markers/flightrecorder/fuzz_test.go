package flightrecorder

import (
	"bytes"
	"os"
	"testing"
)

// FuzzRead: Read never panics; every marker it gives is approximate, with
// an ordered interval and, when it names a collective, a sequence >= 0.
func FuzzRead(f *testing.F) {
	if data, err := os.ReadFile("testdata/nccl_trace_rank_1.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"version": "2.10", "pg_config": {}, "entries": [{"process_group": ["0", "default_pg"], "collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "time_created_ns": 5, "state": "completed", "duration_ms": 1e300}]}`))
	f.Add([]byte("\x80\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, m := range d.Markers {
			if !m.Approximate || m.EndNs < m.StartNs || m.StartNs <= 0 || (m.HasSeq && m.Seq < 0) || m.MessageBytes < 0 {
				t.Fatalf("bad marker %+v", m)
			}
		}
	})
}
