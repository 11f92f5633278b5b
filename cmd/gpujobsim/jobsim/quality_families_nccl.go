package jobsim

import (
	"fmt"
	"math"
)

// Families of cadence and of NCCL's accounting as NCCL really reports it: sparse memory
// sampling, communicators connected in the first step after a model load, cuMem off,
// and communicators split with shared resources.

// sparseSampling samples memory at 1–5 Hz (variant: 1–2 / 2–3.5 / 3.5–5 Hz per rank)
// and NCCL's accounting every 100 ms–1 s: a spike the length of a collective is seen
// by one or two samples, or none.
func (j *qualityJob) sparseSampling() {
	r := [][2]float64{{1, 2}, {2, 3.5}, {3.5, 5}}[j.variant]
	for rank := range j.shape.Ranks {
		j.sampleHz[rank] = j.uniform(r[0], r[1])
	}
	j.jitter = [2]float64{0.9, 1.1}
	j.statsIntervalNs = j.intIn(100, 1000) * msNs
	j.params["sample_hz_range"] = r[:]
	j.params["stats_interval_ns"] = j.statsIntervalNs
}

func buildSparse(j *qualityJob) {
	j.sparseSampling()
	buildDDPDecoy(j)
}

func buildSparseQuiet(j *qualityJob) {
	j.sparseSampling()
	buildNoCollective(j)
}

// restartSteps makes the job's steps begin at start (after a model load).
func (j *qualityJob) restartSteps(start int64) {
	var steps []qualityStep
	t := start
	for k := 0; ; k++ {
		l := int64(float64(j.stepMean) * j.uniform(0.95, 1.05))
		if t+l > j.tEnd-300*msNs {
			break
		}
		steps = append(steps, qualityStep{k: k, start: t, len: l})
		t += l
	}
	j.steps = steps
}

// pageBytes is a draw of f × bytes (f uniform in [lo, hi]) in whole pages, at least one.
func (j *qualityJob) pageBytes(bytes int64, lo, hi float64) int64 {
	return max(pageSz, int64(math.Round(float64(bytes)*j.uniform(lo, hi)/float64(pageSz)))*pageSz)
}

// buildEarlyFirstUse is an FSDP-like job (hybrid sharding): shard groups of a host's
// ranks (all_gather early in each step, reduce_scatter mid-step) and replica groups of
// one rank per shard (all_reduce late in the step). Both kinds of communicator are
// created lazily at their first use, in the first step after a model load, and NCCL
// connects their buffers there: a permanent step on every member with little or no
// history before it. Later, spikes at the replica all_reduce in ~10 % of steps.
// Variant: the load takes 0–0.3 / 0.3–1.5 / 1.5–4 s.
func buildEarlyFirstUse(j *qualityJob) {
	r := [][2]float64{{0, 0.3}, {0.3, 1.5}, {1.5, 4}}[j.variant]
	load := int64(j.uniform(r[0], r[1]) * float64(secNs))
	j.params["model_load_ns"] = load
	j.restartSteps(j.t0 + load)
	g := max(2, min(j.shape.RanksPerHost, j.shape.Ranks/2))
	var shards, replicas [][]int
	for i := 0; i+g <= j.shape.Ranks; i += g {
		shards = append(shards, j.worldRanks()[i:i+g])
	}
	for x := range g {
		var grp []int
		for _, sh := range shards {
			grp = append(grp, sh[x])
		}
		replicas = append(replicas, grp)
	}
	j.params["shard_group_size"] = g
	j.params["replica_group_size"] = len(shards)
	spikes := j.pickSteps(2)
	j.params["collective_steps"] = sortedKeys(spikes)
	for _, s := range j.steps {
		end := s.start + s.len
		for i, grp := range shards {
			comm := fmt.Sprintf("shard%d", i)
			t := s.start + int64(float64(s.len)*j.uniform(0.02, 0.06))
			ag := j.collective("all_gather", t, grp, comm, j.intIn(64, 512)*mib, j.intIn(20, 80)*msNs, 30*msNs, end)
			if s.k == 0 {
				j.commLife[comm] = [2]int64{ag.t - j.intIn(20, 200)*msNs, math.MaxInt64}
				j.persistentStepUp(ag, grp, j.pageBytes(j.shape.StepUpBytes, 0.25, 1))
			}
			t = s.start + int64(float64(s.len)*j.uniform(0.30, 0.45))
			j.collective("reduce_scatter", t, grp, comm, j.intIn(64, 512)*mib, j.intIn(20, 80)*msNs, 30*msNs, end)
		}
		for i, grp := range replicas {
			comm := fmt.Sprintf("replica%d", i)
			t := s.start + int64(float64(s.len)*j.uniform(0.55, 0.65))
			ar := j.collective("all_reduce", t, grp, comm, j.intIn(256, 2048)*mib, j.capped(t, end, 200, 500, 120), 30*msNs, end)
			switch {
			case s.k == 0:
				j.commLife[comm] = [2]int64{ar.t - j.intIn(20, 200)*msNs, math.MaxInt64}
				j.persistentStepUp(ar, grp, j.pageBytes(j.shape.StepUpBytes, 0.25, 1))
			case spikes[s.k]:
				j.spikeOnCollective(ar, grp, j.shape.SpikeBytes, KindTransientAllReduce, true)
			}
		}
	}
	j.singleRankDecoys()
}

