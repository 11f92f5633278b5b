package evidence

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// FuzzBuilder feeds decoded records to the Builder and the engine: any
// valid record stream gives an input whose columns are sorted and whose
// marker indexes are in range, and attribution does not panic.
func FuzzBuilder(f *testing.F) {
	base := `{"schema_version":3,"session_id":"s","timestamp_ns":%d,"event_type":"sample","collector":"c","sampling_interval_ms":100,"pid":1,"host":"h","job_id":"j","rank":%d,"local_rank":0,"world_size":2,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":1,"allocator_inactive_bytes":0,"allocator_change_bytes":0,"device_used_bytes":%d,"device_free_bytes":1,"device_total_bytes":100,"context":null,"metadata":{}}`
	var seed bytes.Buffer
	for i := range 12 {
		seed.WriteString(fmt.Sprintf(base, 1000+i*100, i%2, 1+(i%5)*1000))
		seed.WriteByte('\n')
	}
	seed.WriteString(`{"schema_version":3,"session_id":"s","timestamp_ns":1500,"event_type":"nccl:all_reduce","collector":"c","sampling_interval_ms":100,"pid":1,"host":"h","job_id":"j","rank":0,"local_rank":0,"world_size":2,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":1,"allocator_inactive_bytes":0,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":1,"device_total_bytes":100,"context":null,"metadata":{"nccl.comm.id":"x","nccl.seq":1,"nccl.duration_ns":-5,"nccl.comm.ranks":[1,"a",0]}}` + "\n")
	seed.WriteString(`{"schema_version":3,"session_id":"s","timestamp_ns":1600,"event_type":"comm_memory_stats","collector":"c","sampling_interval_ms":100,"pid":1,"host":"h","job_id":"j","rank":1,"local_rank":0,"world_size":2,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":1,"allocator_inactive_bytes":0,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":1,"device_total_bytes":100,"context":null,"metadata":{"nccl.comm.id":"x","nccl.comm.memory.total_bytes":1e3}}` + "\n")
	f.Add(seed.Bytes())
	cfg, err := ResolveConfig("high", map[string]any{"min_samples_per_rank": 3, "min_confidence": 0}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := telemetry.ReadAuto(bytes.NewReader(data))
		if err != nil {
			return
		}
		b := NewBuilder()
		for i := range events {
			b.Add(&events[i])
		}
		in := b.Input()
		for _, rd := range in.Ranks {
			for i := 1; i < len(rd.Samples.TimesNs); i++ {
				if rd.Samples.TimesNs[i] < rd.Samples.TimesNs[i-1] {
					t.Fatalf("rank %d samples out of order", rd.Rank)
				}
			}
			for _, m := range rd.Markers {
				if m.Collective != NoCollective && int(m.Collective) >= len(in.Collectives) || m.EndNs < m.StartNs {
					t.Fatalf("rank %d marker %+v", rd.Rank, m)
				}
			}
		}
		for _, r := range Attribute(in, cfg, nil) {
			if r.IntervalEndNs < uint64(r.IntervalStartNs) {
				t.Fatalf("interval ends before it starts: %+v", r)
			}
		}
	})
}
