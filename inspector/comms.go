package inspector

// maxCommSize bounds the communicators Members tracks: a record claiming
// more members than this (real jobs stay far below) is not tracked, so one
// bad line cannot allocate without bound.
const maxCommSize = 1 << 20

// Members learns, per job and communicator, which global rank holds each
// rank of the communicator, from joined records: the record of comm-local
// rank c written by a process joined to global rank g says c → g. A
// communicator whose records disagree (two global ranks for one comm-local
// rank, or two sizes) is marked inconsistent and never maps anything. The
// zero value is ready to use; it is not safe for concurrent use.
type Members struct {
	comms map[commKey]*commRanks
}

type commKey struct {
	job string
	id  string
}

type commRanks struct {
	global       []int64 // comm-local rank → global rank + 1 (0: unknown)
	known        int
	inconsistent bool
}

// Learn records that the process joined to globalRank of job is rank
// op.CommRank of op's communicator.
func (m *Members) Learn(job string, op *Op, globalRank int64) {
	if op.NRanks < 1 || op.NRanks > maxCommSize || globalRank < 0 || op.CommRank < 0 || op.CommRank >= op.NRanks {
		return // the op does not say which member wrote it
	}
	if m.comms == nil {
		m.comms = make(map[commKey]*commRanks)
	}
	key := commKey{job: job, id: op.CommID}
	c := m.comms[key]
	if c == nil {
		c = &commRanks{global: make([]int64, op.NRanks)}
		m.comms[key] = c
	}
	if c.inconsistent {
		return
	}
	if int64(len(c.global)) != op.NRanks {
		c.inconsistent = true
		return
	}
	switch g := c.global[op.CommRank]; g {
	case 0:
		c.global[op.CommRank] = globalRank + 1
		c.known++
	case globalRank + 1:
	default:
		c.inconsistent = true
	}
}

// Ranks returns the global ranks of op's communicator in comm-rank order
// once every member has been learned (nil before, or when inconsistent).
// The slice is the caller's.
func (m *Members) Ranks(job string, op *Op) []int64 {
	c := m.comms[commKey{job: job, id: op.CommID}]
	if c == nil || c.inconsistent || c.known != len(c.global) || int64(len(c.global)) != op.NRanks {
		return nil
	}
	out := make([]int64, len(c.global))
	for i, g := range c.global {
		out[i] = g - 1
	}
	return out
}

// Forget drops what was learned about job's communicators.
func (m *Members) Forget(job string) {
	for k := range m.comms {
		if k.job == job {
			delete(m.comms, k)
		}
	}
}
