package quality

import (
	"fmt"
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

// p2pKey is one side of a direction's transfers: a rank, its peer (global
// rank) and its op.
type p2pKey struct {
	rank, peer int64
	op         any
}

// p2pIdentities lists, per side, the collective identities (communicator
// and sequence number) of its P2P markers in event order (the order of the
// transfers: the conversion keeps each process's order).
func p2pIdentities(t *testing.T, events []telemetry.Event) map[p2pKey][]string {
	t.Helper()
	ids := map[p2pKey][]string{}
	for i := range events {
		md := events[i].Metadata
		op := md[evidence.KeyOp]
		if op != "send" && op != "recv" {
			continue
		}
		seq, _ := evidence.MetadataInt(md[evidence.KeySeq])
		peer, ok := evidence.MetadataInt(md[evidence.KeyPeer])
		require.True(t, ok, "P2P marker without nccl.peer: %v", md)
		key := p2pKey{events[i].Rank, peer, op}
		ids[key] = append(ids[key], fmt.Sprintf("%v#%d", md[evidence.KeyCommID], seq))
	}
	return ids
}

// Every identified marker comes back from the Inspector logs, joined to its
// rank; P2P ops come back numbered per direction, the send and the recv of
// one transfer as one collective exactly as the case's markers group them,
// default-layout ops as approximate, and the samples are left as they were.
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
		assert.Equal(t, after.p2p, after.p2pWithSeq, "every transfer numbered")
		// The converted identities group the markers as the case's do: a
		// one-to-one map between the two.
		orig, conv := p2pIdentities(t, c.Events), p2pIdentities(t, out)
		require.Equal(t, len(orig), len(conv))
		fwd, back := map[string]string{}, map[string]string{}
		for key, list := range orig {
			require.Len(t, conv[key], len(list), "P2P markers of %+v", key)
			for k, o := range list {
				n := conv[key][k]
				if f, seen := fwd[o]; seen && f != n {
					t.Fatalf("case transfer %s is %s and %s after the round trip", o, f, n)
				}
				if b, seen := back[n]; seen && b != o {
					t.Fatalf("%s after the round trip joins case transfers %s and %s", n, b, o)
				}
				fwd[o], back[n] = n, o
			}
		}
		if layout.Verbose {
			assert.Zero(t, after.approximate)
		} else {
			assert.Equal(t, after.identified, after.approximate)
		}
		assert.Equal(t, len(c.Events), len(out))
	}
}
