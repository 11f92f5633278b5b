package jobsim

import (
	"fmt"
	"slices"
)

// QualityFamily is a kind of training job with known causes: what it injects on top of
// the shape's base job, and what in the physics makes it hard. The variant (seed mod 3)
// picks one of three settings where a family has them.
type QualityFamily struct {
	Name        string
	Description string
	build       func(j *qualityJob)
	note        func(j *qualityJob) string
}

// QualityFamilies are the project's quality families in a fixed order. Every family but
// no_collective carries true collective episodes; all carry the shape's single-rank
// decoys.
var QualityFamilies = []QualityFamily{
	{"easy", "spikes at the world all_reduce on every rank in ~10 % of steps; single-rank decoys",
		func(j *qualityJob) { j.buildBase(-1, false); j.singleRankDecoys() }, nil},
	{"ddp_decoy", "easy + non-collective spikes on every rank starting inside the all_reduce window in half the other steps",
		buildDDPDecoy, func(j *qualityJob) string {
			return fmt.Sprintf("%v decoy steps / %d", j.params["decoy_steps"], len(j.steps))
		}},
	{"lazy_stepup", "easy + a permanent step on every rank at the first all_gather (lazily connected NCCL buffers); variant: step at 5-30 / 30-60 / 60-90 % of the run",
		buildLazyStepUp, func(j *qualityJob) string {
			return fmt.Sprintf("step-up at step %v/%d", j.params["stepup_step"], len(j.steps))
		}},
	{"skew", "easy + every host but the first off by d; variant |d| in 0-0.15 / 0.15-1 / 1-2 s, random sign per host",
		buildSkew, func(j *qualityJob) string { return fmt.Sprintf("host offsets %v ns", j.hostOffset[1:]) }},
	{"subset", "no world spikes: spikes on one tensor-parallel group at a TP all_reduce (markers on the group only); variant: group = a host / half a host / 2 ranks",
		buildSubset, func(j *qualityJob) string { return fmt.Sprintf("TP group of %v", j.params["tp_group_size"]) }},
	{"noisy", "easy + allocator churn N(0, amp/2 x baseline) with amp 5-20 % per rank; sampling 0.5-2x the shape's rate, each interval x0.7-1.3",
		buildNoisy, func(j *qualityJob) string {
			return fmt.Sprintf("%.1f-%.1f Hz", slices.Min(j.sampleHz), slices.Max(j.sampleHz))
		}},
	{"pipeline", "no world spikes: 4 pipeline stages x ranks/4 replicas, send/recv per micro-batch (markers on the pair only); spikes on one sender/receiver pair; variant: 4 / 6 / 8 micro-batches",
		buildPipeline, func(j *qualityJob) string { return fmt.Sprintf("%v micro-batches", j.params["microbatches"]) }},
	{"no_collective", "no collective episode at all: world collectives every step, non-collective spikes on every rank inside the all_reduce window in ~20 % of steps, single-rank decoys",
		buildNoCollective, nil},
	{"sparse", "ddp_decoy sampled at 1-5 Hz (variant 1-2 / 2-3.5 / 3.5-5 Hz per rank), NCCL's accounting every 100 ms-1 s",
		buildSparse, sparseNote},
	{"sparse_quiet", "no_collective sampled at 1-5 Hz as sparse, NCCL's accounting every 100 ms-1 s",
		buildSparseQuiet, sparseNote},
	{"early_first_use", "FSDP-like: shard and replica communicators created at their first use in the first step after a model load, each leaving a permanent step on its members; later spikes at the replica all_reduce; variant: load 0-0.3 / 0.3-1.5 / 1.5-4 s",
		buildEarlyFirstUse, func(j *qualityJob) string {
			return fmt.Sprintf("model load %v ns, shards of %v", j.params["model_load_ns"], j.params["shard_group_size"])
		}},
	{"cumem_off", "lazy_stepup with NCCL's accounting under cuMem off: totals flat at 0 (or a small constant) while NCCL holds its buffers; variant: flagged nccl.cumem_enabled=false / unflagged / flagged with a constant",
		buildCumemOff, func(j *qualityJob) string {
			return fmt.Sprintf("flagged %v, tracked %v bytes", j.params["cumem_flagged"], j.params["cumem_tracked_bytes"])
		}},
	{"split_shared", "easy + TP groups split from the world communicator sharing its memory manager (their totals move in lock step); spikes at the world and at one TP group's all_reduce; variant: TP group = a host / half a host / 2 ranks",
		buildSplitShared, func(j *qualityJob) string { return fmt.Sprintf("TP group of %v", j.params["tp_group_size"]) }},
}

