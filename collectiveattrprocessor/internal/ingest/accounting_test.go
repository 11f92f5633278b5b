package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// A point whose own or resource attributes say cuMem is off carries
// evidence.UntrackedBytes; one that says it is on, or says nothing, its value.
func TestConvertAccountingCumemOff(t *testing.T) {
	t0 := testNow.UnixNano() - 1_000_000_000
	tests := []struct {
		name     string
		resource map[string]any
		point    map[string]any
		want     int64
	}{
		{"says nothing", nil, nil, 1 << 30},
		{"on", nil, map[string]any{evidence.KeyCumemEnabled: true}, 1 << 30},
		{"off on the point", nil, map[string]any{evidence.KeyCumemEnabled: false}, evidence.UntrackedBytes},
		{"off on the resource", map[string]any{evidence.KeyCumemEnabled: false}, nil, evidence.UntrackedBytes},
		{"not a boolean", nil, map[string]any{evidence.KeyCumemEnabled: "false"}, 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := map[string]any{"job_id": "j", "rank": int64(1)}
			for k, v := range tt.resource {
				res[k] = v
			}
			attrs := map[string]any{evidence.KeyCommID: "0xab"}
			for k, v := range tt.point {
				attrs[k] = v
			}
			c, _ := newTestConverter(Config{Reads: EngineReads{Accounting: true}})
			var got []int64
			c.metrics.convertMetricsAccounting(gaugeBatch(res, gaugePoint{name: AccountingMetric, ts: t0, value: 1 << 30, attrs: attrs}),
				func(*SampleRun) {}, func(r *Record) { got = append(got, r.AccountingBytes) }, func(s Skip) { t.Errorf("skipped: %+v", s) })
			require.Len(t, got, 1)
			assert.Equal(t, tt.want, got[0])
		})
	}
}
