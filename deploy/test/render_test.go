package deploytest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// prometheusRule is the Prometheus operator's PrometheusRule as the chart
// renders it (monitoring.coreos.com/v1).
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []struct {
		Alert       string            `json:"alert"`
		Expr        string            `json:"expr"`
		For         string            `json:"for,omitempty"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"rules"`
}

// podMonitor is the Prometheus operator's PodMonitor as the chart renders it.
type podMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port"`
			Interval string `json:"interval"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

func (p *podMonitor) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (p *podMonitor) DeepCopyObject() runtime.Object   { c := *p; return &c }

func (p *prometheusRule) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (p *prometheusRule) DeepCopyObject() runtime.Object   { c := *p; return &c }

// kubeVersion is the Kubernetes version the chart is rendered for.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.34.0", Major: "1", Minor: "34"}

const (
	releaseName      = "collectiveattr"
	releaseNamespace = "gpu-monitoring"
)

// scenario is one set of chart values that users are expected to install.
type scenario struct {
	name   string
	values map[string]any
}

func scenarios() []scenario {
	return []scenario{
		{name: "node-local", values: map[string]any{}},
		{name: "node-local-no-dcgm", values: map[string]any{"dcgm": map[string]any{"enabled": false}}},
		{name: "node-local-nccl-inspector", values: map[string]any{"ncclInspector": map[string]any{"enabled": true}}},
		{name: "node-local-persistence", values: map[string]any{"persistence": map[string]any{"enabled": true}}},
		{name: "node-local-processor-values", values: merge(processorValues(), map[string]any{"podMonitor": map[string]any{"enabled": true}})},
		{name: "node-local-result-logs-otlp", values: map[string]any{"resultLogs": map[string]any{"exporter": "otlp", "otlp": map[string]any{"endpoint": "logs.observability:4317"}}}},
		{name: "multi-node-k8s", values: map[string]any{"topology": "multiNode", "prometheusRule": map[string]any{"enabled": true}}},
		{name: "multi-node-deprecated-mode-key", values: map[string]any{"mode": "multiNode"}},
		{name: "multi-node-processor-values", values: merge(processorValues(), map[string]any{"topology": "multiNode"})},
		{name: "multi-node-persistence", values: map[string]any{"topology": "multiNode", "persistence": map[string]any{"enabled": true}}},
		{name: "multi-node-dns", values: map[string]any{
			"topology": "multiNode",
			"gateway":  map[string]any{"resolver": "dns", "replicas": 3},
			"dcgm":     map[string]any{"enabled": false},
		}},
	}
}

// processorValues sets a value of every kind the collectiveattr values
// hold, as `--set collectiveattr.<key>=...` would.
func processorValues() map[string]any {
	return map[string]any{"collectiveattr": map[string]any{
		"mode":                 "evidence",
		"preset":               "high",
		"overrides":            map[string]any{"min_confidence": 0.4},
		"evidence":             map[string]any{"baseline_window_ns": int64(6000000000)},
		"emit":                 "on_job_end",
		"settle_delay":         "3s",
		"window":               "2m",
		"evaluation_interval":  "5s",
		"hidden_peak_interval": "15s",
		"limits":               map[string]any{"max_jobs": int64(50), "max_events_per_rank": int64(1000000)},
		"identity":             map[string]any{"host": []any{"k8s.node.name", "host.name"}},
	}}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// lintChart runs what `helm lint` runs and returns its messages at warning
// level or above (lint's INFO notes, e.g. "icon is recommended", are not
// defects).
func lintChart(t *testing.T, values map[string]any) []string {
	t.Helper()
	res := action.NewLint()
	res.Namespace = releaseNamespace
	res.KubeVersion = kubeVersion
	out := res.Run([]string{chartDir(t)}, values)
	var problems []string
	for _, m := range out.Messages {
		if m.Severity >= support.WarningSev {
			problems = append(problems, m.Error())
		}
	}
	for _, err := range out.Errors {
		problems = append(problems, err.Error())
	}
	return problems
}

// renderChart runs what `helm template` runs and returns the manifest.
func renderChart(t testing.TB, values map[string]any) (string, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = releaseName
	install.Namespace = releaseNamespace
	install.DisableHooks = true
	// The library's default is v1.20 (the helm CLI stamps its own at build
	// time); render for a current cluster.
	install.KubeVersion = kubeVersion
	rel, err := install.Run(chrt, values)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// renderNotes renders the chart's NOTES.txt as `helm install` prints it.
func renderNotes(t testing.TB, values map[string]any) string {
	t.Helper()
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace, install.DisableHooks = true, true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = releaseName, releaseNamespace, kubeVersion
	rel, err := install.Run(chrt, values)
	if err != nil {
		t.Fatalf("helm install --dry-run: %v", err)
	}
	return rel.Info.Notes
}

// object is one rendered Kubernetes object, decoded into its API type.
type object struct {
	source string // "# Source:" template path, for messages
	obj    runtime.Object
}

var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

var sourceLine = regexp.MustCompile(`(?m)^# Source: (.+)$`)

// decodeStrict splits a multi-document manifest and decodes every document
// into its typed Kubernetes API object; an unknown or duplicated field, or an
// unknown kind, is an error.
func decodeStrict(manifest string) ([]object, error) {
	var objs []object
	for i, doc := range splitYAML(manifest) {
		src := fmt.Sprintf("document %d", i)
		if m := sourceLine.FindStringSubmatch(doc); m != nil {
			src = m[1]
		}
		if strings.Contains(doc, "\nkind: PodMonitor\n") {
			var pm podMonitor
			if err := yaml.UnmarshalStrict([]byte(doc), &pm); err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			objs = append(objs, object{source: src, obj: &pm})
			continue
		}
		if strings.Contains(doc, "\nkind: PrometheusRule\n") {
			// Not a type of the Kubernetes API: decoded strictly into the
			// fields the chart renders.
			var pr prometheusRule
			if err := yaml.UnmarshalStrict([]byte(doc), &pr); err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			objs = append(objs, object{source: src, obj: &pr})
			continue
		}
		obj, _, err := strictDecoder.Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		objs = append(objs, object{source: src, obj: obj})
	}
	return objs, nil
}

// splitYAML splits on document separators and drops documents that hold only
// comments or whitespace.
func splitYAML(manifest string) []string {
	var docs []string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(manifest, -1) {
		empty := true
		for _, line := range strings.Split(doc, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, strings.TrimSpace(doc)+"\n")
		}
	}
	return docs
}

func renderAndDecode(t *testing.T, values map[string]any) []object {
	t.Helper()
	manifest, err := renderChart(t, values)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := decodeStrict(manifest)
	if err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	return objs
}
