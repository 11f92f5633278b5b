package collectiveattrprocessor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// filelogLogs wraps JSONL lines as the filelog receiver reads the file
// name with include_file_record_number: the line as the body, the file
// name and the line's record number (from 1) as attributes.
func filelogLogs(name string, lines []string) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i, l := range lines {
		lr := sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(l)
		lr.Attributes().PutStr("log.file.name", name)
		lr.Attributes().PutInt("log.file.record_number", int64(i+1))
	}
	return ld
}

// duplicatedMarkerLines is a quality case's records with every fifth
// collective marker line written twice in a row, as a stormlog file can
// hold it, and whether any line was doubled.
func duplicatedMarkerLines(t *testing.T, family, job string) []string {
	t.Helper()
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	c, err := jobsim.GenerateQualityCase(family, 1, shape, false)
	require.NoError(t, err)
	var lines []string
	var buf []byte
	markers := 0
	for i := range c.Events {
		e := c.Events[i]
		e.JobID = job
		buf = telemetry.AppendJSON(buf[:0], &e)
		lines = append(lines, string(buf))
		if attribution.IsMarker(&e) {
			if markers%5 == 0 {
				lines = append(lines, string(buf))
			}
			markers++
		}
	}
	require.Positive(t, markers)
	return lines
}

// TestFileRecordsTwiceCountTwice: a stormlog file that holds the same
// marker line twice holds two records, and the CLI counts both; through
// filelog with include_file_record_number the processor tells them apart
// by their record numbers and gives the CLI's results, in both modes.
func TestFileRecordsTwiceCountTwice(t *testing.T) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		for _, family := range []string{"easy", "subset"} {
			t.Run(fmt.Sprintf("%s/%s", mode, family), func(t *testing.T) {
				lines := duplicatedMarkerLines(t, family, "dup-"+family)
				var want []string
				if mode == ModeEvidence {
					want = evidenceBatch(t, lines, "medium")
				} else {
					want = referenceBatch(t, lines, "medium")
				}
				require.NotEmpty(t, want)

				cfg := createDefaultConfig().(*Config)
				cfg.Mode = mode
				cfg.Emit = EmitOnJobEnd
				cfg.Phases = false
				cfg.Window = eventSpan(t, lines) + time.Minute
				cfg.Limits.MaxEventsPerRank = len(lines)
				require.NoError(t, cfg.Validate())
				got := consumeBodies(t, cfg, filelogLogs("rank.jsonl", lines))
				slices.Sort(got)
				slices.Sort(want)
				assert.Equal(t, want, got)
			})
		}
	}
}

// TestFileRecordResentCountsOnce: a batch of numbered file records
// resent after it was buffered (the exporter before the collector
// retried) changes nothing: each record counts once, and the duplicates
// are counted as skipped.
func TestFileRecordResentCountsOnce(t *testing.T) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		t.Run(string(mode), func(t *testing.T) {
			lines := duplicatedMarkerLines(t, "easy", "resend")
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = mode
			cfg.Emit = EmitOnJobEnd
			cfg.Phases = false
			cfg.Window = eventSpan(t, lines) + time.Minute
			cfg.Limits.MaxEventsPerRank = len(lines)
			require.NoError(t, cfg.Validate())
			once := consumeBodies(t, cfg, filelogLogs("rank.jsonl", lines))
			twice := consumeBodies(t, cfg, filelogLogs("rank.jsonl", lines), filelogLogs("rank.jsonl", lines))
			slices.Sort(once)
			slices.Sort(twice)
			assert.Equal(t, once, twice)
		})
	}
}

// referenceBatch is the CLI's reference-mode result on the records, one
// JSON text per result.
func referenceBatch(t *testing.T, lines []string, preset string) []string {
	t.Helper()
	events, err := telemetry.DecodeJSONL([]byte(strings.Join(lines, "\n")))
	require.NoError(t, err)
	cfg, err := attribution.ResolveConfig(preset, nil)
	require.NoError(t, err)
	var out []string
	for _, r := range window.AttributeReference(events, cfg, nil) {
		out = append(out, string(attribution.AppendResultJSON(nil, &r, false)))
	}
	return out
}

// consumeBodies runs the batches through a logs processor of cfg and
// returns the result log bodies with their job_id member removed.
func consumeBodies(t *testing.T, cfg *Config, batches ...plog.Logs) []string {
	t.Helper()
	sink := new(consumertest.LogsSink)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))
	for _, ld := range batches {
		require.NoError(t, p.ConsumeLogs(context.Background(), ld))
	}
	require.NoError(t, p.Shutdown(context.Background()))
	all := sink.AllLogs()
	require.Len(t, all, len(batches)+1, "the input passes through, then the results")
	var got []string
	for _, ld := range all[len(batches):] {
		got = append(got, resultBodyTexts(ld)...)
	}
	return got
}
