package inspector

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/internal/cpuclock"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkParse parses one record of each layout, beside the decode of one
// typical stormlog sample record (telemetry.Decoder), so that the ratio is
// taken in the same run.
func BenchmarkParse(b *testing.B) {
	lines := specExamples(b)
	verbose := lines[1]
	// The verbose example has one channel; 16 are common on H100 nodes.
	var channels []string
	for range 16 {
		channels = append(channels, `{"channel_id":0,"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}`)
	}
	verbose16 := []byte(strings.ReplaceAll(string(verbose),
		`[{"channel_id":0,"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}]`,
		"["+strings.Join(channels, ",")+"]"))
	for _, bc := range []struct {
		name string
		line []byte
	}{{"default", lines[0]}, {"verbose", verbose}, {"verbose_16_channels", verbose16}, {"p2p_verbose", lines[2]}} {
		b.Run("inspector_"+bc.name, func(b *testing.B) {
			var p Parser
			b.SetBytes(int64(len(bc.line)))
			// CPU time of this thread: other processes' load does not count.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(bc.line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("stormlog_sample", func(b *testing.B) {
		data := eventgen.JSONL(eventgen.Spec{Ranks: 1, Samples: 1, Seed: 1})
		var d telemetry.Decoder
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseVsStormlog alternates short runs of an Inspector parse and
// a stormlog sample decode, so that both see the same machine load (a
// shared machine's slow spells hit whole sub-benchmarks otherwise), and
// reports each one's ns per record and their ratio.
func BenchmarkParseVsStormlog(b *testing.B) {
	lines := specExamples(b)
	stormlog := eventgen.JSONL(eventgen.Spec{Ranks: 1, Samples: 1, Seed: 1})
	for _, bc := range []struct {
		name string
		line []byte
	}{{"default", lines[0]}, {"verbose", lines[1]}} {
		b.Run(bc.name, func(b *testing.B) {
			const chunk = 200
			var (
				p               Parser
				d               telemetry.Decoder
				inspNs, stormNs time.Duration
			)
			b.ReportAllocs()
			for b.Loop() {
				t0 := cpuclock.Thread()
				for range chunk {
					if _, err := p.Parse(bc.line); err != nil {
						b.Fatal(err)
					}
				}
				t1 := cpuclock.Thread()
				for range chunk {
					if _, err := d.Decode(stormlog); err != nil {
						b.Fatal(err)
					}
				}
				inspNs += t1 - t0
				stormNs += cpuclock.Thread() - t1
			}
			n := float64(b.N * chunk)
			b.ReportMetric(float64(inspNs.Nanoseconds())/n, "inspector-ns/record")
			b.ReportMetric(float64(stormNs.Nanoseconds())/n, "stormlog-ns/record")
			b.ReportMetric(float64(inspNs)/float64(stormNs), "inspector/stormlog")
		})
	}
}

// BenchmarkJoinAndConvert is the per-record work after the parse: the
// (host, pid) join and the marker events of each mode.
func BenchmarkJoinAndConvert(b *testing.B) {
	op, err := Parse(specExamples(b)[1])
	if err != nil {
		b.Fatal(err)
	}
	j := NewJoiner(time.Minute, 0, nil)
	for pid := range int64(64) {
		j.Learn(op.Host, op.PID+pid, Owner{JobID: "job", Rank: pid, WorldSize: 64})
	}
	for _, mode := range []struct {
		name    string
		markers MarkerFunc
	}{{"reference", ReferenceMarkers}, {"evidence", EvidenceMarker}} {
		b.Run(mode.name, func(b *testing.B) {
			events := make([]telemetry.Event, 0, 2)
			b.ReportAllocs()
			for b.Loop() {
				owner, err := j.Join(op.Host, op.PID)
				if err != nil {
					b.Fatal(err)
				}
				events = mode.markers(events[:0], &Joined{Op: &op, Owner: owner})
			}
		})
	}
}
