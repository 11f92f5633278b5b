package jobsim

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Episode kinds of the physics families (issue 31): what real jobs do that the first
// families leave out.
const (
	// KindPersistentCommCreated is the step at the first use of a communicator created
	// during the run (re-created after an abort, or a lazily created group).
	KindPersistentCommCreated = "persistent_comm_first_use"
	// KindPersistentCommAbort is the step down on a survivor when the watchdog aborts
	// its communicator (ncclCommAbort frees the buffers) at the end of the op it hung in.
	KindPersistentCommAbort = "persistent_comm_abort"
	// KindRestartLevel is a restarted rank's new process: a new session whose level
	// differs from the old one's (a new CUDA context).
	KindRestartLevel = "restart_new_level"
	// KindRestartLinger is the dead process's memory still held on the device while
	// the new one starts.
	KindRestartLinger = "restart_linger"
	// KindOtherTenant is another process's context and buffers on the GPU (an async
	// checkpoint writer, an eval server, a diagnostics agent).
	KindOtherTenant = "other_tenant"
	// KindSmallBlip is a single-rank workspace or lazily loaded module of a few pages.
	KindSmallBlip = "single_rank_small_workspace"
	// KindRecomputeWorkspace is an activation-recompute workspace that starts within
	// tens of ms of a TP all_reduce on all its members.
	KindRecomputeWorkspace = "recompute_workspace"
)

// physicsFamilies are the families of issue 31: one physics of real jobs each.
var physicsFamilies = []QualityFamily{
	{"restart", "easy on a world communicator, and an elastic restart: 1 rank / 2 ranks / a host die, survivors abort the communicator (a step down), the new processes start at a new level, the communicator is re-created with a new id and its first use is a step on every member",
		buildRestart, func(j *qualityJob) string {
			return fmt.Sprintf("ranks %v restart, outage %v s", j.params["restarted_ranks"], j.params["outage_s"])
		}},
	{"small_footprint", "exactly flat baselines; NCCL steps of a few 2 MiB pages at each communicator's first use (world all_gather, TP groups) and spikes of 4-16 pages at the world all_reduce; single-rank blips of the same size",
		buildSmallFootprint, func(j *qualityJob) string { return fmt.Sprintf("TP group of %v", j.params["tp_group_size"]) }},
	{"other_tenant", "easy + dense TP all_reduces on each host, and other tenants opening GiBs on some or all GPUs of a host for seconds to tens of seconds, staggered by up to 300 ms",
		buildOtherTenant, func(j *qualityJob) string { return fmt.Sprintf("%v tenants", j.params["tenants"]) }},
	{"creep", "easy + hidden memory creeping at 1-4 MiB/s for minutes: chunks at step starts on every rank / chunks at random instants on one host / a steady ramp on every rank",
		buildCreep, func(j *qualityJob) string { return fmt.Sprintf("leak %v", j.params["leak"]) }},
	{"drift", "easy + every host's clock off by up to 0.7 s and drifting 20-100 ppm (last NTP sync 0.5-2 h before the job)",
		buildDrift, func(j *qualityJob) string { return fmt.Sprintf("drift %v ppm", j.params["drift_ppm"]) }},
	{"host_polling", "lazy_stepup sampled host-wide (DCGM, nvidia-smi): 1 Hz / 1 Hz with NCCL accounting every second / 0.2 Hz with accounting every second over a 3x longer job",
		buildHostPolling, func(j *qualityJob) string { return fmt.Sprintf("%v Hz host-wide", j.hostPollHz) }},
	{"parallel_3d", "TP x PP x DP on >= 64 ranks, 1F1B micro-batches: spikes on a TP group, a pipeline pair or a DP group; activation-recompute workspaces on every member of a TP group at its all_reduce",
		buildParallel3D, func(j *qualityJob) string {
			return fmt.Sprintf("TP %v x PP %v x DP %v", j.params["tp"], j.params["pp"], j.params["dp"])
		}},
}

