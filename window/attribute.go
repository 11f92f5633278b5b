package window

import (
	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// AttributeReference attributes a run of records held in memory as the
// CLI attributes a file of them: each record streamed into one window in
// order, the window snapshotted once and attributed by the reference
// engine. As in the reference, all records are one run (callers
// partition by job first); resolver may be nil (no phase attribution).
func AttributeReference(events []telemetry.Event, cfg attribution.Config, resolver attribution.PhaseResolver) []attribution.Result {
	if len(events) == 0 {
		return nil
	}
	s := NewStream(ReferenceMode, false)
	s.AddEvents(events)
	var sc Scratch
	return attribution.AttributeColumns(s.Job().Snapshot(&sc).Input, cfg, resolver)
}

// AttributeEvidence is AttributeReference in evidence mode.
func AttributeEvidence(events []telemetry.Event, cfg evidence.Config, resolver attribution.PhaseResolver) []attribution.Result {
	if len(events) == 0 {
		return nil
	}
	s := NewStream(EvidenceMode, false)
	s.AddEvents(events)
	var sc Scratch
	var es EvidenceScratch
	snap := s.Job().EvidenceSnapshot(&sc, &es)
	return evidence.Attribute(&snap.Input, cfg, resolver)
}
