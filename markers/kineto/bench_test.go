package kineto

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

// benchTrace is a trace of n events in Kineto's layout with a training
// step's mix: mostly aten CPU ops and compute kernels (read for their
// header only), one collective (record_param_comms and its NCCL kernel)
// and one [memory] event per 20 events.
func benchTrace(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 8},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1767225600000000000,\n  \"traceEvents\": [\n")
	for i := 0; i < n; i++ {
		ts := fmt.Sprintf("%d.%03d", 1000+i*50, i%1000)
		switch i % 20 {
		case 0:
			fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": %s, \"dur\": 35.250,\n    \"args\": {\n      \"External id\": %d, \"Record function id\": 0, \"Ev Idx\": %d, \"Rank\": 3, \"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 16777216, \"Out msg nelems\": 16777216, \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Global rank start\": 0, \"Global rank stride\": 1, \"Group size\": 8, \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\", \"Seq\": %d\n    }\n  },\n", ts, i, i, i/20)
		case 1:
			fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 0, \"tid\": 21,\n    \"ts\": %s, \"dur\": 150.000,\n    \"args\": {\n      \"External id\": %d, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 21, \"correlation\": %d, \"registers per thread\": 96, \"shared memory\": 82784, \"blocks per SM\": 0.1, \"warps per SM\": 0.6, \"grid\": [24, 1, 1], \"block\": [544, 1, 1], \"est. achieved occupancy %%\": 0, \"Collective name\": \"allreduce\", \"In msg nelems\": 16777216, \"Out msg nelems\": 16777216, \"Group size\": 8, \"dtype\": \"Float\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\", \"Seq\": %d\n    }\n  },\n", ts, i-1, i, (i-1)/20)
		case 2:
			fmt.Fprintf(&b, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": %s,\n    \"args\": {\n      \"Device Type\": 1, \"Device Id\": 0, \"Addr\": 139872011714560, \"Bytes\": 67108864, \"Total Allocated\": 8589934592, \"Total Reserved\": 10737418240, \"Ev Idx\": %d\n    }\n  },\n", ts, i)
		case 3, 4, 5, 6:
			fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)\", \"pid\": 0, \"tid\": 7,\n    \"ts\": %s, \"dur\": 412.000,\n    \"args\": {\n      \"External id\": %d, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": %d, \"registers per thread\": 230, \"shared memory\": 73728, \"blocks per SM\": 1.2, \"warps per SM\": 4.8, \"grid\": [16, 16, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %%\": 6\n    }\n  },\n", ts, i, i)
		default:
			fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": %s, \"dur\": 12.500,\n    \"args\": {\n      \"External id\": %d, \"Record function id\": 0, \"Sequence number\": %d, \"Fwd thread id\": 0, \"Ev Idx\": %d\n    }\n  },\n", ts, i, i, i)
		}
	}
	b.WriteString("  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": 99999999.000\n  }\n  ],\n  \"traceName\": \"rank3.pt.trace.json\"\n}")
	return []byte(b.String())
}

// BenchmarkRead reads traces of 1 000 and 10 000 events, alternating with
// decoding as many stormlog sample records (telemetry.Decoder), so that
// both see the same machine load, and reports each one's ns per record
// and their ratio (a trace event is a record).
func BenchmarkRead(b *testing.B) {
	stormlog := eventgen.JSONL(eventgen.Spec{Ranks: 1, Samples: 1, Seed: 1})
	for _, n := range []int{1000, 10000} {
		trace := benchTrace(n)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			var (
				d                telemetry.Decoder
				traceNs, stormNs time.Duration
			)
			b.SetBytes(int64(len(trace)))
			// CPU time of this thread: other processes' load does not count.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			for b.Loop() {
				t0 := cpuclock.Thread()
				tr, err := ReadBytes(trace)
				if err != nil || tr.Stats.Events != n+1 {
					b.Fatal(err)
				}
				t1 := cpuclock.Thread()
				for range n {
					if _, err := d.Decode(stormlog); err != nil {
						b.Fatal(err)
					}
				}
				traceNs += t1 - t0
				stormNs += cpuclock.Thread() - t1
			}
			records := float64(b.N * n)
			b.ReportMetric(float64(traceNs.Nanoseconds())/records, "kineto-ns/record")
			b.ReportMetric(float64(stormNs.Nanoseconds())/records, "stormlog-ns/record")
			b.ReportMetric(float64(traceNs)/float64(stormNs), "kineto/stormlog")
		})
	}
}
