package quality

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

func TestNextDump(t *testing.T) {
	for _, tt := range []struct{ t, phase, interval, want int64 }{
		{t: 1234, phase: 0, interval: 0, want: 1234},
		{t: 1000, phase: 0, interval: 100, want: 1000},
		{t: 1001, phase: 0, interval: 100, want: 1100},
		{t: 1001, phase: 30, interval: 100, want: 1030},
		{t: 1031, phase: 30, interval: 100, want: 1130},
	} {
		assert.Equal(t, tt.want, nextDump(tt.t, tt.phase, tt.interval), "%+v", tt)
	}
}

type markerSummary struct {
	identified, approximate, p2p, p2pWithSeq int
}

func summarise(events []telemetry.Event) markerSummary {
	var s markerSummary
	for i := range events {
		md := events[i].Metadata
		if _, ok := md[evidence.KeyCommID].(string); !ok || events[i].EventType == evidence.AccountingEventType {
			continue
		}
		s.identified++
		if v, _ := md[evidence.KeyTimeApproximate].(bool); v {
			s.approximate++
		}
		if op := md[evidence.KeyOp]; op == "send" || op == "recv" {
			s.p2p++
			if _, ok := md[evidence.KeySeq]; ok {
				s.p2pWithSeq++
			}
		}
	}
	return s
}

// Every identified marker comes back from the Inspector logs, joined to its
// rank; P2P ops come back without a sequence number, default-layout ops as
// approximate, and the samples are left as they were.
func TestInspectorEventsRoundTrip(t *testing.T) {
	c, err := jobsim.GenerateQualityCase("pipeline", 1, jobsim.DefaultQualityShape(), true)
	require.NoError(t, err)
	before := summarise(c.Events)
	require.Positive(t, before.p2p)
	require.Equal(t, before.p2p, before.p2pWithSeq)
	for _, layout := range []InspectorLayout{{Verbose: true}, {DumpInterval: 100 * time.Millisecond, Seed: 1}} {
		out, err := InspectorEvents(c.Events, layout)
		require.NoError(t, err)
		after := summarise(out)
		assert.Equal(t, before.identified, after.identified, "verbose %v", layout.Verbose)
		assert.Equal(t, before.p2p, after.p2p)
		assert.Zero(t, after.p2pWithSeq, "p2p_sn does not line up across ranks: no seq")
		if layout.Verbose {
			assert.Zero(t, after.approximate)
		} else {
			assert.Equal(t, after.identified, after.approximate)
		}
		assert.Equal(t, len(c.Events), len(out))
	}
}
