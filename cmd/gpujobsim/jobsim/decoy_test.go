package jobsim

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

func withDecoy(c *Config) { c.CotimedDecoys = 1; c.NCCLStats = true }

// A co-timed decoy sits on every reporting rank exactly where a collective spike would, on
// a step without one, and leaves the other injections as they are without it.
func TestCotimedDecoyPlacement(t *testing.T) {
	plain := newScenario(t, nil)
	s := newScenario(t, withDecoy)
	var decoys []Injection
	var others []Injection
	for _, in := range s.Injections {
		if in.Kind == KindCotimedDecoy {
			decoys = append(decoys, in)
		} else {
			others = append(others, in)
		}
	}
	require.Len(t, decoys, 1)
	d := decoys[0]
	require.Len(t, others, len(plain.Injections))
	for i, in := range others {
		p := plain.Injections[i]
		assert.Equal(t, []any{p.Kind, p.Step, p.Ranks, p.Start, p.End, p.PeakBytes}, []any{in.Kind, in.Step, in.Ranks, in.Start, in.End, in.PeakBytes})
		assert.NotEqual(t, d.Step, in.Step, "the decoy's step carries no other injection")
	}
	assert.Equal(t, AllReduce, d.Collective)
	assert.Len(t, d.Ranks, s.Config.Ranks, "every rank (the late one reports by then)")
	assert.Equal(t, attribution.CollectiveConfident, d.Expected, "the reference is fooled")
	for _, r := range d.Ranks {
		sp := d.perRank[r]
		call := s.collectiveOn(r, d.Step, collectiveIndex(AllReduce))
		assert.Equal(t, call.Start-spikeLead, sp.start)
		assert.Equal(t, call.End+spikeTrail, sp.end)
		mid := (sp.start + sp.end) / 2
		assert.Equal(t, s.CommMemoryAt(r, mid-time.Second), s.CommMemoryAt(r, mid), "NCCL's accounting does not hold it")
	}
}

func TestCotimedDecoySteps(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		s := newScenario(t, func(c *Config) { c.CotimedDecoys = n })
		steps := map[int]bool{}
		for _, in := range s.Injections {
			if in.Kind == KindCotimedDecoy {
				assert.False(t, steps[in.Step], "one decoy a step")
				steps[in.Step] = true
				assert.GreaterOrEqual(t, in.Step, s.Config.WarmupSteps)
				assert.Less(t, in.Step, s.Steps-1)
			}
		}
		assert.Len(t, steps, n)
	}
	_, err := NewScenario(func() Config { c := DefaultConfig(); c.CotimedDecoys = -1; return c }())
	assert.Error(t, err)
}

// What the demo shows on the simulator's stormlog output: the reference calls the decoy
// confident, and the evidence engine, with NCCL's accounting, does not claim it while it
// confirms every collective-caused injection.
func TestCotimedDecoyAttribution(t *testing.T) {
	s := newScenario(t, withDecoy)
	var buf bytes.Buffer
	_, err := s.Run(t.Context(), Options{Epoch: testEpoch, Stormlog: &buf})
	require.NoError(t, err)
	events, err := telemetry.ReadJSONL(&buf)
	require.NoError(t, err)
	truth := s.Truth(testEpoch)

	refCfg, err := attribution.ResolveConfig("medium", nil)
	require.NoError(t, err)
	reference := toResults(s, window.AttributeReference(events, refCfg, nil))
	v := Compare(truth, reference)
	assert.True(t, v.OK, "the reference mode finds what Expected says, the decoy as confident")

	evCfg, err := evidence.ResolveConfig("medium", nil, nil)
	require.NoError(t, err)
	ev := toResults(s, window.AttributeEvidence(events, evCfg, nil))
	c := CompareModes(truth, reference, ev)
	assert.True(t, c.Accounted)
	assert.Empty(t, c.Check())
	for _, row := range c.Rows {
		if row.Injection.Kind == KindCotimedDecoy {
			assert.Equal(t, attribution.CollectiveConfident, row.Reference.Class)
			assert.Empty(t, ranksAtLeastOf(row.Evidence.PerRank, attribution.CollectiveLikely))
			assert.True(t, row.Differs())
		}
	}
}

func toResults(s *Scenario, rs []attribution.Result) []Result {
	var out []Result
	for _, r := range rs {
		out = append(out, Result{JobID: s.Config.JobID, Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: r.EndNs(),
			Classification: r.Classification, Confidence: r.Confidence, Reasons: r.ReasonCodes, Kind: r.Kind,
			Accounted: r.NCCLAccountedBytes != nil})
	}
	return out
}
