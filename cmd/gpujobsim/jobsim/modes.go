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

// Check returns what the evidence mode got wrong on the job, as far as the demo holds it
// to evidence-mode §3. Always: an unrelated spike is not claimed (likely or above), no
// claim lies outside the injections, and the step up has a persistent result. Without NCCL's
// accounting: a co-timed decoy is at most likely, and a collective-caused injection on
// more than half the world is claimed on all its ranks (one on fewer ranks may be judged
// against a larger communicator and missed). With it (any evidence result carries
// nccl_accounted_bytes): a co-timed decoy is not claimed, and every collective-caused
// injection is confirmed on all its ranks.
func (c ModesComparison) Check() []string {
	var problems []string
	add := func(in TruthInjection, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("#%d %s: ", in.ID, in.Kind)+fmt.Sprintf(format, args...))
	}
	for _, row := range c.Rows {
		in, f := row.Injection, row.Evidence
		switch {
		case in.Kind == KindCotimedDecoy && c.Accounted:
			if ranks := ranksAtLeast(f, attribution.CollectiveLikely); len(ranks) > 0 {
				add(in, "claimed on ranks %s although NCCL's accounting does not hold it", RankList(ranks))
			}
		case in.Kind == KindCotimedDecoy:
			if ranks := ranksAtLeast(f, attribution.CollectiveConfident); len(ranks) > 0 {
				add(in, "confident on ranks %s without NCCL's accounting", RankList(ranks))
			}
		case in.Kind == KindUnrelatedSpike:
			if ranks := ranksAtLeast(f, attribution.CollectiveLikely); len(ranks) > 0 {
				add(in, "claimed on ranks %s", RankList(ranks))
			}
		case IsCollectiveCaused(in.Kind):
			if in.Kind == KindStepUp && !slices.Contains(f.Kinds, "persistent") {
				add(in, "no persistent result")
			}
			want := attribution.CollectiveConfirmed
			if !c.Accounted {
				if 2*len(in.Ranks) <= c.Truth.WorldSize {
					continue
				}
				want = attribution.CollectiveLikely
			}
			var weak []int
			for _, r := range in.Ranks {
				if attribution.ClassificationRank(f.PerRank[r]) < attribution.ClassificationRank(want) {
					weak = append(weak, r)
				}
			}
			if len(weak) > 0 {
				add(in, "weaker than %s on ranks %s", want, RankList(weak))
			}
		}
	}
	if c.EvidenceClaimsElsewhere > 0 {
		problems = append(problems, fmt.Sprintf("%d claim(s) overlap no injection", c.EvidenceClaimsElsewhere))
	}
	return problems
}

func ranksAtLeast(f ModeFinding, class string) []int {
	var ranks []int
	for r, c := range f.PerRank {
		if attribution.ClassificationRank(c) >= attribution.ClassificationRank(class) {
			ranks = append(ranks, r)
		}
	}
	slices.Sort(ranks)
	return ranks
}

// WriteTable prints two lines per injection, one per mode, and marks where they differ.
func (c ModesComparison) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tinjected\tt (s)\tranks\tNCCL's?\tmode\tsaid (ranks)\tkind\tconfidence\treasons\t\n")
	for _, row := range c.Rows {
		in := row.Injection
		what := in.Kind
		if in.Collective != "" {
			what += " @ " + in.Collective
		}
		truth := "no"
		if IsCollectiveCaused(in.Kind) {
			truth = "yes"
		}
		mark := ""
		if row.Differs() {
			mark = "<- differs"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.3f\t%s\t%s\treference\t%s\t%s\t%s\t%s\t\n", in.ID, what,
			float64(in.StartNs-c.Truth.EpochNs)/1e9, RankList(in.Ranks), truth, said(row.Reference),
			dashList(row.Reference.Kinds), confRange(row.Reference), dashList(row.Reference.Reasons))
		fmt.Fprintf(tw, "\t\t\t\t\tevidence\t%s\t%s\t%s\t%s\t%s\n", said(row.Evidence),
			dashList(row.Evidence.Kinds), confRange(row.Evidence), dashList(row.Evidence.Reasons), mark)
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
