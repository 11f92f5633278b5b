package window_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/racebuild"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// TestStreamAttributesAsTheEngineReaders: a job streamed into the window
// attributes, in both modes, exactly as the engines' own readers of the
// same records (attribution.BuildInput, evidence.Builder), for every
// quality family with and without NCCL's accounting, and with every
// record sent twice (a file that holds each line twice: both count, as
// stormlog counts them).
func TestStreamAttributesAsTheEngineReaders(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{20 * time.Second, 25 * time.Second}
	refCfg, err := attribution.ResolveConfig("medium", nil)
	require.NoError(t, err)
	evCfg, err := evidence.ResolveConfig("medium", nil, nil)
	require.NoError(t, err)
	for _, fam := range streamFamilies() {
		for _, stats := range []bool{false, true} {
			for _, twice := range []bool{false, true} {
				if twice && !stats {
					continue // sent twice: once per family is enough
				}
				t.Run(fmt.Sprintf("%s/nccl_stats=%v/twice=%v", fam.Name, stats, twice), func(t *testing.T) {
					c, err := jobsim.GenerateQualityCase(fam.Name, 1, shape, stats)
					require.NoError(t, err)
					events := c.Events
					if twice {
						events = make([]telemetry.Event, 0, 2*len(c.Events))
						for _, e := range c.Events {
							events = append(events, e, e)
						}
					}

					want := attribution.Attribute(events, refCfg, nil)
					s := window.NewStream(window.ReferenceMode, false)
					s.AddEvents(events)
					var sc window.Scratch
					got := attribution.AttributeColumns(s.Job().Snapshot(&sc).Input, refCfg, nil)
					assert.Equal(t, want, got, "reference mode")

					b := evidence.NewBuilder()
					for i := range events {
						b.Add(&events[i])
					}
					wantEv := evidence.Attribute(b.Input(), evCfg, nil)
					s = window.NewStream(window.EvidenceMode, false)
					s.AddEvents(events)
					var es window.EvidenceScratch
					snap := s.Job().EvidenceSnapshot(&sc, &es)
					assert.Equal(t, wantEv, evidence.Attribute(&snap.Input, evCfg, nil), "evidence mode")
				})
			}
		}
	}
}

// streamFamilies are the quality families the stream is compared on:
// every one, or in a -race binary one of each kind (the engines are
// single-threaded: the race detector finds nothing more on the others and
// multiplies their time).
func streamFamilies() []jobsim.QualityFamily {
	if !racebuild.Enabled {
		return jobsim.QualityFamilies
	}
	var fams []jobsim.QualityFamily
	for _, name := range []string{"easy", "pipeline", "no_collective", "restart", "early_first_use"} {
		f, ok := jobsim.QualityFamilyByName(name)
		if !ok {
			panic("no quality family " + name)
		}
		fams = append(fams, f)
	}
	return fams
}
