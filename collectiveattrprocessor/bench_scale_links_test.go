package collectiveattrprocessor

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/scale"
)

// BenchmarkWorldSpikeLinks measures what a world-wide spike costs after
// its attribution, by members of the collective (= ranks): claiming its
// results (one per member, all matched to the one all_reduce every member
// has a marker span of), which finds the spans they link, under the
// core's lock, and building their result spans. ns/op is per spike.
func BenchmarkWorldSpikeLinks(b *testing.B) {
	for _, members := range scale.Sizes() {
		b.Run("members="+strconv.Itoa(members), func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = ModeEvidence
			p := newCoreLogs(b, cfg)
			c := p.core
			t0 := time.Now().Add(-time.Minute).UnixNano()
			now := time.Now()
			match := &attribution.CollectiveMatch{CommID: "world", Op: "all_reduce", Seq: 1, CommRanks: int64(members), SynchronizedCommRanks: int64(members)}
			c.mu.Lock()
			for r := range int64(members) {
				start := t0 + r*1000
				rec := &ingest.Record{
					Kind: ingest.KindMarker, JobID: "big", Rank: r, WorldSize: int64(members), TimestampNs: start,
					Marker:        ingest.SpanRef{TraceID: [16]byte{byte(r), byte(r >> 8), 1}, SpanID: [8]byte{byte(r), byte(r >> 8), 2}},
					MarkerTimesNs: []int64{start}, MarkerEndsNs: []int64{start + 20_000_000},
					MarkerIdentities: []evidence.Identity{{Valid: true, CommID: "world", Seq: 1, Op: "all_reduce", NRanks: int64(members)}},
				}
				if !c.store.AddRecord(rec, now) {
					b.Fatalf("marker of rank %d refused", r)
				}
				match.Members = append(match.Members, attribution.MemberMarker{Rank: r, StartNs: start, EndNs: start + 20_000_000, Synchronized: true})
			}
			job := c.store.Job("big")
			c.mu.Unlock()
			results := make([]attribution.Result, members)
			for r := range results {
				results[r] = attribution.Result{
					Rank: int64(r), Classification: "collective_confident", Confidence: 0.9,
					Mode: attribution.ModeEvidence, Kind: attribution.KindTransient, Collective: match,
					MarkerTimesNs: []int64{match.Members[r].StartNs},
				}
			}
			spike := int64(0)
			b.ReportAllocs()
			// The setup's garbage is collected before the meter starts:
			// a spike is charged for its own.
			runtime.GC()
			cpu := scale.StartCPU()
			for b.Loop() {
				// Each spike is a later interval of every rank: the
				// emitted memory lets it leave.
				spike++
				for r := range results {
					results[r].IntervalStartNs = spike * 1_000_000_000
					results[r].IntervalEndNs = uint64(spike*1_000_000_000 + 500_000_000)
				}
				c.mu.Lock()
				items := c.claimResults(job, results, true, nil)
				c.mu.Unlock()
				if len(items) != members {
					b.Fatalf("%d results claimed, want %d", len(items), members)
				}
				output.AppendTraces(ptrace.NewTraces(), items, c.ids)
			}
			cpu.Report(b)
		})
	}
}
