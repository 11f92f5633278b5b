package window

// takeoverGapNs is how far past the newest record of a rank's holder (in
// event time) another host's records must start to take the rank over: a
// restarted process (elastic restart, requeue, a pod moved to another node)
// starts after its predecessor stopped, by more than this; two processes
// claiming one rank at once from two hosts (a launch error, a second job
// with the same id) interleave.
const takeoverGapNs = 5_000_000_000

// claim is the host whose records a rank holds.
type claim struct {
	host string
	// newestNs is the newest event time of the holder's records.
	newestNs int64
}

// Claim reports whether a record from host at event time ts may join the
// rank's series. The rank is held by the host whose records it accepted
// last; another host's record before the holder's newest time plus
// takeoverGapNs is refused, its series never merged into the holder's:
// holder is the host holding the rank. A later one takes the rank over. A
// record that names no host ("") never conflicts.
//
// Sessions are not compared: stormlog defines how a rank's records of
// several sessions combine (another session's phase boundaries do not
// apply to this one's samples), and the reference mode keeps them all.
func (rb *Rank) Claim(host string, ts int64) (ok bool, holder string) {
	c := &rb.claim
	switch {
	case host == "":
	case c.host == "" || c.host == host:
		c.host = host
	case ts < c.newestNs+takeoverGapNs:
		return false, c.host
	default:
		*c = claim{host: host, newestNs: ts}
		return true, ""
	}
	c.newestNs = max(c.newestNs, ts)
	return true, ""
}
