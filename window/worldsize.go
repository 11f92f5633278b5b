package window

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// agreedWorldSize is the world size a job's ranks agree on in evidence
// mode: the value the most ranks declare (each rank counted once, with the
// largest size it declared), the larger on a tie; 0 when no rank declares
// one. A single rank, or a single record of one, cannot set it against the
// others (the reference mode keeps stormlog's largest declared size). With
// disagreement, detail lists the sizes declared and by how many ranks, the
// agreed one first; it is "" when every declaring rank agrees. declared is
// reordered.
func agreedWorldSize(declared []int64) (size int64, detail string) {
	declared = slices.DeleteFunc(declared, func(v int64) bool { return v <= 0 })
	if len(declared) == 0 {
		return 0, ""
	}
	slices.Sort(declared)
	type vote struct{ size, ranks int64 }
	var votes []vote
	for _, v := range declared {
		if n := len(votes); n > 0 && votes[n-1].size == v {
			votes[n-1].ranks++
		} else {
			votes = append(votes, vote{v, 1})
		}
	}
	slices.SortStableFunc(votes, func(a, b vote) int { return cmp.Or(cmp.Compare(b.ranks, a.ranks), cmp.Compare(b.size, a.size)) })
	if len(votes) == 1 {
		return votes[0].size, ""
	}
	parts := make([]string, len(votes))
	for i, v := range votes {
		unit := " ranks"
		if v.ranks == 1 {
			unit = " rank"
		}
		parts[i] = strconv.FormatInt(v.size, 10) + " by " + strconv.FormatInt(v.ranks, 10) + unit
	}
	return votes[0].size, strings.Join(parts, ", ")
}