func sparseNote(j *qualityJob) string {
	return fmt.Sprintf("%.1f-%.1f Hz, accounting every %v ns", slices.Min(j.sampleHz), slices.Max(j.sampleHz), j.statsIntervalNs)
}

// QualityFamilyByName finds a family.
func QualityFamilyByName(name string) (QualityFamily, bool) {
	for _, f := range QualityFamilies {
		if f.Name == name {
			return f, true
		}
	}
	return QualityFamily{}, false
}

// buildBase is the easy job: world collectives every step and a true spike on every
// rank at the all_reduce of ~EpisodeFraction of the steps. With lazyFrom >= 0 the
// all_gather runs only from that step on, and its first call leaves a permanent step.
func (j *qualityJob) buildBase(lazyFrom int, lazy bool) map[int]map[string]opInstance {
	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	world := j.worldRanks()
	instances := map[int]map[string]opInstance{}
	stepped := false
	for _, s := range j.steps {
		allow := s.k >= lazyFrom
		ops := j.worldOps(s, allow, lazy && s.k == lazyFrom)
		instances[s.k] = ops
		if spikes[s.k] {
			j.spikeOnCollective(ops["all_reduce"], world, j.shape.SpikeBytes, KindTransientAllReduce, true)
		}
		if ag, ok := ops["all_gather"]; lazy && !stepped && ok {
			j.persistentStepUp(ag, world, j.shape.StepUpBytes)
			j.params["stepup_step"] = s.k
			stepped = true
		}
	}
	return instances
}

// coTimedDecoys puts a non-collective spike on every rank at the all_reduce of each
// given step (activations or a workspace outside the caching allocator).
func (j *qualityJob) coTimedDecoys(instances map[int]map[string]opInstance, steps []int) {
	for _, k := range steps {
		b := j.intIn(j.shape.DecoyBytes[0]/pageSz, j.shape.DecoyBytes[1]/pageSz) * pageSz
		j.spikeOnCollective(instances[k]["all_reduce"], j.worldRanks(), b, KindDDPDecoy, false)
	}
}

func buildDDPDecoy(j *qualityJob) {
	instances := j.buildBase(-1, false)
	spikes := map[int]bool{}
	for _, k := range j.params["collective_steps"].([]int) {
		spikes[k] = true
	}
	var rest []int
	for _, s := range j.steps[min(1, len(j.steps)):] {
		if !spikes[s.k] {
			rest = append(rest, s.k)
		}
	}
	j.rng.Shuffle(len(rest), func(a, b int) { rest[a], rest[b] = rest[b], rest[a] })
	decoys := rest[:len(rest)/2]
	slices.Sort(decoys)
	j.params["decoy_steps"] = len(decoys)
	j.coTimedDecoys(instances, decoys)
	j.singleRankDecoys()
}

func buildLazyStepUp(j *qualityJob) {
	r := [][2]float64{{0.05, 0.30}, {0.30, 0.60}, {0.60, 0.90}}[j.variant]
	k := int(j.uniform(r[0], r[1]) * float64(len(j.steps)))
	j.params["stepup_fraction_range"] = r[:]
	j.buildBase(k, true)
	j.singleRankDecoys()
}

func buildSkew(j *qualityJob) {
	r := [][2]float64{{0, 0.15}, {0.15, 1}, {1, 2}}[j.variant]
	for h := 1; h < j.hosts; h++ {
		d := int64(j.uniform(r[0], r[1]) * float64(secNs))
		if j.rng.IntN(2) == 0 {
			d = -d
		}
		j.hostOffset[h] = d
	}
	j.params["host_offsets_ns"] = slices.Clone(j.hostOffset)
	j.buildBase(-1, false)
	j.singleRankDecoys()
}

