package attribution

// Classification values (§2.3 S10), weakest first. This is the one list of
// them: the processor's self-telemetry and the simulator's report read it
// through Classifications and ClassificationRank.
const (
	CollectiveSuspect   = "collective_suspect"
	CollectiveLikely    = "collective_likely"
	CollectiveConfident = "collective_confident"
)

// Classifications returns the classification values, weakest first.
func Classifications() []string {
	return []string{CollectiveSuspect, CollectiveLikely, CollectiveConfident}
}

// ClassificationRank orders classifications: suspect 0 < likely 1 <
// confident 2. Any other string ranks -1, below all of them, as the
// reference's merge (§2.3 S12) ranks a value it does not know.
func ClassificationRank(c string) int {
	switch c {
	case CollectiveSuspect:
		return 0
	case CollectiveLikely:
		return 1
	case CollectiveConfident:
		return 2
	}
	return -1
}
