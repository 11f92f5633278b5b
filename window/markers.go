package window

// markerMeta is what goes with a buffered marker time: from a marker span
// or span event (ref set), or from a stormlog record whose text matches a
// collective token (ref zero, session kept for the phase index's session
// end). The span is held in the rank's spanRefs table rather than inline:
// a span's start, end and event markers share one table entry, and a
// marker costs its time and these 8 bytes.
type markerMeta struct {
	// ref is markerHasRef | the sequence number (mod 2^31) of the marker's
	// span in spanRefs; 0 when the marker has no span.
	ref     uint32
	session uint32
}

const (
	markerHasRef uint32 = 1 << 31
	markerSeq    uint32 = markerHasRef - 1
)

// markerColumns are a rank's buffered markers, in arrival order, and the
// spans they came from.
type markerColumns struct {
	timedRing[markerMeta]
	// spanRefs are the spans of the buffered markers, in marker order;
	// refFront is the sequence number of its front entry. Marker sequence
	// numbers never decrease along the markers, so a span leaves the table
	// once a marker of a later span has left.
	spanRefs ring[SpanRef]
	refFront uint32
}

// pushRef buffers a marker at ts of span ref (zero: none).
func (m *markerColumns) pushRef(ts int64, ref SpanRef, session uint32, maxCap int) {
	m.push(ts, markerMeta{ref: m.refCode(ref, maxCap), session: session}, maxCap)
}

// refCode returns the ref of a marker of span ref (0 for none), adding the
// span to spanRefs unless it is the latest there: a span's markers arrive
// together, so only the latest span is matched for sharing an entry.
func (m *markerColumns) refCode(ref SpanRef, maxCap int) uint32 {
	if ref == (SpanRef{}) {
		return 0
	}
	n := m.spanRefs.len()
	if n == 0 || *m.spanRefs.at(n - 1) != ref {
		// One more than the markers' bound: the table may still hold the
		// span of the last marker to leave.
		m.spanRefs.push(ref, maxCap+1)
		n++
	}
	return markerHasRef | (m.refFront+uint32(n)-1)&markerSeq
}

// popFront drops the oldest marker and the spans no marker refers to.
func (m *markerColumns) popFront() {
	meta := *m.auxAt(0)
	m.timedRing.dropFront(1)
	if m.n == 0 {
		m.clearRefs()
		return
	}
	if meta.ref == 0 {
		return
	}
	// Spans before this marker's are no longer referred to; its own may
	// still be (by its span's later markers).
	for d := (meta.ref - m.refFront) & markerSeq; d > 0; d-- {
		m.spanRefs.popFront()
		m.refFront++
	}
}

func (m *markerColumns) clearRefs() {
	m.spanRefs.dropFront(m.spanRefs.len())
	m.refFront = 0
}

// ref returns the span of the i-th oldest marker (false: none).
func (m *markerColumns) ref(i int) (SpanRef, bool) {
	meta := m.auxAt(i)
	if meta.ref == 0 {
		return SpanRef{}, false
	}
	return *m.spanRefs.at(int((meta.ref - m.refFront) & markerSeq)), true
}

// trim drops the front markers older than cutoffNs and the spans no
// remaining marker refers to; it returns how many markers it dropped.
func (m *markerColumns) trim(cutoffNs int64) int {
	k := m.older(cutoffNs)
	if k == 0 {
		return 0
	}
	// The last dropped marker with a span.
	var lastRef uint32
	for i := k - 1; i >= 0 && lastRef == 0; i-- {
		lastRef = m.auxAt(i).ref
	}
	m.timedRing.dropFront(k)
	if m.n == 0 {
		m.clearRefs()
		return k
	}
	// Spans before the last dropped span are no longer referred to; that
	// span itself may still be (by its later markers).
	if lastRef != 0 {
		d := int((lastRef - m.refFront) & markerSeq)
		m.spanRefs.dropFront(d)
		m.refFront += uint32(d)
	}
	return k
}
