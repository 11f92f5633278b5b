package jobsim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// DESIGN. The defaults are chosen against the reference attribution
// (reference §2.3/§2.4, medium preset) so that the demo separates the injected behaviours:
//
//   - Hidden memory (device used − allocator reserved) sits on a per-rank baseline that is
//     quantised to 2 MiB and changes only rarely (NVML reports whole pages), so the
//     per-rank median absolute deviation is 0 and the robust z-score falls back to the
//     standard deviation: a spike of 1.5–2 GiB that covers a few percent of a rank's samples
//     scores z ≥ 3 (threshold 2.5) while the baseline wobble scores ≈ 0.
//   - A collective spike lasts from 20 ms before the collective to 140 ms after it, so every
//     spike sample lies within the 150 ms marker window of the collective span's end and the
//     spikes of different ranks lie within the 120 ms synchrony window of each other (host
//     clock skew stays ≤ 15 ms).
//   - Collectives only run in backward, optimizer and the final barrier; unrelated spikes sit
//     in the forward pass, ≥ 300 ms from any collective, on one rank: no marker, no synchrony,
//     confidence 0.02, dropped by every preset.
//   - Confidence with a marker and full z / divergence strength is 0.66 + 0.34·(k−1)/(W−1)
//     for k of W ranks spiking together: all ranks → 1.0 (confident), one host of two → 0.82
//     (confident), a quarter of the ranks → 0.73 (likely).

// Offsets inside one training step (the step template). A step period longer than the
// template leaves the GPU idle at the end of the step (input pipeline stall).
const (
	forwardStart       = 0
	forwardEnd         = 700 * time.Millisecond
	backwardEnd        = 1500 * time.Millisecond
	optimizerEnd       = 1900 * time.Millisecond
	stepTemplateLength = 1950 * time.Millisecond

	spikeLead  = 20 * time.Millisecond  // hidden memory rises this long before the collective starts
	spikeTrail = 140 * time.Millisecond // and falls this long after it ends
)

// Collective operation names as NCCL calls them.
const (
	AllReduce     = "all_reduce"
	AllGather     = "all_gather"
	ReduceScatter = "reduce_scatter"
	Broadcast     = "broadcast"
	Barrier       = "barrier"
)

// collectiveTemplate is one collective call of every step.
type collectiveTemplate struct {
	op        string
	offset    time.Duration
	duration  time.Duration
	msgBytes  int64
	phaseName string // the phase it runs in, "" for none (the step-level barrier)
}

var stepCollectives = []collectiveTemplate{
	{ReduceScatter, 1150 * time.Millisecond, 30 * time.Millisecond, 512 << 20, "backward"},
	{AllReduce, 1350 * time.Millisecond, 60 * time.Millisecond, 1 << 30, "backward"},
	{AllGather, 1600 * time.Millisecond, 40 * time.Millisecond, 512 << 20, "optimizer"},
	{Broadcast, 1780 * time.Millisecond, 10 * time.Millisecond, 8 << 20, "optimizer"},
	{Barrier, 1920 * time.Millisecond, 5 * time.Millisecond, 0, ""},
}

var phaseTemplates = []struct {
	name       string
	start, end time.Duration
}{
	{"forward", forwardStart, forwardEnd},
	{"backward", forwardEnd, backwardEnd},
	{"optimizer", backwardEnd, optimizerEnd},
}

// Device facts: an 80 GB H100 as DCGM and NVML report it.
const (
	mib                  = int64(1) << 20
	gib                  = int64(1) << 30
	deviceTotalBytes     = 81559 * mib
	driverReservedBytes  = 512 * mib // DCGM_FI_DEV_FB_RESERVED: never usable by the process
	stepUpPermanentBytes = 256 * mib
	modelName            = "NVIDIA H100 80GB HBM3"
)

// Rank is one process of the job, pinned to one GPU.
type Rank struct {
	Rank      int
	LocalRank int
	Host      string
	GPU       int
	UUID      string
	// ClockSkew is added to every timestamp the rank reports (its host's clock offset).
	ClockSkew time.Duration
	// SampleOffset is the phase of the rank's sampler inside one sample period.
	SampleOffset time.Duration
	// Start is when the rank starts reporting; Missing ranks never do.
	Start   time.Duration
	Missing bool
	// baseline hidden memory (CUDA context, cuBLAS workspace, NCCL base): 2 MiB aligned.
	baselineHidden int64
	reserved       int64
}

// Collective is one collective call on one rank.
type Collective struct {
	Op       string
	Step     int
	Seq      int64
	Start    time.Duration
	End      time.Duration
	MsgBytes int64
	Phase    string
}

// Injection kinds, as reported in the ground truth.
const (
	KindCollectiveSpike = "collective_spike"
	KindStepUp          = "step_up"
	KindUnrelatedSpike  = "unrelated_spike"
	KindCotimedDecoy    = "cotimed_decoy"
)

// IsCollectiveCaused tells whether an injection kind is memory NCCL allocated (and its
// accounting holds): collective spikes and the step up, not the decoys.
func IsCollectiveCaused(kind string) bool {
	return kind == KindCollectiveSpike || kind == KindStepUp
}

