package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// TestInspectorMarkersEqualMarkerSpansEvidence is the evidence-mode half of
// TestInspectorMarkersEqualMarkerSpans (emit: on_job_end, without and with NCCL's
// accounting gauge).
//
// Verbose layout: the Inspector records carry what the marker spans carry but the names
// of things: the communicator's hash as the plugin prints it, and the sequence number
// counted per collective type (coll_sn) rather than per communicator. Each span's
// collective is mapped to the Inspector op of the same rank and start, and the results
// are then equal exactly: same intervals, classifications, confidences, reasons, excess,
// matched collective and NCCL accounting.
//
// Default layout: the records have no op time, only the dump time and the GPU time, so
// their markers are approximate, which evidence mode weighs (never confident on timing
// alone, a wider tolerance before the op). The two runs are compared by the quality
// measures against the simulator's truth.
func TestInspectorMarkersEqualMarkerSpansEvidence(t *testing.T) {
	for _, stats := range []bool{false, true} {
		t.Run(fmt.Sprintf("verbose/accounting=%v", stats), func(t *testing.T) {
			o := runInspectorAgainstSpans(t, inspectorRun{mode: "evidence", verbose: true, stats: stats})
			want := translateCollectives(t, o.fromSpans, o.spanCollectives, o.inspectorCollectives)
			got := o.fromInspector
			require.Len(t, got, len(want))
			matched := 0
			for i := range want {
				if c, ok := got[i]["collective"].(map[string]any); ok && c != nil {
					matched++
				}
				assert.Equal(t, compact(want[i]), compact(got[i]), "result %d", i)
			}
			assert.Positive(t, matched, "results matched Inspector collectives")
			q := qualityOf(t, o, "spans-logs.json")
			t.Logf("verbose, accounting %v: %s (both)", stats, q)
		})
		t.Run(fmt.Sprintf("default/accounting=%v", stats), func(t *testing.T) {
			o := runInspectorAgainstSpans(t, inspectorRun{mode: "evidence", verbose: false, stats: stats})
			spans, insp := qualityOf(t, o, "spans-logs.json"), qualityOf(t, o, "inspector-logs.json")
			t.Logf("default layout, accounting %v: marker spans %s; Inspector %s", stats, spans, insp)
			assert.GreaterOrEqual(t, insp.recall(), spans.recall()-0.05, "recall within 0.05 of the marker spans'")
			// The simulator dumps each record at its op's end, so the approximate interval
			// is the op's: the same changes are found, judged only less confidently.
			assert.Equal(t, intervals(o.fromSpans), intervals(o.fromInspector), "the same result intervals")
			assert.Zero(t, insp.decoysClaimed, "no unrelated spike called likely or more")
			assert.Zero(t, insp.unmatchedClaims, "no claim away from an injected spike")
			if !stats {
				assert.Zero(t, insp.confident, "approximate markers alone give no confident result")
			}
		})
	}
}

// translateCollectives rewrites each result's matched collective from its marker span's
// identity to that of the Inspector op of the same rank and start (both keyed by the
// µs-cut span start the Inspector record holds), failing when a span has no op.
func translateCollectives(t *testing.T, results []map[string]any, spans, ops map[rankStart]collectiveID) []map[string]any {
	t.Helper()
	to := map[collectiveID]collectiveID{}
	for k, id := range spans {
		op, ok := ops[k]
		require.True(t, ok, "an Inspector op at rank %d, %d", k.rank, k.startNs)
		if prev, seen := to[id]; seen {
			require.Equal(t, prev, op, "one span collective, one Inspector collective")
		}
		to[id] = op
	}
	out := make([]map[string]any, len(results))
	for i, r := range results {
		out[i] = r
		c, ok := r["collective"].(map[string]any)
		if !ok || c == nil {
			continue
		}
		seq, err := c["seq"].(json.Number).Int64()
		require.NoError(t, err)
		id, ok := to[collectiveID{c["comm_id"].(string), c["op"].(string), seq}]
		require.True(t, ok, "result's collective %v was sent", c)
		cp := map[string]any{}
		for k, v := range r {
			cp[k] = v
		}
		cc := map[string]any{}
		for k, v := range c {
			cc[k] = v
		}
		cc["comm_id"], cc["op"], cc["seq"] = id.comm, id.op, json.Number(fmt.Sprint(id.seq))
		cp["collective"] = cc
		out[i] = cp
	}
	return out
}

// quality is how one run's results score against the simulator's truth: rank-episodes
// of injected collective spikes and steps found by a claim (likely or more) and by a
// confident (or confirmed) result, unrelated spikes claimed, and claims that overlap no
// injection.
type quality struct {
	// missed lists the injections with a rank-episode no claim found, as kind:ranks.
	missed                     []string
	episodes, found, confident int
	confirmed                  int
	decoys, decoysClaimed      int
	claims, unmatchedClaims    int
}

func (q quality) recall() float64 { return float64(q.found) / float64(max(q.episodes, 1)) }

func (q quality) String() string {
	return fmt.Sprintf("recall %d/%d (%.3f; missed %v), confident or confirmed %d (confirmed %d), unrelated spikes claimed %d/%d, claims %d (%d overlapping no injection)",
		q.found, q.episodes, q.recall(), q.missed, q.confident, q.confirmed, q.decoysClaimed, q.decoys, q.claims, q.unmatchedClaims)
}

func qualityOf(t *testing.T, o inspectorOutcome, file string) quality {
	t.Helper()
	results, err := jobsim.ReadResults(filepath.Join(o.outDir, file))
	require.NoError(t, err)
	truth := o.scenario.Truth(o.epoch)
	v := jobsim.Compare(truth, results)
	likely := attribution.ClassificationRank(attribution.CollectiveLikely)
	confident := attribution.ClassificationRank(attribution.CollectiveConfident)
	var q quality
	for _, iv := range v.Injections {
		if iv.Injection.Kind == jobsim.KindUnrelatedSpike {
			q.decoys += len(iv.Injection.Ranks)
			for _, c := range iv.Found {
				if attribution.ClassificationRank(c) >= likely {
					q.decoysClaimed++
				}
			}
			continue
		}
		q.episodes += len(iv.Injection.Ranks)
		var missed []int
		for _, r := range iv.Injection.Ranks {
			switch c := iv.Found[r]; {
			case attribution.ClassificationRank(c) >= confident:
				q.confident++
				q.found++
				if c == attribution.CollectiveConfirmed {
					q.confirmed++
				}
			case attribution.ClassificationRank(c) >= likely:
				q.found++
			default:
				missed = append(missed, r)
			}
		}
		if len(missed) > 0 {
			q.missed = append(q.missed, fmt.Sprintf("%s(step %d, %s):%v", iv.Injection.Kind, iv.Injection.Step, iv.Injection.Collective, missed))
		}
	}
	for _, r := range results {
		if attribution.ClassificationRank(r.Classification) >= likely {
			q.claims++
		}
	}
	for _, r := range v.Unmatched {
		if attribution.ClassificationRank(r.Classification) >= likely {
			q.unmatchedClaims++
		}
	}
	return q
}

// intervals lists each result's rank and interval.
func intervals(results []map[string]any) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = fmt.Sprintf("%v:%v-%v", r["rank"], r["interval_start_ns"], r["interval_end_ns"])
	}
	return out
}
