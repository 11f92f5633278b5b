package report

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/phase"
)

func TestParseResultReferenceJSON(t *testing.T) {
	ratio := 0.05
	path := "train / backward"
	r := attribution.Result{
		Rank: 3, IntervalStartNs: 1_000, IntervalEndNs: 2_000,
		Classification: "collective_likely", Confidence: 0.7,
		ReasonCodes: []string{"marker_spike_overlap", "cross_rank_synchrony"},
		Evidence: attribution.Evidence{
			MarkerHits: 2, SynchronizedRanks: 4, ExpectedWorldSize: 8, SynchronyRatio: 0.5,
			PeakGapBytes: 3 * gib, PeakGapRatio: &ratio, RobustZscore: 4.25,
		},
		PhaseAttribution: &phase.Attribution{Resolution: "unique", Paths: []string{path}, Path: &path},
	}
	got, err := ParseResult(attribution.AppendResultJSON(nil, &r, true))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rank != 3 || got.StartNs != 1_000 || got.EndNs != 2_000 || got.Classification != "collective_likely" ||
		got.Confidence != 0.7 || got.PeakGapBytes != 3*gib {
		t.Errorf("parsed %+v", got)
	}
	keys := make([]string, len(got.Fields))
	for i, f := range got.Fields {
		keys[i] = f.Key
	}
	wantKeys := []string{
		"rank", "interval_start_ns", "interval_end_ns", "classification", "confidence", "reason_codes",
		"evidence.marker_hits", "evidence.synchronized_ranks", "evidence.expected_world_size",
		"evidence.synchrony_ratio", "evidence.peak_gap_bytes", "evidence.peak_gap_ratio", "evidence.robust_zscore",
	}
	if !slices.Equal(keys[:len(wantKeys)], wantKeys) {
		t.Errorf("keys %v, want to start with %v", keys, wantKeys)
	}
	fields := map[string]string{}
	for _, f := range got.Fields {
		fields[f.Key] = f.Value
	}
	for k, v := range map[string]string{
		"confidence":                         "0.7",
		"reason_codes":                       "marker_spike_overlap, cross_rank_synchrony",
		"evidence.peak_gap_ratio":            "0.05",
		"phase_attribution.phase_path":       path,
		"phase_attribution.phase_resolution": "unique",
	} {
		if fields[k] != v {
			t.Errorf("%s = %q, want %q", k, fields[k], v)
		}
	}
}

func TestParseResultEvidenceFields(t *testing.T) {
	// Fields evidence mode adds appear without the page knowing them; the
	// matched collective names the episode.
	raw := `{"rank":1,"interval_start_ns":5,"interval_end_ns":99999999999999999999,` +
		`"classification":"collective_confirmed","confidence":1.0,"reason_codes":[],` +
		`"evidence":{"marker_hits":1,"nccl_accounted_bytes":1073741824},` +
		`"mode":"evidence","kind":"persistent","unknown":null,"excess_bytes":2147483648,` +
		`"collective":{"comm_id":"0xabc","op":"all_gather","seq":7,"comm_ranks":[0,1,2,3],"synchronized_comm_ranks":[0,1]}}`
	got, err := ParseResult([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.EndNs != math.MaxInt64 {
		t.Errorf("end %d, want saturated", got.EndNs)
	}
	if got.Op != "all_gather" || got.Comm != "0xabc" {
		t.Errorf("collective %q %q", got.Op, got.Comm)
	}
	var text []string
	for _, f := range got.Fields {
		text = append(text, f.Key+"="+f.Value)
	}
	joined := strings.Join(text, "\n")
	for _, want := range []string{
		"reason_codes=[]", "unknown=null", "evidence.nccl_accounted_bytes=1073741824", "mode=evidence", "kind=persistent",
		"excess_bytes=2147483648", "collective.comm_ranks=0, 1, 2, 3", "collective.synchronized_comm_ranks=0, 1",
		"collective.seq=7", "confidence=1.0", "interval_end_ns=99999999999999999999",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("fields lack %q:\n%s", want, joined)
		}
	}
}

func TestParseResultErrors(t *testing.T) {
	tests := map[string]string{
		"not an object":   `[1]`,
		"no rank":         `{"interval_start_ns":1,"interval_end_ns":2,"classification":"x"}`,
		"rank not int":    `{"rank":"a","interval_start_ns":1,"interval_end_ns":2,"classification":"x"}`,
		"negative start":  `{"rank":1,"interval_start_ns":-1,"interval_end_ns":2,"classification":"x"}`,
		"trailing data":   `{"rank":1,"interval_start_ns":1,"interval_end_ns":2,"classification":"x"} {}`,
		"truncated":       `{"rank":1,"interval_start_ns":1`,
		"no class":        `{"rank":1,"interval_start_ns":1,"interval_end_ns":2}`,
		"nested no close": `{"rank":1,"evidence":{"a":[1,2}`,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseResult([]byte(raw)); err == nil {
				t.Errorf("ParseResult(%s) succeeded, want an error", raw)
			}
		})
	}
}

func TestEpisodes(t *testing.T) {
	rs := []Result{
		{Rank: 0, StartNs: 100, EndNs: 200, Classification: "collective_likely"},
		{Rank: 1, StartNs: 150, EndNs: 260, Classification: "collective_confident"},
		{Rank: 2, StartNs: 260, EndNs: 300, Classification: "collective_suspect"}, // touches rank 1's end
		{Rank: 0, StartNs: 400, EndNs: 500, Classification: "something_new"},
		{Rank: 3, StartNs: 120, EndNs: 130, Classification: "collective_suspect"},
	}
	eps := Episodes(rs)
	if len(eps) != 2 {
		t.Fatalf("%d episodes, want 2: %+v", len(eps), eps)
	}
	if e := eps[0]; e.StartNs != 100 || e.EndNs != 300 || !slices.Equal(e.Ranks, []int64{0, 1, 2, 3}) ||
		e.Strongest != "collective_confident" || len(e.Results) != 4 {
		t.Errorf("first episode %+v", e)
	}
	if e := eps[1]; !slices.Equal(e.Results, []int{3}) || e.Strongest != "something_new" {
		t.Errorf("second episode %+v", e)
	}
}
