package deploytest

import (
	"encoding/json"
	"fmt"
	"net/url"
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
	UID         string            `json:"uid"`
	Inputs      []json.RawMessage `json:"__inputs"`
	Annotations struct {
		List []struct {
			Name        string         `json:"name"`
			Datasource  *datasourceRef `json:"datasource"`
			Expr        string         `json:"expr"`
			TitleFormat string         `json:"titleFormat"`
			TextFormat  string         `json:"textFormat"`
			TagKeys     string         `json:"tagKeys"`
		} `json:"list"`
	} `json:"annotations"`
	Links []struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"links"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID          int            `json:"id"`
		Title       string         `json:"title"`
		Type        string         `json:"type"`
		Datasource  *datasourceRef `json:"datasource"`
		FieldConfig struct {
			Overrides []struct {
				Properties []struct {
					ID    string          `json:"id"`
					Value json.RawMessage `json:"value"`
				} `json:"properties"`
			} `json:"overrides"`
		} `json:"fieldConfig"`
		Targets []struct {
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
	for _, a := range d.Annotations.List {
		if a.Expr == "" {
			continue // Grafana's built-in annotations
		}
		q := dashboardQuery{where: "annotation " + a.Name, expr: a.Expr}
		for _, f := range []string{a.TitleFormat, a.TextFormat} {
			for _, m := range legendLabel.FindAllStringSubmatch(f, -1) {
				q.labels = append(q.labels, m[1])
			}
		}
		for _, k := range strings.Split(a.TagKeys, ",") {
			if k != "" {
				q.labels = append(q.labels, k)
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// selfTelemetry: the query reads the collector's own metrics (port 8888),
// which carry no job or rank.
func (q dashboardQuery) selfTelemetry() bool {
	return strings.Contains(q.expr, "otelcol_")
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
	assert.Equal(t, map[string]string{"datasource": "datasource", "job": "query", "rank": "query", "jaeger": "textbox"}, vars)

	ids := map[int]bool{}
	var selfPanels []string
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "duplicate panel id %d", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q", p.Title)
		require.NotNil(t, p.Datasource, "panel %q", p.Title)
		assert.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		for _, tg := range p.Targets {
			if (dashboardQuery{expr: tg.Expr}).selfTelemetry() {
				selfPanels = append(selfPanels, p.Title)
				continue
			}
			assert.Contains(t, tg.Expr, `training_job_id=~"$job"`, "panel %q filters by the job variable", p.Title)
			assert.Contains(t, tg.Expr, `training_rank=~"$rank"`, "panel %q filters by the rank variable", p.Title)
		}
	}
	// The self-telemetry row: skips by reason, dropped results and queue
	// drops, evaluation time.
	for _, want := range []string{"Items skipped by reason", "Dropped result batches and exporter queue drops", "Evaluation time"} {
		assert.Contains(t, selfPanels, want)
	}

	// Results as annotations, from Prometheus.
	var annotations int
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			annotations++
			assert.Equal(t, "${datasource}", a.Datasource.UID)
			assert.Contains(t, a.Expr, "collective_attribution_intervals_total")
		}
	}
	assert.Equal(t, 1, annotations)

	// Jaeger: a dashboard link and a per-job link on the results table,
	// both searching the result spans.
	require.Len(t, d.Links, 1)
	assert.Equal(t, "${jaeger}/search?service=collectiveattr&operation=collective_attribution&limit=200", d.Links[0].URL)
	var jobLinks []string
	for _, p := range d.Panels {
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if prop.ID != "links" {
					continue
				}
				var links []struct {
					URL string `json:"url"`
				}
				require.NoError(t, json.Unmarshal(prop.Value, &links))
				for _, l := range links {
					jobLinks = append(jobLinks, l.URL)
				}
			}
		}
	}
	require.Len(t, jobLinks, 1)
	u, err := url.Parse(strings.ReplaceAll(jobLinks[0], "${jaeger}", "http://jaeger:16686"))
	require.NoError(t, err)
	assert.Equal(t, "/search", u.Path)
	assert.Equal(t, "collectiveattr", u.Query().Get("service"))
	assert.Equal(t, "collective_attribution", u.Query().Get("operation"))
	assert.Equal(t, `{"training.job.id":"${__value.raw}"}`, u.Query().Get("tags"), "Jaeger's tag search, JSON, on the result spans' job id")
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
	var results, self []selectorNeeds
	for _, q := range d.queries(t) {
		n, err := q.needs()
		require.NoError(t, err)
		if q.selfTelemetry() {
			self = append(self, n...)
		} else {
			results = append(results, slices.DeleteFunc(n, func(s selectorNeeds) bool { return evidenceModeOnly[s.metric] })...)
		}
	}

	sink := startSpanSink(t)
	col := startNodeLocal(t, sink.addr)
	simulate(t, col.otlpHTTP(), "-job-id", "dash-job-1")
	// One point without a rank: skipped (no_identity), so the skip counter
	// has a series to show.
	postOTLP(t, col.otlpHTTP(), "metrics", gaugeRequest(nil, "gpu.memory.allocator.reserved", time.Now(), 1))

	// Results are emitted at the processor's evaluation ticks once the job's
	// event time has settled past them.
	eventually(t, 90*time.Second, time.Second, func() error {
		families, err := scrape(col.metricsURL())
		if err != nil {
			return err
		}
		for _, n := range results {
			if err := seriesWith(families, n); err != nil {
				return err
			}
		}
		families, err = scrape(col.selfMetricsURL())
		if err != nil {
			return err
		}
		for _, n := range self {
			if onlyAfterAFailure[n.metric] {
				continue
			}
			// instance is Prometheus's, le a histogram bucket's: neither is
			// on the exposition's series.
			n.labels = slices.DeleteFunc(slices.Clone(n.labels), func(l string) bool { return l == "instance" || l == "le" })
			if err := seriesWith(families, n); err != nil {
				return fmt.Errorf("self-telemetry: %w", err)
			}
		}
		return nil
	})
	assert.Positive(t, sink.resultSpans(), "result spans reach the traces exporter too")
}

