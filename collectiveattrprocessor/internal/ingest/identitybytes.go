package ingest

import "strconv"

// The identity checks run before anything of an item is kept: its strings
// interned, a join buffer or device mapping made for it.

// identityTooLong returns a skip detail when one of an item's identity
// strings (job id, host, device or session id) is longer than
// MaxIdentityBytes, "" otherwise. It runs before the strings are interned
// or the item buffered: a flood of new, huge job ids must cost nothing
// beyond the request that carried them.
func (c *identityResolver) identityTooLong(ids ...string) string {
	for _, s := range ids {
		if len(s) > c.maxIdentityBytes {
			return "an identity string (job id, host, device or session id) is " + strconv.Itoa(len(s)) +
				" bytes, longer than limits.max_identity_bytes (" + strconv.Itoa(c.maxIdentityBytes) + ")"
		}
	}
	return ""
}

// believedWorldSize is a declared world size as the job's ranks may take
// it: 0 (undeclared) when it is above MaxWorldSize, which no job of this
// processor can have; the item itself is kept, and the ignored value
// counted (takeWorldSizesIgnored).
func (c *identityResolver) believedWorldSize(worldSize int64) int64 {
	if c.maxWorldSize > 0 && worldSize > c.maxWorldSize {
		c.worldSizesIgnored++
		return 0
	}
	return worldSize
}

// takeWorldSizesIgnored returns the number of items whose declared world
// size was ignored since the last call.
func (c *identityResolver) takeWorldSizesIgnored() int64 {
	n := c.worldSizesIgnored
	c.worldSizesIgnored = 0
	return n
}

// overJobLimit is the skip of an item whose job the store has no room for.
var overJobLimit = Skip{Reason: SkipOverLimit, Detail: "limits.max_jobs reached: data of a new job is not buffered"}

// admits reports whether the store has room for data of job.
func (c *identityResolver) admits(job string) bool {
	return c.admitsJob == nil || c.admitsJob(job)
}