// familyShapes adjust the shape of families whose physics needs another one.
var familyShapes = map[string]func(QualityShape) QualityShape{
	// 3-D parallelism at scale: at least 64 ranks, longer steps.
	"parallel_3d": func(s QualityShape) QualityShape {
		s.Ranks = max(64, 4*s.Ranks)
		s.Step = [2]time.Duration{2 * s.Step[0], 2 * s.Step[1]}
		s.Duration = [2]time.Duration{max(s.Duration[0], 20*s.Step[1]), max(s.Duration[1], 20*s.Step[1])}
		return s
	},
}

func init() { QualityFamilies = append(QualityFamilies, physicsFamilies...) }

func pages(j *qualityJob, lo, hi int64) int64 { return j.intIn(lo, hi) * pageSz }

// stepAt is the index of the step running at fraction f of the run.
func (j *qualityJob) stepAt(f float64) int {
	return min(len(j.steps)-1, max(0, int(f*float64(len(j.steps)))))
}

// persistentSteps puts a step of bytes[r] on every rank r of inst at its launch there
// (NCCL connecting a communicator's buffers at its first use).
func (j *qualityJob) persistentSteps(inst opInstance, bytes map[int]int64, kind string) {
	ep := j.newEpisode("p")
	for _, r := range inst.ranks {
		st := inst.t + inst.launch[r] + j.intIn(0, 15*msNs)
		j.overlays[r] = append(j.overlays[r], overlay{start: st, open: true, bytes: bytes[r]})
		e := episode{QualityEpisode: QualityEpisode{Episode: ep, Rank: r, Kind: kind, Bytes: bytes[r], Persistent: true}, start: st, open: true}
		j.tie(&e, inst, len(inst.ranks))
		j.truthCollective = append(j.truthCollective, e)
	}
}

