package telemetry

import "sync/atomic"

// rankStrings remembers, by rank, the session id and host the rank's
// records last carried, for a stream's decoders to share.
//
// A job of thousands of ranks writes each record for another rank than the
// last, so its session ids and hosts change from one record to the next and
// the intern map is looked up twice a record, each lookup a few cache misses
// among thousands of entries (its control word, its slot, the key's bytes).
// Here a record's two strings are checked against its rank's entry: one
// entry, whose strings share one allocation, so a cache line or two. The
// decoders of one stream share the entries, so a rank's records carry one
// string whichever decoder read them, and the window compares a rank's
// session with what it holds by pointer.
//
// Entries are immutable once published; a record whose strings differ from
// its rank's entry (a new process of the rank, or another job's rank of the
// same number in one stream) publishes a new one. Ranks at or above
// rankStringsMax are not remembered: their strings are interned.
type rankStrings struct {
	chunks [rankStringsMax / rankStringsChunk]atomic.Pointer[rankStringsChunkArray]
}

const (
	rankStringsChunk = 256
	rankStringsMax   = 1 << 16
)

type rankStringsChunkArray [rankStringsChunk]atomic.Pointer[rankStringsEntry]

// rankStringsEntry is one rank's session id and host, slices of one string.
type rankStringsEntry struct {
	session, host string
}

// load returns rank's entry (nil: none, or a rank not remembered).
func (m *rankStrings) load(rank int64) *rankStringsEntry {
	if uint64(rank) >= rankStringsMax {
		return nil
	}
	c := m.chunks[rank/rankStringsChunk].Load()
	if c == nil {
		return nil
	}
	return c[rank%rankStringsChunk].Load()
}

// store publishes session and host as rank's entry and returns it; rank
// must be below rankStringsMax.
func (m *rankStrings) store(rank int64, session, host string) *rankStringsEntry {
	slot := &m.chunks[rank/rankStringsChunk]
	c := slot.Load()
	if c == nil {
		c = new(rankStringsChunkArray)
		if !slot.CompareAndSwap(nil, c) {
			c = slot.Load()
		}
	}
	text := session + host
	e := &rankStringsEntry{session: text[:len(session)], host: text[len(session):]}
	c[rank%rankStringsChunk].Store(e)
	return e
}

// stringsByRank sets the session id and host scanField left as text
// (kRankText): its rank's strings when the text is theirs, else new ones
// for the rank (interned when the record has no rank rankStrings keeps).
func (d *Decoder) stringsByRank() {
	session, host := &d.slots[fSessionID], &d.slots[fHost]
	sessionText, hostText := session.present && session.kind == kRankText, host.present && host.kind == kRankText
	if !sessionText && !hostText {
		return
	}
	rank := int64(-1)
	if sl := &d.slots[fRank]; sl.present && sl.kind == kInt {
		rank = sl.i
	}
	e := d.ranks.load(rank)
	if e == nil || sessionText && string(d.text(session)) != e.session || hostText && string(d.text(host)) != e.host {
		if uint64(rank) >= rankStringsMax {
			for _, sl := range [2]*slot{session, host} {
				if sl.present && sl.kind == kRankText {
					sl.kind, sl.s = kString, d.sc.internBytes(d.sc.data[sl.i:sl.end])
				}
			}
			return
		}
		// What the record does not carry as text is kept from the
		// rank's strings, or taken from the record's own values.
		var keep rankStringsEntry
		if e != nil {
			keep = *e
		}
		e = d.ranks.store(rank, newRankString(d, session, keep.session), newRankString(d, host, keep.host))
	}
	if sessionText {
		session.kind, session.s = kString, e.session
	}
	if hostText {
		host.kind, host.s = kString, e.host
	}
}

// text is a kRankText slot's text.
func (d *Decoder) text(sl *slot) []byte { return d.sc.data[sl.i:sl.end] }

// newRankString is a rank's new string for slot sl: its text, its value,
// or keep when it has neither.
func newRankString(d *Decoder, sl *slot, keep string) string {
	switch {
	case !sl.present:
		return keep
	case sl.kind == kRankText:
		return string(d.text(sl))
	case sl.kind == kString:
		return sl.s
	}
	return keep
}
