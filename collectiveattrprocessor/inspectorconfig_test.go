package collectiveattrprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestInspectorMarkersFollowTheMode: in reference mode an Inspector record
// becomes bare markers at its start and end; in evidence mode one marker
// that carries the collective's identity, as `collectiveattr attribute
// --mode evidence --nccl-inspector` reads it.
func TestInspectorMarkersFollowTheMode(t *testing.T) {
	line := []byte(`{"header":{"id":"0xe62dedaa97644a","comm_name":"DP Group 0","rank":1,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","git_rev":"v2.30.7-1","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1752867229276385,"hostname":"node01","pid":438776},"coll_perf":{"coll":"AllReduce","coll_sn":12,"coll_msg_size_bytes":2147483648,"coll_exec_time_us":41057,"coll_timing_source":"kernel_gpu","coll_algobw_gbs":418.439467,"coll_busbw_gbs":366.134533}}`)
	op, err := inspector.Parse(line)
	require.NoError(t, err)
	joined := &inspector.Joined{Op: &op, Owner: inspector.Owner{JobID: "job", Rank: 1, WorldSize: 2}, CommRanks: []int64{0, 1}}

	for _, tc := range []struct {
		mode        AttributionMode
		wantMarkers int
		wantCommID  bool
		wantRanks   bool
	}{
		{ModeReference, 2, false, false},
		{ModeEvidence, 1, true, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = tc.mode
			ic := cfg.inspectorConfig(strategyOf(t, cfg))
			assert.Equal(t, tc.wantRanks, ic.CommRanks)
			events := ic.Markers(nil, joined)
			require.Len(t, events, tc.wantMarkers)
			for i := range events {
				require.NoError(t, roundTrip(&events[i]))
				_, hasComm := events[i].Metadata["nccl.comm.id"]
				assert.Equal(t, tc.wantCommID, hasComm)
			}
		})
	}
}

// roundTrip checks a converted event is a valid stormlog record.
func roundTrip(e *telemetry.Event) error {
	_, err := telemetry.DecodeRecord(telemetry.AppendJSON(nil, e))
	return err
}
