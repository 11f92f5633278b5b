package collectiveattrprocessor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
)

// loadConformanceCases loads both golden sets, skipping when ../shared is
// absent.
func loadConformanceCases(t *testing.T) []conformance.Case {
	t.Helper()
	var cases []conformance.Case
	for _, set := range []string{"attribution", "phases"} {
		cs, err := conformance.Load(set)
		if errors.Is(err, conformance.ErrSharedAbsent) {
			t.Skip(err)
		}
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
// A case is one run for the reference, but its records may have a null
// job_id and several sessions, which §3.4 splits into several jobs
// (job_id, else session_id). Each case is therefore fed through its own
// processor with every null job_id set to the case name. The reference does
// not read job_id (it pools every record it is given), so this pins the case
// to one job without changing what the attribution sees.
func TestConformanceThroughLogs(t *testing.T) {
	for _, c := range loadConformanceCases(t) {
		t.Run(c.Set+"/"+filepath.Base(c.Dir), func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Preset = ""
			if c.Preset != nil {
				cfg.Preset = *c.Preset
			}
			cfg.Overrides = c.Overrides
			cfg.Emit = EmitOnJobEnd
			cfg.Phases = c.Set == "phases"
			if c.ExpectedError != nil {
				err := cfg.Validate()
				require.Error(t, err)
				assert.Equal(t, *c.ExpectedError, err.Error())
				return
			}
			require.NoError(t, cfg.Validate())

			sink := new(consumertest.LogsSink)
			p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
			require.NoError(t, err)
			require.NoError(t, p.Start(context.Background(), nil))

			lines := withJobID(t, readEventLines(t, c.Dir), "conformance-"+c.Name)
			ld := stormlogLogs(lines)
			require.NoError(t, p.ConsumeLogs(context.Background(), ld))
			require.NoError(t, p.Shutdown(context.Background()))

			// The input passes through first, unchanged; results follow.
			all := sink.AllLogs()
			require.NotEmpty(t, all)
			assert.Equal(t, len(lines), all[0].LogRecordCount())
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

// withJobID sets job_id to job in every record whose job_id is null or
// absent, keeping every other value's exact JSON text.
func withJobID(t *testing.T, lines []string, job string) []string {
	t.Helper()
	out := make([]string, len(lines))
	for i, l := range lines {
		var rec map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		if v, ok := rec["job_id"]; !ok || string(v) == "null" {
			rec["job_id"] = json.RawMessage(strconv.Quote(job))
		}
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
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
