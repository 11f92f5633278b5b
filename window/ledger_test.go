package window_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// TestStreamLedgerColumns: a stream that keeps the ledger's columns holds
// per rank, ascending, every `sample` with a device_used_bytes in time
// order (one without allocator_reserved_bytes flagged, the reference's
// sample type read as it reads it), its sessions, NCCL's accounting in
// time order and the collective markers' times; a sample without device
// used and a rank with nothing of these are left out.
func TestStreamLedgerColumns(t *testing.T) {
	const gib = int64(1) << 30
	sample := func(rank, ts int64, session string, used int64, reserved *int64) telemetry.Event {
		e := telemetry.Event{SchemaVersion: 3, SessionID: session, TimestampNs: ts, EventType: "sample", Rank: rank,
			DeviceUsedBytes: telemetry.Int(used)}
		if reserved != nil {
			e.AllocatorReservedBytes = telemetry.Int(*reserved)
		}
		return e
	}
	r := 10 * gib
	events := []telemetry.Event{
		sample(1, 300, "a", 11*gib, &r),
		sample(1, 100, "a", 12*gib, &r),  // out of order: sorted by time
		sample(1, 200, "b", 13*gib, nil), // no reservation: kept, flagged
		sample(0, 50, "z", 11*gib, &r),
		{EventType: " SAMPLE ", Rank: 0, TimestampNs: 60, DeviceUsedBytes: telemetry.Int(5)}, // the reference's sample type
		{EventType: "sample", Rank: 0, TimestampNs: 70},                                      // no device used: not a sample
		{EventType: "nccl:all_reduce", Rank: 0, TimestampNs: 90, DeviceUsedBytes: telemetry.Int(1)},
		{EventType: "nccl:all_reduce", Rank: 0, TimestampNs: 80, DeviceUsedBytes: telemetry.Int(1)},
		{EventType: evidence.AccountingEventType, Rank: 1, TimestampNs: 250,
			Metadata: map[string]any{evidence.KeyCommID: "0xa", evidence.KeyMemoryTotal: json.Number("7")}},
		{EventType: evidence.AccountingEventType, Rank: 1, TimestampNs: 150,
			Metadata: map[string]any{evidence.KeyCommID: "0xa", evidence.KeyMemoryTotal: json.Number("5")}},
		{EventType: "step_begin", Rank: 2, TimestampNs: 100},
	}
	for _, mode := range []window.Mode{window.ReferenceMode, window.EvidenceMode} {
		s := window.NewStream(mode, false)
		s.KeepLedger()
		s.AddEvents(events)
		ranks := s.LedgerRanks()
		require.Len(t, ranks, 2)
		assert.Equal(t, int64(0), ranks[0].Rank)
		assert.Equal(t, []int64{50, 60}, ranks[0].Samples.TimesNs)
		assert.Equal(t, []bool{false, true}, ranks[0].Samples.NoReserved)
		assert.Equal(t, []int64{80, 90}, ranks[0].MarkersNs)
		assert.Equal(t, int64(1), ranks[1].Rank)
		s1 := ranks[1].Samples
		assert.Equal(t, []int64{100, 200, 300}, s1.TimesNs)
		assert.Equal(t, []int64{12 * gib, 13 * gib, 11 * gib}, s1.UsedBytes)
		assert.Equal(t, []int64{r, 0, r}, s1.ReservedBytes)
		assert.Equal(t, []bool{false, true, false}, s1.NoReserved)
		assert.Equal(t, []string{"a", "b"}, s1.SessionIDs)
		assert.Equal(t, []int32{0, 1, 0}, s1.Session)
		require.Len(t, ranks[1].Accounting, 1)
		assert.Equal(t, []int64{150, 250}, ranks[1].Accounting[0].TimesNs)
		assert.Equal(t, []int64{5, 7}, ranks[1].Accounting[0].Bytes)
	}
}
