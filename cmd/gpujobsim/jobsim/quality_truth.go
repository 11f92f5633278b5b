package jobsim

// QualityTruth is the ground truth of a quality case, in the layout the project's shared
// quality benchmark reads (truth.json), so the same case can be scored by either scorer.
// Times are in each rank's own clock (the timestamps of its events).
type QualityTruth struct {
	Family           string `json:"family"`
	Seed             int64  `json:"seed"`
	Variant          int    `json:"variant"`
	VariantNote      string `json:"variant_note"`
	JobID            string `json:"job_id"`
	Description      string `json:"description"`
	WorldSize        int    `json:"world_size"`
	Hosts            int    `json:"hosts"`
	DeviceTotalBytes int64  `json:"device_total_bytes"`
	DurationNs       int64  `json:"duration_ns"`
	Steps            int    `json:"steps"`
	StepMeanNs       int64  `json:"step_mean_ns"`
	// Params are the family's draws (episode steps, offsets, group sizes).
	Params                   map[string]any             `json:"params"`
	Ranks                    map[string]QualityRankInfo `json:"ranks"`
	PersistentRecallWindowNs int64                      `json:"persistent_recall_window_ns"`
	Comms                    map[string]QualityComm     `json:"comms"`
	NCCLStats                QualityStatsInfo           `json:"nccl_stats"`
	// Collective are the true collective-caused episodes, Decoys the non-collective ones:
	// one entry per (episode, rank).
	Collective []QualityEpisode `json:"collective"`
	Decoys     []QualityEpisode `json:"decoys"`
}

// QualityRankInfo is one rank's placement and series.
type QualityRankInfo struct {
	Host          string `json:"host"`
	ClockOffsetNs int64  `json:"clock_offset_ns"`
	// ClockDriftPPM is how fast the host's offset grows (µs per second of the job).
	ClockDriftPPM       float64          `json:"clock_drift_ppm,omitempty"`
	SamplingHz          float64          `json:"sampling_hz"`
	NSamples            int              `json:"n_samples"`
	FirstSampleNs       int64            `json:"first_sample_ns"`
	LastSampleNs        int64            `json:"last_sample_ns"`
	NMarkers            int              `json:"n_markers"`
	BaselineHiddenBytes int64            `json:"baseline_hidden_bytes"`
	NoiseSigmaBytes     int64            `json:"noise_sigma_bytes"`
	CommBaselineBytes   map[string]int64 `json:"comm_baseline_bytes"`
	// CommFreedNs is when (this rank's clock) a communicator's baseline memory went
	// with the rank's process (its death); absent: held to the end or released by a
	// true episode (persistent_comm_abort).
	CommFreedNs map[string]int64 `json:"comm_freed_ns,omitempty"`
}

// QualityComm is one communicator: its id as markers carry it and its members.
type QualityComm struct {
	ID     string `json:"id"`
	NRanks int    `json:"nranks"`
	Ranks  []int  `json:"ranks"`
	// Manager names the communicator whose memory manager this one shares (split
	// with shared resources: its baseline and accounting are that one's); empty
	// when it has its own.
	Manager string `json:"manager,omitempty"`
}

// QualityStatsInfo says whether NCCL's own memory accounting was written.
type QualityStatsInfo struct {
	Written    bool   `json:"written"`
	Records    int    `json:"records"`
	EventType  string `json:"event_type"`
	IntervalNs int64  `json:"interval_ns"`
}

// QualityEpisode is one injected episode on one rank. A persistent one (a step up that
// stays) ends at the rank's last sample and is matched only in [StartNs, RecallEndNs].
type QualityEpisode struct {
	Episode string `json:"episode"`
	Rank    int    `json:"rank"`
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
	Kind    string `json:"kind"`
	Bytes   int64  `json:"bytes"`
	// Op, Comm, CommID and Seq name the collective the episode is tied to (for a decoy:
	// the one it is co-timed with); empty for an unrelated spike.
	Op              string `json:"op,omitempty"`
	Comm            string `json:"comm,omitempty"`
	CommID          string `json:"comm_id,omitempty"`
	Seq             *int64 `json:"seq,omitempty"`
	RanksInEpisode  int    `json:"ranks_in_episode"`
	SamplesObserved int    `json:"samples_observed"`
	Persistent      bool   `json:"persistent,omitempty"`
	RecallEndNs     int64  `json:"recall_end_ns,omitempty"`
}

// Window is the span a result must overlap to find the episode (or, for a decoy, to be
// said to call it): a persistent step only in its first PersistentRecallWindow.
func (e QualityEpisode) Window() (start, end int64) {
	if e.Persistent {
		return e.StartNs, e.RecallEndNs
	}
	return e.StartNs, e.EndNs
}
