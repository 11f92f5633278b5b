package output

import (
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// evidenceItems are evidence-mode results the *_evidence goldens were
// written for: a transient spike NCCL's accounting confirms, matched to an
// all_reduce with marker spans on two members (the result links its own
// rank's and the collective's span, which links both members'), and a
// persistent step that matched no collective, without accounting (its
// collective and accounted-bytes attributes are absent).
func evidenceItems() []Item {
	allReduce42 := &attribution.CollectiveMatch{CommID: "tp0", Op: "all_reduce", Seq: 42, CommRanks: 2, SynchronizedCommRanks: 2,
		Members: []attribution.MemberMarker{{Rank: 0, StartNs: 1767225600050000000, EndNs: 1767225600250000000, Synchronized: true},
			{Rank: 1, StartNs: 1767225600060000000, EndNs: 1767225600260000000, Synchronized: true}}}
	return []Item{
		{
			JobID: "job-e", Host: "node-a", Preset: "medium",
			Result: &attribution.Result{
				Rank: 1, IntervalStartNs: 1767225600000000000, IntervalEndNs: 1767225600400000000,
				Classification: "collective_confirmed", Confidence: 0.95,
				ReasonCodes: []string{"collective_member_synchrony", "nccl_accounting_covers"},
				Evidence: attribution.Evidence{MarkerHits: 1, SynchronizedRanks: 2, ExpectedWorldSize: 16, SynchronyRatio: 1.0,
					PeakGapBytes: 2147483648, RobustZscore: 41.5},
				Mode: attribution.ModeEvidence, Kind: attribution.KindTransient, ExcessBytes: 1073741824,
				Collective:         allReduce42,
				NCCLAccountedBytes: ptr(int64(1073741824)),
			},
			Links:      []ingest.SpanRef{ref(0x66)},
			Collective: &CollectiveSpan{Match: allReduce42, MemberSpans: []ingest.SpanRef{ref(0x55), ref(0x66)}},
		},
		{
			JobID: "job-e", Host: "node-a", Preset: "medium",
			Result: &attribution.Result{
				Rank: 0, IntervalStartNs: 1767225605000000000, IntervalEndNs: 1767225605100000000,
				Classification: "collective_likely", Confidence: 0.6,
				ReasonCodes: []string{"persistent_step"},
				Evidence:    attribution.Evidence{ExpectedWorldSize: 16, PeakGapBytes: 3221225472, RobustZscore: 20},
				Mode:        attribution.ModeEvidence, Kind: attribution.KindPersistent, ExcessBytes: 2147483648,
			},
		},
	}
}

func TestEvidenceGoldens(t *testing.T) {
	items := evidenceItems()
	td := ptrace.NewTraces()
	AppendTraces(td, items, &seqIDs{})
	ld := plog.NewLogs()
	AppendLogs(ld, items, false)
	md := pmetric.NewMetrics()
	const s, tl, n = 1767225500000000000, 1767225602000000000, 1767225610000000000
	testMetrics().Append(md, nil, nil, nil,
		[]IntervalCount{{"job-e", 0, "collective_likely", 1, s, attribution.ModeEvidence, attribution.KindPersistent},
			{"job-e", 1, "collective_confirmed", 2, s, attribution.ModeEvidence, attribution.KindTransient}},
		[]LatestResult{{"job-e", 1, "collective_confirmed", 2147483648, 0.95, tl, attribution.ModeEvidence, attribution.KindTransient}},
		n)
	wantT, err := golden.ReadTraces(filepath.Join("testdata", "traces_evidence.yaml"))
	require.NoError(t, err)
	require.NoError(t, ptracetest.CompareTraces(wantT, td))
	wantL, err := golden.ReadLogs(filepath.Join("testdata", "logs_evidence.yaml"))
	require.NoError(t, err)
	require.NoError(t, plogtest.CompareLogs(wantL, ld))
	wantM, err := golden.ReadMetrics(filepath.Join("testdata", "metrics_evidence.yaml"))
	require.NoError(t, err)
	require.NoError(t, pmetrictest.CompareMetrics(wantM, md, pmetrictest.IgnoreMetricsOrder()))
}
