// Package jobsim simulates a distributed GPU training job for collectiveattr: N ranks
// spread over hosts (eight GPUs per host), each reporting allocator and device memory,
// NCCL collective spans and phase spans, with injected hidden-memory behaviour whose
// ground truth is known. Everything is a pure function of the Config (and its seed), so
// a run can be replayed exactly; only the real-time mode reads the wall clock.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md; "contract §N" to
// docs/processor-contract.md.
package jobsim

import (
	"errors"
	"fmt"
	"time"
)

// Config describes one simulated job. The zero value is not usable: start from
// DefaultConfig.
type Config struct {
	JobID       string
	Ranks       int
	GPUsPerHost int
	// MissingRanks is the number of ranks (the highest ones) that never report, although
	// world_size still counts them.
	MissingRanks int
	// LateRanks is the number of ranks (the highest reporting ones) that start reporting
	// LateBy after the job starts.
	LateRanks int
	LateBy    time.Duration
	Seed      int64

	Duration   time.Duration
	SampleRate float64 // memory samples per second per rank
	StepPeriod time.Duration

	// CollectiveSpikes is the number of transient hidden-memory spikes injected at
	// collectives, spread evenly over the steps after WarmupSteps.
	CollectiveSpikes int
	// UnrelatedSpikes is the number of single-rank spikes injected in the forward pass, far
	// from any collective.
	UnrelatedSpikes int
	// CotimedDecoys is the number of non-collective spikes injected on every rank while
	// an all_reduce runs, shaped like a collective spike (e.g. an optimizer workspace
	// allocated during the gradient all_reduce). NCCL's accounting does not hold them.
	CotimedDecoys int
	// StepUp injects, at the first reduce_scatter, the lazy connection of NCCL buffers: a
	// transient spike on every rank that leaves a permanent step up behind.
	StepUp bool
	// ClockSkew is the largest per-host clock offset (uniform in ±ClockSkew).
	ClockSkew   time.Duration
	WarmupSteps int
	// NCCLStats adds NCCL's own memory accounting of the world communicator:
	// comm_memory_stats stormlog records and the nccl.comm.memory.total gauge.
	NCCLStats bool
	// MemberLists says which markers list the communicator's members
	// (nccl.comm.ranks): MembersDeclared (the zero value) as the project's
	// PyTorch module does, MembersOnEveryMarker as NCCL instrumentation
	// without that module does.
	MemberLists MemberLists
}

// MemberLists says which of a rank's collective markers list the
// communicator's members; every marker keeps nccl.comm.nranks.
type MemberLists int

const (
	// MembersDeclared lists them on each rank's first marker of the
	// communicator and again on its first marker after each
	// DeclareInterval of job time (a collector that restarted without its
	// state learns the membership within that).
	MembersDeclared MemberLists = iota
	// MembersOnEveryMarker lists them on every marker: R² list entries per
	// collective of R ranks.
	MembersOnEveryMarker
)

// DeclareInterval is how often a rank lists its communicator's members
// again after its first marker (collectiveattr_torch's DECLARE_INTERVAL_NS).
const DeclareInterval = time.Minute

// DefaultConfig is a 16-rank job on two hosts, 30 s at 10 Hz, whose injected collective
// spikes the medium preset finds with high confidence and whose unrelated spikes it does
// not call collective (see DESIGN in scenario.go).
func DefaultConfig() Config {
	return Config{
		JobID:            "llm-pretrain-0042",
		Ranks:            16,
		GPUsPerHost:      8,
		LateRanks:        1,
		LateBy:           4 * time.Second,
		Seed:             1,
		Duration:         30 * time.Second,
		SampleRate:       10,
		StepPeriod:       2 * time.Second,
		CollectiveSpikes: 5,
		UnrelatedSpikes:  2,
		StepUp:           true,
		ClockSkew:        15 * time.Millisecond,
		WarmupSteps:      2,
	}
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	var errs []error
	if c.JobID == "" {
		errs = append(errs, errors.New("job id must not be empty"))
	}
	if c.Ranks < 1 || c.Ranks > 65536 {
		errs = append(errs, fmt.Errorf("ranks must be in [1, 65536], got %d", c.Ranks))
	}
	if c.GPUsPerHost < 1 {
		errs = append(errs, fmt.Errorf("gpus per host must be >= 1, got %d", c.GPUsPerHost))
	}
	if c.MissingRanks < 0 || c.MissingRanks >= c.Ranks {
		errs = append(errs, fmt.Errorf("missing ranks must be in [0, ranks), got %d", c.MissingRanks))
	}
	if c.LateRanks < 0 || c.LateRanks+c.MissingRanks >= c.Ranks {
		errs = append(errs, fmt.Errorf("late ranks must be in [0, ranks - missing ranks), got %d", c.LateRanks))
	}
	if c.LateBy < 0 {
		errs = append(errs, fmt.Errorf("late-by must be >= 0, got %s", c.LateBy))
	}
	if c.SampleRate <= 0 || c.SampleRate > 1000 {
		errs = append(errs, fmt.Errorf("sample rate must be in (0, 1000] Hz, got %g", c.SampleRate))
	}
	if c.StepPeriod < stepTemplateLength {
		errs = append(errs, fmt.Errorf("step period must be >= %s (one forward, backward and optimizer pass), got %s", stepTemplateLength, c.StepPeriod))
	}
	if c.Duration < c.StepPeriod {
		errs = append(errs, fmt.Errorf("duration must be at least one step period (%s), got %s", c.StepPeriod, c.Duration))
	}
	if c.CollectiveSpikes < 0 || c.UnrelatedSpikes < 0 || c.CotimedDecoys < 0 {
		errs = append(errs, errors.New("spike counts must be >= 0"))
	}
	if c.ClockSkew < 0 || c.ClockSkew > time.Second {
		errs = append(errs, fmt.Errorf("clock skew must be in [0, 1s], got %s", c.ClockSkew))
	}
	if c.MemberLists != MembersDeclared && c.MemberLists != MembersOnEveryMarker {
		errs = append(errs, fmt.Errorf("member lists must be declared or every marker, got %d", c.MemberLists))
	}
	if c.WarmupSteps < 0 {
		errs = append(errs, fmt.Errorf("warmup steps must be >= 0, got %d", c.WarmupSteps))
	}
	return errors.Join(errs...)
}