// buildRestart: ranks die mid-run; the survivors hang in the next all_reduce until the
// watchdog aborts the communicator (its buffers freed: a step down); the dead ranks'
// new processes start at a new level, with the old process's memory lingering for a
// few seconds; the communicator is re-created with a new id (accounting from 0) and its
// first use is a step on every member.
func buildRestart(j *qualityJob) {
	perHost := j.shape.RanksPerHost
	var victims []int
	switch j.variant {
	case 0:
		victims = []int{j.rng.IntN(j.shape.Ranks)}
	case 1:
		a := j.rng.IntN(perHost)
		b := perHost*(1+j.rng.IntN(max(1, j.hosts-1))) + j.rng.IntN(perHost)
		victims = []int{a, min(b, j.shape.Ranks-1)}
	default:
		for r := (j.hosts - 1) * perHost; r < j.shape.Ranks; r++ {
			victims = append(victims, r)
		}
	}
	k := j.stepAt(j.uniform(0.3, 0.45))
	tDie := j.steps[k].start + int64(float64(j.steps[k].len)*j.uniform(0.1, 0.4))
	tAbort := tDie + j.intIn(5*secNs, 12*secNs)
	tBack := tAbort + j.intIn(3*secNs, 8*secNs)
	tResume := tBack + j.intIn(3*secNs, 5*secNs)
	world := j.worldRanks()
	const oldComm, newComm = "world", "world.1"
	j.params["restarted_ranks"] = victims
	j.params["outage_s"] = math.Round(float64(tBack-tDie)/float64(secNs)*10) / 10
	j.params["abort_ns"] = tAbort
	j.commLife[oldComm] = [2]int64{j.t0, tAbort}
	j.commLife[newComm] = [2]int64{tResume, math.MaxInt64}
	j.addMembers(oldComm, world...)
	j.addMembers(newComm, world...)
	oldBuf, newBuf := map[int]int64{}, map[int]int64{}
	j.commBase[oldComm] = oldBuf
	for _, r := range world {
		oldBuf[r] = min(pages(j, 24, 160), int64(0.5*float64(j.baseHidden[r]))/pageSz*pageSz)
		newBuf[r] = pages(j, 24, 160)
	}
	j.commFreed[oldComm] = map[int]int64{}
	for _, r := range victims {
		j.dead[r] = append(j.dead[r], [2]int64{tDie, tBack})
		j.commFreed[oldComm][r] = tDie
	}

	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	resumed := false
	for _, s := range j.steps {
		switch {
		case s.start+s.len <= tDie:
			j.worldComm = oldComm
		case s.start >= tResume:
			j.worldComm = newComm
		default:
			continue
		}
		ops := j.worldOps(s, true, false)
		if j.worldComm == newComm && !resumed {
			resumed = true
			j.persistentSteps(ops["all_reduce"], newBuf, KindPersistentCommCreated)
			continue
		}
		if spikes[s.k] {
			j.spikeOnCollective(ops["all_reduce"], world, j.shape.SpikeBytes, KindTransientAllReduce, true)
		}
	}
	// The survivors launch the next all_reduce and hang in it until the watchdog
	// aborts the communicator, which frees its buffers.
	var survivors []int
	for _, r := range world {
		if !slices.Contains(victims, r) {
			survivors = append(survivors, r)
		}
	}
	hang := j.collective("all_reduce", tDie+j.intIn(50*msNs, 300*msNs), survivors, oldComm, j.intIn(256, 2048)*mib, 0, 30*msNs, 0)
	ep := j.newEpisode("a")
	for _, r := range survivors {
		m := &j.markers[r][len(j.markers[r])-1]
		at := tAbort + j.intIn(0, 200*msNs)
		m.duration = at - m.t
		j.overlays[r] = append(j.overlays[r], overlay{start: at, open: true, bytes: -oldBuf[r]})
		e := episode{QualityEpisode: QualityEpisode{Episode: ep, Rank: r, Kind: KindPersistentCommAbort, Bytes: -oldBuf[r], Persistent: true}, start: at, open: true}
		j.tie(&e, hang, len(survivors))
		j.truthCollective = append(j.truthCollective, e)
	}
	// The new processes: a new context at another level, without the old
	// communicator's buffers; the old process's memory lingers for a few seconds.
	for _, r := range victims {
		delta := pages(j, -100, 250) - oldBuf[r]
		j.overlays[r] = append(j.overlays[r], overlay{start: tBack, open: true, bytes: delta})
		j.decoys = append(j.decoys, episode{QualityEpisode: QualityEpisode{Episode: j.newEpisode("r"), Rank: r,
			Kind: KindRestartLevel, Bytes: delta, Persistent: true, RanksInEpisode: len(victims)}, start: tBack, open: true})
		// It is freed before the communicator is re-created.
		linger := j.intIn(secNs/2, tResume-tBack-secNs/2)
		b := pages(j, 256, 1024)
		j.overlays[r] = append(j.overlays[r], overlay{start: tBack, end: tBack + linger, bytes: b})
		j.decoys = append(j.decoys, episode{QualityEpisode: QualityEpisode{Episode: j.newEpisode("r"), Rank: r,
			Kind: KindRestartLinger, Bytes: b, RanksInEpisode: len(victims)}, start: tBack, end: tBack + linger})
	}
	j.singleRankDecoys()
}