// buildCumemOff is lazy_stepup (step at 5–60 % of the run) with NCCL's accounting
// taken with cuMem off: the memory manager tracks none of NCCL's buffers, so its
// totals stay flat at 0 (variants 0, 1) or at a small constant (variant 2, NVLS
// buffers still mapped through cuMem) while NCCL holds its buffers and the spikes. The
// records say so (nccl.cumem_enabled=false) in variants 0 and 2.
func buildCumemOff(j *qualityJob) {
	j.cumem = cumemAccounting{off: true, flagged: j.variant != 1}
	if j.variant == 2 {
		j.cumem.tracked = j.intIn(1, 32) * pageSz
	}
	j.params["cumem_flagged"] = j.cumem.flagged
	j.params["cumem_tracked_bytes"] = j.cumem.tracked
	k := int(j.uniform(0.05, 0.60) * float64(len(j.steps)))
	j.buildBase(k, true)
	j.singleRankDecoys()
}

// buildSplitShared is easy plus tensor-parallel groups split from the world
// communicator with shared resources (ncclCommSplit with splitShare): one memory
// manager per rank serves both, so each reports the manager's total and the two move
// in lock step. Spikes at the world all_reduce and, in other steps, at one TP group's
// all_reduce. Variant: TP group = a host / half a host / 2 ranks.
func buildSplitShared(j *qualityJob) {
	perHost := j.shape.RanksPerHost
	g := max(2, min([]int{perHost, perHost / 2, 2}[j.variant], j.shape.Ranks/2))
	var groups [][]int
	for i := 0; i+g <= j.shape.Ranks; i += g {
		groups = append(groups, j.worldRanks()[i:i+g])
	}
	j.params["tp_group_size"] = g
	for gi := range groups {
		j.manager[fmt.Sprintf("tp%d", gi)] = "world"
	}
	worldSpikes := j.pickSteps(2)
	tpSpikes := map[int]bool{}
	for k := range j.pickSteps(2) {
		if !worldSpikes[k] {
			tpSpikes[k] = true
		}
	}
	j.params["collective_steps"] = sortedKeys(worldSpikes)
	j.params["tp_steps"] = sortedKeys(tpSpikes)
	for _, s := range j.steps {
		end := s.start + s.len
		var tp []opInstance
		t := s.start + int64(float64(s.len)*j.uniform(0.10, 0.40))
		for gi, grp := range groups {
			tp = append(tp, j.collective("all_reduce", t+j.intIn(0, 10*msNs), grp, fmt.Sprintf("tp%d", gi),
				j.intIn(64, 512)*mib, j.capped(t, end, 120, 300, 80), 10*msNs, end))
		}
		ops := j.worldOps(s, true, false)
		if worldSpikes[s.k] {
			j.spikeOnCollective(ops["all_reduce"], j.worldRanks(), j.shape.SpikeBytes, KindTransientAllReduce, true)
		}
		if tpSpikes[s.k] {
			gi := j.rng.IntN(len(groups))
			j.spikeOnCollective(tp[gi], groups[gi], j.shape.SpikeBytes, KindTransientTPAllReduce, true)
		}
	}
	j.singleRankDecoys()
}
