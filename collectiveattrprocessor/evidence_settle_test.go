package collectiveattrprocessor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestEvidenceOnSettleStep streams a job with a persistent step on every
// rank (lazily connected NCCL buffers) a second of event time at a time,
// with an evaluation tick after each, in evidence mode with emit:
// on_settle. Each (rank, interval) leaves once, and what leaves is the
// batch result on the whole job: the step leaves once per rank, as kind
// persistent at its onset, although the all_gather whose first use raised
// the level spiked just before it (a transient result already emitted
// whose interval the step's overlaps), and never as a transient spike or
// again on the raised level.
func TestEvidenceOnSettleStep(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	c, err := jobsim.GenerateQualityCase("lazy_stepup", 2, shape, false)
	require.NoError(t, err)
	events := slices.Clone(c.Events)
	slices.SortStableFunc(events, func(a, b telemetry.Event) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) })
	var lines []string
	for i := range events {
		events[i].JobID = "settle"
		lines = append(lines, string(telemetry.AppendJSON(nil, &events[i])))
	}
	var batch []map[string]any
	for _, s := range evidenceBatch(t, lines, "medium") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		batch = append(batch, m)
	}
	steps := map[float64]float64{} // rank -> onset interval start of the batch's step
	for _, m := range batch {
		if m["kind"] == attribution.KindPersistent {
			steps[m["rank"].(float64)] = m["interval_start_ns"].(float64)
		}
	}
	require.NotEmpty(t, steps, "the batch result has the step")

	synctest.Test(t, func(t *testing.T) {
		cfg := streamingConfig(EmitOnSettle)
		cfg.Mode = ModeEvidence
		cfg.Phases = false
		cfg.JobIdleTimeout = time.Hour
		sink := new(consumertest.LogsSink)
		p := newTestLogsProcessor(t, cfg, nopSettings(), sink)
		require.NoError(t, p.Start(context.Background(), nil))
		// The job runs now on the bubble's clock (the converter refuses
		// event times far from the wall clock).
		shift := time.Now().UnixNano() - events[0].TimestampNs
		lines := make([]string, len(events))
		for i := range events {
			e := events[i]
			e.TimestampNs += shift
			lines[i] = string(telemetry.AppendJSON(nil, &e))
		}
		const s = int64(time.Second)
		for from := 0; from < len(events); {
			to := from
			for to < len(events) && events[to].TimestampNs < events[from].TimestampNs+s {
				to++
			}
			require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(lines[from:to])))
			from = to
			time.Sleep(time.Second)
			synctest.Wait()
		}
		require.NoError(t, p.Shutdown(context.Background()))

		results := resultLogs(t, sink)
		seen := map[string]bool{}
		for _, r := range results {
			k := intervalKey(r)
			assert.False(t, seen[k], "result %s emitted twice", k)
			seen[k] = true
		}
		// The same results as the batch on the whole job (interval starts
		// to the millisecond: the bodies were read as float64).
		key := func(rank, startNs float64, kind any) string {
			return fmt.Sprintf("%v/%d/%v", rank, int64(math.Round(startNs/1e6)), kind)
		}
		var want, got []string
		for _, m := range batch {
			want = append(want, key(m["rank"].(float64), m["interval_start_ns"].(float64), m["kind"]))
		}
		persistent := map[float64]int{}
		for _, r := range results {
			start := r["interval_start_ns"].(float64) - float64(shift)
			got = append(got, key(r["rank"].(float64), start, r["kind"]))
			if r["kind"] == attribution.KindPersistent {
				persistent[r["rank"].(float64)]++
				assert.InDelta(t, steps[r["rank"].(float64)], start, float64(s/2), "rank %v: the step at its onset", r["rank"])
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		assert.Equal(t, want, got)
		for rank := range steps {
			assert.Equal(t, 1, persistent[rank], "rank %v: the step is emitted once", rank)
		}
	})
}