// buildSmallFootprint: LL/LL128 buffers of a few pages on exactly flat baselines.
func buildSmallFootprint(j *qualityJob) {
	for r := range j.noiseSigma {
		j.noiseSigma[r] = j.uniform(0, 0.3*float64(mib))
	}
	perHost := j.shape.RanksPerHost
	g := max(2, min([]int{perHost, perHost / 2, 2}[j.variant], j.shape.Ranks/2))
	j.params["tp_group_size"] = g
	var groups [][]int
	for i := 0; i+g <= j.shape.Ranks; i += g {
		grp := make([]int, g)
		for x := range grp {
			grp[x] = i + x
		}
		groups = append(groups, grp)
	}
	firstUse := make([]int, len(groups))
	for gi := range groups {
		firstUse[gi] = j.stepAt(j.uniform(0.05, 0.7))
	}
	agFrom := j.stepAt(j.uniform(0.05, 0.7))
	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	world := j.worldRanks()
	for _, s := range j.steps {
		ops := j.worldOps(s, s.k >= agFrom, s.k == agFrom)
		if s.k == agFrom {
			b := map[int]int64{}
			for _, r := range world {
				b[r] = pages(j, 3, 12)
			}
			j.persistentSteps(ops["all_gather"], b, KindPersistentCommCreated)
		}
		if spikes[s.k] {
			j.spikeOnCollective(ops["all_reduce"], world, pages(j, 4, 16), KindTransientAllReduce, true)
		}
		t := s.start + int64(float64(s.len)*j.uniform(0.10, 0.25))
		for gi, grp := range groups {
			if s.k < firstUse[gi] {
				continue
			}
			comm := fmt.Sprintf("tp%d", gi)
			inst := j.collective("all_reduce", t+j.intIn(0, 10*msNs), grp, comm, j.intIn(1, 8)*mib, j.intIn(20, 60)*msNs, 5*msNs, s.start+s.len)
			if s.k == firstUse[gi] {
				b := map[int]int64{}
				for _, r := range grp {
					b[r] = pages(j, 3, 10)
				}
				j.persistentSteps(inst, b, KindPersistentCommCreated)
			}
		}
	}
	blips := 8
	for placed, tries := 0, 0; placed < blips && tries < 1000; tries++ {
		r := j.rng.IntN(j.shape.Ranks)
		dur := j.intIn(200, 1500) * msNs
		st := j.t0 + 2*secNs + j.rng.Int64N(j.duration-4*secNs-dur)
		if j.busy(r, st, st+dur, secNs) {
			continue
		}
		b := pages(j, 3, 16)
		j.overlays[r] = append(j.overlays[r], overlay{start: st, end: st + dur, bytes: b})
		j.decoys = append(j.decoys, episode{QualityEpisode: QualityEpisode{Episode: j.newEpisode("s"), Rank: r,
			Kind: KindSmallBlip, Bytes: b, RanksInEpisode: 1}, start: st, end: st + dur})
		placed++
	}
	j.singleRankDecoys()
}

// buildOtherTenant: easy, dense TP collectives on every host, and other processes
// holding GiBs on GPUs of one host for seconds to tens of seconds.
func buildOtherTenant(j *qualityJob) {
	j.buildBase(-1, false)
	perHost := j.shape.RanksPerHost
	for h := range j.hosts {
		var grp []int
		for r := h * perHost; r < min(j.shape.Ranks, (h+1)*perHost); r++ {
			grp = append(grp, r)
		}
		if len(grp) < 2 {
			continue
		}
		comm := fmt.Sprintf("tp%d", h)
		for _, s := range j.steps {
			for t := s.start + j.intIn(10*msNs, 40*msNs); t < s.start+s.len-100*msNs; t += j.intIn(30*msNs, 80*msNs) {
				j.collective("all_reduce", t, grp, comm, j.intIn(1, 64)*mib, j.intIn(5, 25)*msNs, 3*msNs, s.start+s.len)
			}
		}
	}
	n := 2 + j.rng.IntN(3)
	placed := 0
	for tries := 0; placed < n && tries < 200; tries++ {
		h := j.rng.IntN(j.hosts)
		var gpus []int
		for r := h * perHost; r < min(j.shape.Ranks, (h+1)*perHost); r++ {
			gpus = append(gpus, r)
		}
		switch j.variant {
		case 1:
			j.rng.Shuffle(len(gpus), func(a, b int) { gpus[a], gpus[b] = gpus[b], gpus[a] })
			gpus = gpus[:max(1, len(gpus)/2)]
			slices.Sort(gpus)
		case 2:
			gpus = gpus[j.rng.IntN(len(gpus)):][:1]
		}
		dur := j.intIn(2*secNs, min(30*secNs, j.duration/3))
		if j.duration-4*secNs-dur <= 0 {
			break
		}
		st := j.t0 + 2*secNs + j.rng.Int64N(j.duration-4*secNs-dur)
		if slices.ContainsFunc(gpus, func(r int) bool { return j.busy(r, st, st+dur+300*msNs, secNs) }) {
			continue
		}
		b := pages(j, 512, 3072)
		ep := j.newEpisode("t")
		for _, r := range gpus {
			a := st + j.intIn(0, 300*msNs)
			e := min(a+dur+j.intIn(0, 300*msNs), j.tEnd-secNs)
			j.overlays[r] = append(j.overlays[r], overlay{start: a, end: e, bytes: b})
			j.decoys = append(j.decoys, episode{QualityEpisode: QualityEpisode{Episode: ep, Rank: r, Kind: KindOtherTenant,
				Bytes: b, RanksInEpisode: len(gpus)}, start: a, end: e})
		}
		placed++
	}
	j.params["tenants"] = placed
	j.singleRankDecoys()
}

