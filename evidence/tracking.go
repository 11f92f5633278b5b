package evidence

import "slices"

// What NCCL's accounting covers (docs/evidence-mode.md §2.3). ncclCommMemStats
// (ncclStatGpuMemTotal) reads the communicator's memory manager, which tracks only
// what NCCL maps through cuMem/VMM: with NCCL_CUMEM_ENABLE=0 its total stays at
// about 0 while NCCL holds its buffers, and communicators split with shared
// resources share their parent's manager, so each reports the same total. It never
// covers the CUDA context, NVSHMEM heaps or buffers the user registers.

// KeyCumemEnabled is the accounting record's metadata key (and the accounting
// gauge point's or resource's attribute) saying whether NCCL allocates through
// cuMem; false means its totals do not follow its buffers.
const KeyCumemEnabled = "nccl.cumem_enabled"

// UntrackedBytes is the value an accounting point carries when its source said
// cuMem is off: its total says nothing about NCCL's buffers.
const UntrackedBytes int64 = -1

// AccountingTracked reports whether a rank's accounting follows NCCL's buffers:
// false when a point says cuMem is off (UntrackedBytes) or when no total of any
// series ever moves from 0 (NCCL holds buffers from its first collective on, so
// a tracked total is never 0 throughout). A rank without series is not tracked.
func AccountingTracked(series []AccountingSeries) bool {
	moved := false
	for i := range series {
		for _, b := range series[i].Bytes {
			if b < 0 {
				return false
			}
			moved = moved || b != 0
		}
	}
	return moved
}

// AccountingManagers says, per series of one rank, which series stands for its
// memory manager: the index of the first series whose totals move in lock step
// with it (itself when none does). Communicators split with shared resources
// report one manager's total, so their growth counts once: sum only over the
// series i with AccountingManagers(series)[i] == i.
//
// Two series move in lock step when each changes at least once and every report
// of each equals the other's report just before or just after it (reports of two
// communicators are read at slightly different instants of one moving total).
// Series that never change, or never overlap in time, are kept apart: equal flat
// totals of separate managers are common (communicators of one shape).
func AccountingManagers(series []AccountingSeries) []int {
	rep := make([]int, len(series))
	for i := range rep {
		rep[i] = i
		if !changes(&series[i]) {
			continue
		}
		for j := 0; j < i; j++ {
			if rep[j] == j && changes(&series[j]) && lockStep(&series[i], &series[j]) && lockStep(&series[j], &series[i]) {
				rep[i] = j
				break
			}
		}
	}
	return rep
}

func changes(a *AccountingSeries) bool {
	return len(a.Bytes) > 1 && slices.ContainsFunc(a.Bytes[1:], func(b int64) bool { return b != a.Bytes[0] })
}

// lockStep reports whether every report of b inside a's time range equals a's
// report just before or just after it, and some report of b was compared.
func lockStep(b, a *AccountingSeries) bool {
	compared := false
	n := len(a.TimesNs)
	j := 0 // first report of a after b's report
	for i, t := range b.TimesNs {
		for j < n && a.TimesNs[j] <= t {
			j++
		}
		if j == 0 || (j == n && a.TimesNs[n-1] != t) {
			continue // outside a's range
		}
		if a.Bytes[j-1] != b.Bytes[i] && (j == n || a.Bytes[j] != b.Bytes[i]) {
			return false
		}
		compared = true
	}
	return compared
}
