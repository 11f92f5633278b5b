package ledger

import (
	"slices"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// The two judgements below are what the evidence engine decides about
// NCCL's accounting semantics (issue 24: "accounting untracked" and
// communicators sharing one memory manager); the ledger reads them here
// only, so that it follows the engine's rules once they are exported.

// accountingTracked reports whether a rank's accounting can be used: some
// report of some communicator is above 0. NCCL counts only cuMem
// allocations, so with NCCL_CUMEM_ENABLE=0 every total reads 0 while NCCL
// holds gigabytes.
func accountingTracked(series []evidence.AccountingSeries) bool {
	for i := range series {
		for _, b := range series[i].Bytes {
			if b > 0 {
				return true
			}
		}
	}
	return false
}

// sharedSeries marks the series whose totals move in lock step with an
// earlier series of the rank: the same reports at the same instants, with
// at least one change. Communicators split with shared resources share a
// memory manager and each reports the manager's total, so only the first
// of them counts. Two flat series are counted both: equal constant totals
// say nothing about sharing.
func sharedSeries(series []evidence.AccountingSeries) []bool {
	var shared []bool
	for i := 1; i < len(series); i++ {
		a := &series[i]
		if !moves(a.Bytes) {
			continue
		}
		for j := range i {
			b := &series[j]
			if (shared == nil || !shared[j]) && slices.Equal(a.Bytes, b.Bytes) && slices.Equal(a.TimesNs, b.TimesNs) {
				if shared == nil {
					shared = make([]bool, len(series))
				}
				shared[i] = true
				break
			}
		}
	}
	return shared
}

func moves(v []int64) bool {
	for i := 1; i < len(v); i++ {
		if v[i] != v[0] {
			return true
		}
	}
	return false
}
