package collectiveattrprocessor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// loadConformanceCases loads both golden sets (testdata/conformance); missing
// data fails.
func loadConformanceCases(t *testing.T) []conformance.Case {
	t.Helper()
	var cases []conformance.Case
	for _, set := range []string{"attribution", "phases"} {
		cs, err := conformance.Load(set)
		require.NoError(t, err)
		cases = append(cases, cs...)
	}
	require.NotEmpty(t, cases)
	return cases
}

func readEventLines(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			lines = append(lines, string(l))
		}
	}
	require.NoError(t, sc.Err())
	return lines
}

// TestConformanceThroughLogs feeds every golden case's events as stormlog log
// records through a logs processor with emit: on_job_end and compares the
// emitted result log bodies (without job_id) with the expected results.
//
// A case is one run for the reference, which pools every record it is
// given whatever its job_id or session (reference open question 7), while
// contract §3.4 splits records into jobs (job_id, else session_id). Each case is
// therefore fed through its own processor with every job_id set to the case
// name: one job, and the attribution sees the same events. The window spans
// the case's event times, so that the buffer holds the whole run (the
// contract's equality holds when the bounds push nothing out).
//
// A case with expected_error is a configuration the processor refuses with
// that message, or an invalid record (the reference fails the whole load;
// the processor skips the record, counts it, and passes it through). A case
// with no events expects [] whatever its configuration (the reference
// returns before resolving it); the processor refuses a bad configuration at
// start, so there is nothing to run.
func TestConformanceThroughLogs(t *testing.T) {
	for _, c := range loadConformanceCases(t) {
		t.Run(c.Set+"/"+filepath.Base(c.Dir), func(t *testing.T) {
			lines := withJobID(t, readEventLines(t, c.Dir), "conformance-"+c.Name)
			cfg := createDefaultConfig().(*Config)
			cfg.Preset = ""
			if c.Preset != nil {
				cfg.Preset = *c.Preset
			}
			cfg.Overrides = c.Overrides
			cfg.Emit = EmitOnJobEnd
			cfg.Phases = c.Set == "phases"
			cfg.Window = max(cfg.Window, eventSpan(t, lines)+time.Second)
			if err := cfg.Validate(); err != nil {
				if c.ExpectedError != nil {
					assert.Equal(t, *c.ExpectedError, err.Error())
					return
				}
				require.Empty(t, lines, "a refused configuration: %v", err)
				require.JSONEq(t, "[]", string(c.Expected))
				return
			}
			recordErr := ""
			if c.ExpectedError != nil {
				_, err := telemetry.DecodeJSONL([]byte(strings.Join(lines, "\n")))
				var rerr *telemetry.RecordError
				require.ErrorAs(t, err, &rerr, "expected_error %q is no configuration error, so a record must be invalid", *c.ExpectedError)
				require.Equal(t, *c.ExpectedError, rerr.Err.Error())
				recordErr = rerr.Err.Error()
			}

			sink := new(consumertest.LogsSink)
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			p, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
			require.NoError(t, err)
			require.NoError(t, p.Start(context.Background(), nil))

			ld := stormlogLogs(lines)
			require.NoError(t, p.ConsumeLogs(context.Background(), ld))
			require.NoError(t, p.Shutdown(context.Background()))

			// The input passes through first, unchanged; results follow.
			all := sink.AllLogs()
			require.NotEmpty(t, all)
			assert.Equal(t, len(lines), all[0].LogRecordCount())
			if recordErr != "" {
				assert.Positive(t, skippedItems(t, tel, "logs", "invalid_value"), "the invalid record (%s) is counted", recordErr)
				return
			}
			got := []any{}
			for _, ld := range all[1:] {
				got = append(got, resultBodies(t, ld)...)
			}
			gotJSON, err := json.Marshal(got) // json.Number keeps each lexeme
			require.NoError(t, err)
			if d := conformance.CompareJSON(c.Expected, gotJSON); d != "" {
				t.Errorf("results differ: %s\ngot:  %s\nwant: %s", d, gotJSON, c.Expected)
			}
		})
	}
}

// stormlogLogs wraps JSONL lines as log records whose body is the line, the
// way the filelog receiver reads a stormlog telemetry file.
func stormlogLogs(lines []string) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, l := range lines {
		sl.LogRecords().AppendEmpty().Body().SetStr(l)
	}
	return ld
}

// withJobID sets job_id to job in every record that is a JSON object,
// keeping every other value's exact JSON text; other lines are kept as they
// are (an invalid record stays invalid).
func withJobID(t *testing.T, lines []string, job string) []string {
	t.Helper()
	out := make([]string, len(lines))
	for i, l := range lines {
		var rec map[string]json.RawMessage
		if json.Unmarshal([]byte(l), &rec) != nil || rec == nil {
			out[i] = l
			continue
		}
		rec["job_id"] = json.RawMessage(strconv.Quote(job))
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// eventSpan is the time between the earliest and the latest timestamp_ns of
// the records (0 when none has one).
func eventSpan(t *testing.T, lines []string) time.Duration {
	t.Helper()
	var lo, hi int64
	seen := false
	for _, l := range lines {
		var rec struct {
			TimestampNs *int64 `json:"timestamp_ns"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil || rec.TimestampNs == nil {
			continue
		}
		ts := *rec.TimestampNs
		if !seen {
			lo, hi, seen = ts, ts, true
		}
		lo, hi = min(lo, ts), max(hi, ts)
	}
	return time.Duration(hi - lo)
}

// resultBodies decodes the result log records of one emitted batch, checking
// and removing their job_id.
func resultBodies(t *testing.T, ld plog.Logs) []any {
	t.Helper()
	var out []any
	for i := range ld.ResourceLogs().Len() {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				body := lrs.At(k).Body()
				require.Equal(t, pcommon.ValueTypeStr, body.Type())
				dec := json.NewDecoder(bytes.NewReader([]byte(body.Str())))
				dec.UseNumber()
				var m map[string]any
				require.NoError(t, dec.Decode(&m), body.Str())
				assert.IsType(t, "", m["job_id"])
				delete(m, "job_id")
				out = append(out, m)
			}
		}
	}
	return out
}

// skippedItems is the items_skipped count of one signal and reason.
func skippedItems(t *testing.T, tel *componenttest.Telemetry, signal, reason string) int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_processor_collectiveattr_items_skipped")
	require.NoError(t, err)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "items_skipped is an int sum")
	n := int64(0)
	for _, dp := range sum.DataPoints {
		s, _ := dp.Attributes.Value("signal")
		r, _ := dp.Attributes.Value("reason")
		if s.AsString() == signal && r.AsString() == reason {
			n += dp.Value
		}
	}
	return n
}
