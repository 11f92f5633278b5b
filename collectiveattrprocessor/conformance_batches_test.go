package collectiveattrprocessor

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/collectiveattr/collectiveattr/internal/conformance"
)

// TestConformanceAcrossRequestsAndJobs feeds the golden cases two at a time
// through one logs processor, each case as its own job, their records
// interleaved in random runs and cut into requests of random sizes (each
// case's records keep their order). Each job's results must still equal its
// case's expected ones: buffers are per job and rank and keep arrival order,
// so neither where requests are cut nor another job's records may change a
// result. Cases are paired with others of the same set, preset and
// overrides, as one processor has one configuration.
func TestConformanceAcrossRequestsAndJobs(t *testing.T) {
	groups := map[string][]conformance.Case{}
	var keys []string
	for _, c := range loadConformanceCases(t) {
		if c.ExpectedError != nil {
			continue
		}
		overrides, err := json.Marshal(c.Overrides)
		require.NoError(t, err)
		preset := ""
		if c.Preset != nil {
			preset = *c.Preset
		}
		key := c.Set + "|" + preset + "|" + string(overrides)
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], c)
	}
	rng := rand.New(rand.NewPCG(17, 29))
	pairs := 0
	for _, key := range keys {
		cases := groups[key]
		for i := 0; i+1 < len(cases); i += 2 {
			a, b := cases[i], cases[i+1]
			pairs++
			t.Run(a.Set+"/"+filepath.Base(a.Dir)+"+"+filepath.Base(b.Dir), func(t *testing.T) {
				conformancePairInRequests(t, rng, a, b)
			})
		}
	}
	require.Greater(t, pairs, 20, "most cases are paired")
}

func conformancePairInRequests(t *testing.T, rng *rand.Rand, cases ...conformance.Case) {
	cfg := createDefaultConfig().(*Config)
	cfg.Preset = ""
	if cases[0].Preset != nil {
		cfg.Preset = *cases[0].Preset
	}
	cfg.Overrides = cases[0].Overrides
	cfg.Emit = EmitOnJobEnd
	cfg.Phases = cases[0].Set == "phases"
	cfg.EvaluationInterval = time.Hour
	require.NoError(t, cfg.Validate())

	jobs := make([]string, len(cases))
	queues := make([][]string, len(cases))
	total := 0
	for i, c := range cases {
		jobs[i] = "pair-" + c.Name
		queues[i] = withJobID(t, readEventLines(t, c.Dir), jobs[i])
		cfg.Window = max(cfg.Window, eventSpan(t, queues[i])+time.Second)
		total += len(queues[i])
	}
	// Interleave the cases in runs of 1 to 40 records.
	var lines []string
	for len(lines) < total {
		q := &queues[rng.IntN(len(queues))]
		n := min(len(*q), 1+rng.IntN(40))
		lines, *q = append(lines, (*q)[:n]...), (*q)[n:]
	}

	sink := new(consumertest.LogsSink)
	p, err := NewFactory().CreateLogs(context.Background(), nopSettings(), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))
	sent := 0
	for rest := lines; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(64))
		require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(rest[:n])))
		sent++
		rest = rest[n:]
	}
	require.NoError(t, p.Shutdown(context.Background()))

	byJob := map[string][]any{}
	for _, ld := range sink.AllLogs()[sent:] {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					dec := json.NewDecoder(bytes.NewReader([]byte(lr.Body().Str())))
					dec.UseNumber()
					var m map[string]any
					require.NoError(t, dec.Decode(&m))
					job, _ := m["job_id"].(string)
					delete(m, "job_id")
					byJob[job] = append(byJob[job], m)
				}
			}
		}
	}
	for i, c := range cases {
		got := byJob[jobs[i]]
		if got == nil {
			got = []any{}
		}
		gotJSON, err := json.Marshal(got)
		require.NoError(t, err)
		if d := conformance.CompareJSON(c.Expected, gotJSON); d != "" {
			t.Errorf("%s: results differ: %s\ngot:  %s\nwant: %s", c.Name, d, gotJSON, c.Expected)
		}
	}
}