// evidenceModeOnly are the result metrics only evidence mode reports; the
// chart's configuration runs the reference mode. Their names follow the
// exporter's conversion the other gauges are checked with here
// (gpu.memory.hidden.usage, By, attribute gpu.memory.hidden.part:
// gpu_memory_hidden_usage_bytes{gpu_memory_hidden_part}), and
// TestDashboardModel parses their queries.
var evidenceModeOnly = map[string]bool{
	"gpu_memory_hidden_usage_bytes": true,
}

// failureOnly: every metric the query selects appears only after a failure.
func failureOnly(q dashboardQuery) bool {
	needs, err := q.needs()
	if err != nil {
		return false
	}
	for _, n := range needs {
		if !onlyAfterAFailure[n.metric] {
			return false
		}
	}
	return true
}

// onlyAfterAFailure are the self-telemetry counters a healthy collector has
// no series of: the first failure creates them. TestSelfTelemetryNames
// checks their names.
var onlyAfterAFailure = map[string]bool{
	"otelcol_processor_collectiveattr_emit_failures_total": true,
	"otelcol_exporter_enqueue_failed_spans_total":          true,
	"otelcol_exporter_enqueue_failed_metric_points_total":  true,
	"otelcol_exporter_enqueue_failed_log_records_total":    true,
}

// seriesWith reports whether the scrape has a series of n.metric with a
// sample and every label of n.labels set.
func seriesWith(families map[string]*dto.MetricFamily, n selectorNeeds) error {
	mf, ok := families[n.metric]
	if !ok {
		// A counter's _total series and a histogram's _bucket, _sum and
		// _count series are one family.
		for _, suffix := range []string{"_total", "_bucket", "_sum", "_count"} {
			if base, cut := strings.CutSuffix(n.metric, suffix); cut {
				mf, ok = families[base]
			}
		}
	}
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
		if m.GetGauge() != nil || m.GetCounter() != nil || m.GetUntyped() != nil || m.GetHistogram() != nil {
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
