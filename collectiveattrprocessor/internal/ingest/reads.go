package ingest

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Read is one thing a conversion read, in input order: exactly one field is
// set. What it points to is the Converter's and valid only until the
// sequence moves on: the caller copies what it keeps and modifies nothing.
// Records, runs and skips are handed over in place rather than gathered
// into a batch: a Record holds a whole telemetry.Event (about 400 bytes),
// and a run is formed in memory the next run reuses.
type Read struct {
	// Record is a phase span (Traces), a stormlog record (Logs) or an
	// accounting point (Metrics, Config.Reads.Accounting).
	Record *Record
	// SampleRun is the samples of one (job, rank) (Metrics).
	SampleRun *SampleRun
	// MarkerRun is the marker spans of one (job, rank) (Traces).
	MarkerRun *MarkerRun
	// Skip is an item that was not converted.
	Skip *Skip
}

// Metrics converts md (convertMetrics): sample runs, skips and, with
// Config.Reads.Accounting, NCCL's accounting points as records; the per-operation
// points of NCCL Inspector's OTLP export become marker records
// (inspectorotlp.go).
func (c *Converter) Metrics(md pmetric.Metrics) iter.Seq[Read] {
	return func(yield func(Read) bool) {
		y := reads{yield: yield}
		c.ids.metricsRes.next()
		c.insp.learnMetricsProcesses(md)
		c.metrics.convertMetricsAccounting(md, y.sampleRun, y.record, y.skip)
		c.insp.convertInspectorMetrics(md, y.record, y.skip)
	}
}

// Traces converts td (convertTraces): marker runs, phase span records and
// skips.
func (c *Converter) Traces(td ptrace.Traces) iter.Seq[Read] {
	return func(yield func(Read) bool) {
		y := reads{yield: yield}
		c.ids.tracesRes.next()
		c.insp.learnTracesProcesses(td)
		c.traces.convertTraces(td, y.record, y.markerRun, y.skip)
	}
}

// Logs converts ld (convertLogs): stormlog records and skips.
func (c *Converter) Logs(ld plog.Logs) iter.Seq[Read] {
	return func(yield func(Read) bool) {
		y := reads{yield: yield}
		c.logs.convertLogs(ld, y.record, y.skip)
	}
}

// reads hands a conversion's output to a sequence's consumer. A consumer
// that stops early stops receiving; the conversion itself runs to its end,
// so that the Converter's join buffers and mappings stay whole.
type reads struct {
	yield   func(Read) bool
	stopped bool
	skipped Skip
}

func (y *reads) put(r Read) {
	if !y.stopped && !y.yield(r) {
		y.stopped = true
	}
}

func (y *reads) record(r *Record)       { y.put(Read{Record: r}) }
func (y *reads) sampleRun(r *SampleRun) { y.put(Read{SampleRun: r}) }
func (y *reads) markerRun(r *MarkerRun) { y.put(Read{MarkerRun: r}) }

func (y *reads) skip(s Skip) {
	y.skipped = s
	y.put(Read{Skip: &y.skipped})
}
