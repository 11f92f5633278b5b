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
	return simulatedJob(b, ranks, jobsim.MembersOnEveryMarker)
}

// simulatedJob is what `gpujobsim -fast -stormlog` writes for a job of
// ranks ranks at 10 Hz, 4 096 rank-seconds long, its markers listing the
// members as lists says.
func simulatedJob(b *testing.B, ranks int, lists jobsim.MemberLists) []byte {
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.Duration, cfg.MemberLists = ranks, 4096*time.Second/time.Duration(ranks), lists
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
	for _, ranks := range memberListsSizes() {
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

// BenchmarkScaleStreamRanks streams, by ranks, a simulated job whose
// members are declared (the records' bytes about the same at every size),
// so what grows with the ranks is the decoder's per-rank state: each
// record is another rank's than the last, with its own session id and
// host. cpu-ns/record stays flat when a rank's strings cost the same
// among 2 048 ranks as among 64.
func BenchmarkScaleStreamRanks(b *testing.B) {
	for _, ranks := range memberListsSizes() {
		b.Run("ranks="+strconv.Itoa(ranks), func(b *testing.B) {
			data := simulatedJob(b, ranks, jobsim.MembersDeclared)
			records := bytes.Count(data, []byte{'\n'})
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := scale.StartCPU()
			for b.Loop() {
				n := 0
				err := telemetry.Stream(bytes.NewReader(data), func(chunk []telemetry.Event) error {
					n += len(chunk)
					return nil
				})
				if err != nil || n != records {
					b.Fatal(n, err)
				}
			}
			cpu.Report(b)
			b.ReportMetric(float64(cpu.Elapsed().Nanoseconds())/float64(b.N*records), "cpu-ns/record")
			b.ReportMetric(float64(len(data))/float64(records), "B/record")
		})
	}
}

// memberListsSizes are the scale sizes below memberListsMax, and it when
// the scale reaches it.
func memberListsSizes() []int {
	var sizes []int
	for _, n := range scale.Sizes() {
		if n < memberListsMax {
			sizes = append(sizes, n)
		}
	}
	if scale.Max() >= memberListsMax {
		sizes = append(sizes, memberListsMax)
	}
	return sizes
}
