package output

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/scale"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func BenchmarkExpPut(b *testing.B) {
	it := evidenceItems()[0]
	spans := ptrace.NewSpanSlice()
	b.ReportAllocs()
	n := 0
	cpu := scale.StartCPU()
	defer cpu.Report(b)
	for b.Loop() {
		if n++; n%4096 == 0 {
			spans = ptrace.NewSpanSlice()
		}
		putResultAttributes(spans.AppendEmpty().Attributes(), &it)
	}
}

func BenchmarkExpCopy(b *testing.B) {
	it := evidenceItems()[0]
	tmpl := pcommon.NewMap()
	putResultAttributes(tmpl, &it)
	spans := ptrace.NewSpanSlice()
	vals := make([]pcommon.Value, 0, 32)
	b.ReportAllocs()
	n := 0
	cpu := scale.StartCPU()
	defer cpu.Report(b)
	for b.Loop() {
		if n++; n%4096 == 0 {
			spans = ptrace.NewSpanSlice()
		}
		m := spans.AppendEmpty().Attributes()
		tmpl.CopyTo(m)
		vals = vals[:0]
		for _, v := range m.All() {
			vals = append(vals, v)
		}
		vals[0].SetInt(it.Result.Rank)
		vals[1].SetInt(it.Result.Evidence.ExpectedWorldSize)
		vals[3].SetDouble(it.Result.Confidence)
		vals[6].SetInt(it.Result.Evidence.MarkerHits)
		vals[9].SetInt(it.Result.Evidence.PeakGapBytes)
		vals[11].SetDouble(it.Result.Evidence.RobustZscore)
		vals[14].SetInt(it.Result.ExcessBytes)
	}
}
