package jobsim

import (
	"strings"
	"time"
)

// PhaseSpan is one phase of one step on one rank ("train" is the whole step).
type PhaseSpan struct {
	Name       string
	Path       []string
	Start, End time.Duration
}

// StepSpans is everything one rank records during one step.
type StepSpans struct {
	Rank        int
	Step        int
	Root        PhaseSpan // "train": the whole step
	Phases      []PhaseSpan
	Collectives []Collective
}

// PathString formats a phase path the way phase.path carries it ("train / backward").
func (p PhaseSpan) PathString() string { return strings.Join(p.Path, " / ") }

// stepSpans returns rank r's spans for one step.
func (s *Scenario) stepSpans(r, step int) StepSpans {
	base := time.Duration(step) * s.Config.StepPeriod
	out := StepSpans{
		Rank: r,
		Step: step,
		Root: PhaseSpan{Name: "train", Path: []string{"train"}, Start: base, End: base + stepTemplateLength},
	}
	for _, p := range phaseTemplates {
		out.Phases = append(out.Phases, PhaseSpan{Name: p.name, Path: []string{"train", p.name}, Start: base + p.start, End: base + p.end})
	}
	for c := range stepCollectives {
		out.Collectives = append(out.Collectives, s.collectiveOn(r, step, c))
	}
	return out
}

// stepsEndingIn lists, for rank r, the steps whose root span ends in [from, to): a rank
// exports a step's spans when the step ends. Steps that start before the rank starts
// reporting are not recorded.
func (s *Scenario) stepsEndingIn(r int, from, to time.Duration) []int {
	var steps []int
	for step := range s.Steps {
		start := time.Duration(step) * s.Config.StepPeriod
		end := start + stepTemplateLength
		if end >= from && end < to && s.reportsAt(r, start) {
			steps = append(steps, step)
		}
	}
	return steps
}

// sampleTimesIn lists rank r's sampler ticks in [from, to).
func (s *Scenario) sampleTimesIn(r int, from, to time.Duration) []time.Duration {
	period := s.samplePeriod()
	off := s.Ranks[r].SampleOffset
	k := int64(0)
	if from > off {
		k = int64((from - off + period - 1) / period)
	}
	var ts []time.Duration
	for t := off + time.Duration(k)*period; t < to; t += period {
		if t >= from && s.reportsAt(r, t) {
			ts = append(ts, t)
		}
	}
	return ts
}
