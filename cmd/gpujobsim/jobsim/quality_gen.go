package jobsim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"
)

// PersistentRecallWindow is how long after its onset a persistent step counts as found:
// a step is reported once, at its onset (evidence-mode §3).
const PersistentRecallWindow = 500 * time.Millisecond

const (
	msNs   = int64(time.Millisecond)
	secNs  = int64(time.Second)
	pageSz = 2 * mib // NVML reports device memory in whole 2 MiB pages
)

// Episode kinds of the quality truth.
const (
	KindTransientAllReduce   = "transient_all_reduce"
	KindPersistentStepUp     = "persistent_stepup"
	KindTransientTPAllReduce = "transient_tp_all_reduce"
	KindTransientP2P         = "transient_p2p"
	KindDDPDecoy             = "ddp_activation_workspace"
)

var singleRankDecoyKinds = []string{"single_rank_cudnn_workspace", "single_rank_cublas_workspace",
	"single_rank_external_process", "single_rank_cupti_buffer"}

// overlay is extra hidden memory on one rank over [start, end) in true time; open ones
// never end (a persistent step).
type overlay struct {
	start, end int64
	open       bool
	bytes      int64
	// slope adds slope × (t − start) bytes (a leak rising steadily).
	slope float64
}

// qualityMarker is one rank-local collective marker at the op's launch on that rank.
type qualityMarker struct {
	t        int64
	id       MarkerIdentity
	duration int64
}

// episode is a truth entry in true time, before it is put in the rank's clock.
type episode struct {
	QualityEpisode
	start, end int64
	open       bool
}

// opInstance is one op on a communicator: when it launches (true time), each member's
// launch delay, how long it runs and the step it must end in.
type opInstance struct {
	op       string
	t        int64
	ranks    []int
	launch   map[int]int64
	comm     string
	seq      int64
	duration int64
	stepEnd  int64
}

type qualityStep struct {
	k          int
	start, len int64
}

// qualityJob is a quality case being built: the family's build fills overlays, truth and
// markers; render turns it into events.
type qualityJob struct {
	family  string
	seed    int64
	variant int
	shape   QualityShape
	rng     *rand.Rand
	jobID   string

	t0, duration, tEnd, stepMean int64
	hosts                        int
	hostOffset                   []int64
	baseHidden                   []int64
	noiseSigma                   []float64
	sampleHz                     []float64
	jitter                       [2]float64
	baseReserved                 []int64
	reservedSteps                [][][2]int64 // (true time, growth)
	churn                        []float64    // extra noise sigma, bytes (noisy family)
	// driftPPM is each host's clock drift: its offset grows by driftPPM µs per second.
	driftPPM []float64
	// dead are the spans (true time) in which a rank's process is gone: it writes
	// nothing; each one ends in a new process (a new session and pid).
	dead [][][2]int64
	// hostPollHz, when > 0, samples every GPU of a host in one sweep at that rate
	// (DCGM, nvidia-smi) instead of each rank on its own.
	hostPollHz float64
	// statsIntervalNs is how often a rank reports NCCL's accounting.
	statsIntervalNs int64
	// commLife is the span (true time) in which a communicator exists when it does not
	// for the whole job: created later (reports from then, baseline 0) or aborted.
	commLife map[string][2]int64
	// commBase fixes NCCL's persistent memory of (comm, rank) when a family's physics
	// needs its size (an abort frees it).
	commBase map[string]map[int]int64
	// commFreed is when (true time) a communicator's persistent memory went with its
	// rank's process (its death), by comm and rank; a survivor's abort is a true
	// episode instead (persistent_comm_abort).
	commFreed map[string]map[int]int64
	// manager maps a communicator split with shared resources to the one whose memory
	// manager it shares (their accounting reports one total); cumem is how that manager
	// sees NCCL's buffers.
	manager map[string]string
	cumem   cumemAccounting

	overlays        [][]overlay
	truthCollective []episode
	decoys          []episode
	markers         [][]qualityMarker
	steps           []qualityStep
	worldComm       string // the name of the world communicator worldOps uses
	commSeq         map[string]int64
	members         map[string][]int
	params          map[string]any
	episodes        int
}

func seededRand(parts ...string) *rand.Rand {
	h := fnv.New128a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	var a, b uint64
	for i := range 8 {
		a = a<<8 | uint64(sum[i])
		b = b<<8 | uint64(sum[8+i])
	}
	return rand.New(rand.NewPCG(a, b)) //nolint:gosec // simulation, not crypto
}

