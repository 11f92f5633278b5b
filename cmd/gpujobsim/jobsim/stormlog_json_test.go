package jobsim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every stormlog line is what encoding/json's Encoder writes for the same
// record: read back (numbers as json.Number) and encoded again, it is the
// same bytes. The job has every kind of record: samples, NCCL accounting,
// collective launches with and without the member list, ends, phase
// boundaries; its ids have characters JSON escapes.
func TestStormlogLinesAreEncodingJSONs(t *testing.T) {
	for i, job := range []string{"llm-pretrain", `job <"a&b"> \`, "jöb\u2028"} {
		s := newScenario(t, func(c *Config) {
			c.Duration = 6 * time.Second
			c.NCCLStats = true
			c.MemberLists = MemberLists(i % 2)
			c.JobID = job
		})
		var out bytes.Buffer
		require.NoError(t, s.WriteStormlog(&out, 0, s.Config.Duration, testEpoch))
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<20)
		lines := 0
		for sc.Scan() {
			lines++
			line := append(sc.Bytes(), '\n')
			var ev stormlogEvent
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&ev))
			var want bytes.Buffer
			require.NoError(t, json.NewEncoder(&want).Encode(&ev))
			require.Equal(t, want.String(), string(line))
		}
		require.NoError(t, sc.Err())
		assert.Greater(t, lines, 16*60)
	}
}

// appendStormlogJSON writes the Go values the simulator builds as
// encoding/json does, and declines a value of a type it does not know.
func TestAppendStormlogJSON(t *testing.T) {
	ctx := "Phase entered: train / forward"
	ev := stormlogEvent{
		SchemaVersion: 3, SessionID: "s", TimestampNs: -5, EventType: "phase_enter", Rank: 7, WorldSize: 16, Context: &ctx,
		Metadata: map[string]any{
			"phase_scope": map[string]any{"path": []string{"train", "forward"}, "parent_scope_id": (*string)(nil), "depth": 2, "sequence": int64(9)},
			"b":           true, "n": nil, "ranks": []any{json.Number("1"), json.Number("2")}, "empty": map[string]any{}, "list": []string(nil),
		},
	}
	var want bytes.Buffer
	require.NoError(t, json.NewEncoder(&want).Encode(&ev))
	got, ok := appendStormlogJSON(nil, &ev)
	require.True(t, ok)
	assert.Equal(t, want.String(), string(got))

	ev.Context, ev.Metadata = nil, nil
	want.Reset()
	require.NoError(t, json.NewEncoder(&want).Encode(&ev))
	got, ok = appendStormlogJSON(nil, &ev)
	require.True(t, ok)
	assert.Equal(t, want.String(), string(got))

	for _, v := range []any{1.5, json.Number("1.5"), []int{1}} {
		ev.Metadata = map[string]any{"x": []any{v}}
		_, ok = appendStormlogJSON(nil, &ev)
		assert.False(t, ok, "%T %v", v, v)
	}
}
