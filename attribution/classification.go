package attribution

// Classification values (§2.3 S10), weakest first. This is the one list of
// them: the processor's self-telemetry, the simulator's report and the HTML
// report read it through Classifications and ClassificationRank.
const (
	CollectiveSuspect   = "collective_suspect"
	CollectiveLikely    = "collective_likely"
	CollectiveConfident = "collective_confident"
	// CollectiveConfirmed is evidence mode's class for a change NCCL's own
	// memory accounting covers (evidence-mode §4); the reference mode never
	// gives it.
	CollectiveConfirmed = "collective_confirmed"
)

// Classifications returns the classification values, weakest first.
func Classifications() []string {
	return []string{CollectiveSuspect, CollectiveLikely, CollectiveConfident, CollectiveConfirmed}
}

// ClassificationRank orders classifications: suspect 0 < likely 1 <
// confident 2 < confirmed 3. Any other string ranks -1, below all of them,
// as the reference's merge (§2.3 S12) ranks a value it does not know; the
// reference never produces confirmed, so its merge is unchanged by it.
func ClassificationRank(c string) int {
	switch c {
	case CollectiveSuspect:
		return 0
	case CollectiveLikely:
		return 1
	case CollectiveConfident:
		return 2
	case CollectiveConfirmed:
		return 3
	}
	return -1
}
