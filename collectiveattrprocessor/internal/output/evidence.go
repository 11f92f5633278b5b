package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Attribute keys of evidence mode's results (docs/evidence-mode.md §4).
const (
	AttrMode                  = "collective_attribution.mode"
	AttrKind                  = "collective_attribution.kind"
	AttrExcessBytes           = "collective_attribution.evidence.excess_bytes"
	AttrNCCLAccountedBytes    = "collective_attribution.evidence.nccl_accounted_bytes"
	AttrCommID                = "collective_attribution.collective.comm_id"
	AttrCollectiveOp          = "collective_attribution.collective.op"
	AttrCollectiveSeq         = "collective_attribution.collective.seq"
	AttrCommRanks             = "collective_attribution.collective.comm_ranks"
	AttrSynchronizedCommRanks = "collective_attribution.collective.synchronized_comm_ranks"
)

// evidenceAttributeCount is how many attributes putEvidenceAttributes
// writes for r.
func evidenceAttributeCount(r *attribution.Result) int {
	if r.Mode != attribution.ModeEvidence {
		return 0
	}
	n := 3
	if r.NCCLAccountedBytes != nil {
		n++
	}
	if r.Collective != nil {
		n += 5
	}
	return n
}

// putEvidenceAttributes writes an evidence-mode result's additions; a
// reference result (Mode "") has none. The collective's attributes are
// absent when none matched, the accounted bytes without NCCL's
// accounting.
func putEvidenceAttributes(m pcommon.Map, r *attribution.Result) {
	if r.Mode != attribution.ModeEvidence {
		return
	}
	m.PutStr(AttrMode, r.Mode)
	m.PutStr(AttrKind, r.Kind)
	m.PutInt(AttrExcessBytes, r.ExcessBytes)
	if r.NCCLAccountedBytes != nil {
		m.PutInt(AttrNCCLAccountedBytes, *r.NCCLAccountedBytes)
	}
	if c := r.Collective; c != nil {
		m.PutStr(AttrCommID, c.CommID)
		m.PutStr(AttrCollectiveOp, c.Op)
		m.PutInt(AttrCollectiveSeq, c.Seq)
		m.PutInt(AttrCommRanks, c.CommRanks)
		m.PutInt(AttrSynchronizedCommRanks, c.SynchronizedCommRanks)
	}
}
