package jobsim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// ModeFinding is what one attribution mode said about one injection: the results of the
// injection's job that overlap a rank's raised window, summarised over its ranks.
type ModeFinding struct {
	// Class is the strongest classification on any rank ("" when none reported it);
	// Ranks the ranks that have it.
	Class string
	Ranks []int
	// PerRank is the strongest classification of each rank that has a result.
	PerRank map[int]string
	// Kinds and Reasons are the distinct kinds and reason codes of the results, sorted.
	Kinds   []string
	Reasons []string
	// ConfMin and ConfMax bound the results' confidence.
	ConfMin, ConfMax float64
	// Accounted tells that a result had NCCL's accounting.
	Accounted bool
}

// ModesRow is one injection with what each mode said about it.
type ModesRow struct {
	Injection           TruthInjection
	Reference, Evidence ModeFinding
}

// ModesComparison is the reference and the evidence mode on the same job, per injection.
type ModesComparison struct {
	Truth Truth
	Rows  []ModesRow
	// ClaimsElsewhere counts, per mode, the claims (likely or above) that overlap no
	// injection.
	ReferenceClaimsElsewhere, EvidenceClaimsElsewhere int
	// Accounted tells that the evidence mode had NCCL's accounting for any result.
	Accounted bool
}

// CompareModes matches each mode's results against the truth as Compare does (same job,
// same rank, overlapping the rank's raised window).
func CompareModes(t Truth, reference, evidence []Result) ModesComparison {
	c := ModesComparison{Truth: t}
	refMatched := make([]bool, len(reference))
	evMatched := make([]bool, len(evidence))
	for _, in := range t.Injections {
		c.Rows = append(c.Rows, ModesRow{Injection: in,
			Reference: findingOf(t, in, reference, refMatched), Evidence: findingOf(t, in, evidence, evMatched)})
	}
	c.ReferenceClaimsElsewhere = claimsElsewhere(t, reference, refMatched)
	c.EvidenceClaimsElsewhere = claimsElsewhere(t, evidence, evMatched)
	for _, r := range evidence {
		c.Accounted = c.Accounted || (r.JobID == t.JobID && r.Accounted)
	}
	return c
}

func findingOf(t Truth, in TruthInjection, results []Result, matched []bool) ModeFinding {
	f := ModeFinding{PerRank: map[int]string{}}
	first := true
	for _, w := range in.PerRank {
		for i, r := range results {
			if r.JobID != t.JobID || r.Rank != int64(w.Rank) || r.EndNs < w.StartNs || r.StartNs > w.EndNs {
				continue
			}
			matched[i] = true
			if attribution.ClassificationRank(r.Classification) > attribution.ClassificationRank(f.PerRank[w.Rank]) {
				f.PerRank[w.Rank] = r.Classification
			}
			if r.Kind != "" && !slices.Contains(f.Kinds, r.Kind) {
				f.Kinds = append(f.Kinds, r.Kind)
			}
			for _, reason := range r.Reasons {
				if !slices.Contains(f.Reasons, reason) {
					f.Reasons = append(f.Reasons, reason)
				}
			}
			if first || r.Confidence < f.ConfMin {
				f.ConfMin = r.Confidence
			}
			if first || r.Confidence > f.ConfMax {
				f.ConfMax = r.Confidence
			}
			first = false
			f.Accounted = f.Accounted || r.Accounted
		}
	}
	for rank, class := range f.PerRank {
		switch rc, best := attribution.ClassificationRank(class), attribution.ClassificationRank(f.Class); {
		case rc > best:
			f.Class, f.Ranks = class, []int{rank}
		case rc == best:
			f.Ranks = append(f.Ranks, rank)
		}
	}
	slices.Sort(f.Ranks)
	slices.Sort(f.Kinds)
	slices.Sort(f.Reasons)
	return f
}

func claimsElsewhere(t Truth, results []Result, matched []bool) int {
	n := 0
	for i, r := range results {
		if r.JobID == t.JobID && !matched[i] && isClaim(r.Classification) {
			n++
		}
	}
	return n
}

