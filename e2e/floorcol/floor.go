// Package floorcol is a measuring tool, not a component to deploy: the least processor that
// does what any windowing processor of GPU memory must do, so that its cost in a pipeline is
// the floor under collectiveattr's (docs/benchmarks.md, "The floor"). It passes every item
// through unchanged and, per point, finds the point's rank from its resource (the job id and
// rank attributes the in-process exporter sets), through a map keyed by job and rank with a
// memo of the last rank found, and appends the (time, value) of each device-used and
// allocator-reserved gauge point to its rank's ring for that gauge, a ring holding the
// window at the configured rate, the oldest overwritten. It evaluates nothing and emits
// nothing, joins nothing, validates nothing and never forgets a rank: it is the cost of
// reading and buffering every sample, not of a processor an operator could run.
//
// BenchmarkPipelineMetrics (collectiveattrprocessor) runs it in process; the collector
// in otelcol-floor/ runs it in e2e TestPipelineCPU (make bench-pipeline PIPELINE_FLOOR=1).
package floorcol

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
)

// Type is the processor's component type, "floor".
var Type = component.MustNewType("floor")

// The attributes and gauges the floor reads: those collectiveattr's reference mode reads
// from the in-process exporter.
const (
	jobAttr      = "training.job.id"
	rankAttr     = "training.rank"
	usedName     = "gpu.memory.device.used"
	reservedName = "gpu.memory.allocator.reserved"
)

// Config is the floor's window: how many samples a rank's ring holds.
type Config struct {
	// Window is the time a ring covers, default 5m (collectiveattr's default window).
	Window time.Duration `mapstructure:"window"`
	// SamplesPerSecond is the rate the ring is sized for, default 10 (the in-process
	// exporter's 10 Hz).
	SamplesPerSecond int `mapstructure:"samples_per_second"`
}

// Validate refuses a ring of no samples.
func (c *Config) Validate() error {
	if c.Window <= 0 {
		return errors.New("window must be positive")
	}
	if c.SamplesPerSecond <= 0 {
		return errors.New("samples_per_second must be positive")
	}
	if c.capacity() < 1 {
		return errors.New("window × samples_per_second must hold at least one sample")
	}
	return nil
}

func (c *Config) capacity() int {
	return int(c.Window.Seconds() * float64(c.SamplesPerSecond))
}

func createDefaultConfig() component.Config {
	return &Config{Window: 5 * time.Minute, SamplesPerSecond: 10}
}

// NewFactory makes the floor processor, for metrics (buffered) and traces (passed through,
// so that a collector's configuration can name it in both pipelines).
func NewFactory() processor.Factory {
	return processor.NewFactory(Type, createDefaultConfig,
		processor.WithMetrics(createMetrics, component.StabilityLevelDevelopment),
		processor.WithTraces(createTraces, component.StabilityLevelDevelopment))
}

func createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	b := NewBuffer(cfg.(*Config))
	return processorhelper.NewMetrics(ctx, set, cfg, next,
		func(_ context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
			b.Add(md)
			return md, nil
		},
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}))
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return processorhelper.NewTraces(ctx, set, cfg, next,
		func(_ context.Context, td ptrace.Traces) (ptrace.Traces, error) { return td, nil },
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}))
}

// Point is one buffered gauge point.
type Point struct{ Time, Value int64 }

// ring holds the newest len(buf) points pushed, the oldest overwritten.
type ring struct {
	buf  []Point
	next int
	full bool
}

func (r *ring) push(t, v int64) {
	r.buf[r.next] = Point{t, v}
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// points returns the ring's points, oldest first.
func (r *ring) points() []Point {
	if !r.full {
		return append([]Point(nil), r.buf[:r.next]...)
	}
	return append(append([]Point(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

type rankKey struct {
	job  string
	rank int64
}

type rankRings struct{ used, reserved ring }

// Buffer is the floor's state: a ring per rank and gauge.
type Buffer struct {
	mu       sync.Mutex
	capacity int
	ranks    map[rankKey]*rankRings
	lastKey  rankKey
	last     *rankRings
	// skipped counts the resources without a job id and an integer rank.
	skipped int
}

// NewBuffer makes an empty buffer of cfg's capacity a ring.
func NewBuffer(cfg *Config) *Buffer {
	return &Buffer{capacity: cfg.capacity(), ranks: map[rankKey]*rankRings{}}
}

// Add buffers md's device-used and allocator-reserved gauge points. Concurrent calls (a
// receiver's handlers) take turns.
func (b *Buffer) Add(md pmetric.Metrics) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		rr := b.rankOf(rm.Resource().Attributes())
		if rr == nil {
			b.skipped++
			continue
		}
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				if m.Type() != pmetric.MetricTypeGauge {
					continue
				}
				var r *ring
				switch m.Name() {
				case usedName:
					r = &rr.used
				case reservedName:
					r = &rr.reserved
				default:
					continue
				}
				dps := m.Gauge().DataPoints()
				for l := range dps.Len() {
					dp := dps.At(l)
					v := dp.IntValue()
					if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
						v = int64(dp.DoubleValue())
					}
					r.push(int64(dp.Timestamp()), v)
				}
			}
		}
	}
}

// rankOf is the rings of the resource's rank, made on its first point; nil without a job
// id and an integer rank.
func (b *Buffer) rankOf(attrs pcommon.Map) *rankRings {
	jv, ok := attrs.Get(jobAttr)
	if !ok || jv.Type() != pcommon.ValueTypeStr {
		return nil
	}
	rv, ok := attrs.Get(rankAttr)
	if !ok {
		return nil
	}
	var rank int64
	switch rv.Type() {
	case pcommon.ValueTypeInt:
		rank = rv.Int()
	case pcommon.ValueTypeStr:
		n, err := strconv.ParseInt(rv.Str(), 10, 64)
		if err != nil {
			return nil
		}
		rank = n
	default:
		return nil
	}
	job := jv.Str()
	if b.last != nil && b.lastKey.rank == rank && b.lastKey.job == job {
		return b.last
	}
	key := rankKey{job, rank}
	rr, ok := b.ranks[key]
	if !ok {
		// The key outlives the batch whose decoded string it would otherwise hold.
		key.job = strings.Clone(job)
		rr = &rankRings{used: ring{buf: make([]Point, b.capacity)}, reserved: ring{buf: make([]Point, b.capacity)}}
		b.ranks[key] = rr
	}
	b.lastKey, b.last = key, rr
	return rr
}

// Samples returns a rank's buffered device-used and allocator-reserved points, oldest
// first; ok false for a rank never seen.
func (b *Buffer) Samples(job string, rank int64) (used, reserved []Point, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rr, ok := b.ranks[rankKey{job, rank}]
	if !ok {
		return nil, nil, false
	}
	return rr.used.points(), rr.reserved.points(), true
}

// Skipped is the number of resources passed through without a job id and an integer rank.
func (b *Buffer) Skipped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.skipped
}
