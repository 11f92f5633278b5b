package collectiveattrprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// benchEvidenceTraces is benchTraces with each NCCL span's collective
// identity (communicator, sequence number, op, size, communicator size).
func benchEvidenceTraces(startNs int64) (ptrace.Traces, int) {
	td, n := benchTraces(startNs)
	for _, rs := range td.ResourceSpans().All() {
		seq := startNs / 1e6
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			a := sp.Attributes()
			if _, ok := a.Get("nccl.comm"); !ok {
				continue
			}
			a.PutStr(evidence.KeyCommID, "0x7f3c")
			a.PutInt(evidence.KeySeq, seq)
			a.PutStr(evidence.KeyOp, "all_reduce")
			a.PutInt(evidence.KeyMessageBytes, 256<<20)
			a.PutInt(evidence.KeyCommNRanks, benchRanks)
			seq++
		}
	}
	return td, n
}

// evidenceTracesBench is tracesBench in evidence mode on spans that carry
// their collective identity.
var evidenceTracesBench = func() consumeBench[ptrace.Traces] {
	cb := tracesBench
	cb.batch = benchEvidenceTraces
	cb.config = func() *Config {
		cfg := benchConfig()
		cfg.Mode = ModeEvidence
		return cfg
	}
	return cb
}()

// BenchmarkConsumeTracesEvidence is BenchmarkConsumeTraces in evidence
// mode: each marker span is buffered as one marker interval with its
// interned collective and its span.
func BenchmarkConsumeTracesEvidence(b *testing.B) { evidenceTracesBench.run(b, false) }