// isClaim tells whether a classification says the change is collective (likely or above).
func isClaim(class string) bool {
	return attribution.ClassificationRank(class) >= attribution.ClassificationRank(attribution.CollectiveLikely)
}

// Differs tells whether the two modes disagree on the injection's class, kind or
// confidence.
func (r ModesRow) Differs() bool {
	a, b := r.Reference, r.Evidence
	return a.Class != b.Class || !slices.Equal(a.Ranks, b.Ranks) || a.ConfMin != b.ConfMin || a.ConfMax != b.ConfMax ||
		!slices.Equal(a.Kinds, b.Kinds)
}

// EvidenceExpectation is what the evidence mode should say about in on this job: with
// NCCL's accounting when any of its results carried it.
func (c ModesComparison) EvidenceExpectation(in TruthInjection) Expectation {
	return EvidenceExpectation(in, c.Accounted, c.Truth.WorldSize)
}

// Check returns what the evidence mode got wrong on the job, as far as the demo holds it
// to evidence-mode §3 (EvidenceExpectation), and its claims that overlap no injection.
func (c ModesComparison) Check() []string {
	var problems []string
	for _, row := range c.Rows {
		in := row.Injection
		if why := c.EvidenceExpectation(in).Misses(in, row.Evidence.PerRank, row.Evidence.Kinds); why != "" {
			problems = append(problems, fmt.Sprintf("#%d %s: %s", in.ID, in.Kind, why))
		}
	}
	if c.EvidenceClaimsElsewhere > 0 {
		problems = append(problems, fmt.Sprintf("%d claim(s) overlap no injection", c.EvidenceClaimsElsewhere))
	}
	return problems
}

