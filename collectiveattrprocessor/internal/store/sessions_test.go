package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/phase"
)

// phasePaths are the phase paths of results.
func phasePaths(results []attribution.Result) [][]string {
	var out [][]string
	for _, r := range results {
		if r.PhaseAttribution != nil {
			out = append(out, r.PhaseAttribution.Paths)
		}
	}
	return out
}

// TestProcessSessionsResolvePhases: samples and phase spans of one process
// (sessions from their resources' process) resolve their phases together,
// a phase span of the same rank filed under the job (a process that named
// none) does not, and a checkpoint keeps the phase spans' sessions.
func TestProcessSessionsResolvePhases(t *testing.T) {
	const proc = "node-a/100@2026-01-01T00:00:00Z"
	s := New(checkpointConfig())
	for r := range int64(2) {
		run := &ingest.SampleRun{JobID: "j", Session: proc, Rank: r, WorldSize: 2, Host: "node-a"}
		for i := range int64(200) {
			gap := int64(1 << 20)
			if i == 100 {
				gap = 3 << 30
			}
			run.Samples = append(run.Samples, ingest.SamplePoint{TimestampNs: i * sec / 10, DeviceUsed: 8<<30 + gap, AllocatorReserved: 8 << 30})
		}
		s.AddSampleRun(run, wall)
		s.AddRecord(markerRecord("j", r, 1, 10*sec-sec/20, 10*sec+sec/20), wall)
		for _, span := range []struct {
			session, name string
		}{{proc, "fwd"}, {"j", "eval"}} {
			s.AddRecord(&ingest.Record{Kind: ingest.KindPhaseSpan, JobID: "j", Rank: r, TimestampNs: 11 * sec,
				PhaseSpan: phase.Span{SessionID: span.session, Rank: r, ScopeID: "00000000000000a" + span.name[:1], Path: []string{"step", span.name},
					StartNs: 9 * sec, EndNs: 11 * sec, Sequence: 9 * sec}}, wall)
		}
	}
	job := s.Job("j")
	want := attributeJob(t, s, job)
	require.NotEmpty(t, want)
	assert.Equal(t, [][]string{{"step / fwd"}, {"step / fwd"}}, phasePaths(want))

	data := s.AppendCheckpoint(nil, job)
	restored := New(checkpointConfig())
	got, err := restored.Restore(data, wall)
	require.NoError(t, err)
	assert.Equal(t, want, attributeJob(t, restored, got))
	assert.Equal(t, data, restored.AppendCheckpoint(nil, got))
}
