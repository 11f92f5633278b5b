package collectiveattrprocessor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// fromNodeAgent is md with the device gauges (used, total) sent by a node
// agent instead of the ranks' processes: one device-level resource (its
// host and its own process.pid) whose points name their GPU by UUID, as
// dcgm-exporter's do. Every rank's process names its host and GPU, so the
// agent's points join the rank that claims the GPU, whichever of its
// processes does.
func fromNodeAgent(md pmetric.Metrics) pmetric.Metrics {
	out := pmetric.NewMetrics()
	agent := pmetric.NewResourceMetrics()
	agent.Resource().Attributes().PutStr("host.name", "node-a")
	agent.Resource().Attributes().PutInt("process.pid", 1)
	agentMs := agent.ScopeMetrics().AppendEmpty().Metrics()
	agentOf := map[string]pmetric.NumberDataPointSlice{}
	for _, rm := range md.ResourceMetrics().All() {
		res := out.ResourceMetrics().AppendEmpty()
		rm.Resource().CopyTo(res.Resource())
		attrs := res.Resource().Attributes()
		rank, _ := attrs.Get("training.rank")
		attrs.PutStr("host.name", "node-a")
		attrs.PutStr("gpu.uuid", gpuUUID(rank.Int()))
		ms := res.ScopeMetrics().AppendEmpty().Metrics()
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() != "gpu.memory.device.used" && m.Name() != "gpu.memory.device.total" {
				m.CopyTo(ms.AppendEmpty())
				continue
			}
			dps, ok := agentOf[m.Name()]
			if !ok {
				am := agentMs.AppendEmpty()
				am.SetName(m.Name())
				am.SetUnit(m.Unit())
				dps = am.SetEmptyGauge().DataPoints()
				agentOf[m.Name()] = dps
			}
			for _, dp := range m.Gauge().DataPoints().All() {
				p := dps.AppendEmpty()
				dp.CopyTo(p)
				p.Attributes().PutStr("gpu.uuid", gpuUUID(rank.Int()))
			}
		}
	}
	agent.MoveTo(out.ResourceMetrics().AppendEmpty())
	return out
}

// TestEvidenceRestartSessionsOverOTLP: a restarted rank's new process is
// a new session over OTLP as in its stormlog records (session_id), so the
// processor's on_job_end results equal the CLI's, new_process included,
// whether device memory comes from the training process's own gauges or
// from a node agent whose resource names its own process: the session is
// the allocator gauges' process, through the join.
func TestEvidenceRestartSessionsOverOTLP(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	for _, seed := range []int64{2, 3, 4} {
		for _, agent := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed=%d/node_agent=%v", seed, agent), func(t *testing.T) {
				c, err := jobsim.GenerateQualityCase("restart", seed, shape, seed == 2)
				require.NoError(t, err)
				job := "sessions-restart"
				for i := range c.Events {
					c.Events[i].JobID = job
				}
				md, td, lines, _ := evidenceOTLP(t, job, c.Events)
				want := evidenceBatch(t, lines, "medium")
				require.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, evidence.ReasonNewProcess) }),
					"some result is a restarted process's")
				if agent {
					md = fromNodeAgent(md)
				}
				p := runEvidenceOTLP(t, lines, md, td)
				got := loggedResultTexts(p.lsink)
				slices.Sort(got)
				assertSameResults(t, deviceWideResults(t, want), got)
			})
		}
	}
}
