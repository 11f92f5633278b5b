package flightrecorder

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/internal/cpuclock"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// benchDump is a JSON dump of n completed entries as _dump_nccl_trace_json
// writes them.
func benchDump(n int) []byte {
	var entries []string
	for i := 0; i < n; i++ {
		created := int64(1767225600000000000) + int64(i)*100_000_000
		entries = append(entries, fmt.Sprintf(`{"record_id": %d, "pg_id": 0, "process_group": ["0", "default_pg"], "thread_id": "139990000000000", "thread_name": "MainThread", "collective_seq_id": %d, "p2p_seq_id": 0, "op_id": %d, "profiling_name": "nccl:all_reduce", "time_created_ns": %d, "duration_ms": 150.25, "input_sizes": [[4096, 4096]], "input_dtypes": ["Float"], "output_sizes": [[4096, 4096]], "output_dtypes": ["Float"], "state": "completed", "time_discovered_started_ns": %d, "time_discovered_completed_ns": %d, "retired": true, "timeout_ms": 600000, "is_p2p": false}`,
			i, i, i, created, created+2_000_000, created+250_000_000))
	}
	return []byte(`{"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}}, "pg_status": {"0": {"last_enqueued_collective": "1", "last_started_collective": "1", "last_completed_collective": "1"}}, "entries": [` + strings.Join(entries, ", ") + `]}`)
}

// BenchmarkRead reads dumps of 100 and 2 000 entries (the recorder's
// default ring), alternating with decoding as many stormlog sample records,
// and reports each one's ns per record and their ratio (an entry is a
// record).
func BenchmarkRead(b *testing.B) {
	stormlog := eventgen.JSONL(eventgen.Spec{Ranks: 1, Samples: 1, Seed: 1})
	for _, n := range []int{100, 2000} {
		dump := benchDump(n)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			var (
				d               telemetry.Decoder
				dumpNs, stormNs time.Duration
			)
			b.SetBytes(int64(len(dump)))
			// CPU time of this thread: other processes' load does not count.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			for b.Loop() {
				t0 := cpuclock.Thread()
				got, err := ReadBytes(dump)
				if err != nil || len(got.Markers) != n {
					b.Fatal(err)
				}
				t1 := cpuclock.Thread()
				for range n {
					if _, err := d.Decode(stormlog); err != nil {
						b.Fatal(err)
					}
				}
				dumpNs += t1 - t0
				stormNs += cpuclock.Thread() - t1
			}
			records := float64(b.N * n)
			b.ReportMetric(float64(dumpNs.Nanoseconds())/records, "flightrecorder-ns/record")
			b.ReportMetric(float64(stormNs.Nanoseconds())/records, "stormlog-ns/record")
			b.ReportMetric(float64(dumpNs)/float64(stormNs), "flightrecorder/stormlog")
		})
	}
}
