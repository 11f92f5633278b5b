package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
)

// conformanceCase is one golden case: <suite>/<name>/ of testdata/conformance.
type conformanceCase struct {
	conformance.Case
}

func (c conformanceCase) suite() string { return c.Set }
func (c conformanceCase) name() string  { return filepath.Base(c.Dir) }

// jobID is the job the case's events are put in: one job per case, so the processor's
// per-job analysis sees exactly the events the reference analysed as one run.
func (c conformanceCase) jobID() string { return c.suite() + "/" + c.name() }

// configErr is the error the case's preset and overrides give, nil when the
// processor accepts them. A case can expect an error that is no
// configuration error (an invalid record fails the reference's whole load),
// and a case without events expects [] even with a bad configuration (the
// reference returns before resolving it): neither is a collector run.
func (c conformanceCase) configErr() error {
	preset := ""
	if c.Preset != nil {
		preset = *c.Preset
	}
	_, err := attribution.ResolveConfig(preset, c.Overrides)
	return err
}

func loadConformanceCases(t *testing.T) []conformanceCase {
	t.Helper()
	var cases []conformanceCase
	for _, suite := range []string{"attribution", "phases"} {
		cs, err := conformance.Load(suite)
		require.NoError(t, err)
		for _, c := range cs {
			cases = append(cases, conformanceCase{c})
		}
	}
	require.NotEmpty(t, cases)
	return cases
}

// processorSettings is the part of a case that needs its own processor instance.
type processorSettings struct {
	phases    bool
	preset    string
	overrides string // canonical JSON
}

func (c conformanceCase) settings() processorSettings {
	ov, _ := json.Marshal(c.Overrides) // map keys are sorted: canonical
	if c.Overrides == nil {
		ov = []byte("{}")
	}
	preset := ""
	if c.Preset != nil {
		preset = *c.Preset
	}
	return processorSettings{phases: c.suite() == "phases", preset: preset, overrides: string(ov)}
}

// yamlString quotes s for YAML (JSON strings are YAML strings).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (p processorSettings) yaml(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%spreset: %s\n", indent, yamlString(p.preset))
	fmt.Fprintf(&b, "%soverrides: %s\n", indent, p.overrides)
	fmt.Fprintf(&b, "%sphases: %t\n", indent, p.phases)
	// Conformance mode: results only when the job ends, which here is at shutdown.
	fmt.Fprintf(&b, "%semit: on_job_end\n", indent)
	fmt.Fprintf(&b, "%sjob_idle_timeout: 1h\n", indent)
	fmt.Fprintf(&b, "%sevaluation_interval: 1s\n", indent)
	fmt.Fprintf(&b, "%swindow: 87600h\n", indent)
	return b.String()
}

// rewriteJobID puts every record of a case in the case's job, keeping every other byte
// of each value (numbers keep their exact lexemes).
func rewriteJobID(events []byte, job string) ([]byte, int, error) {
	var out bytes.Buffer
	n := 0
	for i, line := range bytes.Split(events, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", i+1, err)
		}
		rec["job_id"] = json.RawMessage(yamlString(job))
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, 0, err
		}
		out.Write(b)
		out.WriteByte('\n')
		n++
	}
	return out.Bytes(), n, nil
}

