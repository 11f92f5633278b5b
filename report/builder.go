package report

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Metadata keys that name a marker's collective (docs/evidence-mode.md §2.1).
// gpujobsim and older exporters write the communicator as nccl_comm_id.
const (
	metaOp         = "nccl.op"
	metaCommID     = "nccl.comm.id"
	metaCommIDOld  = "nccl_comm_id"
	metaSeq        = "nccl.seq"
	metaSeqOld     = "nccl_seq"
	maxJobIDsShown = 64
)

// Builder collects a Job from a run's events, one Add per event in any
// order. It keeps per sample a time and a value, per marker a time and a
// label index and, with phases, what the phase replay reads (the phase
// boundaries, each (session, rank)'s last event time), not the events.
type Builder struct {
	phases  bool
	started bool
	job     Job
	lanes   map[int64]*Lane
	jobIDs  map[string]bool
	labels  map[MarkerLabel]int32
	// open holds, per rank, the ops whose start marker named them, until
	// their end marker.
	open map[int64]map[openOp]int32
	// phaseIndex replays the boundaries as the attribution does; sessions
	// are the (session, rank) pairs it has seen.
	phaseIndex phase.IndexBuilder
	sessions   map[sessionRank]struct{}
	// lastSession is the previous event's: consecutive events nearly always
	// share it.
	lastSession sessionRank
}

type sessionRank struct {
	session string
	rank    int64
}

// NewBuilder returns an empty builder; with phases it replays phase
// boundaries (phase_enter / phase_exit) into each lane's phase spans.
func NewBuilder(phases bool) *Builder {
	return &Builder{
		phases:   phases,
		lanes:    make(map[int64]*Lane),
		jobIDs:   make(map[string]bool),
		labels:   make(map[MarkerLabel]int32),
		open:     make(map[int64]map[openOp]int32),
		sessions: make(map[sessionRank]struct{}),
		job:      Job{StartNs: math.MaxInt64, EndNs: math.MinInt64, PhasesKnown: phases},
	}
}

// Add takes one event. It does not retain e.
func (b *Builder) Add(e *telemetry.Event) {
	b.started = true
	b.job.Events++
	b.job.StartNs = min(b.job.StartNs, e.TimestampNs)
	b.job.EndNs = max(b.job.EndNs, e.TimestampNs)
	b.job.WorldSize = max(b.job.WorldSize, e.WorldSize)
	if e.JobID != "" && !b.jobIDs[e.JobID] && len(b.jobIDs) < maxJobIDsShown {
		b.jobIDs[e.JobID] = true
		b.job.JobIDs = append(b.job.JobIDs, e.JobID)
	}
	lane := b.lanes[e.Rank]
	if lane == nil {
		lane = &Lane{Rank: e.Rank, Host: strings.Clone(e.Host)}
		b.lanes[e.Rank] = lane
	}
	if attribution.IsSample(e) {
		lane.TimesNs = append(lane.TimesNs, e.TimestampNs)
		lane.HiddenBytes = append(lane.HiddenBytes, attribution.HiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value))
	}
	if attribution.IsMarker(e) {
		lane.Markers = append(lane.Markers, b.marker(e, lane))
	}
	if isAccounting(e) {
		b.addAccounting(e, lane)
	}
	if !b.phases || e.SessionID == "" {
		return
	}
	if k := (sessionRank{e.SessionID, e.Rank}); k != b.lastSession {
		if _, ok := b.sessions[k]; !ok {
			k.session = strings.Clone(k.session) // a streamed event's strings share a block of text
			b.sessions[k] = struct{}{}
		}
		b.lastSession = k
	}
	b.phaseIndex.Add(e)
}

// marker returns e as a marker of lane: labelled by its op, or, when it
// names no op but the communicator and sequence number of an op the lane
// opened, as that op's end.
func (b *Builder) marker(e *telemetry.Event, lane *Lane) Marker {
	l := MarkerLabel{Op: telemetry.TrimSpace(e.EventType)}
	var op, comm, commOld, seq, seqOld telemetry.MetadataValue
	for k, v := range e.MetadataMembers() {
		switch k {
		case metaOp:
			op = v
		case metaCommID:
			comm = v
		case metaCommIDOld:
			commOld = v
		case metaSeq:
			seq = v
		case metaSeqOld:
			seqOld = v
		}
	}
	if c, ok := comm.AsString(); ok {
		l.Comm = c
	} else if c, ok := commOld.AsString(); ok {
		l.Comm = c
	}
	n, hasSeq := seq.AsInt()
	if !hasSeq {
		n, hasSeq = seqOld.AsInt()
	}
	key := openOp{comm: l.Comm, seq: n}
	m := Marker{TimeNs: e.TimestampNs}
	if o, ok := op.AsString(); ok && o != "" {
		l.Op = o
		m.Label = b.label(l)
		if hasSeq && l.Comm != "" {
			if b.open[lane.Rank] == nil {
				b.open[lane.Rank] = map[openOp]int32{}
			}
			b.open[lane.Rank][key] = m.Label
		}
		return m
	}
	if label, ok := b.open[lane.Rank][key]; ok && hasSeq && l.Comm != "" {
		delete(b.open[lane.Rank], key)
		m.Label, m.End = label, true
		return m
	}
	m.Label = b.label(l)
	return m
}

