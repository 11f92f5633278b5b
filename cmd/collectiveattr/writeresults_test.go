package main

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// manyResults are n evidence-mode results of a world collective of ranks
// members, one a rank, as a world-wide spike gives.
func manyResults(n, ranks int) []attribution.Result {
	accounted, gapRatio := int64(1<<28), 0.022781
	match := &attribution.CollectiveMatch{CommID: "70f87e153d7cb89c", Op: "reduce_scatter", CommRanks: int64(ranks), SynchronizedCommRanks: int64(ranks - 1)}
	out := make([]attribution.Result, n)
	for i := range out {
		out[i] = attribution.Result{
			Rank: int64(i % ranks), IntervalStartNs: 1767225601115298622 + int64(i), IntervalEndNs: 1767225601355298622,
			Classification: "collective_likely", Confidence: 0.78,
			ReasonCodes: []string{"collective_marker_overlap", "cotimed_without_accounting", "excess_over_baseline", "member_synchrony"},
			Evidence:    attribution.Evidence{MarkerHits: 2, SynchronizedRanks: int64(ranks - 1), ExpectedWorldSize: int64(ranks), SynchronyRatio: 1, PeakGapBytes: 1948254208, PeakGapRatio: &gapRatio, RobustZscore: 665},
			Mode:        attribution.ModeEvidence, Kind: "transient", ExcessBytes: 1394606080,
			Collective: match, NCCLAccountedBytes: &accounted,
		}
	}
	return out
}

// BenchmarkWriteResults writes the results of a world-wide spike by ranks
// (one result a rank): the CLI's output, megabytes at thousands of ranks.
// ns/result stays flat when the output costs its bytes and no more.
func BenchmarkWriteResults(b *testing.B) {
	for _, ranks := range []int{64, 256, 1024, 2048, 16384} {
		b.Run("results="+strconv.Itoa(ranks), func(b *testing.B) {
			results := manyResults(ranks, ranks)
			var size bytes.Buffer
			if writeResults(results, false, &size, io.Discard) != exitOK {
				b.Fatal("write failed")
			}
			b.SetBytes(int64(size.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if writeResults(results, false, io.Discard, io.Discard) != exitOK {
					b.Fatal("write failed")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ranks), "ns/result")
		})
	}
}

// TestWriteResultsInPieces: results written a piece at a time are the one
// JSON array AppendResultsJSON makes, at sizes below, at and across the
// piece, and a writer that fails stops the output with an error.
func TestWriteResultsInPieces(t *testing.T) {
	for _, n := range []int{0, 1, 2, 40, 41, 2048} {
		results := manyResults(n, 64)
		var got bytes.Buffer
		if code := writeResults(results, false, &got, io.Discard); code != exitOK {
			t.Fatalf("%d results: exit %d", n, code)
		}
		want := append(attribution.AppendResultsJSON(nil, results, false), '\n')
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d results: %d bytes, want %d", n, got.Len(), len(want))
		}
	}
	var stderr bytes.Buffer
	if code := writeResults(manyResults(2048, 64), false, failingWriter{}, &stderr); code != exitInput || stderr.Len() == 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
