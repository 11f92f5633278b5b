package ingest

import (
	"iter"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// testNow is the fake wall clock of the tests: 2026-01-01T00:01:00Z, one
// minute after the fixtures' data.
var testNow = time.Unix(1767225660, 0).UTC()

// fakeClock is an injectable clock the tests move by hand.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time          { return f.t }
func (f *fakeClock) advance(d time.Duration) { f.t = f.t.Add(d) }

func newTestConverter(cfg Config) (*Converter, *fakeClock) {
	clk := &fakeClock{t: testNow}
	if cfg.Identity.Rank == nil {
		cfg.Identity = DefaultIdentityKeys()
	}
	if cfg.Metrics.DeviceUsed == nil {
		cfg.Metrics = DefaultMetricNames()
	}
	return NewConverter(cfg, clk.now), clk
}

// collected gathers what one Convert call emitted and skipped.
type collected struct {
	records []Record
	skips   []Skip
	// samples are the samples of emitted runs as handed over, every field
	// (a Record leaves the unexported ones out).
	samples []SamplePoint
}

// emit keeps a copy of r.
func (c *collected) emit(r *Record) { c.records = append(c.records, *r) }

// emitMarkers keeps each span of run as one record per marker time, so
// that the tests list marker times one by one.
func (c *collected) emitMarkers(run *MarkerRun) {
	for i := range run.Spans {
		r := run.Record(i)
		for _, ts := range r.MarkerTimesNs {
			m := r
			m.TimestampNs, m.MarkerTimesNs = ts, nil
			c.records = append(c.records, m)
		}
	}
}
func (c *collected) skip(s Skip) { c.skips = append(c.skips, s) }

// collect keeps every Read of a conversion's sequence.
func (c *collected) collect(reads iter.Seq[Read]) {
	for r := range reads {
		switch {
		case r.Record != nil:
			c.emit(r.Record)
		case r.SampleRun != nil:
			c.emitRun(r.SampleRun)
		case r.MarkerRun != nil:
			c.emitMarkers(r.MarkerRun)
		case r.Skip != nil:
			c.skip(*r.Skip)
		}
	}
}

// emitRun keeps each sample of run as the Record it stands for.
func (c *collected) emitRun(run *SampleRun) {
	c.samples = append(c.samples, run.Samples...)
	for i := range run.Samples {
		c.records = append(c.records, run.Record(i))
	}
}

func (c *collected) reasons() []SkipReason {
	var out []SkipReason
	for _, s := range c.skips {
		out = append(out, s.Reason)
	}
	return out
}

func readMetrics(t *testing.T, name string) pmetric.Metrics {
	t.Helper()
	md, err := golden.ReadMetrics(filepath.Join("testdata", "metrics", name))
	require.NoError(t, err)
	return md
}

// convertMetrics runs Metrics and checks that the input is unchanged.
func convertMetrics(t *testing.T, c *Converter, md pmetric.Metrics) collected {
	t.Helper()
	var m pmetric.ProtoMarshaler
	before, err := m.MarshalMetrics(md)
	require.NoError(t, err)
	var got collected
	got.collect(c.Metrics(md))
	after, err := m.MarshalMetrics(md)
	require.NoError(t, err)
	// Byte comparison: exact, and NaN-safe unlike a value comparison.
	require.Equal(t, before, after, "input mutated")
	return got
}

// sampleSpec describes an expected sample; -1 marks a null optional counter.
type sampleSpec struct {
	job                                   string
	rank, localRank, worldSize, device    int64
	host                                  string
	ts                                    int64
	used, free, total                     int64
	reserved, allocated, active, inactive int64
}

func optOrNull(v int64) telemetry.OptInt {
	if v < 0 {
		return telemetry.OptInt{}
	}
	return telemetry.Int(v)
}

func (s sampleSpec) record() Record {
	host := s.host
	if host == "" {
		host = "unknown"
	}
	return Record{
		Kind: KindSample, JobID: s.job, Rank: s.rank, WorldSize: s.worldSize, Host: s.host, TimestampNs: s.ts,
		Event: telemetry.Event{
			SchemaVersion: 2, TimestampNs: s.ts, EventType: "sample", Collector: "collectiveattr.metrics",
			PID: -1, Host: host, JobID: s.job, Rank: s.rank, LocalRank: s.localRank, WorldSize: s.worldSize,
			DeviceID:                s.device,
			AllocatorAllocatedBytes: telemetry.Int(s.allocated),
			AllocatorReservedBytes:  telemetry.Int(s.reserved),
			AllocatorActiveBytes:    optOrNull(s.active),
			AllocatorInactiveBytes:  optOrNull(s.inactive),
			AllocatorChangeBytes:    telemetry.Int(0),
			DeviceUsedBytes:         telemetry.Int(s.used),
			DeviceFreeBytes:         optOrNull(s.free),
			DeviceTotalBytes:        optOrNull(s.total),
		},
	}
}