// Injection is one injected hidden-memory event: what happened, where and when (job time,
// before clock skew), and what the attribution is expected to say about it.
type Injection struct {
	ID         int
	Kind       string
	Step       int
	Collective string // for collective spikes and the step up
	Ranks      []int  // ranks that report the spike (missing and not-yet-started ranks excluded)
	Start      time.Duration
	End        time.Duration
	PeakBytes  int64 // largest transient size over the ranks
	// PermanentBytes is the step up left behind (step up only).
	PermanentBytes int64
	// Expected is the classification the reference algorithm should give with the medium
	// preset ("not reported" when it should drop the spike).
	Expected string
	Note     string

	perRank map[int]rankSpike
}

// rankSpike is an injection as one rank sees it (job time, before clock skew).
type rankSpike struct {
	size       int64
	start, end time.Duration
}

// Scenario is the fully expanded job: ranks, per-step collectives and injections.
type Scenario struct {
	Config     Config
	Ranks      []Rank
	Steps      int
	Injections []Injection
	CommID     string
}

// NewScenario expands cfg deterministically.
func NewScenario(cfg Config) (*Scenario, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6770756a6f6273)) //nolint:gosec // simulation, not crypto
	s := &Scenario{Config: cfg, Steps: int(cfg.Duration / cfg.StepPeriod)}
	s.CommID = fmt.Sprintf("%016x", rng.Uint64())

	hosts := (cfg.Ranks + cfg.GPUsPerHost - 1) / cfg.GPUsPerHost
	hostSkew := make([]time.Duration, hosts)
	for h := range hostSkew {
		if cfg.ClockSkew > 0 {
			hostSkew[h] = time.Duration(rng.Int64N(int64(2*cfg.ClockSkew)+1)) - cfg.ClockSkew
		}
	}
	period := s.samplePeriod()
	reporting := cfg.Ranks - cfg.MissingRanks
	for r := range cfg.Ranks {
		h := r / cfg.GPUsPerHost
		rk := Rank{
			Rank:           r,
			LocalRank:      r % cfg.GPUsPerHost,
			Host:           fmt.Sprintf("gpu-node-%02d", h),
			GPU:            r % cfg.GPUsPerHost,
			UUID:           fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff),
			ClockSkew:      hostSkew[h],
			SampleOffset:   time.Duration(rng.Int64N(int64(period))),
			baselineHidden: (520 + 2*rng.Int64N(40)) * mib,
			reserved:       (52*1024 + 2*rng.Int64N(256)) * mib,
		}
		if r >= reporting {
			rk.Missing = true
		} else if r >= reporting-cfg.LateRanks {
			rk.Start = cfg.LateBy
		}
		s.Ranks = append(s.Ranks, rk)
	}
	s.inject(rng)
	return s, nil
}

func (s *Scenario) samplePeriod() time.Duration {
	return time.Duration(float64(time.Second) / s.Config.SampleRate)
}

// reportsAt tells whether rank r reports at job time t.
func (s *Scenario) reportsAt(r int, t time.Duration) bool {
	rk := &s.Ranks[r]
	return !rk.Missing && t >= rk.Start && t < s.Config.Duration
}

// collectiveOn returns the collective template call c of step on rank r, with the rank's
// arrival jitter (a few ms, deterministic).
func (s *Scenario) collectiveOn(r, step, c int) Collective {
	t := stepCollectives[c]
	jitter := time.Duration(hash3(uint64(s.Config.Seed), uint64(r), uint64(step*len(stepCollectives)+c))%5000) * time.Microsecond
	start := time.Duration(step)*s.Config.StepPeriod + t.offset + jitter
	return Collective{
		Op:       t.op,
		Step:     step,
		Seq:      int64(step*len(stepCollectives) + c),
		Start:    start,
		End:      start + t.duration,
		MsgBytes: t.msgBytes,
		Phase:    t.phaseName,
	}
}

func collectiveIndex(op string) int {
	for i, c := range stepCollectives {
		if c.op == op {
			return i
		}
	}
	panic("unknown collective " + op)
}

