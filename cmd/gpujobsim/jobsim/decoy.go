package jobsim

import (
	"math/rand/v2"
	"time"
)

// injectCotimedDecoys adds cfg.CotimedDecoys non-collective spikes on every reporting
// rank, raised exactly as a collective spike is around the all_reduce of a step that
// carries no collective spike (from the middle of the job outwards), so that only NCCL's
// accounting tells them apart: CommMemoryAt leaves them out.
func (s *Scenario) injectCotimedDecoys(rng *rand.Rand, usedSteps map[int]bool,
	addSpike func(*Injection, int, rankSpike), atCollective func(Collective, int64) rankSpike) {
	cfg := s.Config
	c := collectiveIndex(AllReduce)
	for _, step := range s.decoySteps(usedSteps) {
		in := Injection{Kind: KindCotimedDecoy, Step: step, Collective: AllReduce, perRank: map[int]rankSpike{},
			Note: "not NCCL's: every rank allocates a workspace while the all_reduce runs (only NCCL's accounting tells)"}
		size := (3*gib/2 + rng.Int64N(gib/2)) / (2 * mib) * (2 * mib)
		for r := range cfg.Ranks {
			call := s.collectiveOn(r, step, c)
			if s.reportsAt(r, call.Start) {
				addSpike(&in, r, atCollective(call, size))
			}
		}
		in.Start = time.Duration(step)*cfg.StepPeriod + stepCollectives[c].offset - spikeLead
		s.Injections = append(s.Injections, in)
	}
}

// decoySteps picks up to cfg.CotimedDecoys steps after the warm-up, before the last
// step, not in usedSteps, nearest the middle of the job first.
func (s *Scenario) decoySteps(usedSteps map[int]bool) []int {
	lo, hi := s.Config.WarmupSteps, s.Steps-2
	var steps []int
	for d := 0; len(steps) < s.Config.CotimedDecoys && d <= hi-lo; d++ {
		for _, step := range []int{(lo+hi)/2 + d, (lo+hi)/2 - d} {
			if step >= lo && step <= hi && !usedSteps[step] && len(steps) < s.Config.CotimedDecoys {
				usedSteps[step] = true
				steps = append(steps, step)
			}
			if d == 0 {
				break
			}
		}
	}
	return steps
}
