package collectiveattrprocessor

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/quality"
	"github.com/collectiveattr/collectiveattr/internal/racebuild"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// TestEvidenceOnJobEndEqualsBatch feeds simulated jobs of every quality
// family, with and without NCCL's accounting records, through a logs
// processor in evidence mode with emit: on_job_end, and compares the
// emitted result log bodies (without job_id) with the CLI's batch result
// on the same records (streamed into one window.Stream, attributed by
// evidence.Attribute, serialised by attribution.AppendResultJSON; the
// streamed results are pinned by window's goldens, TestStreamGoldens). The
// window and the per-rank bound hold the whole job, as the contract's
// equality requires.
func TestEvidenceOnJobEndEqualsBatch(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	for _, fam := range equalityFamilies() {
		for _, stats := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nccl_stats=%v", fam.Name, stats), func(t *testing.T) {
				seed := int64(1)
				if fam.Name == "cumem_off" {
					seed = 3 // the variant whose records say nccl.cumem_enabled=false
				}
				c, err := jobsim.GenerateQualityCase(fam.Name, seed, shape, stats)
				require.NoError(t, err)
				var lines []string
				var buf []byte
				for i := range c.Events {
					e := c.Events[i]
					e.JobID = "evidence-" + fam.Name
					buf = telemetry.AppendJSON(buf[:0], &e)
					lines = append(lines, string(buf))
				}
				want := evidenceBatch(t, lines, "medium")
				requireComparable(t, fam.Name, want)
				if stats && fam.Name == "cumem_off" {
					// cuMem off: the accounting does not follow NCCL's buffers.
					assert.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, evidence.ReasonAccountingUntracked) }),
						"with untracked accounting some result says so")
				}
				if stats && !slices.Contains([]string{"no_collective", "sparse_quiet", "cumem_off"}, fam.Name) {
					assert.True(t, slices.ContainsFunc(want, func(s string) bool {
						return strings.Contains(s, `"nccl_accounted_bytes":`) && !strings.Contains(s, `"nccl_accounted_bytes":null`)
					}),
						"with accounting some result reads it")
				}
				if stats && fam.Name == "sparse" {
					// At 1–5 Hz some changes fall between two samples.
					assert.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, evidence.ReasonAccountingOnly) }),
						"some change only NCCL's reports saw")
					assert.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, evidence.ReasonAccountingMembersOnly) }),
						"some change only the members' reports show")
				}

				cfg := createDefaultConfig().(*Config)
				cfg.Mode = ModeEvidence
				cfg.Emit = EmitOnJobEnd
				cfg.Phases = false
				cfg.Window = eventSpan(t, lines) + time.Minute
				cfg.Limits.MaxEventsPerRank = len(lines)
				require.NoError(t, cfg.Validate())
				got := processorBodies(t, cfg, lines)
				slices.Sort(got)
				slices.Sort(want)
				assert.Equal(t, want, got)
			})
		}
	}
}

// evidenceBatch is the CLI's evidence-mode result on the records, one JSON
// text per result.
func evidenceBatch(t *testing.T, lines []string, preset string) []string {
	t.Helper()
	var out []string
	for _, r := range evidenceBatchResults(t, lines, preset) {
		out = append(out, string(attribution.AppendResultJSON(nil, &r, false)))
	}
	return out
}

// evidenceBatchResults is the CLI's evidence-mode result on the records.
func evidenceBatchResults(t *testing.T, lines []string, preset string) []attribution.Result {
	t.Helper()
	w := window.NewStream(window.EvidenceMode, false)
	err := telemetry.Stream(strings.NewReader(strings.Join(lines, "\n")), func(chunk []telemetry.Event) error {
		w.AddEvents(chunk)
		return nil
	})
	require.NoError(t, err)
	cfg, err := evidence.ResolveConfig(preset, nil, nil)
	require.NoError(t, err)
	var sc window.Scratch
	var es window.EvidenceScratch
	snap := w.Job().EvidenceSnapshot(&sc, &es)
	results := evidence.Attribute(&snap.Input, cfg, nil)
	for _, r := range results {
		require.Equal(t, attribution.ModeEvidence, r.Mode)
	}
	return results
}

// processorBodies runs the records through a logs processor of cfg and
// returns the result log bodies with their job_id member removed.
func processorBodies(t *testing.T, cfg *Config, lines []string) []string {
	t.Helper()
	sink := new(consumertest.LogsSink)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	require.NoError(t, p.Shutdown(context.Background()))
	all := sink.AllLogs()
	require.NotEmpty(t, all)
	assert.Equal(t, len(lines), all[0].LogRecordCount(), "the input passes through")
	var got []string
	for _, ld := range all[1:] {
		got = append(got, resultBodyTexts(ld)...)
	}
	return got
}

// loggedResultTexts is resultBodyTexts of every batch sink received, in
// order.
func loggedResultTexts(sink *consumertest.LogsSink) []string {
	var out []string
	for _, ld := range sink.AllLogs() {
		out = append(out, resultBodyTexts(ld)...)
	}
	return out
}

func resultBodyTexts(ld plog.Logs) []string {
	var out []string
	for i := range ld.ResourceLogs().Len() {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				body := []byte(lrs.At(k).Body().Str())
				if at := bytes.LastIndex(body, []byte(`,"job_id":`)); at >= 0 {
					body = append(body[:at:at], '}')
				}
				out = append(out, string(body))
			}
		}
	}
	return out
}

// requireComparable fails a family's equality test that would compare
// nothing: on the families whose collective episodes evidence mode finds
// today (all but no_collective and sparse_quiet, which have none, and the
// physics families of issue 31, judged by internal/quality) some result names
// its collective, so the comparison covers the collective identity.
func requireComparable(t *testing.T, family string, want []string) {
	t.Helper()
	if family == "no_collective" || family == "sparse_quiet" || slices.Contains(quality.PhysicsFamilies, family) {
		return
	}
	require.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, `"collective":{"comm_id":`) }),
		"some result matched a collective")
}

// raceFamilies are the quality families the CLI = processor equality tests
// compare in a -race binary: one of each kind (public, cadence, physics).
// The engines are single-threaded: the race detector finds nothing more on
// the others and multiplies their time; make test compares every family
// without it.
var raceFamilies = []string{"easy", "lazy_stepup", "pipeline", "no_collective", "sparse", "early_first_use", "restart", "creep"}

// equalityFamilies are the quality families the equality tests compare.
func equalityFamilies() []jobsim.QualityFamily {
	if !racebuild.Enabled {
		return jobsim.QualityFamilies
	}
	var fams []jobsim.QualityFamily
	for _, name := range raceFamilies {
		if f, ok := jobsim.QualityFamilyByName(name); ok {
			fams = append(fams, f)
		}
	}
	return fams
}

func TestRaceFamiliesExist(t *testing.T) {
	for _, name := range raceFamilies {
		_, ok := jobsim.QualityFamilyByName(name)
		require.True(t, ok, "quality family %q", name)
	}
}