// buildCreep: easy plus a leak of 1-4 MiB/s from 5-30 % of the run to 70-100 %.
func buildCreep(j *qualityJob) {
	j.buildBase(-1, false)
	rate := j.uniform(1, 4) * float64(mib) / float64(secNs) // bytes per ns
	from := j.t0 + int64(j.uniform(0.05, 0.3)*float64(j.duration))
	to := j.t0 + int64(j.uniform(0.7, 1.0)*float64(j.duration))
	j.params["leak"] = fmt.Sprintf("%.1f MiB/s, variant %d", rate*float64(secNs)/float64(mib), j.variant)
	switch j.variant {
	case 0: // chunks at every step start, on every rank
		for _, s := range j.steps {
			if s.start < from || s.start > to {
				continue
			}
			for r := range j.shape.Ranks {
				j.overlays[r] = append(j.overlays[r], overlay{start: s.start + j.intIn(0, 5*msNs), open: true, bytes: int64(rate * float64(s.len))})
			}
		}
	case 1: // chunks at random instants, on one host
		h := j.rng.IntN(j.hosts)
		for r := h * j.shape.RanksPerHost; r < min(j.shape.Ranks, (h+1)*j.shape.RanksPerHost); r++ {
			for t := from; t < to; {
				gap := j.intIn(secNs, 5*secNs)
				t += gap
				j.overlays[r] = append(j.overlays[r], overlay{start: t, open: true, bytes: int64(rate * float64(gap))})
			}
		}
	default: // a steady ramp on every rank
		for r := range j.shape.Ranks {
			j.overlays[r] = append(j.overlays[r],
				overlay{start: from, end: to, slope: rate},
				overlay{start: to, open: true, bytes: int64(rate * float64(to-from))})
		}
	}
	j.singleRankDecoys()
}

// buildDrift: every host's clock is off by what it drifted since its last NTP sync,
// and keeps drifting during the job.
func buildDrift(j *qualityJob) {
	ppm := make([]float64, j.hosts)
	for h := range j.hosts {
		d := j.uniform(20, 100)
		if j.rng.IntN(2) == 0 {
			d = -d
		}
		age := j.uniform(0.5, 2) * float64(time.Hour)
		j.driftPPM[h] = d
		j.hostOffset[h] = j.intIn(-20*msNs, 20*msNs) + int64(d*1e-6*age)
		ppm[h] = math.Round(d*10) / 10
	}
	j.params["drift_ppm"] = ppm
	j.params["host_offsets_ns"] = slices.Clone(j.hostOffset)
	j.buildBase(-1, false)
	j.singleRankDecoys()
}

// buildHostPolling: lazy_stepup sampled host-wide in one sweep.
func buildHostPolling(j *qualityJob) {
	hz := []float64{1, 1, 0.2}[j.variant]
	if j.variant >= 1 {
		j.statsIntervalNs = secNs
	}
	if j.variant == 2 {
		j.duration *= 3
		j.tEnd = j.t0 + j.duration
		j.steps = j.makeSteps()
	}
	j.hostPollHz = hz
	j.jitter = [2]float64{0.995, 1.005}
	for r := range j.sampleHz {
		j.sampleHz[r] = hz
	}
	buildLazyStepUp(j)
}