// openOp is an op a rank's marker opened: its communicator and sequence
// number.
type openOp struct {
	comm string
	seq  int64
}

func (b *Builder) label(l MarkerLabel) int32 {
	i, ok := b.labels[l]
	if !ok {
		// A streamed event's strings share a block of text with others.
		l.Op, l.Comm = strings.Clone(l.Op), strings.Clone(l.Comm)
		i = int32(len(b.job.MarkerLabels))
		b.labels[l] = i
		b.job.MarkerLabels = append(b.job.MarkerLabels, l)
	}
	return i
}

// Job returns what was collected, lanes in ascending rank order with their
// samples and markers in time order. Call it once, after the last Add.
func (b *Builder) Job() *Job {
	job := &b.job
	if !b.started {
		job.StartNs, job.EndNs = 0, 0
	}
	job.Lanes = make([]Lane, 0, len(b.lanes))
	for _, l := range b.lanes {
		job.Lanes = append(job.Lanes, *l)
	}
	slices.SortFunc(job.Lanes, func(a, b Lane) int { return cmp.Compare(a.Rank, b.Rank) })
	for i := range job.Lanes {
		l := &job.Lanes[i]
		l.TimesNs, l.HiddenBytes = sortByTime(l.TimesNs, l.HiddenBytes)
		for k := range l.Accounting {
			a := &l.Accounting[k]
			a.TimesNs, a.Bytes = sortByTime(a.TimesNs, a.Bytes)
		}
		slices.SortStableFunc(job.Lanes[i].Markers, func(a, b Marker) int { return cmp.Compare(a.TimeNs, b.TimeNs) })
	}
	if b.phases {
		b.replayPhases(job)
	}
	return job
}

// sortByTime returns a series' times and values in time order (stable).
func sortByTime(times, values []int64) ([]int64, []int64) {
	if slices.IsSorted(times) {
		return times, values
	}
	idx := make([]int, len(times))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(times[a], times[b]) })
	ts, vs := make([]int64, len(idx)), make([]int64, len(idx))
	for i, j := range idx {
		ts[i], vs[i] = times[j], values[j]
	}
	return ts, vs
}

// replayPhases replays the boundaries as the attribution does
// (phase.IndexBuilder, each (session, rank)'s scopes still open at the end
// closing at its last event) into each lane's phase spans.
func (b *Builder) replayPhases(job *Job) {
	keys := make([]sessionRank, 0, len(b.sessions))
	for k := range b.sessions {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sessionRank) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.session, b.session))
	})
	ix := b.phaseIndex.Index(nil)
	li := 0
	for _, k := range keys {
		for li < len(job.Lanes) && job.Lanes[li].Rank < k.rank {
			li++
		}
		if li == len(job.Lanes) {
			break
		}
		for _, s := range ix.Spans(k.session, k.rank) {
			job.Lanes[li].Phases = append(job.Lanes[li].Phases, PhaseSpan{
				StartNs: s.StartNs, EndNs: s.EndNs, Path: s.Path, SyntheticEnd: s.SyntheticEnd,
			})
		}
	}
	b.phaseIndex = phase.IndexBuilder{}
}

func isAccounting(e *telemetry.Event) bool {
	return strings.EqualFold(telemetry.TrimSpace(e.EventType), evidence.AccountingEventType)
}

// addAccounting adds an accounting record's value to its communicator's
// series of lane; a record without a communicator or a byte count is left
// out (the attribution skips it too).
func (b *Builder) addAccounting(e *telemetry.Event, lane *Lane) {
	var comm string
	var total int64
	var hasComm, hasTotal bool
	for k, v := range e.MetadataMembers() {
		switch k {
		case evidence.KeyCommID:
			comm, hasComm = v.AsString()
		case evidence.KeyMemoryTotal:
			total, hasTotal = v.AsInt()
		}
	}
	if !hasComm || !hasTotal || total < 0 {
		return
	}
	i := slices.IndexFunc(lane.Accounting, func(a AccountingSeries) bool { return a.Comm == comm })
	if i < 0 {
		i = len(lane.Accounting)
		lane.Accounting = append(lane.Accounting, AccountingSeries{Comm: strings.Clone(comm)})
	}
	a := &lane.Accounting[i]
	a.TimesNs = append(a.TimesNs, e.TimestampNs)
	a.Bytes = append(a.Bytes, total)
}
