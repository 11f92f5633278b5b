package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// TestFilelogLineTwiceCountsTwice tails, with the filelog receiver and
// include_file_record_number, a stormlog file that holds some collective
// marker lines twice (as a file can) and checks that the processor's
// results, in each mode, equal the CLI's on the same file: both lines
// count, as stormlog counts them.
func TestFilelogLineTwiceCountsTwice(t *testing.T) {
	collectorBinary(t)
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	c, err := jobsim.GenerateQualityCase("easy", 1, shape, false)
	require.NoError(t, err)
	var file bytes.Buffer
	markers := 0
	for i := range c.Events {
		e := c.Events[i]
		e.JobID = "twice"
		line := telemetry.AppendJSON(nil, &e)
		file.Write(line)
		file.WriteByte('\n')
		if attribution.IsMarker(&e) {
			if markers%5 == 0 {
				file.Write(line)
				file.WriteByte('\n')
			}
			markers++
		}
	}
	events, err := telemetry.DecodeJSONL(file.Bytes())
	require.NoError(t, err)

	for _, mode := range []string{attribution.ModeReference, attribution.ModeEvidence} {
		t.Run(mode, func(t *testing.T) {
			want := cliResults(t, mode, events)
			require.NotEmpty(t, want)

			work := t.TempDir()
			in := filepath.Join(work, "job.jsonl")
			require.NoError(t, os.WriteFile(in, file.Bytes(), 0o644))
			out := filepath.Join(work, "logs.json")
			ports := freePorts(t, 2)
			cfg := collectorConfig{
				healthPort:    ports[0],
				telemetryPort: ports[1],
				receivers: fmt.Sprintf(`filelog:
  include: [%s]
  start_at: beginning
  max_log_size: 4MiB
  include_file_record_number: true`, yamlString(in)),
				processors: fmt.Sprintf(`collectiveattr:
  mode: %s
  preset: medium
  phases: false
  emit: on_job_end
  job_idle_timeout: 1h
  window: 87600h
  limits:
    max_events_per_rank: 1000000`, mode),
				exporters: "file:\n  path: " + yamlString(out),
				pipelines: pipeline("logs", "filelog", "collectiveattr", "file"),
			}
			configPath := cfg.write(t, work, "config.yaml")
			col := startCollector(t, configPath, nil, ports[0])
			waitFor(t, 2*time.Minute, "every line to pass through", func() bool {
				passed, _ := countLogRecords(t, out)
				return passed >= len(events)
			})
			col.stop()

			got := resultBodies(t, out)
			for _, body := range got {
				delete(body, "job_id")
			}
			sortResults(want)
			require.Len(t, got, len(want))
			for i := range want {
				if d := conformance.CompareValues(want[i], got[i]); d != "" {
					t.Errorf("result %d: %s\nwant %s\nhave %s", i, d, compact(want[i]), compact(got[i]))
				}
			}
		})
	}
}

// cliResults is `collectiveattr attribute --mode MODE --preset medium` on
// the events, decoded.
func cliResults(t *testing.T, mode string, events []telemetry.Event) []map[string]any {
	t.Helper()
	var results []attribution.Result
	if mode == attribution.ModeEvidence {
		cfg, err := evidence.ResolveConfig("medium", nil, nil)
		require.NoError(t, err)
		results = window.AttributeEvidence(events, cfg, nil)
	} else {
		cfg, err := attribution.ResolveConfig("medium", nil)
		require.NoError(t, err)
		results = window.AttributeReference(events, cfg, nil)
	}
	var out []map[string]any
	for i := range results {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(attribution.AppendResultJSON(nil, &results[i], false)))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&m))
		out = append(out, m)
	}
	return out
}
