package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dashboard is the part of the Grafana dashboard model the tests read.
type dashboard struct {
	UID        string            `json:"uid"`
	Inputs     []json.RawMessage `json:"__inputs"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int            `json:"id"`
		Title      string         `json:"title"`
		Type       string         `json:"type"`
		Datasource *datasourceRef `json:"datasource"`
		Targets    []struct {
			Expr         string         `json:"expr"`
			LegendFormat string         `json:"legendFormat"`
			RefID        string         `json:"refId"`
			Datasource   *datasourceRef `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func loadDashboard(t testing.TB) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "grafana", "collectiveattr-dashboard.json"))
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// dashboardQuery is one PromQL query of the dashboard and the labels whose
// values it shows (legend, label_values) beyond those in the expression.
type dashboardQuery struct {
	where  string
	expr   string
	labels []string
}

var (
	legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
)

func (d dashboard) queries(t testing.TB) []dashboardQuery {
	t.Helper()
	var qs []dashboardQuery
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &q), "variable %s", v.Name)
		m := labelValues.FindStringSubmatch(q.Query)
		require.NotNil(t, m, "variable %s: want label_values(selector, label), got %q", v.Name, q.Query)
		qs = append(qs, dashboardQuery{where: "variable " + v.Name, expr: m[1], labels: []string{m[2]}})
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			q := dashboardQuery{where: fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), expr: tg.Expr}
			for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
				q.labels = append(q.labels, m[1])
			}
			qs = append(qs, q)
		}
	}
	return qs
}

// grafanaVars stands in for the dashboard's variables: every job, every rank.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$job", ".*", "$rank", ".*")

// selectorNeeds is what one vector selector of a query needs from the data:
// its metric, with every label the query filters, groups or shows by.
type selectorNeeds struct {
	metric string
	labels []string
}

// needs parses a dashboard query and returns, per metric it selects, the
// labels that must be present on that metric's series for the panel to show
// anything meaningful.
func (q dashboardQuery) needs() ([]selectorNeeds, error) {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(q.expr))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q.where, err)
	}
	labels := slices.Clone(q.labels)
	var metrics []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.AggregateExpr:
			if !n.Without {
				labels = append(labels, n.Grouping...)
			}
		case *parser.VectorSelector:
			metrics = append(metrics, n.Name)
			for _, m := range n.LabelMatchers {
				if m.Name != "__name__" {
					labels = append(labels, m.Name)
				}
			}
		}
		return nil
	})
	if len(metrics) == 0 {
		return nil, fmt.Errorf("%s: selects no metric", q.where)
	}
	slices.Sort(labels)
	labels = slices.Compact(labels)
	var out []selectorNeeds
	for _, m := range metrics {
		out = append(out, selectorNeeds{metric: m, labels: labels})
	}
	return out, nil
}

// TestDashboardModel checks that the dashboard is ready for Grafana's file
// provisioning and has what operators look for.
func TestDashboardModel(t *testing.T) {
	d := loadDashboard(t)
	assert.Equal(t, "collectiveattr", d.UID, "a fixed uid keeps links stable across provisioning")
	assert.Empty(t, d.Inputs, "provisioned dashboards cannot use import-time __inputs")

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "job": "query", "rank": "query"}, vars)

	ids := map[int]bool{}
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "duplicate panel id %d", p.ID)
		ids[p.ID] = true
		require.NotEmpty(t, p.Targets, "panel %q", p.Title)
		require.NotNil(t, p.Datasource, "panel %q", p.Title)
		assert.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		for _, tg := range p.Targets {
			assert.Contains(t, tg.Expr, `training_job_id=~"$job"`, "panel %q filters by the job variable", p.Title)
			assert.Contains(t, tg.Expr, `training_rank=~"$rank"`, "panel %q filters by the rank variable", p.Title)
		}
	}
	for _, q := range d.queries(t) {
		_, err := q.needs()
		assert.NoError(t, err)
	}
}

// TestDashboardQueriesAnsweredByExporter runs the collectiveattr distribution
// on the chart's node-local config with a simulated 16-rank job, scrapes its
// Prometheus exporter, and checks that every metric and label any panel or
// variable uses is there, with data.
func TestDashboardQueriesAnsweredByExporter(t *testing.T) {
	d := loadDashboard(t)
	var needs []selectorNeeds
	for _, q := range d.queries(t) {
		n, err := q.needs()
		require.NoError(t, err)
		needs = append(needs, n...)
	}

	sink := startSpanSink(t)
	col := startNodeLocal(t, sink.addr)
	simulate(t, col.otlpHTTP(), "-job-id", "dash-job-1")

	// Results are emitted at the processor's evaluation ticks once the job's
	// event time has settled past them.
	eventually(t, 90*time.Second, time.Second, func() error {
		families, err := scrape(col.metricsURL())
		if err != nil {
			return err
		}
		for _, n := range needs {
			if err := seriesWith(families, n); err != nil {
				return err
			}
		}
		return nil
	})
	assert.Positive(t, sink.resultSpans(), "result spans reach the traces exporter too")
}

// seriesWith reports whether the scrape has a series of n.metric with a
// sample and every label of n.labels set.
func seriesWith(families map[string]*dto.MetricFamily, n selectorNeeds) error {
	mf, ok := families[n.metric]
	if !ok {
		names := make([]string, 0, len(families))
		for name := range families {
			names = append(names, name)
		}
		slices.Sort(names)
		return fmt.Errorf("no metric %s in the scrape; it has %v", n.metric, names)
	}
	for _, m := range mf.GetMetric() {
		have := map[string]bool{}
		for _, lp := range m.GetLabel() {
			if lp.GetValue() != "" {
				have[lp.GetName()] = true
			}
		}
		if !hasAll(have, n.labels) {
			continue
		}
		if m.GetGauge() != nil || m.GetCounter() != nil || m.GetUntyped() != nil {
			return nil
		}
	}
	return fmt.Errorf("metric %s has no series with all of the labels %v", n.metric, n.labels)
}

func hasAll(have map[string]bool, want []string) bool {
	for _, l := range want {
		if !have[l] {
			return false
		}
	}
	return true
}
