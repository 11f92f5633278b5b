package evidence

import "sort"

// searchFrom is sort.Search(n, pred) for a pred that is false and then
// true over [0, n), found by galloping from hint, where the answer is
// expected: a rank's cached analysis looks for the ends of spans next to
// samples it just read, and halving the whole rank would read a cold cache
// line per step.
func searchFrom(n, hint int, pred func(int) bool) int {
	hint = min(max(hint, 0), n)
	if hint == n || pred(hint) {
		// At or before hint: gallop down while pred holds.
		hi, step := hint, 1
		for hi-step >= 0 && pred(hi-step) {
			hi -= step
			step *= 2
		}
		lo := max(hi-step, -1)
		return lo + 1 + sort.Search(hi-lo-1, func(k int) bool { return pred(lo + 1 + k) })
	}
	// After hint: gallop up while pred does not hold.
	lo, step := hint, 1
	for lo+step < n && !pred(lo+step) {
		lo += step
		step *= 2
	}
	hi := min(lo+step, n)
	return lo + 1 + sort.Search(hi-lo-1, func(k int) bool { return pred(lo + 1 + k) })
}
