package ingest

import (
	"time"
)

// Converter turns OTLP metrics, spans and log records into Records. It is
// the processor's one entry to conversion: one converter per signal
// (metricsConverter, tracesConverter, logsConverter) and the NCCL
// Inspector reader (inspectorConverter), which all resolve identities with
// one identityResolver, so that what one signal teaches (a rank's device,
// a process's rank) serves the others. It keeps the state that conversion
// needs (as-of join buffers per (job, rank), the (host, device) → (job,
// rank) mapping, the (host, pid) join) and nothing else. It is not safe for
// concurrent use: the processor core serialises calls. It never mutates
// its input and never panics on malformed input.
//
// Metrics, Traces and Logs return what they read as a sequence of Reads
// (records, runs, skips) in input order, each handed over by pointer: it
// is the Converter's and is reused for the next item, so the consumer
// copies what it keeps and modifies nothing. Internally each conversion
// hands its output to emit functions that the sequence turns into Reads.
type Converter struct {
	cfg     Config
	now     func() time.Time
	ids     *identityResolver
	metrics *metricsConverter
	traces  *tracesConverter
	logs    *logsConverter
	insp    *inspectorConverter
}

// Stats are sizes and cumulative counts for self-telemetry.
type Stats struct {
	// Series is the number of (job, rank) join buffers.
	Series int
	// PendingPoints is the number of metric points waiting in join buffers.
	PendingPoints int
	// IdentityMappings is the number of live (host, device) mappings.
	IdentityMappings int
	// IdentityMapFull counts devices not learned because the mapping table
	// was at its bound (cumulative).
	IdentityMapFull uint64
	// UnjoinedPoints counts device-used points that never formed a sample
	// (cumulative; each was also reported as an unjoinable Skip, or by the
	// return value of Expire).
	UnjoinedPoints uint64
}

// NewConverter returns a Converter; now is the wall clock (injectable for
// tests), used for the identity TTL, the pending TTL and the future-timestamp
// check.
func NewConverter(cfg Config, now func() time.Time) *Converter {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	c := &Converter{cfg: cfg, now: now}
	c.ids = newIdentityResolver(&c.cfg)
	c.metrics = newMetricsConverter(&c.cfg, c.ids, now)
	c.traces = newTracesConverter(&c.cfg, c.ids, now)
	c.insp = newInspectorConverter(&c.cfg, c.ids, now)
	c.logs = &logsConverter{cfg: &c.cfg, now: now, ids: c.ids, insp: c.insp}
	return c
}

// Expire drops identity mappings unused for IdentityTTL and join-buffer
// points older (wall clock) than PendingTTL, and forgets empty join buffers.
// Call it on each tick. It returns how many device-used points were dropped
// without forming a sample: the caller counts them as unjoinable.
func (c *Converter) Expire() (unjoined int) {
	nowNs := c.now().UnixNano()
	c.ids.dev.expire(nowNs)
	return c.metrics.expire(nowNs)
}

// Stats returns the current sizes and cumulative counts.
func (c *Converter) Stats() Stats {
	st := c.metrics.stats
	st.Series = len(c.metrics.series)
	for _, s := range c.metrics.series {
		st.PendingPoints += s.pendingPoints()
	}
	st.IdentityMappings = len(c.ids.dev.m)
	st.IdentityMapFull = c.ids.dev.full
	return st
}

// TakeWorldSizesIgnored returns the number of items whose declared world
// size was ignored since the last call.
func (c *Converter) TakeWorldSizesIgnored() int64 { return c.ids.takeWorldSizesIgnored() }

// futureSkip is the skip of an item past futureLimit.
var futureSkip = Skip{Reason: SkipFuture, Detail: "timestamp is more than max_future_skew ahead of the collector's clock"}

// futureLimit is the newest acceptable item timestamp.
func (cfg *Config) futureLimit(nowNs int64) int64 { return nowNs + int64(cfg.MaxFutureSkew) }