// buildParallel3D: TP × PP × DP with 1F1B micro-batches. Rank (pp, dp, tp) is
// pp·DP·TP + dp·TP + tp: a TP group on one host, pipeline pairs across hosts.
func buildParallel3D(j *qualityJob) {
	n := j.shape.Ranks
	tp := max(2, []int{j.shape.RanksPerHost, j.shape.RanksPerHost / 2, 2}[j.variant])
	const pp = 4
	dp := max(1, n/(tp*pp))
	m := 4 + j.rng.IntN(5)
	j.params["tp"], j.params["pp"], j.params["dp"], j.params["microbatches"] = tp, pp, dp, m
	rank := func(p, d, t int) int { return p*dp*tp + d*tp + t }
	tpGroup := func(p, d int) []int {
		g := make([]int, tp)
		for t := range g {
			g[t] = rank(p, d, t)
		}
		return g
	}
	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	for _, s := range j.steps {
		tauF := float64(s.len) * 0.45 / float64(m+pp-1)
		tauB := float64(s.len) * 0.40 / float64(m+pp-1)
		end := s.start + s.len
		var tpOps, p2pOps, dpOps []opInstance
		for d := range dp {
			drift := j.intIn(0, 20*msNs)
			for p := range pp {
				grp := tpGroup(p, d)
				comm := fmt.Sprintf("tp%d-%d", p, d)
				for mb := range m {
					tf := s.start + drift + int64(float64(mb+p)*tauF+0.3*tauF)
					tb := s.start + drift + int64(float64(s.len)*0.45+float64(mb+pp-1-p)*tauB+0.3*tauB)
					for _, t := range []int64{tf, tb} {
						tpOps = append(tpOps, j.collective("all_reduce", t, grp, comm, j.intIn(8, 64)*mib, max(msNs, int64(0.3*tauF)), 3*msNs, end))
					}
					if p+1 < pp {
						for x := range tp {
							a, b := rank(p, d, x), rank(p+1, d, x)
							c := fmt.Sprintf("pp%d-%d-%d", p, d, x)
							t := s.start + drift + int64(float64(mb+p)*tauF+0.8*tauF)
							p2pOps = append(p2pOps, j.p2p(t, a, b, j.intIn(16, 128)*mib, c, end))
							t = s.start + drift + int64(float64(s.len)*0.45+float64(mb+pp-2-p)*tauB+0.8*tauB)
							p2pOps = append(p2pOps, j.p2p(t, b, a, j.intIn(16, 128)*mib, c, end))
						}
					}
				}
			}
		}
		// The long TP all_reduce of the step (the loss and embedding gradients).
		var longTP []opInstance
		for d := range dp {
			for p := range pp {
				t := s.start + int64(float64(s.len)*j.uniform(0.86, 0.88))
				longTP = append(longTP, j.collective("all_reduce", t, tpGroup(p, d), fmt.Sprintf("tp%d-%d", p, d),
					j.intIn(256, 1024)*mib, j.capped(t, end, 150, 400, 120), 5*msNs, end))
			}
		}
		if dp > 1 {
			for p := range pp {
				for x := range tp {
					grp := make([]int, dp)
					for d := range grp {
						grp[d] = rank(p, d, x)
					}
					t := s.start + int64(float64(s.len)*j.uniform(0.90, 0.92))
					dpOps = append(dpOps, j.collective("all_reduce", t, grp, fmt.Sprintf("dp%d-%d", p, x),
						j.intIn(256, 1024)*mib, j.capped(t, end, 150, 400, 60), 20*msNs, end))
				}
			}
		}
		if spikes[s.k] {
			switch kind := j.rng.IntN(3); {
			case kind == 0 || (kind == 2 && len(dpOps) == 0):
				inst := longTP[j.rng.IntN(len(longTP))]
				j.spikeOnCollective(inst, inst.ranks, j.shape.SpikeBytes, KindTransientTPAllReduce, true)
			case kind == 1:
				inst := p2pOps[j.rng.IntN(len(p2pOps))]
				j.spikeOnCollective(inst, inst.ranks, j.shape.SpikeBytes, KindTransientP2P, true)
			default:
				inst := dpOps[j.rng.IntN(len(dpOps))]
				j.spikeOnCollective(inst, inst.ranks, j.shape.SpikeBytes, KindTransientAllReduce, true)
			}
		} else if j.rng.Float64() < 0.25 {
			inst := tpOps[j.rng.IntN(len(tpOps))]
			b := j.intIn(j.shape.DecoyBytes[0]/pageSz, j.shape.DecoyBytes[1]/pageSz) * pageSz
			j.spikeOnCollective(inst, inst.ranks, b, KindRecomputeWorkspace, false)
		}
	}
	j.singleRankDecoys()
}
