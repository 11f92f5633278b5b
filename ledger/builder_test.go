package ledger

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

func sample(rank, ts int64, session string, used int64, reserved *int64) telemetry.Event {
	e := telemetry.Event{SchemaVersion: 3, SessionID: session, TimestampNs: ts, EventType: "sample", Rank: rank,
		DeviceUsedBytes: telemetry.Int(used)}
	if reserved != nil {
		e.AllocatorReservedBytes = telemetry.Int(*reserved)
	}
	return e
}

func TestBuilderColumns(t *testing.T) {
	r := int64(10 * gib)
	events := []telemetry.Event{
		sample(1, 300, "a", 11*gib, &r),
		sample(1, 100, "a", 12*gib, &r),  // out of order: sorted by time
		sample(1, 200, "b", 13*gib, nil), // no reservation: kept, flagged
		sample(0, 50, "z", 11*gib, &r),
		{EventType: " SAMPLE ", Rank: 0, TimestampNs: 60, DeviceUsedBytes: telemetry.Int(5)}, // the reference's sample type
		{EventType: "sample", Rank: 0, TimestampNs: 70},                                      // no device used: not a sample
		{EventType: "nccl:all_reduce", Rank: 0, TimestampNs: 80, DeviceUsedBytes: telemetry.Int(1)},
		{EventType: evidence.AccountingEventType, Rank: 1, TimestampNs: 250,
			Metadata: map[string]any{evidence.KeyCommID: "0xa", evidence.KeyMemoryTotal: json.Number("7")}},
		{EventType: evidence.AccountingEventType, Rank: 1, TimestampNs: 150,
			Metadata: map[string]any{evidence.KeyCommID: "0xa", evidence.KeyMemoryTotal: json.Number("5")}},
	}
	b := NewBuilder()
	for i := range events {
		b.Add(&events[i])
	}
	ranks := b.Ranks()
	require.Len(t, ranks, 2)
	assert.Equal(t, int64(0), ranks[0].Rank)
	assert.Equal(t, []int64{50, 60}, ranks[0].Samples.TimesNs)
	assert.Equal(t, []bool{false, true}, ranks[0].Samples.NoReserved)
	s := ranks[1].Samples
	assert.Equal(t, []int64{100, 200, 300}, s.TimesNs)
	assert.Equal(t, []int64{12 * gib, 13 * gib, 11 * gib}, s.UsedBytes)
	assert.Equal(t, []int64{r, 0, r}, s.ReservedBytes)
	assert.Equal(t, []bool{false, true, false}, s.NoReserved)
	assert.Equal(t, []string{"a", "b"}, s.SessionIDs)
	assert.Equal(t, []int32{0, 1, 0}, s.Session)
	require.Len(t, ranks[1].Accounting, 1)
	assert.Equal(t, []int64{150, 250}, ranks[1].Accounting[0].TimesNs)
	assert.Equal(t, []int64{5, 7}, ranks[1].Accounting[0].Bytes)
}
