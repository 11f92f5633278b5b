package collectiveattrprocessor

import (
	"strconv"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/scale"
)

// BenchmarkScaleEvaluationRound measures one evaluation round by ranks
// (docs/sizing.md), in each mode: a job of 1 minute at 10 Hz (600 samples
// per rank) with a world all_reduce and a spike at it on every rank every
// 10 s. The first round, untimed, emits the spikes; the timed rounds
// evaluate the window again and emit nothing new, as the rounds of a
// running job mostly do.
func BenchmarkScaleEvaluationRound(b *testing.B) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		for _, ranks := range scale.Sizes() {
			b.Run("mode="+string(mode)+"/ranks="+strconv.Itoa(ranks), func(b *testing.B) {
				c := evaluationJob(b, mode, int64(ranks), 600)
				evaluationRound(b, c, "big")
				b.ReportAllocs()
				cpu := scale.StartCPU()
				for b.Loop() {
					evaluationRound(b, c, "big")
				}
				cpu.Report(b)
			})
		}
	}
}