func newQualityJob(family string, seed int64, shape QualityShape) *qualityJob {
	rng := seededRand("collectiveattr-quality", family, fmt.Sprint(seed))
	n := shape.Ranks
	j := &qualityJob{
		family: family, seed: seed, variant: int(((seed % 3) + 3) % 3), shape: shape, rng: rng,
		jobID:   fmt.Sprintf("quality-%s-%d", family, seed),
		hosts:   (n + shape.RanksPerHost - 1) / shape.RanksPerHost,
		jitter:  shape.SampleJitter,
		commSeq: map[string]int64{}, members: map[string][]int{}, params: map[string]any{},
		statsIntervalNs: commStatsIntervalNs, worldComm: "world", commLife: map[string][2]int64{}, commBase: map[string]map[int]int64{},
		commFreed: map[string]map[int]int64{},
		manager:   map[string]string{},
	}
	j.t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() + rng.Int64N(secNs)
	j.duration = j.uniformDur(shape.Duration)
	j.tEnd = j.t0 + j.duration
	j.stepMean = j.uniformDur(shape.Step)
	j.hostOffset = make([]int64, j.hosts)
	for h := 1; h < j.hosts; h++ {
		j.hostOffset[h] = j.intIn(-int64(shape.HostOffset), int64(shape.HostOffset))
	}
	for range n {
		j.baseHidden = append(j.baseHidden, j.intIn(shape.BaseHidden[0]/pageSz, shape.BaseHidden[1]/pageSz)*pageSz)
		j.noiseSigma = append(j.noiseSigma, j.uniform(float64(shape.NoiseSigma[0]), float64(shape.NoiseSigma[1])))
		j.sampleHz = append(j.sampleHz, shape.SampleHz)
		j.baseReserved = append(j.baseReserved, j.intIn(shape.Reserved[0]/pageSz, shape.Reserved[1]/pageSz)*pageSz)
		var growth [][2]int64
		for range j.rng.IntN(4) {
			growth = append(growth, [2]int64{j.t0 + j.rng.Int64N(j.duration), j.intIn(128, 1024) * pageSz})
		}
		slices.SortFunc(growth, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		j.reservedSteps = append(j.reservedSteps, growth)
	}
	j.churn = make([]float64, n)
	j.driftPPM = make([]float64, j.hosts)
	j.dead = make([][][2]int64, n)
	j.overlays = make([][]overlay, n)
	j.markers = make([][]qualityMarker, n)
	j.steps = j.makeSteps()
	return j
}

func (j *qualityJob) uniform(a, b float64) float64 { return a + (b-a)*j.rng.Float64() }

// intIn is uniform over [a, b] inclusive.
func (j *qualityJob) intIn(a, b int64) int64 {
	if b <= a {
		return a
	}
	return a + j.rng.Int64N(b-a+1)
}

func (j *qualityJob) uniformDur(r [2]time.Duration) int64 {
	return int64(r[0]) + int64(j.rng.Float64()*float64(r[1]-r[0]))
}

func (j *qualityJob) hostOf(r int) int { return r / j.shape.RanksPerHost }

func (j *qualityJob) makeSteps() []qualityStep {
	var steps []qualityStep
	t := j.t0 + 300*msNs
	for k := 0; ; k++ {
		l := int64(float64(j.stepMean) * j.uniform(0.95, 1.05))
		if t+l > j.tEnd-300*msNs {
			return steps
		}
		steps = append(steps, qualityStep{k: k, start: t, len: l})
		t += l
	}
}

// commID is a stable hex id per communicator name: hex digits carry none of the
// reference's collective tokens.
func (j *qualityJob) commID(name string) string {
	h := fnv.New64a()
	h.Write([]byte(j.jobID + "/" + name))
	return fmt.Sprintf("0x%012x", h.Sum64()&0xffffffffffff)
}

func (j *qualityJob) addMembers(comm string, ranks ...int) {
	m := j.members[comm]
	for _, r := range ranks {
		if !slices.Contains(m, r) {
			m = append(m, r)
		}
	}
	slices.Sort(m)
	j.members[comm] = m
}

// capped is a collective duration U(lo, hi) ms that ends before the step does (never
// under floor ms).
func (j *qualityJob) capped(t, stepEnd int64, loMs, hiMs, floorMs int64) int64 {
	d := j.intIn(loMs, hiMs) * msNs
	return max(floorMs*msNs, min(d, stepEnd-t-40*msNs))
}

func (j *qualityJob) identity(op, comm string, seq, msg int64, peer int) MarkerIdentity {
	id := MarkerIdentity{CommID: j.commID(comm), Seq: seq, Op: op, MessageBytes: msg, NRanks: len(j.members[comm]), Peer: peer}
	if j.shape.CommRanksOnMarkers {
		id.CommRanks = slices.Clone(j.members[comm])
	}
	return id
}

// collective issues one op on comm: per-member launch delays in [0, spread] and one
// marker per member at its launch. Members must already be registered when the markers
// list the communicator's size.
func (j *qualityJob) collective(op string, t int64, ranks []int, comm string, msg, duration, spread, stepEnd int64) opInstance {
	seq := j.commSeq[comm]
	j.commSeq[comm] = seq + 1
	j.addMembers(comm, ranks...)
	inst := opInstance{op: op, t: t, ranks: ranks, launch: map[int]int64{}, comm: comm, seq: seq, duration: duration, stepEnd: stepEnd}
	for _, r := range ranks {
		inst.launch[r] = j.intIn(0, spread)
	}
	id := j.identity(op, comm, seq, msg, -1)
	for _, r := range ranks {
		j.markers[r] = append(j.markers[r], qualityMarker{t: t + inst.launch[r], id: id, duration: duration})
	}
	return inst
}

// p2p is one pipeline transfer src → dst: send on the sender, recv on the receiver.
func (j *qualityJob) p2p(t int64, src, dst int, msg int64, comm string, stepEnd int64) opInstance {
	seq := j.commSeq[comm]
	j.commSeq[comm] = seq + 1
	j.addMembers(comm, src, dst)
	d := j.capped(t, stepEnd, 200, 500, 120)
	inst := opInstance{op: "send/recv", t: t, ranks: []int{src, dst}, comm: comm, seq: seq, duration: d, stepEnd: stepEnd,
		launch: map[int]int64{src: j.intIn(0, 5*msNs), dst: j.intIn(0, 5*msNs)}}
	for _, e := range []struct {
		r, peer int
		op      string
	}{{src, dst, "send"}, {dst, src, "recv"}} {
		j.markers[e.r] = append(j.markers[e.r], qualityMarker{t: t + inst.launch[e.r], id: j.identity(e.op, comm, seq, msg, e.peer), duration: d})
	}
	return inst
}

// worldOps issues a step's world collectives: all_gather (p 0.3, or forced) early,
// reduce_scatter (p 0.25) mid-step, all_reduce at 55–65 % of the step.
func (j *qualityJob) worldOps(s qualityStep, allowAllGather, forceAllGather bool) map[string]opInstance {
	ops := map[string]opInstance{}
	world := j.worldRanks()
	if allowAllGather && (forceAllGather || j.rng.Float64() < 0.3) {
		ops["all_gather"] = j.collective("all_gather", s.start+int64(float64(s.len)*j.uniform(0.02, 0.06)), world, j.worldComm,
			j.intIn(64, 512)*mib, j.intIn(20, 80)*msNs, 30*msNs, s.start+s.len)
	}
	if j.rng.Float64() < 0.25 {
		ops["reduce_scatter"] = j.collective("reduce_scatter", s.start+int64(float64(s.len)*j.uniform(0.30, 0.45)), world, j.worldComm,
			j.intIn(64, 512)*mib, j.intIn(20, 80)*msNs, 30*msNs, s.start+s.len)
	}
	tAR := s.start + int64(float64(s.len)*j.uniform(0.55, 0.65))
	ops["all_reduce"] = j.collective("all_reduce", tAR, world, j.worldComm, j.intIn(256, 2048)*mib,
		j.capped(tAR, s.start+s.len, 200, 500, 120), 30*msNs, s.start+s.len)
	return ops
}

func (j *qualityJob) worldRanks() []int {
	w := make([]int, j.shape.Ranks)
	for r := range w {
		w[r] = r
	}
	return w
}

func (j *qualityJob) newEpisode(prefix string) string {
	j.episodes++
	return fmt.Sprintf("%s%04d", prefix, j.episodes)
}

func (j *qualityJob) tie(e *episode, inst opInstance, ranks int) {
	seq := inst.seq
	e.Op, e.Comm, e.CommID, e.Seq, e.RanksInEpisode = inst.op, inst.comm, j.commID(inst.comm), &seq, ranks
}

// spikeOnCollective injects a transient spike on ranks at inst: caused by it (truth:
// from the rank's launch until the op ends) or co-timed with it (a decoy starting
// −40..+60 ms around the launch, lasting DecoyLength, inside the step).
func (j *qualityJob) spikeOnCollective(inst opInstance, ranks []int, bytes int64, kind string, truth bool) {
	prefix := "d"
	if truth {
		prefix = "c"
	}
	ep := j.newEpisode(prefix)
	endCommon := inst.t + 30*msNs + inst.duration
	for _, r := range ranks {
		var st, en int64
		if truth {
			st = inst.t + inst.launch[r] + j.intIn(0, 10*msNs)
			en = endCommon + j.intIn(0, 5*msNs)
		} else {
			st = inst.t + inst.launch[r] + j.intIn(-40*msNs, 60*msNs)
			en = st + j.uniformDur(j.shape.DecoyLength)
			if inst.stepEnd > 0 {
				en = max(st+120*msNs, min(en, inst.stepEnd-10*msNs))
			}
		}
		j.overlays[r] = append(j.overlays[r], overlay{start: st, end: en, bytes: bytes})
		e := episode{QualityEpisode: QualityEpisode{Episode: ep, Rank: r, Kind: kind, Bytes: bytes}, start: st, end: en}
		j.tie(&e, inst, len(ranks))
		if truth {
			j.truthCollective = append(j.truthCollective, e)
		} else {
			j.decoys = append(j.decoys, e)
		}
	}
}

// persistentStepUp injects a permanent step on ranks at inst (NCCL's lazily connected
// buffers at a communicator's first use).
func (j *qualityJob) persistentStepUp(inst opInstance, ranks []int, bytes int64) {
	ep := j.newEpisode("p")
	for _, r := range ranks {
		st := inst.t + inst.launch[r] + j.intIn(0, 15*msNs)
		j.overlays[r] = append(j.overlays[r], overlay{start: st, open: true, bytes: bytes})
		e := episode{QualityEpisode: QualityEpisode{Episode: ep, Rank: r, Kind: KindPersistentStepUp, Bytes: bytes, Persistent: true}, start: st, open: true}
		j.tie(&e, inst, len(ranks))
		j.truthCollective = append(j.truthCollective, e)
	}
}

// busy tells whether rank r has an episode within margin of [st, en] (a persistent step
// counts only at its onset).
func (j *qualityJob) busy(r int, st, en, margin int64) bool {
	for _, o := range j.overlays[r] {
		b := o.end
		if o.open {
			b = o.start
		}
		if o.start-margin <= en && st <= b+margin {
			return true
		}
	}
	return false
}

// singleRankDecoys places unrelated single-rank spikes (0.5–1.5 GiB scaled to the
// shape's spike size, 0.2–1.5 s) away from other episodes.
func (j *qualityJob) singleRankDecoys() {
	for placed, tries := 0, 0; placed < j.shape.SingleRankDecoys && tries < 1000; tries++ {
		r := j.rng.IntN(j.shape.Ranks)
		dur := j.intIn(200, 1500) * msNs
		if j.duration-4*secNs-dur <= 0 {
			return
		}
		st := j.t0 + 2*secNs + j.rng.Int64N(j.duration-4*secNs-dur)
		if j.busy(r, st, st+dur, secNs) {
			continue
		}
		b := j.intIn(j.shape.SpikeBytes/2/pageSz, j.shape.SpikeBytes*3/2/pageSz) * pageSz
		j.overlays[r] = append(j.overlays[r], overlay{start: st, end: st + dur, bytes: b})
		j.decoys = append(j.decoys, episode{QualityEpisode: QualityEpisode{Episode: j.newEpisode("s"), Rank: r,
			Kind: singleRankDecoyKinds[j.rng.IntN(len(singleRankDecoyKinds))], Bytes: b, RanksInEpisode: 1}, start: st, end: st + dur})
		placed++
	}
}

// pickSteps draws the steps (from index first on) that carry a true episode.
func (j *qualityJob) pickSteps(first int) map[int]bool {
	var idx []int
	for _, s := range j.steps[min(first, len(j.steps)):] {
		idx = append(idx, s.k)
	}
	n := min(len(idx), max(3, int(j.shape.EpisodeFraction*float64(len(j.steps))+0.5)))
	j.rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	out := map[int]bool{}
	for _, k := range idx[:n] {
		out[k] = true
	}
	return out
}

func sortedKeys(m map[int]bool) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
