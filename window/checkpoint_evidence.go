package window

import (
	"math"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// Evidence mode's state in a checkpoint: the job's collectives table (a job
// section, before the ranks, whose markers index it) and, per rank, the
// marker intervals and NCCL's accounting series (rank sections). A
// checkpoint without them (a reference-mode job, or one written before
// they existed) restores a job without evidence state.

// encodeCollectives writes the job's collectives table in index order.
func encodeCollectives(w *CheckpointWriter, list []evidence.Collective) {
	w.uvarint(uint64(len(list)))
	for i := range list {
		c := &list[i]
		w.str(c.CommID)
		w.str(c.Op)
		w.varint(c.Seq)
		w.varint(c.MessageBytes)
		w.varint(c.NRanks)
		// 0: no member list (nil, so that a later marker's list is taken);
		// else one more than its length.
		if c.Ranks == nil {
			w.uvarint(0)
			continue
		}
		w.uvarint(uint64(len(c.Ranks)) + 1)
		for _, r := range c.Ranks {
			w.varint(r)
		}
	}
}

// decodeCollectives reads a collectives table; each identity must be in it
// once, as Intern keeps it.
func decodeCollectives(r *CheckpointReader) *evidence.CollectiveTable {
	n := r.count(5)
	list := make([]evidence.Collective, 0, n)
	for range n {
		c := evidence.Collective{CommID: r.str(), Op: r.str(), Seq: r.varint(), MessageBytes: r.varint(), NRanks: r.varint()}
		if k := r.uvarint(); k > 0 {
			m := k - 1
			if m > uint64(len(r.b)) {
				r.fail("collective member count %d exceeds the %d bytes left", m, len(r.b))
				return nil
			}
			c.Ranks = make([]int64, 0, m)
			for range m {
				c.Ranks = append(c.Ranks, r.varint())
			}
		}
		if r.err != nil {
			return nil
		}
		list = append(list, c)
	}
	t := &evidence.CollectiveTable{}
	t.Reset(list)
	for i := range list {
		if j, _ := t.Index(list[i].CommID, list[i].Op, list[i].Seq); j != int32(i) {
			r.fail("collective (%q, %q, %d) twice", list[i].CommID, list[i].Op, list[i].Seq)
			return nil
		}
	}
	return t
}

// encodeEvidenceMarkers writes a rank's marker intervals: their start
// times as deltas, then per marker its duration, its collective (-1:
// none), whether its time is approximate and its marker span, coded as
// encodeMarkers codes a reference-mode marker's.
func encodeEvidenceMarkers(w *CheckpointWriter, ev *evidenceRank) {
	m := &ev.markers
	encodeTimes(w, m.len(), m.at)
	var spans spanCoder
	for i := range m.len() {
		mk := m.auxAt(i)
		w.uvarint(uint64(mk.endNs - m.at(i)))
		w.varint(int64(mk.collective))
		w.bool(mk.approximate())
		ref, ok := ev.spanOf(mk)
		spans.encode(w, ref, ok)
	}
}

// decodeEvidenceMarkers reads what encodeEvidenceMarkers wrote into rb's
// evidence markers; a collective index must be in the job's table of
// nCollectives entries.
func decodeEvidenceMarkers(r *CheckpointReader, rb *Rank, nCollectives int) {
	times := decodeTimes(r)
	var spans spanCoder
	for _, ts := range times {
		dur := r.uvarint()
		coll := r.varint()
		approx := r.bool()
		ref, hasSpan := spans.decode(r)
		if r.err != nil {
			return
		}
		if dur > uint64(math.MaxInt64) || ts > math.MaxInt64-int64(dur) {
			r.fail("marker interval past the end of time")
			return
		}
		if coll < int64(evidence.NoCollective) || coll >= int64(nCollectives) {
			r.fail("marker collective %d outside a table of %d", coll, nCollectives)
			return
		}
		ev := rb.evidence()
		mk := evidenceMarker{endNs: ts + int64(dur), collective: int32(coll)}
		if approx {
			mk.flags = evApproximate
		}
		if hasSpan {
			mk.flags |= ev.spanCode(ref, len(times))
		}
		ev.markers.push(ts, mk, len(times))
	}
}

// encodeAccounting writes a rank's accounting series in first-seen order:
// the communicator, the report times as deltas and the reported bytes.
func encodeAccounting(w *CheckpointWriter, series []accountingSeries) {
	w.uvarint(uint64(len(series)))
	for i := range series {
		a := &series[i]
		w.str(a.commID)
		encodeTimes(w, a.len(), a.at)
		for j := range a.len() {
			w.varint(*a.auxAt(j))
		}
	}
}

// decodeAccounting reads what encodeAccounting wrote into rb's evidence
// state: one series per communicator, no negative byte count but
// evidence.UntrackedBytes (as ingestion refuses them).
func decodeAccounting(r *CheckpointReader, rb *Rank) {
	n := r.count(2)
	for range n {
		comm := r.str()
		times := decodeTimes(r)
		if r.err != nil {
			return
		}
		ev := rb.evidence()
		for i := range ev.accounting {
			if ev.accounting[i].commID == comm {
				r.fail("accounting series of %q twice", comm)
				return
			}
		}
		ev.accounting = append(ev.accounting, accountingSeries{commID: comm})
		a := &ev.accounting[len(ev.accounting)-1]
		for _, ts := range times {
			b := r.varint()
			if r.err == nil && b < 0 && b != evidence.UntrackedBytes {
				r.fail("negative accounting bytes %d", b)
			}
			if r.err != nil {
				return
			}
			a.push(ts, b, len(times))
		}
	}
}
