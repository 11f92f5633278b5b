package jobsim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

type markerKey struct {
	rank int
	comm string
	seq  int64
}

type seenMarker struct {
	t          int64
	op         string
	nranks     int64
	ranks      []any
	peer       int64
	hasPeer    bool
	durationNs int64
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v is a json.Number", v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}

func markersOf(t *testing.T, events []telemetry.Event) map[markerKey]seenMarker {
	t.Helper()
	out := map[markerKey]seenMarker{}
	for _, e := range events {
		if !strings.HasPrefix(e.EventType, "nccl:") {
			continue
		}
		md := e.Metadata
		k := markerKey{int(e.Rank), md[KeyCommID].(string), num(t, md[KeySeq])}
		_, dup := out[k]
		require.False(t, dup, "one marker per (rank, comm, seq): %+v", k)
		m := seenMarker{t: e.TimestampNs, op: md[KeyOp].(string), nranks: num(t, md[KeyCommNRanks]), durationNs: num(t, md[KeyDurationNs])}
		assert.Equal(t, "nccl:"+m.op, e.EventType)
		if r, ok := md[KeyCommRanks]; ok {
			m.ranks = r.([]any)
		}
		if p, ok := md[KeyPeer]; ok {
			m.peer, m.hasPeer = num(t, p), true
		}
		out[k] = m
	}
	return out
}

// Every family on every named shape: the truth is consistent with the events it
// describes (episodes tied to a marker of their rank with the same identity, inside the
// rank's samples), and the family's physics holds.
func TestQualityFamiliesTruth(t *testing.T) {
	for _, shapeName := range QualityShapeNames() {
		shape, ok := QualityShapeByName(shapeName)
		require.True(t, ok)
		require.Equal(t, shapeName == "wide", shape.CommRanksOnMarkers, "one shape lists the members on its markers")
		for _, fam := range QualityFamilies {
			t.Run(shapeName+"/"+fam.Name, func(t *testing.T) {
				c, err := GenerateQualityCase(fam.Name, 2, shape, false)
				require.NoError(t, err)
				tr := c.Truth
				if adjust, ok := familyShapes[fam.Name]; ok {
					shape = adjust(shape)
				}
				assert.Equal(t, shape.Ranks, tr.WorldSize)
				assert.Len(t, tr.Ranks, shape.Ranks)
				markers := markersOf(t, c.Events)
				for k, m := range markers {
					var comm QualityComm
					for _, cm := range tr.Comms {
						if cm.ID == k.comm {
							comm = cm
						}
					}
					require.NotEmpty(t, comm.Ranks, "marker comm %s is in the truth", k.comm)
					assert.Contains(t, comm.Ranks, k.rank, "a marker only on a member")
					assert.EqualValues(t, comm.NRanks, m.nranks)
					if shape.CommRanksOnMarkers {
						assert.Len(t, m.ranks, comm.NRanks)
					} else {
						assert.Nil(t, m.ranks)
					}
					if m.op == "send" || m.op == "recv" {
						require.True(t, m.hasPeer)
						assert.Contains(t, comm.Ranks, int(m.peer))
						assert.NotEqual(t, k.rank, int(m.peer))
					}
					assert.Positive(t, m.durationNs)
				}
				for _, e := range slices.Concat(tr.Collective, tr.Decoys) {
					info := tr.Ranks[json.Number(jsonInt(int64(e.Rank))).String()]
					// Within a sampling interval of the rank's samples (polled ranks
					// are sampled every few seconds).
					slack := max(int64(time.Second), int64(float64(time.Second)/info.SamplingHz))
					assert.GreaterOrEqual(t, e.StartNs, info.FirstSampleNs-slack)
					assert.LessOrEqual(t, e.EndNs, info.LastSampleNs+slack)
					assert.Less(t, e.StartNs, e.EndNs)
					if e.Seq == nil {
						if !slices.Contains(LevelChangeDecoyKinds, e.Kind) {
							assert.Equal(t, 1, e.RanksInEpisode, "an untied episode is a single-rank decoy or another process's level")
						}
						continue
					}
					m, ok := markers[markerKey{e.Rank, e.CommID, *e.Seq}]
					require.True(t, ok, "episode %s on rank %d has its collective's marker", e.Episode, e.Rank)
					lead := e.StartNs - m.t
					if e.Kind == KindPersistentCommAbort {
						assert.Equal(t, m.t+m.durationNs, e.StartNs, "the abort frees the buffers at the end of the op the survivor hung in")
						continue
					}
					if e.Kind == KindDDPDecoy || e.Kind == KindRecomputeWorkspace {
						assert.True(t, lead >= -40*msNs && lead <= 60*msNs, "a co-timed decoy starts around the launch: %s", time.Duration(lead))
					} else {
						assert.True(t, lead >= 0 && lead <= 15*msNs, "a collective episode starts at the launch: %s", time.Duration(lead))
						if !e.Persistent {
							assert.GreaterOrEqual(t, e.EndNs, m.t+m.durationNs, "and lasts the op")
						}
					}
				}
				checkFamilyPhysics(t, fam.Name, c, markers)
			})
		}
	}
}

func checkFamilyPhysics(t *testing.T, family string, c *QualityCase, markers map[markerKey]seenMarker) {
	tr := c.Truth
	byEpisode := map[string][]QualityEpisode{}
	for _, e := range slices.Concat(tr.Collective, tr.Decoys) {
		byEpisode[e.Episode] = append(byEpisode[e.Episode], e)
	}
	kinds := map[string]int{}
	for _, e := range tr.Collective {
		kinds[e.Kind]++
		assert.Len(t, byEpisode[e.Episode], e.RanksInEpisode, "every rank of the episode is listed")
	}
	switch family {
	case "no_collective":
		assert.Empty(t, tr.Collective)
		assert.Greater(t, len(tr.Decoys), tr.WorldSize*3, "co-timed decoys on every rank")
	case "lazy_stepup":
		steps := 0
		for _, e := range tr.Collective {
			if !e.Persistent {
				continue
			}
			steps++
			assert.Equal(t, e.StartNs+int64(PersistentRecallWindow), e.RecallEndNs)
			assert.Equal(t, "all_gather", e.Op)
			for k, m := range markers {
				if k.rank == e.Rank && m.op == "all_gather" {
					assert.GreaterOrEqual(t, k.seq, *e.Seq, "the step is at the first all_gather")
				}
			}
		}
		assert.Equal(t, tr.WorldSize, steps, "one step per rank")
	case "subset":
		assert.Equal(t, len(tr.Collective), kinds[KindTransientTPAllReduce])
		g := tr.Params["tp_group_size"].(int)
		for _, e := range tr.Collective {
			assert.Equal(t, g, e.RanksInEpisode)
			assert.Equal(t, g, tr.Comms[e.Comm].NRanks)
		}
	case "pipeline":
		assert.Equal(t, len(tr.Collective), kinds[KindTransientP2P])
		for _, e := range tr.Collective {
			assert.Equal(t, 2, e.RanksInEpisode)
			m := markers[markerKey{e.Rank, e.CommID, *e.Seq}]
			assert.Contains(t, []string{"send", "recv"}, m.op)
		}
	case "skew":
		offsets := map[int64]bool{}
		for _, r := range tr.Ranks {
			offsets[r.ClockOffsetNs] = true
		}
		assert.Len(t, offsets, tr.Hosts, "every host its own clock")
	case "noisy":
		var hz []float64
		for _, r := range tr.Ranks {
			hz = append(hz, r.SamplingHz)
		}
		assert.Greater(t, slices.Max(hz)/slices.Min(hz), 1.5, "sampling rates differ per rank")
	case "restart", "small_footprint", "other_tenant", "host_polling", "parallel_3d":
		checkPhysicsFamily(t, family, c, kinds)
	case "drift":
		for _, r := range tr.Ranks {
			if r.ClockOffsetNs != 0 {
				assert.NotZero(t, r.ClockDriftPPM, "every host but the first drifts")
			}
		}
		assert.Equal(t, len(tr.Collective), kinds[KindTransientAllReduce])
	case "sparse", "sparse_quiet":
		iv := tr.NCCLStats.IntervalNs
		assert.True(t, iv >= 100*msNs && iv <= secNs, "accounting every 100 ms-1 s: %d", iv)
		for _, r := range tr.Ranks {
			assert.True(t, r.SamplingHz >= 1 && r.SamplingHz <= 5, "1-5 Hz: %v", r.SamplingHz)
		}
		if family == "sparse_quiet" {
			assert.Empty(t, tr.Collective)
		}
	case "early_first_use":
		steps := map[int]int{}
		for _, e := range tr.Collective {
			if !e.Persistent {
				assert.Equal(t, KindTransientAllReduce, e.Kind)
				continue
			}
			steps[e.Rank]++
			assert.Equal(t, int64(0), *e.Seq, "a step at the communicator's first use")
			info := tr.Ranks[json.Number(jsonInt(int64(e.Rank))).String()]
			assert.Less(t, e.StartNs-info.FirstSampleNs, 6*int64(time.Second), "in the first seconds of the rank's data")
		}
		assert.Len(t, steps, tr.WorldSize)
		for r, n := range steps {
			assert.Equal(t, 2, n, "a shard and a replica step on rank %d", r)
		}
	case "cumem_off":
		assert.Equal(t, tr.WorldSize, kinds[KindPersistentStepUp])
	case "split_shared":
		assert.Positive(t, kinds[KindTransientAllReduce])
		assert.Positive(t, kinds[KindTransientTPAllReduce])
	default:
		assert.Equal(t, len(tr.Collective), kinds[KindTransientAllReduce])
	}
	if family == "ddp_decoy" {
		assert.Positive(t, tr.Params["decoy_steps"])
	}
}

// NCCL's accounting only adds records: every other event is the same, and the
// accounting holds the baseline plus exactly the true episodes active on that comm.
func TestQualityNCCLStats(t *testing.T) {
	shape := DefaultQualityShape()
	without, err := GenerateQualityCase("lazy_stepup", 1, shape, false)
	require.NoError(t, err)
	with, err := GenerateQualityCase("lazy_stepup", 1, shape, true)
	require.NoError(t, err)
	var rest []telemetry.Event
	stats := map[int][]telemetry.Event{}
	for _, e := range with.Events {
		if e.EventType == CommMemoryStatsEventType {
			assert.False(t, e.HasContext)
			stats[int(e.Rank)] = append(stats[int(e.Rank)], e)
			continue
		}
		rest = append(rest, e)
	}
	assert.Equal(t, without.Events, rest)
	assert.Equal(t, with.Truth.NCCLStats.Records, len(with.Events)-len(without.Events))
	assert.Len(t, stats, shape.Ranks)

	idOf := map[string]string{}
	for name, c := range with.Truth.Comms {
		idOf[c.ID] = name
	}
	checked := 0
	for r, recs := range stats {
		info := with.Truth.Ranks[json.Number(jsonInt(int64(r))).String()]
		for _, e := range recs {
			comm := idOf[e.Metadata[KeyCommID].(string)]
			want := info.CommBaselineBytes[comm]
			for _, ep := range with.Truth.Collective {
				if ep.Rank == r && ep.Comm == comm && ep.StartNs <= e.TimestampNs && (ep.Persistent || e.TimestampNs < ep.EndNs) {
					want += ep.Bytes
					checked++
				}
			}
			assert.Equal(t, want, num(t, e.Metadata[KeyCommMemoryTotal]), "rank %d comm %s at %d", r, comm, e.TimestampNs)
		}
		var base int64
		for _, b := range info.CommBaselineBytes {
			base += b
		}
		assert.LessOrEqual(t, base, info.BaselineHiddenBytes*6/10, "NCCL's share is part of the baseline")
	}
	assert.Positive(t, checked, "some records fall inside true episodes")
}

func TestQualityCaseIsDeterministic(t *testing.T) {
	a, err := GenerateQualityCase("ddp_decoy", 4, DefaultQualityShape(), true)
	require.NoError(t, err)
	b, err := GenerateQualityCase("ddp_decoy", 4, DefaultQualityShape(), true)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, err := GenerateQualityCase("ddp_decoy", 5, DefaultQualityShape(), true)
	require.NoError(t, err)
	assert.NotEqual(t, a.Truth.Collective, c.Truth.Collective)
}

func TestGenerateQualityCaseRejects(t *testing.T) {
	_, err := GenerateQualityCase("nope", 1, DefaultQualityShape(), false)
	assert.ErrorContains(t, err, "unknown quality family")
	bad := DefaultQualityShape()
	bad.Ranks, bad.SampleHz = 1, 0
	_, err = GenerateQualityCase("easy", 1, bad, false)
	assert.ErrorContains(t, err, "ranks must be")
	assert.ErrorContains(t, err, "sample rate")
}

// A written case reads back: every event through the strict decoder as it was built,
// the truth as it was.
func TestWriteQualityCase(t *testing.T) {
	c, err := GenerateQualityCase("pipeline", 1, DefaultQualityShape(), true)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteQualityCase(dir, c))
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	events, err := telemetry.ReadJSONL(f)
	require.NoError(t, err)
	require.Len(t, events, len(c.Events))
	for i := range events {
		if !assert.Equal(t, c.Events[i], events[i], "event %d", i) {
			break
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	require.NoError(t, err)
	var back QualityTruth
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, c.Truth.Collective, back.Collective)
	assert.Equal(t, c.Truth.Decoys, back.Decoys)
	assert.Equal(t, c.Truth.Ranks, back.Ranks)
	assert.Equal(t, c.Truth.Comms, back.Comms)
}