// WriteTable prints two lines per injection, one per mode: what the mode is expected to
// say, what it said, whether that is as expected and whether it is right (Right); and
// marks where the modes differ.
func (c ModesComparison) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tinjected\tt (s)\tranks\tNCCL's?\tmode\texpected\tsaid (ranks)\tkind\tconfidence\tas expected?\tright?\t\n")
	for _, row := range c.Rows {
		in := row.Injection
		what := in.Kind
		if in.Collective != "" {
			what += " @ " + in.Collective
		}
		mark := ""
		if row.Differs() {
			mark = "<- differs"
		}
		refExp, evExp := ReferenceExpectation(in), c.EvidenceExpectation(in)
		refRight, _ := Right(in, row.Reference.PerRank)
		evRight, _ := Right(in, row.Evidence.PerRank)
		fmt.Fprintf(tw, "%d\t%s\t%.3f\t%s\t%s\treference\t%s\t%s\t%s\t%s\t%s\t%s\t\n", in.ID, what,
			float64(in.StartNs-c.Truth.EpochNs)/1e9, RankList(in.Ranks), yesNo(IsCollectiveCaused(in.Kind)),
			refExp, said(row.Reference), dashList(row.Reference.Kinds), confRange(row.Reference),
			yesNO(refExp.Misses(in, row.Reference.PerRank, row.Reference.Kinds) == ""), yesNO(refRight))
		fmt.Fprintf(tw, "\t\t\t\t\tevidence\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", evExp, said(row.Evidence),
			dashList(row.Evidence.Kinds), confRange(row.Evidence),
			yesNO(evExp.Misses(in, row.Evidence.PerRank, row.Evidence.Kinds) == ""), yesNO(evRight), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	accounting := "without NCCL's accounting"
	if c.Accounted {
		accounting = "with NCCL's accounting"
	}
	_, err := fmt.Fprintf(w, "claims overlapping no injection: reference %d, evidence %d; evidence mode ran %s\n",
		c.ReferenceClaimsElsewhere, c.EvidenceClaimsElsewhere, accounting)
	return err
}

// ModeVerdict is one mode's verdict on the job: how many injections it answered as it is
// expected to and how many it got right, and the ones it got wrong.
type ModeVerdict struct {
	Mode            string
	Events          int
	AsExpected      int
	Right           int
	Wrong           []string // "#6 cotimed_decoy: called ... on ranks 0-15, but NCCL did not allocate it"
	ClaimsElsewhere int
}

// Verdicts returns the reference's and the evidence mode's verdicts.
func (c ModesComparison) Verdicts() (reference, evidence ModeVerdict) {
	reference = ModeVerdict{Mode: "reference mode", Events: len(c.Rows), ClaimsElsewhere: c.ReferenceClaimsElsewhere}
	evidence = ModeVerdict{Mode: "evidence mode", Events: len(c.Rows), ClaimsElsewhere: c.EvidenceClaimsElsewhere}
	tally := func(v *ModeVerdict, in TruthInjection, f ModeFinding, e Expectation) {
		if e.Misses(in, f.PerRank, f.Kinds) == "" {
			v.AsExpected++
		}
		if ok, why := Right(in, f.PerRank); ok {
			v.Right++
		} else {
			v.Wrong = append(v.Wrong, fmt.Sprintf("#%d %s: %s", in.ID, in.Kind, why))
		}
	}
	for _, row := range c.Rows {
		tally(&reference, row.Injection, row.Reference, ReferenceExpectation(row.Injection))
		tally(&evidence, row.Injection, row.Evidence, c.EvidenceExpectation(row.Injection))
	}
	return reference, evidence
}

func (v ModeVerdict) String() string {
	s := fmt.Sprintf("%s: as expected on %d of %d injected events; right on %d of %d", v.Mode, v.AsExpected, v.Events, v.Right, v.Events)
	if len(v.Wrong) > 0 {
		s += " (wrong on " + strings.Join(v.Wrong, "; ") + ")"
	}
	if v.ClaimsElsewhere > 0 {
		s += fmt.Sprintf("; %d claim(s) where nothing was injected", v.ClaimsElsewhere)
	}
	return s
}

// WriteVerdicts prints each mode's verdict and, in an operator's words, which mode to
// trust on this job.
func (c ModesComparison) WriteVerdicts(w io.Writer) error {
	ref, ev := c.Verdicts()
	if c.Accounted {
		ev.Mode = "evidence mode (with NCCL's accounting)"
	} else {
		ev.Mode = "evidence mode (without NCCL's accounting)"
	}
	_, err := fmt.Fprintf(w, "verdict, %s\nverdict, %s\nwhich to trust: %s\n", ref, ev, c.Trust())
	return err
}

// Trust says which mode to trust on this job, and why, in one sentence.
func (c ModesComparison) Trust() string {
	if c.Accounted {
		s := "evidence mode, because this job reports NCCL's memory accounting: its \"confirmed\" means NCCL's own books hold the memory, " +
			"while the reference mode only sees memory rise on many ranks during a collective and so blames NCCL for anything allocated alongside one"
		if wrong := c.wrongDecoys(); wrong != "" {
			s += " (" + wrong + " here)"
		}
		return s + "; use the reference mode to compare with stormlog's own output."
	}
	return "without NCCL's memory accounting neither mode can tell memory NCCL allocated from memory allocated while a collective ran; " +
		"prefer evidence mode (it caps such spikes at \"likely\" and judges each rank against its own baseline) " +
		"and report NCCL's accounting (nccl.comm.memory.total) to get \"confirmed\"."
}

// wrongDecoys lists the injections the reference claimed although NCCL did not allocate
// them ("#6").
func (c ModesComparison) wrongDecoys() string {
	var ids []string
	for _, row := range c.Rows {
		if ok, _ := Right(row.Injection, row.Reference.PerRank); !ok && !IsCollectiveCaused(row.Injection.Kind) {
			ids = append(ids, fmt.Sprintf("#%d", row.Injection.ID))
		}
	}
	return strings.Join(ids, ", ")
}

func said(f ModeFinding) string {
	if f.Class == "" {
		return "not reported"
	}
	s := fmt.Sprintf("%s (%s)", f.Class, RankList(f.Ranks))
	if n := len(f.PerRank) - len(f.Ranks); n > 0 {
		s += fmt.Sprintf(" +%d weaker", n)
	}
	return s
}

func confRange(f ModeFinding) string {
	switch {
	case f.Class == "":
		return "-"
	case f.ConfMin == f.ConfMax:
		return fmt.Sprintf("%.2f", f.ConfMax)
	}
	return fmt.Sprintf("%.2f–%.2f", f.ConfMin, f.ConfMax)
}

func dashList(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
