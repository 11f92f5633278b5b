package window

import (
	"math"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// A checkpoint is one job's buffered state as bytes, for a storage
// extension to keep across a restart (docs and layout: README.md,
// Checkpoints). It starts with checkpointMagic and the format version, then
// holds a sequence of sections, each a tag (uvarint), a length (4 bytes,
// little endian) and a body: the job section, evidence mode's collectives
// table, then one rank section per rank, whose body is itself a sequence
// of sections, one per column group of the rank.
//
// Adding state: a new column group of a rank (or of the job) gets a new
// section tag, written by encodeRank (encodeJob) and read by decodeRank
// (decodeJob); a checkpoint written before it has no such section and
// restores the zero state. A change that an older build must not read
// (a section whose absence would be wrong, a changed body) increments
// CheckpointVersion. A reader refuses a version above its own and a tag it
// does not know, so an older build skips a newer checkpoint instead of
// restoring part of it.
//
// Versions: 1 has no mode section (the mode is read from the sections a
// job holds); 2 adds it, required: what a rank buffers depends on the
// mode (a marker is a time in one, an interval in the other), so a job is
// restored only into the mode that wrote it.
const (
	checkpointMagic = "CAJ\x00"
	// CheckpointVersion is the version of the checkpoints this build
	// writes; it reads every version up to it.
	CheckpointVersion = 2
)

// Job-level section tags.
const (
	tagJob  = 1 // id, newest event time
	tagRank = 2 // one rank: a sequence of rank sections
	// tagOwner is the state the window's owner keeps of the job (the
	// processor's emitted memory), after the ranks.
	tagOwner = 3
	// tagCollectives is evidence mode's collectives table, after the job
	// section and before the ranks (checkpoint_evidence.go).
	tagCollectives = 4
	// tagMode is the attribution mode whose buffers the job holds, right
	// after the job section (version 2 on).
	tagMode = 5
	// tagFileLines are the furthest file positions the job accepted
	// (duplicates.go), before the ranks.
	tagFileLines = 6
)

// Rank section tags.
const (
	tagRankMeta       = 1 // rank, world size, host, newest event time
	tagRankSessions   = 2 // the session table
	tagRankSamples    = 3 // times, gaps, total and session runs
	tagRankMarkers    = 4 // times, sessions, spans
	tagRankOthers     = 5 // times, sessions
	tagRankBoundaries = 6 // stormlog phase boundaries
	tagRankPhaseSpans = 7 // phase spans from traces
	// Evidence mode (checkpoint_evidence.go).
	tagRankEvidenceMarkers = 8  // marker intervals: times, durations, collectives, approximate, spans
	tagRankAccounting      = 9  // NCCL's accounting series per communicator
	tagRankDeviceWide      = 10 // the newest device-wide sample's time
	tagRankNewestHidden    = 11 // the newest sample's time and hidden memory, not clamped
	// tagRankPhaseSpanSessions are the phase spans' sessions, after the
	// phase spans, when some span's process named itself; without it every
	// phase span's session is the job id (a checkpoint written before
	// sessions were read from OTLP resources).
	tagRankPhaseSpanSessions = 12
)

// Marker span codes in tagRankMarkers.
const (
	markerNoSpan   = 0 // the marker has no span
	markerSameSpan = 1 // the span of the previous marker with one
	markerNewSpan  = 2 // a span follows: trace id, span id
)

// AppendCheckpoint appends the checkpoint of j to dst. owner, when not
// nil, writes its owner's state of the job (the processor's emitted
// memory) as the last section.
func (j *Job) AppendCheckpoint(dst []byte, owner func(w *CheckpointWriter)) []byte {
	w := CheckpointWriter{b: append(dst, checkpointMagic...)}
	w.uvarint(CheckpointVersion)
	w.section(tagJob, func(w *CheckpointWriter) {
		w.str(j.id)
		w.varint(j.newestNs)
	})
	w.section(tagMode, func(w *CheckpointWriter) { w.str(j.cfg.Mode.Name()) })
	if j.collectives != nil && len(j.collectives.List) > 0 {
		w.section(tagCollectives, func(w *CheckpointWriter) { encodeCollectives(w, j.collectives.List) })
	}
	if len(j.lines) > 0 {
		w.section(tagFileLines, func(w *CheckpointWriter) { encodeFileLines(w, j.lines) })
	}
	ranks := make([]int64, 0, len(j.ranks))
	for r := range j.ranks {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	for _, r := range ranks {
		rb := j.ranks[r]
		w.section(tagRank, func(w *CheckpointWriter) { encodeRank(w, r, rb) })
	}
	if owner != nil {
		w.section(tagOwner, owner)
	}
	return w.b
}

func encodeRank(w *CheckpointWriter, rank int64, rb *Rank) {
	w.section(tagRankMeta, func(w *CheckpointWriter) {
		w.varint(rank)
		w.varint(rb.worldSize)
		w.str(rb.host)
		w.varint(rb.newestNs)
	})
	w.section(tagRankSessions, func(w *CheckpointWriter) {
		w.uvarint(uint64(len(rb.sessions)))
		for _, s := range rb.sessions {
			w.str(s)
		}
	})
	if rb.samples.len() > 0 {
		w.section(tagRankSamples, func(w *CheckpointWriter) { encodeSamples(w, &rb.samples) })
	}
	if rb.markers.len() > 0 {
		w.section(tagRankMarkers, func(w *CheckpointWriter) { encodeMarkers(w, &rb.markers) })
	}
	if rb.others.len() > 0 {
		w.section(tagRankOthers, func(w *CheckpointWriter) {
			w.uvarint(uint64(rb.others.len()))
			for i := range rb.others.len() {
				e := rb.others.at(i)
				w.varint(e.TimestampNs)
				w.uvarint(uint64(e.session))
			}
		})
	}
	if rb.boundaries.len() > 0 {
		w.section(tagRankBoundaries, func(w *CheckpointWriter) {
			w.uvarint(uint64(rb.boundaries.len()))
			for i := range rb.boundaries.len() {
				encodeEvent(w, rb.boundaries.at(i))
			}
		})
	}
	if rb.phaseSpans.len() > 0 {
		w.section(tagRankPhaseSpans, func(w *CheckpointWriter) {
			w.uvarint(uint64(rb.phaseSpans.len()))
			for i := range rb.phaseSpans.len() {
				encodePhaseSpan(w, rb.phaseSpans.at(i))
			}
		})
		if rb.phaseSpansOfProcesses() {
			w.section(tagRankPhaseSpanSessions, func(w *CheckpointWriter) {
				w.uvarint(uint64(rb.phaseSpans.len()))
				for i := range rb.phaseSpans.len() {
					// 0: the job (jobSession + 1 wraps to 0); k + 1: session k.
					w.uvarint(uint64(rb.phaseSpans.at(i).session + 1))
				}
			})
		}
	}
	if rb.deviceWideThroughNs != 0 {
		w.section(tagRankDeviceWide, func(w *CheckpointWriter) { w.varint(rb.deviceWideThroughNs) })
	}
	if rb.newestHiddenNs != 0 {
		w.section(tagRankNewestHidden, func(w *CheckpointWriter) {
			w.varint(rb.newestHiddenNs)
			w.varint(rb.newestHidden)
		})
	}
	if ev := rb.ev; ev != nil {
		if ev.markers.len() > 0 {
			w.section(tagRankEvidenceMarkers, func(w *CheckpointWriter) { encodeEvidenceMarkers(w, ev) })
		}
		if len(ev.accounting) > 0 {
			w.section(tagRankAccounting, func(w *CheckpointWriter) { encodeAccounting(w, ev.accounting) })
		}
	}
}

// encodeTimes writes n times of a column as deltas from the previous one:
// a rank's times are nearly in order and evenly spaced, so most deltas take
// one to three bytes.
func encodeTimes(w *CheckpointWriter, n int, at func(int) int64) {
	w.uvarint(uint64(n))
	prev := int64(0)
	for i := range n {
		ts := at(i)
		w.varint(ts - prev) // wraps for extreme times; the reader wraps back
		prev = ts
	}
}

// encodeSamples writes the samples' times and gaps, and the total and
// session runs with their first sample counted from the front one.
func encodeSamples(w *CheckpointWriter, c *sampleColumns) {
	encodeTimes(w, c.len(), c.at)
	for i := range c.len() {
		w.varint(*c.auxAt(i))
	}
	front := c.frontSeq()
	w.uvarint(uint64(len(c.totals)))
	for _, r := range c.totals {
		w.uvarint(max(r.from, front) - front)
		w.varint(r.value)
	}
	w.uvarint(uint64(len(c.sessions)))
	for _, r := range c.sessions {
		w.uvarint(max(r.from, front) - front)
		w.uvarint(uint64(r.session))
	}
}

func encodeMarkers(w *CheckpointWriter, m *markerColumns) {
	encodeTimes(w, m.len(), m.at)
	var spans spanCoder
	for i := range m.len() {
		w.uvarint(uint64(m.auxAt(i).session))
		ref, ok := m.ref(i)
		spans.encode(w, ref, ok)
	}
}

// spanCoder codes the spans of a sequence of markers: none, the same as
// the previous marker's with one, or a new one (its trace and span ids).
type spanCoder struct {
	last    SpanRef
	hasLast bool
}

func (c *spanCoder) encode(w *CheckpointWriter, ref SpanRef, ok bool) {
	switch {
	case !ok:
		w.uvarint(markerNoSpan)
	case c.hasLast && ref == c.last:
		w.uvarint(markerSameSpan)
	default:
		w.uvarint(markerNewSpan)
		w.b = append(w.b, ref.TraceID[:]...)
		w.b = append(w.b, ref.SpanID[:]...)
		c.last, c.hasLast = ref, true
	}
}

// decode reads what encode wrote; ok is false for a marker without a span.
func (c *spanCoder) decode(r *CheckpointReader) (ref SpanRef, ok bool) {
	switch r.uvarint() {
	case markerNoSpan:
		return ref, false
	case markerSameSpan:
		if !c.hasLast {
			r.fail("marker refers to a previous span before any")
		}
		return c.last, true
	case markerNewSpan:
		copy(ref.TraceID[:], r.raw(len(ref.TraceID)))
		copy(ref.SpanID[:], r.raw(len(ref.SpanID)))
		if ref == (SpanRef{}) {
			r.fail("marker span with zero ids")
		}
		c.last, c.hasLast = ref, true
		return ref, true
	default:
		r.fail("bad marker span code")
		return ref, false
	}
}

func encodePhaseSpan(w *CheckpointWriter, e *phaseSpanEntry) {
	w.str(e.ThreadName)
	w.str(e.ScopeID)
	w.uvarint(uint64(len(e.Path)))
	for _, p := range e.Path {
		w.str(p)
	}
	w.varint(e.ThreadID)
	w.varint(e.StartNs)
	w.varint(e.EndNs)
	w.b = append(w.b, e.TraceID[:]...)
	w.b = append(w.b, e.ParentID[:]...)
}

// DecodeCheckpoint reads a checkpoint into a new Job under cfg, with its
// event time rebuilt from its ranks' (counts as in NewJob). A job holds at
// most maxRanks ranks (beyond: an error wrapping ErrCheckpoint and
// rankLimit) and each rank at most cfg.MaxEventsPerRank entries; a job
// buffered in another mode than cfg's is refused, naming both. owner, when
// not nil, reads the owner's section (AppendCheckpoint) and must read it to
// its end. Every error wraps ErrCheckpoint.
func DecodeCheckpoint(data []byte, cfg *Config, counts *Counts, maxRanks int, rankLimit error, owner func(r *CheckpointReader)) (*Job, error) {
	if !strings.HasPrefix(string(data[:min(len(data), len(checkpointMagic))]), checkpointMagic) {
		return nil, checkpointError("not a job checkpoint")
	}
	r := &CheckpointReader{b: data[len(checkpointMagic):]}
	version := r.uvarint()
	if r.err == nil && (version == 0 || version > CheckpointVersion) {
		return nil, checkpointError("version %d; this build reads 1 to %d", version, CheckpointVersion)
	}
	job := NewJob("", cfg, counts)
	seenOwner := false
	seenJob := false
	mode := ""
	for {
		tag, body, ok := r.section()
		if !ok {
			break
		}
		switch {
		case tag == tagJob && !seenJob:
			job.id = body.str()
			job.newestNs = body.varint()
			seenJob = true
		case tag == tagMode && seenJob && version >= 2 && mode == "" && job.collectives == nil && job.lines == nil && len(job.ranks) == 0:
			mode = body.str()
			if mode == "" {
				body.fail("empty mode")
			}
		case tag == tagFileLines && seenJob && job.lines == nil && len(job.ranks) == 0 && !seenOwner:
			job.lines = decodeFileLines(body)
		case tag == tagOwner && seenJob && !seenOwner:
			seenOwner = true
			if owner == nil {
				body.b = nil // an owner that keeps no state of its own
				break
			}
			owner(body)
		case tag == tagCollectives && seenJob && job.collectives == nil && len(job.ranks) == 0 && !seenOwner:
			job.collectives = decodeCollectives(body)
		case tag == tagRank && seenJob && !seenOwner:
			nCollectives := 0
			if job.collectives != nil {
				nCollectives = len(job.collectives.List)
			}
			rank, rb := decodeRank(body, nCollectives, cfg.MaxEventsPerRank)
			if body.err != nil {
				return nil, body.err
			}
			if job.ranks[rank] != nil {
				return nil, checkpointError("rank %d twice", rank)
			}
			if len(job.ranks) >= maxRanks {
				return nil, checkpointLimit(rankLimit)
			}
			job.addRank(rank, rb)
			job.events += rb.len()
		default:
			return nil, checkpointError("unexpected section %d", tag)
		}
		if err := body.done(); err != nil {
			return nil, err
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if !seenJob {
		return nil, checkpointError("no job section")
	}
	if version >= 2 && mode == "" {
		return nil, checkpointError("no mode section")
	}
	if version == 1 {
		mode = job.modeOfBuffers()
	}
	if mode != "" && mode != cfg.Mode.Name() {
		return nil, checkpointError("job %q was buffered in %s mode and this processor runs in %s mode: its buffers would be misread", job.id, mode, cfg.Mode.Name())
	}
	job.RebuildWatermark()
	return job, nil
}

// modeOfBuffers reads a version 1 checkpoint's mode from what its job
// holds: evidence mode's collectives, marker intervals or accounting, or
// the reference mode's marker times; "" when it holds neither (samples
// and other records, buffered alike in both modes).
func (j *Job) modeOfBuffers() string {
	if j.collectives != nil {
		return attribution.ModeEvidence
	}
	for _, rb := range j.ranks {
		switch {
		case rb.ev.len() > 0:
			return attribution.ModeEvidence
		case rb.markers.len() > 0:
			return attribution.ModeReference
		}
	}
	return ""
}

// encodeFileLines writes the furthest file positions, in file order.
func encodeFileLines(w *CheckpointWriter, lines fileLines) {
	files := make([]string, 0, len(lines))
	for f := range lines {
		files = append(files, f)
	}
	slices.Sort(files)
	w.uvarint(uint64(len(files)))
	for _, f := range files {
		w.str(f)
		w.uvarint(uint64(lines[f]))
	}
}

func decodeFileLines(r *CheckpointReader) fileLines {
	n := r.count(2)
	if n > maxFileLines {
		r.fail("%d file positions, more than %d", n, maxFileLines)
		return nil
	}
	lines := make(fileLines, n)
	prev := ""
	for i := range n {
		f, pos := r.str(), r.uvarint()
		if i > 0 && f <= prev {
			r.fail("file positions out of order")
		}
		if pos == 0 || pos > math.MaxInt64 {
			r.fail("file position %d", pos)
		}
		if r.err != nil {
			return nil
		}
		lines[f] = int64(pos)
		prev = f
	}
	return lines
}

// decodeRank reads a rank section's body; errors are left in r. The job's
// collectives table holds nCollectives entries.
func decodeRank(r *CheckpointReader, nCollectives, maxEvents int) (int64, *Rank) {
	rb := &Rank{newestNs: math.MinInt64}
	var rank int64
	seen := 0 // the tags read so far, as bits
	for {
		tag, body, ok := r.section()
		if !ok {
			break
		}
		if tag >= 64 || seen&(1<<tag) != 0 || tag != tagRankMeta && seen&(1<<tagRankMeta) == 0 {
			r.fail("unexpected rank section %d", tag)
			break
		}
		seen |= 1 << tag
		switch tag {
		case tagRankMeta:
			rank = body.varint()
			rb.worldSize = body.varint()
			rb.host = body.str()
			rb.newestNs = body.varint()
		case tagRankSessions:
			n := body.count(1)
			rb.sessions = make([]string, 0, n)
			for range n {
				rb.sessions = append(rb.sessions, body.str())
			}
		case tagRankSamples:
			decodeSamples(body, rb)
		case tagRankMarkers:
			decodeMarkers(body, rb)
		case tagRankOthers:
			n := body.count(2)
			for range n {
				e := otherEntry{TimestampNs: body.varint(), session: decodeSession(body, rb)}
				rb.others.push(e, n)
			}
		case tagRankBoundaries:
			n := body.count(1)
			for range n {
				rb.boundaries.push(decodeEvent(body), n)
			}
		case tagRankPhaseSpans:
			n := body.count(1)
			for range n {
				e := decodePhaseSpan(body)
				e.session = jobSession
				if e.ParentID != noParent {
					rb.phaseWaiting++
				}
				rb.phaseSpans.push(e, n)
			}
		case tagRankPhaseSpanSessions:
			decodePhaseSpanSessions(body, rb)
		case tagRankEvidenceMarkers:
			decodeEvidenceMarkers(body, rb, nCollectives)
		case tagRankAccounting:
			decodeAccounting(body, rb)
		case tagRankDeviceWide:
			rb.deviceWideThroughNs = body.varint()
		case tagRankNewestHidden:
			rb.newestHiddenNs = body.varint()
			rb.newestHidden = body.varint()
		default:
			r.fail("unknown rank section %d", tag)
		}
		if err := body.done(); err != nil {
			r.err = err
			break
		}
	}
	if r.err == nil && seen&(1<<tagRankMeta) == 0 {
		r.fail("rank without its meta section")
	}
	if r.err == nil && rb.len() > maxEvents {
		r.fail("rank %d holds %d entries, over limits.max_events_per_rank (%d)", rank, rb.len(), maxEvents)
	}
	_, rb.frontNs = rb.oldest()
	return rank, rb
}

// decodeSession reads a session index, which must be in the rank's table
// (its section comes first).
func decodeSession(r *CheckpointReader, rb *Rank) uint32 {
	v := r.uvarint()
	if v >= uint64(len(rb.sessions)) {
		r.fail("session index %d outside a table of %d", v, len(rb.sessions))
		return 0
	}
	return uint32(v)
}

func decodeTimes(r *CheckpointReader) []int64 {
	n := r.count(1)
	times := make([]int64, n)
	prev := int64(0)
	for i := range times {
		prev += r.varint()
		times[i] = prev
	}
	return times
}

func decodeSamples(r *CheckpointReader, rb *Rank) {
	times := decodeTimes(r)
	gaps := make([]int64, len(times))
	for i := range gaps {
		gaps[i] = r.varint()
	}
	type run struct {
		from  uint64
		value int64
	}
	readRuns := func(value func() int64) []run {
		runs := make([]run, r.count(2))
		for i := range runs {
			runs[i] = run{from: r.uvarint(), value: value()}
			if i > 0 && runs[i].from < runs[i-1].from {
				r.fail("sample runs out of order")
			}
		}
		return runs
	}
	totals := readRuns(r.varint)
	sessions := readRuns(func() int64 { return int64(decodeSession(r, rb)) })
	if r.err != nil {
		return
	}
	if len(times) > 0 && len(rb.sessions) == 0 {
		r.fail("samples without a session table")
		return
	}
	valueAt := func(runs []run, k *int, i int) int64 {
		for *k+1 < len(runs) && runs[*k+1].from <= uint64(i) {
			*k++
		}
		if len(runs) == 0 || runs[*k].from > uint64(i) {
			return 0
		}
		return runs[*k].value
	}
	kt, ks := 0, 0
	for i, ts := range times {
		total := valueAt(totals, &kt, i)
		session := valueAt(sessions, &ks, i)
		rb.samples.push(ts, gaps[i], total, uint32(session), len(times))
	}
}

func decodeMarkers(r *CheckpointReader, rb *Rank) {
	times := decodeTimes(r)
	var spans spanCoder
	for _, ts := range times {
		session := decodeSession(r, rb)
		ref, _ := spans.decode(r)
		if r.err != nil {
			return
		}
		rb.markers.pushRef(ts, ref, session, len(times))
	}
}

// decodePhaseSpanSessions reads the sessions of the phase spans, read
// before, as encodeRank wrote them.
func decodePhaseSpanSessions(r *CheckpointReader, rb *Rank) {
	if n := r.uvarint(); n != uint64(rb.phaseSpans.len()) {
		r.fail("%d phase span sessions for %d phase spans", n, rb.phaseSpans.len())
		return
	}
	for i := range rb.phaseSpans.len() {
		v := r.uvarint()
		switch {
		case v == 0:
			rb.phaseSpans.at(i).session = jobSession
		case v > uint64(len(rb.sessions)):
			r.fail("session index %d outside a table of %d", v-1, len(rb.sessions))
			return
		default:
			rb.phaseSpans.at(i).session = uint32(v - 1)
		}
	}
}

func decodePhaseSpan(r *CheckpointReader) phaseSpanEntry {
	e := phaseSpanEntry{ThreadName: r.str(), ScopeID: r.str()}
	if n := r.count(1); n > 0 {
		e.Path = make([]string, n)
		for i := range e.Path {
			e.Path[i] = r.str()
		}
	}
	e.ThreadID = r.varint()
	e.StartNs = r.varint()
	e.EndNs = r.varint()
	copy(e.TraceID[:], r.raw(len(e.TraceID)))
	copy(e.ParentID[:], r.raw(len(e.ParentID)))
	return e
}