// TestStormlogConformanceThroughFilelog tails every public conformance case's events.jsonl
// with the filelog receiver (one job per case, a processor per preset/overrides/phases
// combination, emit: on_job_end) and checks that the result log records equal the case's
// expected results. It also checks the shutdown flush: with a one-hour idle timeout no
// result may appear before shutdown, and every one must appear after it.
func TestStormlogConformanceThroughFilelog(t *testing.T) {
	collectorBinary(t)
	cases := loadConformanceCases(t)
	work := t.TempDir()
	out := filepath.Join(work, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))

	groups := map[processorSettings]int{}
	var order []processorSettings
	totalRecords := 0
	var valid []conformanceCase
	for _, c := range cases {
		if c.ExpectedError != nil || c.configErr() != nil {
			continue
		}
		s := c.settings()
		g, ok := groups[s]
		if !ok {
			g = len(order)
			groups[s] = g
			order = append(order, s)
			require.NoError(t, os.MkdirAll(filepath.Join(work, "in", itoa(g)), 0o755))
		}
		events, err := os.ReadFile(c.EventsPath())
		require.NoError(t, err)
		rewritten, n, err := rewriteJobID(events, c.jobID())
		require.NoError(t, err, c.jobID())
		totalRecords += n
		require.NoError(t, os.WriteFile(filepath.Join(work, "in", itoa(g), c.suite()+"-"+c.name()+".jsonl"), rewritten, 0o644))
		valid = append(valid, c)
	}

	ports := freePorts(t, 2)
	healthPort, telemetryPort := ports[0], ports[1]
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "extensions:\n  health_check:\n    endpoint: 127.0.0.1:%d\n", healthPort)
	cfg.WriteString("receivers:\n")
	for g := range order {
		fmt.Fprintf(&cfg, "  filelog/%d:\n    include: [%s]\n    start_at: beginning\n    max_log_size: 4MiB\n    include_file_record_number: true\n",
			g, yamlString(filepath.Join(work, "in", itoa(g), "*.jsonl")))
	}
	cfg.WriteString("processors:\n")
	for g, s := range order {
		fmt.Fprintf(&cfg, "  collectiveattr/%d:\n%s", g, s.yaml("    "))
	}
	fmt.Fprintf(&cfg, "exporters:\n  file:\n    path: %s\n", yamlString(filepath.Join(out, "logs.json")))
	fmt.Fprintf(&cfg, "service:\n  extensions: [health_check]\n  telemetry:\n    metrics:\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n                port: %d\n  pipelines:\n", telemetryPort)
	for g := range order {
		fmt.Fprintf(&cfg, "    logs/%d:\n      receivers: [filelog/%d]\n      processors: [collectiveattr/%d]\n      exporters: [file]\n", g, g, g)
	}
	configPath := filepath.Join(work, "config.yaml")
	require.NoError(t, os.WriteFile(configPath, []byte(cfg.String()), 0o644))

	c := startCollector(t, configPath, nil, healthPort)
	logsPath := filepath.Join(out, "logs.json")
	var passed, early int
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d stormlog records to pass through", totalRecords), func() bool {
		passed, early = countLogRecords(t, logsPath)
		return passed >= totalRecords
	})
	assert.Equal(t, totalRecords, passed, "every record passes through once")
	assert.Zero(t, early, "emit: on_job_end emits nothing before the job ends")
	c.stop()

	got := map[string][]map[string]any{}
	for _, rl := range readLogs(t, logsPath).ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if _, ok := lr.Attributes().Get(attrClassification); !ok {
					continue
				}
				var body map[string]any
				dec := json.NewDecoder(strings.NewReader(lr.Body().AsString()))
				dec.UseNumber()
				require.NoError(t, dec.Decode(&body), "result log body is JSON")
				job, _ := body["job_id"].(string)
				delete(body, "job_id")
				got[job] = append(got[job], body)
			}
		}
	}
	nResults := 0
	for _, rs := range got {
		nResults += len(rs)
	}
	t.Logf("%d cases, %d processors, %d records through filelog, %d results for %d jobs", len(valid), len(order), totalRecords, nResults, len(got))
	for _, cs := range valid {
		t.Run(cs.jobID(), func(t *testing.T) {
			var want []map[string]any
			dec := json.NewDecoder(bytes.NewReader(cs.Expected))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&want))
			have := got[cs.jobID()]
			sortResults(have)
			require.Len(t, have, len(want), "results of %s", cs.jobID())
			for i := range want {
				if d := conformance.CompareValues(want[i], have[i]); d != "" {
					t.Errorf("result %d: %s\nwant %s\nhave %s", i, d, compact(want[i]), compact(have[i]))
				}
			}
		})
	}
	for job := range got {
		if !strings.Contains(job, "/") {
			t.Errorf("results for unexpected job %q", job)
		}
	}
}

// TestConformanceConfigErrors checks that every public case with an expected_error is a
// configuration the distribution refuses, with the reference's message.
func TestConformanceConfigErrors(t *testing.T) {
	collectorBinary(t)
	cases := loadConformanceCases(t)
	dir := t.TempDir()
	for _, cs := range cases {
		if cs.ExpectedError == nil || cs.configErr() == nil {
			continue // expects results, or an invalid record (the engine's and CLI's tests)
		}
		t.Run(cs.jobID(), func(t *testing.T) {
			cfg := "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n" +
				"processors:\n  collectiveattr:\n" + cs.settings().yaml("    ") +
				"exporters:\n  debug: {}\n" +
				"service:\n  pipelines:\n    logs:\n      receivers: [otlp]\n      processors: [collectiveattr]\n      exporters: [debug]\n"
			path := filepath.Join(dir, strings.ReplaceAll(cs.jobID(), "/", "-")+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
			out, err := runCommand(t, nil, "validate", "--config", path)
			var exit interface{ ExitCode() int }
			require.True(t, errors.As(err, &exit), "validate must fail: %v\n%s", err, out)
			assert.Contains(t, out, *cs.ExpectedError)
		})
	}
}

// countLogRecords counts the pass-through records and the result records in a file
// exporter output file that may still be growing. It counts keys instead of decoding
// tens of megabytes on every poll: inside a record's body (a JSON string) every quote is
// escaped, so `"body":` and the classification attribute key only match the records.
func countLogRecords(t *testing.T, path string) (passed, results int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	records := bytes.Count(b, []byte(`"body":`))
	results = bytes.Count(b, []byte(`{"key":"`+attrClassification+`"`))
	return records - results, results
}

func sortResults(rs []map[string]any) {
	num := func(m map[string]any, k string) float64 {
		n, _ := m[k].(json.Number)
		f, _ := n.Float64()
		return f
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if a, b := num(rs[i], "rank"), num(rs[j], "rank"); a != b {
			return a < b
		}
		return num(rs[i], "interval_start_ns") < num(rs[j], "interval_start_ns")
	})
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