func buildSubset(j *qualityJob) {
	perHost := j.shape.RanksPerHost
	g := []int{perHost, perHost / 2, 2}[j.variant]
	g = max(2, min(g, j.shape.Ranks/2))
	var groups [][]int
	for i := 0; i+g <= j.shape.Ranks; i += g {
		grp := make([]int, g)
		for x := range grp {
			grp[x] = i + x
		}
		groups = append(groups, grp)
	}
	j.params["tp_group_size"] = g
	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	for _, s := range j.steps {
		n := 2 + j.rng.IntN(3)
		times := make([]int64, n)
		for i := range times {
			times[i] = s.start + int64(float64(s.len)*j.uniform(0.05, 0.70))
		}
		slices.Sort(times)
		msg := j.intIn(64, 512) * mib
		var tp [][]opInstance
		for _, t := range times {
			d := j.capped(t, s.start+s.len, 200, 500, 120)
			var perGroup []opInstance
			for gi, grp := range groups {
				perGroup = append(perGroup, j.collective("all_reduce", t+j.intIn(0, 10*msNs), grp, fmt.Sprintf("tp%d", gi), msg, d, 10*msNs, s.start+s.len))
			}
			tp = append(tp, perGroup)
		}
		j.collective("all_reduce", s.start+int64(float64(s.len)*j.uniform(0.80, 0.88)), j.worldRanks(), "dp",
			j.intIn(256, 2048)*mib, j.intIn(50, 100)*msNs, 30*msNs, s.start+s.len)
		if spikes[s.k] {
			perGroup := tp[j.rng.IntN(len(tp))]
			gi := j.rng.IntN(len(groups))
			j.spikeOnCollective(perGroup[gi], groups[gi], j.shape.SpikeBytes, KindTransientTPAllReduce, true)
		}
	}
	j.singleRankDecoys()
}

func buildNoisy(j *qualityJob) {
	amps := map[string]float64{}
	for r := range j.shape.Ranks {
		amp := j.uniform(0.05, 0.20)
		amps[fmt.Sprint(r)] = amp
		j.churn[r] = amp / 2 * float64(j.baseHidden[r])
		j.sampleHz[r] = j.shape.SampleHz * j.uniform(0.5, 2)
	}
	j.jitter = [2]float64{0.7, 1.3}
	j.params["noise_amp"] = amps
	j.buildBase(-1, false)
	j.singleRankDecoys()
}

func buildPipeline(j *qualityJob) {
	const stages = 4
	dp := max(1, j.shape.Ranks/stages)
	m := []int{4, 6, 8}[j.variant]
	j.params["microbatches"] = m
	j.params["pipeline"] = map[string]int{"stages": stages, "dp": dp, "microbatches": m}
	rank := func(s, d int) int { return s*dp + d }
	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	for _, s := range j.steps {
		tauF := float64(s.len) * 0.45 / float64(m+stages-1)
		tauB := float64(s.len) * 0.40 / float64(m+stages-1)
		var p2p []opInstance
		msg := j.intIn(16, 128) * mib
		for d := range dp {
			drift := j.intIn(0, 20*msNs)
			for mb := range m {
				for sg := range stages - 1 {
					a, b := rank(sg, d), rank(sg+1, d)
					comm := fmt.Sprintf("pp%d-%d", sg, d)
					t := s.start + drift + int64(float64(mb+sg)*tauF+0.8*tauF)
					p2p = append(p2p, j.p2p(t, a, b, msg, comm, s.start+s.len))
					t = s.start + drift + int64(float64(s.len)*0.45+float64(mb+stages-2-sg)*tauB+0.8*tauB)
					p2p = append(p2p, j.p2p(t, b, a, msg, comm, s.start+s.len))
				}
			}
		}
		for sg := range stages {
			grp := make([]int, dp)
			for d := range grp {
				grp[d] = rank(sg, d)
			}
			j.collective("all_reduce", s.start+int64(float64(s.len)*j.uniform(0.88, 0.93)), grp, fmt.Sprintf("dp%d", sg),
				j.intIn(256, 1024)*mib, j.intIn(30, 60)*msNs, 30*msNs, s.start+s.len)
		}
		if spikes[s.k] {
			inst := p2p[j.rng.IntN(len(p2p))]
			j.spikeOnCollective(inst, inst.ranks, j.shape.SpikeBytes, KindTransientP2P, true)
		}
	}
	j.singleRankDecoys()
}

func buildNoCollective(j *qualityJob) {
	instances := map[int]map[string]opInstance{}
	var steps []int
	for _, s := range j.steps {
		instances[s.k] = j.worldOps(s, true, false)
		steps = append(steps, s.k)
	}
	j.rng.Shuffle(len(steps), func(a, b int) { steps[a], steps[b] = steps[b], steps[a] })
	decoys := steps[:max(3, len(steps)/5)]
	slices.Sort(decoys)
	j.params["decoy_steps"] = len(decoys)
	j.coTimedDecoys(instances, decoys)
	j.singleRankDecoys()
}
