package collectiveattrprocessor

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
)

// jobWithOneWorldSize is 25 s of a 4-rank job (world size 4) with a
// collective spike every 5 s, and one more sample of rank 1 that declares
// world size worldSize.
func jobWithOneWorldSize(t *testing.T, id string, worldSize int64) (lines []string, bad string) {
	t.Helper()
	const s = int64(time.Second)
	t0 := time.Now().Add(-time.Minute).UnixNano() / s * s
	job := jobTraffic{job: id, ranks: 4, stepNs: s / 10}
	for k := int64(1); k <= 4; k++ {
		job.spikes = append(job.spikes, t0+k*5*s)
	}
	declared := `"world_size":` + strconv.FormatInt(worldSize, 10)
	bad = strings.Replace(stormlogLine(id, 1, 4, t0+25*s, "sample", baselineGap(0)), `"world_size":4`, declared, 1)
	require.Contains(t, bad, declared)
	return job.lines(t0, t0+25*s), bad
}

// One record declaring a world size far above limits.max_ranks_per_job
// must not become the job's expected world size (issue 32 item 4: before,
// every result of the job dropped from confident to likely). The record
// itself is kept; its world size is not believed.
func TestOneHugeWorldSizeDoesNotBendTheJob(t *testing.T) {
	lines, bad := jobWithOneWorldSize(t, "bent", 2199023255552)

	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	cfg.Phases = false
	require.NoError(t, cfg.Validate())
	want := processorBodies(t, cfg, lines)
	got := processorBodies(t, cfg, append(lines, bad))
	require.NotEmpty(t, want)
	assert.Equal(t, want, got, "the results with and without the record")
	for _, b := range got {
		assert.Contains(t, b, `"expected_world_size":4`)
	}
}

// In evidence mode a job's world size is the one most of its ranks declare:
// a rank that once declared another (within the limit) neither bends the
// job nor goes unnoticed: the disagreement is logged with both sizes and
// counted, once.
func TestEvidenceWorldSizeIsWhatTheRanksAgreeOn(t *testing.T) {
	lines, bad := jobWithOneWorldSize(t, "agreed", 16)

	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	cfg.Emit = EmitOnJobEnd
	cfg.Phases = false
	require.NoError(t, cfg.Validate())
	want := processorBodies(t, cfg, lines)
	require.NotEmpty(t, want)

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	logs, observed := observer.New(zap.WarnLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(logs)
	sink := new(consumertest.LogsSink)
	p, err := NewFactory().CreateLogs(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(append(lines, bad))))
	require.NoError(t, p.Shutdown(context.Background()))
	var got []string
	for _, ld := range sink.AllLogs()[1:] {
		got = append(got, resultBodyTexts(ld)...)
	}
	assert.ElementsMatch(t, want, got, "the results with and without the record")

	warned := observed.FilterMessageSnippet("declare different world sizes").All()
	require.Len(t, warned, 1)
	assert.Equal(t, "4 by 3 ranks, 16 by 1 rank", warned[0].ContextMap()["declared"])
	assert.EqualValues(t, 4, warned[0].ContextMap()["world_size"])
	metadatatest.AssertEqualProcessorCollectiveattrWorldSizeDisagreements(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}

// Two processes claiming one (job, rank) from two hosts at once (issue 32
// item 4: before, their samples were merged into one series and the rest
// dropped as duplicate): the host that sent first keeps the rank, the
// other's records are skipped as rank_conflict and a warning names both.
// Once the first host has been silent past the takeover gap, another host
// takes the rank over (a restart on another node).
func TestOneRankFromTwoHostsAtOnceIsAConflict(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	logs, observed := observer.New(zap.WarnLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(logs)
	cfg := createDefaultConfig().(*Config)
	cfg.Phases = false
	f := newFactory(defaultClock())
	p, err := f.processorFactory().CreateLogs(context.Background(), set, cfg, new(consumertest.LogsSink))
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })

	const s = int64(time.Second)
	t0 := time.Now().Add(-time.Minute).UnixNano() / s * s
	onHost := func(host string, ts int64) string {
		return strings.Replace(stormlogLine("claimed", 1, 2, ts, "sample", baselineGap(ts/s)), `"host":"node-0"`, `"host":"`+host+`"`, 1)
	}
	var lines []string
	for i := range int64(20) {
		ts := t0 + i*s/10
		lines = append(lines, onHost("node-a", ts), onHost("node-b", ts+s/20))
	}
	// node-a stops; node-b, 10 s later, takes the rank over.
	lines = append(lines, onHost("node-b", t0+12*s))
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(lines)))

	assert.Equal(t, 21, jobEvents(f.cores[cfg], "claimed"), "node-a's 20 samples and node-b's after the takeover")
	metadatatest.AssertEqualProcessorCollectiveattrItemsSkipped(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("reason", "rank_conflict"), attribute.String("signal", "logs")),
		Value:      20,
	}}, metricdatatest.IgnoreTimestamp())
	warned := observed.FilterField(zap.String("reason", "rank_conflict")).All()
	require.NotEmpty(t, warned)
	assert.Contains(t, warned[0].ContextMap()["detail"], `records from host "node-b" while host "node-a" sends this rank`)
}
