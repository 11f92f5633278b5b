package report

import (
	"cmp"
	"slices"
)

// Episode is a group of results whose intervals overlap, directly or
// through each other, across ranks: one synchronous event of the job.
type Episode struct {
	StartNs, EndNs int64
	Results        []int // indexes into the results, by start time
	Ranks          []int64
	// Strongest is the strongest classification among its results.
	Strongest string
}

// Episodes groups results by overlapping intervals (a sweep over the
// results by start time; an interval touching the group's end joins it).
func Episodes(results []Result) []Episode {
	order := make([]int, len(results))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(results[a].StartNs, results[b].StartNs)
	})
	var eps []Episode
	for _, i := range order {
		r := &results[i]
		if n := len(eps); n > 0 && r.StartNs <= eps[n-1].EndNs {
			ep := &eps[n-1]
			ep.EndNs = max(ep.EndNs, r.EndNs)
			ep.Results = append(ep.Results, i)
			if classRank(r.Classification) > classRank(ep.Strongest) {
				ep.Strongest = r.Classification
			}
			continue
		}
		eps = append(eps, Episode{StartNs: r.StartNs, EndNs: r.EndNs, Results: []int{i}, Strongest: r.Classification})
	}
	for e := range eps {
		ranks := make([]int64, 0, len(eps[e].Results))
		for _, i := range eps[e].Results {
			ranks = append(ranks, results[i].Rank)
		}
		slices.Sort(ranks)
		eps[e].Ranks = slices.Compact(ranks)
	}
	return eps
}
