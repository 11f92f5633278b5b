package window

import (
	"math"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// Config is what every Job of one owner is held to.
type Config struct {
	// MaxEventsPerRank bounds the entries a rank buffers
	// (limits.max_events_per_rank); the oldest give way.
	MaxEventsPerRank int
	// Window is how much event time each rank keeps, counted back from its
	// job's event time.
	Window time.Duration
	// Phases keeps phase boundaries and phase spans for the phase index;
	// without it a boundary is kept as any other record.
	Phases bool
	// Mode is what the attribution mode reads beyond what every mode
	// keeps (mode.go); nil is ReferenceMode.
	Mode Mode
	// Stream says a job is one file's records added in order and
	// snapshotted once (Stream): every record is a record of its own (the
	// duplicate rule's file position, always past the last), and its
	// evidence snapshot hands the engine no baseline cache, which only
	// pays from one evaluation to the next.
	Stream bool
}

// Unbounded is a Config that keeps everything (a Stream's: a whole file is
// one window). The rank bound leaves room for the span tables' one extra
// entry.
func Unbounded(mode Mode, phases bool) *Config {
	return &Config{MaxEventsPerRank: math.MaxInt32, Window: time.Duration(math.MaxInt64), Phases: phases, Mode: mode, Stream: true}
}

// Counts are what the jobs of one owner refused and dropped, for its
// self-telemetry: its owner reads and resets them.
type Counts struct {
	// Stale are records (or markers of a span) before the window.
	Stale int64
	// Duplicate are records its rank already buffered.
	Duplicate int64
	// Evicted are the entries dropped, by the bound that dropped them.
	Evicted [NumBounds]int64
}

// Bound is what made a buffered entry leave.
type Bound uint8

const (
	// BoundWindow: the entry fell out of the window.
	BoundWindow Bound = iota
	// BoundMaxEventsPerRank: its rank was full.
	BoundMaxEventsPerRank
	// NumBounds is the number of bounds.
	NumBounds
)

func (b Bound) String() string {
	return [...]string{"window", "max_events_per_rank"}[b]
}

// Job is the window of one job: its ranks' columns inside the event-time
// window, the job's event time, its collectives table (evidence mode) and
// the file positions it accepted. It is not safe for concurrent use.
type Job struct {
	id     string
	cfg    *Config
	counts *Counts
	ranks  map[int64]*Rank
	// byRank holds, indexed by rank, the buffers of the ranks below its
	// length (nil for a rank not tracked): ranks are small and dense (0 to
	// world size - 1), and the hot path looks one up per run of records.
	byRank []*Rank
	// newestNs is the job's event time: the window and the settle delay
	// are measured from it. It is the second-newest of the ranks' newest
	// times (watermark.go), so that one rank cannot move it ahead.
	newestNs int64
	wm       watermark
	// events is the number of buffered entries over all ranks, but for
	// the uncounted entries of the record being added: makeRoom precedes
	// each push that a later makeRoom of the record may find, and counts
	// it until added or addedRun counts the record's entries in events.
	events, uncounted int
	// collectives interns the collective identities of evidence mode's
	// markers (nil in the reference mode).
	collectives *evidence.CollectiveTable
	// lines are the furthest positions accepted per file (duplicates.go).
	lines fileLines
	// read is the stormlog record being added as the mode read it.
	read stormlogRead
	// worldSizeNote is the world-size disagreement the last evidence
	// snapshot found ("" none), so that one is reported once.
	worldSizeNote string
}

// NewJob returns the empty window of job id under cfg (which must outlive
// it and not change); counts, when not nil, receives what it refuses and
// drops.
func NewJob(id string, cfg *Config, counts *Counts) *Job {
	if cfg.Mode == nil {
		cfg.Mode = ReferenceMode
	}
	if counts == nil {
		counts = &Counts{}
	}
	return &Job{id: id, cfg: cfg, counts: counts, ranks: map[int64]*Rank{}, newestNs: math.MinInt64, wm: newWatermark()}
}

// ID is the job id.
func (j *Job) ID() string { return j.id }

// Events is the number of buffered entries over all ranks.
func (j *Job) Events() int { return j.events }

// Ranks is the number of ranks tracked.
func (j *Job) Ranks() int { return len(j.ranks) }

// NewestNs is the job's event time (math.MinInt64: none yet).
func (j *Job) NewestNs() int64 { return j.newestNs }

// Rank returns the buffer of rank r, nil when it has none.
func (j *Job) Rank(r int64) *Rank {
	if uint64(r) < uint64(len(j.byRank)) {
		return j.byRank[r]
	}
	return j.ranks[r]
}

// Host is the host rank r last declared ("" when unknown or untracked).
func (j *Job) Host(r int64) string {
	if rb := j.Rank(r); rb != nil {
		return rb.host
	}
	return ""
}

// Admits reports whether a record at ts of rank rb (nil: a rank not yet
// tracked) is inside the window. A new rank is judged against the job's
// event time only once two ranks make it: while one rank does, that
// rank's clock alone would refuse every other rank (watermark.go).
func (j *Job) Admits(rb *Rank, ts int64) bool {
	return ts >= j.cutoffNs() || rb == nil && j.wm.ranksWithTime < 2
}

// AddRank tracks a new, empty rank r and returns its buffer.
func (j *Job) AddRank(r int64) *Rank {
	rb := &Rank{newestNs: math.MinInt64}
	j.addRank(r, rb)
	return rb
}

// addRank tracks rb as the buffer of rank r. byRank grows to hold r only
// while it stays dense (r below twice the ranks tracked, plus some), so a
// job of a few scattered large ranks keeps them in the map alone; when it
// grows, it takes over the ranks below r that the map alone held.
func (j *Job) addRank(r int64, rb *Rank) {
	j.ranks[r] = rb
	if r < 0 || r >= 2*int64(len(j.ranks))+64 {
		return
	}
	if n := int(r) + 1; n > len(j.byRank) {
		old := len(j.byRank)
		j.byRank = slices.Grow(j.byRank, n-old)[:n]
		for i := old; i < n; i++ {
			j.byRank[i] = j.ranks[int64(i)]
		}
	}
	j.byRank[r] = rb
}

// Trim drops every rank's entries before the window.
func (j *Job) Trim() {
	cutoff := j.cutoffNs()
	for _, rb := range j.ranks {
		j.evicted(BoundWindow, rb.trim(cutoff))
	}
}

// PhaseSpansWaiting is how many buffered phase spans wait for a parent.
func (j *Job) PhaseSpansWaiting() int {
	n := 0
	for _, rb := range j.ranks {
		n += rb.phaseWaiting
	}
	return n
}

// trimSlackDivisor sets how far (window / trimSlackDivisor) a rank's oldest
// entry may fall behind the window before a record pushed to it trims it:
// at most ~3% more entries than the window holds, for trims that drop a
// run of entries at once.
const trimSlackDivisor = 32

// lazyCutoffNs is the window's cutoff minus the trim slack.
func (j *Job) lazyCutoffNs() int64 {
	window := j.cfg.Window
	slack := window + window/trimSlackDivisor
	if slack < window || j.newestNs < math.MinInt64+int64(slack) {
		return math.MinInt64
	}
	return j.newestNs - int64(slack)
}

// cutoffNs is the oldest event time the window keeps.
func (j *Job) cutoffNs() int64 { return cutoffAt(j.newestNs, j.cfg.Window) }

// cutoffAt is the oldest event time the window keeps when the newest event
// time is newestNs.
func cutoffAt(newestNs int64, window time.Duration) int64 {
	if newestNs < math.MinInt64+int64(window) {
		return math.MinInt64
	}
	return newestNs - int64(window)
}

// Collectives is the job's collectives table (evidence mode; nil when it
// has none), for tests and diagnostics: read-only.
func (j *Job) Collectives() []evidence.Collective {
	if j.collectives == nil {
		return nil
	}
	return j.collectives.List
}
