package telemetry_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/internal/scale"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// memberListsMax is the largest job BenchmarkScaleStreamMemberLists runs:
// with the members on every marker its input is R² list entries per
// collective.
const memberListsMax = 2048

// BenchmarkScaleStreamMemberLists streams, by ranks, a job whose markers
// all list the communicator's members (as NCCL instrumentation without
// collectiveattr_torch writes them) and reads every top-level metadata
// member of each record, as evidence mode's record readers do. The list
// bytes per record grow with the ranks; cpu-ns/record stays flat when a
// list costs no more than its bytes' passage through memory.
func BenchmarkScaleStreamMemberLists(b *testing.B) {
	var sizes []int
	for _, n := range scale.Sizes() {
		if n < memberListsMax {
			sizes = append(sizes, n)
		}
	}
	if scale.Max() >= memberListsMax {
		sizes = append(sizes, memberListsMax)
	}
	for _, ranks := range sizes {
		b.Run("ranks="+strconv.Itoa(ranks), func(b *testing.B) {
			data := eventgen.JSONL(eventgen.Spec{Ranks: ranks, Samples: 100, SpikeRate: 0.05, Markers: true, Identity: true, Lists: eventgen.ListsEvery, Seed: 1})
			records := bytes.Count(data, []byte{'\n'})
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := scale.StartCPU()
			for b.Loop() {
				members := 0
				err := telemetry.Stream(bytes.NewReader(data), func(chunk []telemetry.Event) error {
					for i := range chunk {
						for _, v := range chunk[i].MetadataMembers() {
							if v.IsArray() {
								members++
							}
						}
					}
					return nil
				})
				if err != nil || members == 0 {
					b.Fatal(members, err)
				}
			}
			cpu.Report(b)
			b.ReportMetric(float64(cpu.Elapsed().Nanoseconds())/float64(b.N*records), "cpu-ns/record")
			b.ReportMetric(float64(len(data))/float64(records), "B/record")
		})
	}
}
