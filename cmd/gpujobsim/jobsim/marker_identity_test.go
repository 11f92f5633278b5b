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
			ranks, ok := get(KeyCommRanks).([]any)
			require.True(t, ok)
			assert.Len(t, ranks, 16)
			_, hasPeer := a.Get(KeyPeer)
			assert.False(t, hasPeer, "collectives have no peer")
			assert.Greater(t, sp.EndTimestamp(), sp.StartTimestamp(), "a marker is an interval")
			k := op{get(KeyCommID).(string), get(KeySeq).(int64)}
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
		assert.Len(t, md[KeyCommRanks], 16)
		seq, err := md[KeySeq].(json.Number).Int64()
		require.NoError(t, err)
		c := s.collectiveOn(int(e.Rank), int(seq)/len(stepCollectives), int(seq)%len(stepCollectives))
		assert.Equal(t, json.Number(jsonInt(int64(c.End-c.Start))), md[KeyDurationNs])
		assert.Equal(t, s.UnixNano(testEpoch, int(e.Rank), c.Start), e.TimestampNs)
	}
	assert.Equal(t, 16*2*5, starts)
	assert.Equal(t, starts, ends)
}
