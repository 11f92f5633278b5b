package evidence

import (
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Reason codes of evidence-mode results: each says which evidence decided
// the result (listed with their meaning in the README).
const (
	// The change.
	ReasonExcessOverBaseline = "excess_over_baseline"           // a transient spike above the rank's own baseline by more than its spread and the size floor
	ReasonPersistentStep     = "persistent_step"                // the rank's level rose and stayed (reported once, at its onset)
	ReasonExcessCorroborated = "excess_corroborated_by_members" // a spike within the rank's noise alone (robust_zscore_threshold spreads, not twice), reported because the collective's members show it too

	// The collective.
	ReasonCollectiveMarker      = "collective_marker_overlap"     // the change began inside a collective's marker interval on this rank
	ReasonNoCollectiveMarker    = "no_collective_marker"          // no marker of this rank matches the change's onset
	ReasonMarkerWithoutIdentity = "marker_without_identity"       // only markers without communicator and sequence number match: synchrony judged by wall clock over the world
	ReasonMemberSynchrony       = "member_synchrony"              // enough of the communicator's members change at their own marker of the same collective
	ReasonInsufficientSynchrony = "insufficient_member_synchrony" // too few members change at their marker of it
	ReasonWorldSynchrony        = "world_synchrony"               // bare markers: enough ranks change within the synchrony window

	// NCCL's accounting.
	ReasonAccountingCovers    = "nccl_accounting_covers"    // NCCL's reported memory grew by the excess: confirmed
	ReasonAccountingPartial   = "nccl_accounting_partial"   // NCCL's memory grew, but by less than the excess: part of the change is not NCCL's
	ReasonAccountingUncovered = "nccl_accounting_uncovered" // NCCL reported during the change and its memory did not grow: not collective
	ReasonAccountingUnsampled = "nccl_accounting_unsampled" // NCCL reports exist, but too few where the change could have been to tell
	ReasonAccountingUntracked = "nccl_accounting_untracked" // the rank's NCCL totals do not follow its buffers (cuMem off, or never moving from 0): timing decides
	// Where this rank's reports cannot tell, the collective's synchronized
	// members' reports decide, each over its own change's window.
	ReasonAccountingMembersCover     = "nccl_accounting_members_cover"     // on the members NCCL's memory grew by their excess: confirmed
	ReasonAccountingMembersUncovered = "nccl_accounting_members_uncovered" // no member's reports show growth where together they surely would have: not collective
	// Where too few reports fell where the change could have been, the
	// communicator's record over the job decides (evidence-mode §2.3).
	ReasonAccountingCommUncovered = "nccl_accounting_comm_uncovered" // no report could tell, and NCCL's reports denied most of the co-timed changes of this communicator and of its size class (NCCL's or another) they could check in the job, or (none decided) showed nothing inside its like ops often enough that the members' misses deny it: more likely not collective
	// A change no memory sample saw, which NCCL's reports show inside an op
	// of the communicator (evidence-mode §2.4).
	ReasonAccountingOnly = "nccl_accounting_only" // NCCL's total rose above its level on both sides inside the op and no sample of the rank lies in the change: confirmed from the accounting alone, with no peak sample
	// An op of the rank that neither its samples nor its reports could
	// see, whose collective NCCL's reports on the other members show
	// holding transient buffers (evidence-mode §2.5).
	ReasonAccountingMembersOnly = "nccl_accounting_members_only" // no sample or report of the rank lies where the change could have been; NCCL's reports on the collective's members show its buffers, which a collective allocates on every member: confirmed from the members' accounting, with no peak sample

	// What separates a collective cause from a co-timed one without
	// accounting.
	ReasonStepAtFirstUse     = "step_at_first_use"               // a step at the first use of a communicator's op on every synchronized member: NCCL's lazy buffers
	ReasonResolvedInInterval = "resolved_in_collective_interval" // on every member the spike rose at the launch and fell at the end of the collective, sampled densely
	ReasonCotimedOnly        = "cotimed_without_accounting"      // co-timed with the collective on its members, and nothing tells it from a co-timed non-collective cause: at most likely
	ReasonApproximateTiming  = "approximate_marker_timing"       // the marker's time is approximate: not enough alone for confident

	// The physics of real jobs (evidence-mode §7).
	ReasonOutlastsCollective = "outlasts_collective" // the change lasted more than 5 times its candidate collectives' intervals: another tenant's or the job's own memory, not those collectives' (unless NCCL's accounting covers it)
	ReasonCommReleased       = "comm_released"       // a step down at the end of a communicator's last op on every synchronized member: NCCL freed its buffers (ncclCommAbort after a hang, or its destruction)
	ReasonBaselineCreep      = "baseline_creep"      // the rank's baseline was creeping (a leak) without a step: the excess is over the level the creep had reached
	ReasonNewProcess         = "new_process"         // the change came within a baseline span of a new session of the rank (a restarted process): its level is a new series, not a step
	ReasonCoarseSampling     = "coarse_sampling"     // the rank's samples, or some members', are farther apart than the collective lasted: the onset is known to within the sampling interval (the claim covers it) and members without a sample during the collective are not judged

	// Where the memory was measured.
	ReasonDeviceWideMemory = "device_wide_memory" // the rank's used memory in the interval was the whole GPU's (DCGM, NVML device info, cudaMemGetInfo), which counts other processes' memory on it, such as other ranks' CUDA contexts on GPU 0: its hidden memory and peak may be inflated (docs/gpu-metrics-join.md)
)

// Unsampled reports whether no memory sample of r's rank measured its
// change: NCCL's reports, its own or its members', made it, and its
// ExcessBytes is the growth they show.
func Unsampled(r *attribution.Result) bool {
	return slices.Contains(r.ReasonCodes, ReasonAccountingOnly) || slices.Contains(r.ReasonCodes, ReasonAccountingMembersOnly)
}

// AllReasonCodes lists every evidence-mode reason code.
var AllReasonCodes = []string{
	ReasonExcessOverBaseline, ReasonPersistentStep, ReasonExcessCorroborated,
	ReasonCollectiveMarker, ReasonNoCollectiveMarker, ReasonMarkerWithoutIdentity,
	ReasonMemberSynchrony, ReasonInsufficientSynchrony, ReasonWorldSynchrony,
	ReasonAccountingCovers, ReasonAccountingPartial, ReasonAccountingUncovered, ReasonAccountingUnsampled, ReasonAccountingUntracked,
	ReasonAccountingMembersCover, ReasonAccountingMembersUncovered, ReasonAccountingCommUncovered, ReasonAccountingOnly, ReasonAccountingMembersOnly,
	ReasonStepAtFirstUse, ReasonResolvedInInterval, ReasonCotimedOnly, ReasonApproximateTiming,
	ReasonCoarseSampling, ReasonOutlastsCollective, ReasonNewProcess, ReasonBaselineCreep, ReasonCommReleased,
	ReasonDeviceWideMemory,
}
