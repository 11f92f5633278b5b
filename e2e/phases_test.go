package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// TestNamedPhaseSpansAcrossRequests sends one simulated job twice under two job ids. The
// first copy is as the simulator makes it: every phase span carries phase.path. The second
// has no phase.path at all, so its paths come from phase_span_names and the ancestor walk,
// and each step's "train" root goes in a request of its own after the step's other spans,
// as an SDK exports a parent after its children. Both copies must give the same results
// with the same phases:
//   - grouped_by_trace: groupbytrace runs before collectiveattr and hands it each trace whole;
//   - ungrouped: collectiveattr alone, which completes a path when its parent, a phase span,
//     arrives in a later request.
func TestNamedPhaseSpansAcrossRequests(t *testing.T) {
	for _, tc := range []struct{ name, processors string }{
		{"grouped_by_trace", "[groupbytrace, collectiveattr]"},
		{"ungrouped", "[collectiveattr]"},
	} {
		t.Run(tc.name, func(t *testing.T) { namedPhaseSpansAcrossRequests(t, tc.processors) })
	}
}

func namedPhaseSpansAcrossRequests(t *testing.T, tracesProcessors string) {
	ports := freePorts(t, 2)
	httpPort, healthPort := ports[0], ports[1]
	out := t.TempDir()
	c := startCollector(t, filepath.Join(repoRoot(t), "testdata", "e2e", "phases.yaml"), map[string]string{
		"E2E_OTLP_HTTP_PORT": itoa(httpPort), "E2E_HEALTH_PORT": itoa(healthPort), "E2E_OUT_DIR": out,
		"E2E_TRACES_PROCESSORS": tracesProcessors,
	}, healthPort)

	const withPath, byName = "phases-by-path", "phases-by-name"
	scenario := func(job string) *jobsim.Scenario {
		cfg := jobsim.DefaultConfig()
		cfg.JobID = job
		s, err := jobsim.NewScenario(cfg)
		require.NoError(t, err)
		return s
	}
	a, b := scenario(withPath), scenario(byName)
	sender := jobsim.NewOTLPSender("127.0.0.1:" + itoa(httpPort))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	epoch := time.Now().Add(-a.Config.Duration).Truncate(time.Millisecond)
	roots := 0
	for from := time.Duration(0); from < a.Config.Duration; from += time.Second {
		to := min(from+time.Second, a.Config.Duration)
		require.NoError(t, sender.SendMetrics(ctx, a.Metrics(from, to, epoch, jobsim.DeviceFromOTLP)))
		require.NoError(t, sender.SendTraces(ctx, a.Traces(from, to, epoch)))
		require.NoError(t, sender.SendMetrics(ctx, b.Metrics(from, to, epoch, jobsim.DeviceFromOTLP)))
		children, later := namedPhaseSpans(b.Traces(from, to, epoch))
		roots += later.SpanCount()
		require.NoError(t, sender.SendTraces(ctx, children))
		require.NoError(t, sender.SendTraces(ctx, later))
	}
	require.Positive(t, roots)
	// groupbytrace releases a trace 1 s after its first span; on_job_end emits at shutdown.
	time.Sleep(3 * time.Second)
	c.stop()
	assert.NotContains(t, c.log(), "panic")

	type resultKey struct {
		job        string
		rank       int64
		start, end pcommon.Timestamp
	}
	phases := map[resultKey]map[string]string{}
	withPhase := 0
	td := readTraces(t, filepath.Join(out, "traces.json"))
	for _, rs := range td.ResourceSpans().All() {
		job, _ := rs.Resource().Attributes().Get(attrJobID)
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if sp.Name() != resultSpanName {
					continue
				}
				rank, _ := sp.Attributes().Get(attrRank)
				got := map[string]string{}
				for _, k := range []string{"phase.resolution", "phase.path", "phase.summary", "phase.paths"} {
					if v, ok := sp.Attributes().Get(attrPrefix + k); ok {
						got[k] = v.AsString()
					}
				}
				if got["phase.path"] != "" {
					withPhase++
				}
				phases[resultKey{job.Str(), rank.Int(), sp.StartTimestamp(), sp.EndTimestamp()}] = got
			}
		}
	}
	compared := 0
	for key, want := range phases {
		if key.job != withPath {
			continue
		}
		other := key
		other.job = byName
		got, ok := phases[other]
		if assert.True(t, ok, "no result of %s for the result %+v", byName, key) {
			assert.Equal(t, want, got, "phase of the result %+v", key)
			compared++
		}
	}
	assert.Equal(t, len(phases), 2*compared, "both jobs have the same results")
	assert.Positive(t, withPhase, "results resolve to a phase")
	t.Logf("%d results per job, %d with a phase path; %d roots sent after their steps", compared, withPhase/2, roots)
}

// namedPhaseSpans strips phase.path from every span of td (the spans keep their names, in
// phase_span_names) and moves the step roots ("train", no parent) into later, after the
// rest. Trace ids change, so that the two copies of the job share no trace.
func namedPhaseSpans(td ptrace.Traces) (rest, later ptrace.Traces) {
	later = ptrace.NewTraces()
	for _, rs := range td.ResourceSpans().All() {
		lrs := later.ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(lrs.Resource())
		for _, ss := range rs.ScopeSpans().All() {
			lss := lrs.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(lss.Scope())
			ss.Spans().RemoveIf(func(sp ptrace.Span) bool {
				tid := sp.TraceID()
				tid[15] ^= 0x5a
				sp.SetTraceID(tid)
				sp.Attributes().Remove("phase.path")
				if sp.Name() == "train" && sp.ParentSpanID() == (pcommon.SpanID{}) {
					sp.CopyTo(lss.Spans().AppendEmpty())
					return true
				}
				return false
			})
		}
	}
	return td, later
}
