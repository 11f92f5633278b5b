package jobsim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Every NCCL span carries the collective identity of evidence-mode §2.1, and the same
// (comm, seq) names the same op on every rank.
func TestSpansCarryCollectiveIdentity(t *testing.T) {
	s := newScenario(t, func(c *Config) { c.Duration = 4 * time.Second; c.LateRanks = 0 })
	td := s.Traces(0, s.Config.Duration, testEpoch)
	type op struct {
		comm string
		seq  int64
	}
	opsByKey := map[op]map[string]bool{}
	spans := 0
	for _, rs := range td.ResourceSpans().All() {
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			if !strings.HasPrefix(sp.Name(), "nccl:") {
				continue
			}
			spans++
			a := sp.Attributes()
			get := func(k string) any {
				v, ok := a.Get(k)
				require.True(t, ok, "%s on %s", k, sp.Name())
				return v.AsRaw()
			}
			assert.Equal(t, strings.TrimPrefix(sp.Name(), "nccl:"), get(KeyOp))
			assert.Equal(t, s.CommID, get(KeyCommID))
			assert.EqualValues(t, 16, get(KeyCommNRanks))
			k := op{get(KeyCommID).(string), get(KeySeq).(int64)}
			if list, listed := a.Get(KeyCommRanks); k.seq == 0 {
				require.True(t, listed, "a rank's first marker declares the members")
				assert.Equal(t, 16, list.Slice().Len())
			} else {
				assert.False(t, listed, "seq %d: later markers leave the members off", k.seq)
			}
			_, hasPeer := a.Get(KeyPeer)
			assert.False(t, hasPeer, "collectives have no peer")
			assert.Greater(t, sp.EndTimestamp(), sp.StartTimestamp(), "a marker is an interval")
			if opsByKey[k] == nil {
				opsByKey[k] = map[string]bool{}
			}
			opsByKey[k][sp.Name()] = true
		}
	}
	assert.Equal(t, 16*2*5, spans)
	assert.Len(t, opsByKey, 2*5, "one (comm, seq) per op of a step, shared by the ranks")
	for k, names := range opsByKey {
		assert.Len(t, names, 1, "seq %d names one op", k.seq)
	}
}

// A stormlog launch record carries the identity and the duration; the end record stays
// a bare timestamp, so one op is one interval.
func TestStormlogMarkersCarryCollectiveIdentity(t *testing.T) {
	s := newScenario(t, func(c *Config) { c.Duration = 4 * time.Second; c.LateRanks = 0 })
	var buf bytes.Buffer
	require.NoError(t, s.WriteStormlog(&buf, 0, s.Config.Duration, testEpoch))
	events, err := telemetry.ReadJSONL(&buf)
	require.NoError(t, err)
	starts, ends := 0, 0
	for _, e := range events {
		if e.EventType != "collective" {
			continue
		}
		if strings.HasSuffix(e.Context, " end") {
			ends++
			assert.NotContains(t, e.Metadata, KeySeq)
			continue
		}
		starts++
		md := e.Metadata
		op := strings.TrimSuffix(strings.TrimPrefix(e.Context, "NCCL "), " start")
		assert.Equal(t, op, md[KeyOp])
		assert.Equal(t, s.CommID, md[KeyCommID])
		assert.Equal(t, json.Number("16"), md[KeyCommNRanks])
		seq, err := md[KeySeq].(json.Number).Int64()
		require.NoError(t, err)
		if seq == 0 {
			assert.Len(t, md[KeyCommRanks], 16, "a rank's first marker declares the members")
		} else {
			assert.NotContains(t, md, KeyCommRanks, "seq %d: later markers leave the members off", seq)
		}
		c := s.collectiveOn(int(e.Rank), int(seq)/len(stepCollectives), int(seq)%len(stepCollectives))
		assert.Equal(t, json.Number(jsonInt(int64(c.End-c.Start))), md[KeyDurationNs])
		assert.Equal(t, s.UnixNano(testEpoch, int(e.Rank), c.Start), e.TimestampNs)
	}
	assert.Equal(t, 16*2*5, starts)
	assert.Equal(t, starts, ends)
}

// A rank declares the members on its first marker (a late rank on its own first
// one) and again on its first marker ending in each later minute; with
// MembersOnEveryMarker every marker lists them. The declaring markers do not
// depend on how the run is cut into export batches.
func TestMarkersDeclareMembersOnFirstMarkerAndEveryMinute(t *testing.T) {
	const duration = 150 * time.Second
	declared := func(s *Scenario, batch time.Duration) map[int][]int64 {
		seqs := map[int][]int64{}
		for from := time.Duration(0); from < duration; from += batch {
			td := s.Traces(from, min(from+batch, duration), testEpoch)
			for _, rs := range td.ResourceSpans().All() {
				for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
					a := sp.Attributes()
					if _, ok := a.Get(KeySeq); !ok {
						continue
					}
					nranks, ok := a.Get(KeyCommNRanks)
					require.True(t, ok, "every marker keeps %s", KeyCommNRanks)
					assert.EqualValues(t, 16, nranks.Int())
					if _, ok := a.Get(KeyCommRanks); ok {
						rank, _ := rs.Resource().Attributes().Get("training.rank")
						seq, _ := a.Get(KeySeq)
						seqs[int(rank.Int())] = append(seqs[int(rank.Int())], seq.Int())
					}
				}
			}
		}
		return seqs
	}
	s := newScenario(t, func(c *Config) { c.Duration = duration; c.LateRanks = 1; c.LateBy = 5 * time.Second })
	byRank := declared(s, duration)
	require.Len(t, byRank, 16)
	perStep := int64(len(stepCollectives))
	// Steps of 2 s, five markers each: a rank's first marker, then the first
	// ending a minute (30 steps) and two minutes after that one.
	assert.Equal(t, []int64{0, 30 * perStep, 60 * perStep}, byRank[0])
	late := s.firstStep(15)
	assert.Equal(t, 3, late, "rank 15 starts at 5 s: its first step is the one starting at 6 s")
	assert.Equal(t, []int64{int64(late) * perStep, int64(late+30) * perStep, int64(late+60) * perStep}, byRank[15])
	assert.Equal(t, byRank, declared(s, time.Second), "export batches of 1 s declare on the same markers")

	every := newScenario(t, func(c *Config) { c.Duration = duration; c.LateRanks = 0; c.MemberLists = MembersOnEveryMarker })
	for rank, seqs := range declared(every, duration) {
		assert.Len(t, seqs, s.Steps*int(perStep), "rank %d lists the members on every marker", rank)
	}
}
