package attribution

import (
	"strconv"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// AppendResultJSON appends r in the reference serialisation
// (dataclasses.asdict order): rank, interval_start_ns, interval_end_ns,
// classification, confidence, reason_codes, evidence{marker_hits,
// synchronized_ranks, expected_world_size, synchrony_ratio, peak_gap_bytes,
// peak_gap_ratio, robust_zscore}, and with withPhase a final
// "phase_attribution" (null or the phase payload). Floats are written as
// Python's json does (1.0, 0.093132, 1e-05).
func AppendResultJSON(dst []byte, r *Result, withPhase bool) []byte {
	dst = append(dst, `{"rank":`...)
	dst = strconv.AppendInt(dst, r.Rank, 10)
	dst = append(dst, `,"interval_start_ns":`...)
	dst = strconv.AppendInt(dst, r.IntervalStartNs, 10)
	dst = append(dst, `,"interval_end_ns":`...)
	dst = strconv.AppendUint(dst, r.IntervalEndNs, 10)
	dst = append(dst, `,"classification":`...)
	dst = telemetry.AppendString(dst, r.Classification)
	dst = append(dst, `,"confidence":`...)
	dst = AppendFloat(dst, r.Confidence)
	dst = append(dst, `,"reason_codes":[`...)
	for i, c := range r.ReasonCodes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = telemetry.AppendString(dst, c)
	}
	ev := &r.Evidence
	dst = append(dst, `],"evidence":{"marker_hits":`...)
	dst = strconv.AppendInt(dst, ev.MarkerHits, 10)
	dst = append(dst, `,"synchronized_ranks":`...)
	dst = strconv.AppendInt(dst, ev.SynchronizedRanks, 10)
	dst = append(dst, `,"expected_world_size":`...)
	dst = strconv.AppendInt(dst, ev.ExpectedWorldSize, 10)
	dst = append(dst, `,"synchrony_ratio":`...)
	dst = AppendFloat(dst, ev.SynchronyRatio)
	dst = append(dst, `,"peak_gap_bytes":`...)
	dst = strconv.AppendInt(dst, ev.PeakGapBytes, 10)
	dst = append(dst, `,"peak_gap_ratio":`...)
	if ev.PeakGapRatio == nil {
		dst = append(dst, "null"...)
	} else {
		dst = AppendFloat(dst, *ev.PeakGapRatio)
	}
	dst = append(dst, `,"robust_zscore":`...)
	dst = AppendFloat(dst, ev.RobustZscore)
	dst = append(dst, '}')
	if r.Mode == ModeEvidence {
		dst = appendEvidenceJSON(dst, r)
	}
	if withPhase {
		dst = append(dst, `,"phase_attribution":`...)
		dst = r.PhaseAttribution.AppendJSON(dst)
	}
	return append(dst, '}')
}

// appendEvidenceJSON appends evidence mode's additions: mode, kind,
// excess_bytes, collective (null or comm_id, op, seq, comm_ranks,
// synchronized_comm_ranks) and nccl_accounted_bytes (null without NCCL
// accounting).
func appendEvidenceJSON(dst []byte, r *Result) []byte {
	dst = append(dst, `,"mode":`...)
	dst = telemetry.AppendString(dst, r.Mode)
	dst = append(dst, `,"kind":`...)
	dst = telemetry.AppendString(dst, r.Kind)
	dst = append(dst, `,"excess_bytes":`...)
	dst = strconv.AppendInt(dst, r.ExcessBytes, 10)
	dst = append(dst, `,"collective":`...)
	if c := r.Collective; c == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"comm_id":`...)
		dst = telemetry.AppendString(dst, c.CommID)
		dst = append(dst, `,"op":`...)
		dst = telemetry.AppendString(dst, c.Op)
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendInt(dst, c.Seq, 10)
		dst = append(dst, `,"comm_ranks":`...)
		dst = strconv.AppendInt(dst, c.CommRanks, 10)
		dst = append(dst, `,"synchronized_comm_ranks":`...)
		dst = strconv.AppendInt(dst, c.SynchronizedCommRanks, 10)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"nccl_accounted_bytes":`...)
	if r.NCCLAccountedBytes == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, *r.NCCLAccountedBytes, 10)
	}
	return dst
}

// AppendResultsJSON appends results as one JSON array ("[]" when empty).
func AppendResultsJSON(dst []byte, results []Result, withPhase bool) []byte {
	dst = append(dst, '[')
	for i := range results {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendResultJSON(dst, &results[i], withPhase)
	}
	return append(dst, ']')
}
