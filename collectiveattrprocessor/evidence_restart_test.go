package collectiveattrprocessor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestEvidenceRestartEqualsUninterrupted: in evidence mode, a processor
// that crashes mid-job after a checkpoint and restarts on the same storage
// emits at the job's end exactly the results of one that ran through
// (marker intervals with their collectives, NCCL's accounting and the
// collectives table came back from the checkpoint), for a step at a
// communicator's first use, subgroup collectives and send/recv pairs, with
// and without accounting.
func TestEvidenceRestartEqualsUninterrupted(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	for _, fam := range []string{"lazy_stepup", "subset", "pipeline", "restart"} {
		for _, stats := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nccl_stats=%v", fam, stats), func(t *testing.T) {
				c, err := jobsim.GenerateQualityCase(fam, 1, shape, stats)
				require.NoError(t, err)
				var lines []string
				var buf []byte
				for i := range c.Events {
					e := c.Events[i]
					e.JobID = "restart-" + fam
					buf = telemetry.AppendJSON(buf[:0], &e)
					lines = append(lines, string(buf))
				}
				cfg := createDefaultConfig().(*Config)
				cfg.Mode = ModeEvidence
				cfg.Emit = EmitOnJobEnd
				cfg.Phases = false
				cfg.Window = eventSpan(t, lines) + time.Minute
				cfg.Limits.MaxEventsPerRank = len(lines)
				cfg.JobIdleTimeout = time.Second
				require.NoError(t, cfg.Validate())
				want := processorBodies(t, cfg, lines)
				require.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, `"collective":{"comm_id":`) }),
					"some result matched a collective")
				slices.Sort(want)

				cfg.Storage = &storageID
				require.NoError(t, cfg.Validate())
				st := &memStorage{values: map[string][]byte{}}
				now := time.Now()
				clk := defaultClock()
				clk.now = func() time.Time { return now }
				half := len(lines) / 2

				before, beforeSink := startEvidenceWithStorage(t, cfg, clk, st)
				require.NoError(t, before.ConsumeLogs(context.Background(), stormlogLogs(lines[:half])))
				before.checkpointNow()
				before.crash()
				require.Len(t, beforeSink.AllLogs(), 1, "nothing but the input left before the crash")

				after, afterSink := startEvidenceWithStorage(t, cfg, clk, st)
				require.Equal(t, 1, jobsTracked(after.core), "the job is restored")
				require.NoError(t, after.ConsumeLogs(context.Background(), stormlogLogs(lines[half:])))
				now = now.Add(cfg.JobIdleTimeout + time.Second) // the job ends
				require.NoError(t, after.core.evaluate(context.Background(), false))
				require.NoError(t, after.Shutdown(context.Background()))
				all := afterSink.AllLogs()
				require.NotEmpty(t, all)
				var got []string
				for _, ld := range all[1:] {
					got = append(got, resultBodyTexts(ld)...)
				}
				slices.Sort(got)
				assert.Equal(t, want, got)
			})
		}
	}
}

// startEvidenceWithStorage starts a logs processor on clk and st.
func startEvidenceWithStorage(t *testing.T, cfg *Config, clk clock, st *memStorage) (*testLogs, *consumertest.LogsSink) {
	t.Helper()
	sink := new(consumertest.LogsSink)
	f := newFactory(clk)
	p, err := f.processorFactory().CreateLogs(context.Background(), nopSettings(), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), storageHost{exts: map[component.ID]component.Component{storageID: st}}))
	return &testLogs{Logs: p, core: f.cores[cfg]}, sink
}