func (s *Scenario) inject(rng *rand.Rand) {
	cfg := s.Config
	w := cfg.Ranks
	roundMiB := func(b int64) int64 { return b / (2 * mib) * (2 * mib) }
	addSpike := func(in *Injection, r int, sp rankSpike) {
		in.Ranks = append(in.Ranks, r)
		in.perRank[r] = sp
		in.PeakBytes = max(in.PeakBytes, sp.size)
	}
	atCollective := func(call Collective, size int64) rankSpike {
		return rankSpike{size: size, start: call.Start - spikeLead, end: call.End + spikeTrail}
	}

	if cfg.StepUp {
		c := collectiveIndex(ReduceScatter)
		in := Injection{Kind: KindStepUp, Step: 0, Collective: ReduceScatter, PermanentBytes: stepUpPermanentBytes, perRank: map[int]rankSpike{},
			Note: "lazy NCCL buffer connection at the first reduce_scatter: transient, then a permanent step up"}
		size := roundMiB(gib + rng.Int64N(gib/2))
		for r := range w {
			call := s.collectiveOn(r, 0, c)
			if s.reportsAt(r, call.Start) {
				addSpike(&in, r, atCollective(call, size))
			}
		}
		in.Start = stepCollectives[c].offset - spikeLead // envelope; narrowed to the ranks' windows below
		s.Injections = append(s.Injections, in)
	}

	// Collective spikes: steps spread over [warmup, steps-1), ops and rank subsets cycling.
	ops := []string{AllReduce, AllGather, ReduceScatter, Broadcast, AllReduce}
	usedSteps := map[int]bool{}
	avail := s.Steps - 1 - cfg.WarmupSteps
	for i := 0; i < cfg.CollectiveSpikes && avail > 0; i++ {
		step := cfg.WarmupSteps + i*avail/cfg.CollectiveSpikes
		op := ops[i%len(ops)]
		usedSteps[step] = true
		c := collectiveIndex(op)
		var subset []int
		var note string
		switch i % 4 {
		case 1: // one host: a tensor-parallel group inside a node
			for r := range min(cfg.GPUsPerHost, w) {
				subset = append(subset, r)
			}
			note = "ranks of one host"
		case 3: // a quarter of the job
			for r := range max(2, w/4) {
				subset = append(subset, r)
			}
			note = "a quarter of the ranks"
		default:
			for r := range w {
				subset = append(subset, r)
			}
			note = "all ranks"
		}
		in := Injection{Kind: KindCollectiveSpike, Step: step, Collective: op, perRank: map[int]rankSpike{}, Note: note}
		base := 3*gib/2 + rng.Int64N(gib/2)
		for _, r := range subset {
			call := s.collectiveOn(r, step, c)
			if s.reportsAt(r, call.Start) {
				addSpike(&in, r, atCollective(call, roundMiB(base+rng.Int64N(gib/8))))
			}
		}
		in.Start = time.Duration(step)*cfg.StepPeriod + stepCollectives[c].offset - spikeLead
		s.Injections = append(s.Injections, in)
	}

	// Unrelated single-rank spikes in the forward pass.
	for i := range cfg.UnrelatedSpikes {
		if s.Steps <= cfg.WarmupSteps {
			break
		}
		step := cfg.WarmupSteps + (i*7+3)%max(1, s.Steps-cfg.WarmupSteps)
		r := rng.IntN(w - cfg.MissingRanks)
		start := time.Duration(step)*cfg.StepPeriod + 250*time.Millisecond + time.Duration(rng.Int64N(150))*time.Millisecond
		in := Injection{Kind: KindUnrelatedSpike, Step: step, Start: start, End: start + 250*time.Millisecond, perRank: map[int]rankSpike{},
			Note: "single rank, forward pass, no collective nearby (e.g. a cuBLAS workspace)"}
		if s.reportsAt(r, start) {
			addSpike(&in, r, rankSpike{size: roundMiB(3*gib/2 + rng.Int64N(gib/2)), start: in.Start, end: in.End})
		}
		s.Injections = append(s.Injections, in)
	}
	s.injectCotimedDecoys(rng, usedSteps, addSpike, atCollective)

	for i := range s.Injections {
		in := &s.Injections[i]
		first := true
		for _, sp := range in.perRank {
			if first || sp.start < in.Start {
				in.Start = sp.start
			}
			if first || sp.end > in.End {
				in.End = sp.end
			}
			first = false
		}
		sort.Ints(in.Ranks)
	}
	sort.SliceStable(s.Injections, func(i, j int) bool { return s.Injections[i].Start < s.Injections[j].Start })
	for i := range s.Injections {
		in := &s.Injections[i]
		in.ID = i + 1
		in.Expected = expectedClassification(in, w)
	}
}

// expectedClassification applies the reference score (§2.3 S8, medium preset) under the
// simulator's design: every spike sample is a z-outlier with full divergence strength, so
// only the marker and the synchrony terms vary.
func expectedClassification(in *Injection, worldSize int) string {
	// A co-timed decoy looks like a collective spike to the reference (a marker, synchrony,
	// an outlier) and is scored like one: the reference calls it collective, wrongly.
	k := len(in.Ranks)
	if in.Kind == KindUnrelatedSpike || k == 0 {
		return "not reported"
	}
	if k == 1 || worldSize <= 1 {
		return attribution.CollectiveSuspect
	}
	sync := min(1.0, float64(k-1)/float64(worldSize-1))
	conf := 0.34 + 0.34*sync + 0.16 + 0.16
	switch {
	case conf >= 0.8:
		return attribution.CollectiveConfident
	case conf >= 0.6:
		return attribution.CollectiveLikely
	default:
		return attribution.CollectiveSuspect
	}
}

// hash3 is a small deterministic mixer (splitmix64 over three words) for per-item jitter
// that must not depend on generation order.
func hash3(a, b, c uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ b*0xbf58476d1ce4e5b9 ^ c*0x94d049bb133111eb
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
