package telemetry_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/internal/scale"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// memberListsMax is the largest job BenchmarkScaleStreamMemberLists runs:
// with the members on every marker its input is R² list entries per
// collective.
const memberListsMax = 2048

// memberListsJob is what `gpujobsim -fast -member-lists every -stormlog`
// writes for a job of ranks ranks at 10 Hz, 4 096 rank-seconds long (2 s
// at 2 048 ranks, 64 s at 64: about as many records at every size): every
// collective marker lists the communicator's members, and a collective's
// markers lie apart, between the other ranks' samples.
func memberListsJob(b *testing.B, ranks int) []byte {
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.Duration, cfg.MemberLists = ranks, 4096*time.Second/time.Duration(ranks), jobsim.MembersOnEveryMarker
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	opts := jobsim.Options{Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Stormlog: &buf}
	if _, err := s.Run(context.Background(), opts); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkScaleStreamMemberLists streams, by ranks, a simulated job whose
// markers all list the communicator's members (as NCCL instrumentation
// without collectiveattr_torch writes them) and reads every top-level
// metadata member of each record, as evidence mode's record readers do.
// The list bytes per record grow with the ranks; cpu-ns/record stays flat
// when a list costs no more than its bytes' passage through memory.
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
			data := memberListsJob(b, ranks)
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
