package attribution

import "testing"

func TestAppendResultJSONEvidenceAdditions(t *testing.T) {
	accounted := int64(1073741824)
	r := Result{
		Rank: 3, IntervalStartNs: 100, IntervalEndNs: 200,
		Classification: CollectiveConfirmed, Confidence: 0.95,
		ReasonCodes: []string{"excess_over_baseline", "nccl_accounting_covers"},
		Evidence:    Evidence{MarkerHits: 1, SynchronizedRanks: 2, ExpectedWorldSize: 16, SynchronyRatio: 1, PeakGapBytes: 5, RobustZscore: 2},
		Mode:        ModeEvidence, Kind: KindTransient, ExcessBytes: 1073741824,
		Collective: &CollectiveMatch{CommID: "0xab", Op: "send", Seq: 7, CommRanks: 2, SynchronizedCommRanks: 2,
			Members: []MemberMarker{{Rank: 3, StartNs: 90, EndNs: 150, Synchronized: true}}},
		NCCLAccountedBytes: &accounted,
	}
	want := `{"rank":3,"interval_start_ns":100,"interval_end_ns":200,"classification":"collective_confirmed",` +
		`"confidence":0.95,"reason_codes":["excess_over_baseline","nccl_accounting_covers"],` +
		`"evidence":{"marker_hits":1,"synchronized_ranks":2,"expected_world_size":16,"synchrony_ratio":1.0,` +
		`"peak_gap_bytes":5,"peak_gap_ratio":null,"robust_zscore":2.0},"mode":"evidence","kind":"transient",` +
		`"excess_bytes":1073741824,"collective":{"comm_id":"0xab","op":"send","seq":7,"comm_ranks":2,` +
		`"synchronized_comm_ranks":2},"nccl_accounted_bytes":1073741824,"phase_attribution":null}`
	if got := string(AppendResultJSON(nil, &r, true)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	r.Collective, r.NCCLAccountedBytes, r.Kind = nil, nil, KindPersistent
	want = `{"rank":3,"interval_start_ns":100,"interval_end_ns":200,"classification":"collective_confirmed",` +
		`"confidence":0.95,"reason_codes":["excess_over_baseline","nccl_accounting_covers"],` +
		`"evidence":{"marker_hits":1,"synchronized_ranks":2,"expected_world_size":16,"synchrony_ratio":1.0,` +
		`"peak_gap_bytes":5,"peak_gap_ratio":null,"robust_zscore":2.0},"mode":"evidence","kind":"persistent",` +
		`"excess_bytes":1073741824,"collective":null,"nccl_accounted_bytes":null}`
	if got := string(AppendResultJSON(nil, &r, false)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
