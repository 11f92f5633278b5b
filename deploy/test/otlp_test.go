package deploytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// gaugePoint is one OTLP/JSON gauge data point.
type gaugePoint struct {
	TimeUnixNano string `json:"timeUnixNano"`
	AsInt        string `json:"asInt"`
}

type keyValue struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

// strAttr and intAttr are OTLP/JSON attributes.
func strAttr(k, v string) keyValue { return keyValue{k, map[string]any{"stringValue": v}} }
func intAttr(k string, v int64) keyValue {
	return keyValue{k, map[string]any{"intValue": strconv.FormatInt(v, 10)}}
}

// otlpMetric is one gauge of an OTLP/JSON request.
type otlpMetric struct {
	Name  string `json:"name"`
	Unit  string `json:"unit"`
	Gauge struct {
		DataPoints []gaugePoint `json:"dataPoints"`
	} `json:"gauge"`
}

// metricsRequest is an OTLP/JSON ExportMetricsServiceRequest with one
// resource (attributes resource) and the given gauges.
func metricsRequest(resource []keyValue, metrics ...otlpMetric) []byte {
	req := map[string]any{"resourceMetrics": []any{map[string]any{
		"resource":     map[string]any{"attributes": resource},
		"scopeMetrics": []any{map[string]any{"metrics": metrics}},
	}}}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

// gaugeRequest is a request with one point of one gauge.
func gaugeRequest(resource []keyValue, name string, at time.Time, v int64) []byte {
	m := otlpMetric{Name: name, Unit: "By"}
	m.Gauge.DataPoints = []gaugePoint{{TimeUnixNano: strconv.FormatInt(at.UnixNano(), 10), AsInt: strconv.FormatInt(v, 10)}}
	return metricsRequest(resource, m)
}

// postOTLP sends an OTLP/JSON request to an OTLP/HTTP receiver (signal:
// metrics, traces, logs).
func postOTLP(t testing.TB, endpoint, signal string, body []byte) {
	t.Helper()
	if err := tryPostOTLP(endpoint, signal, body); err != nil {
		t.Fatal(err)
	}
}

func tryPostOTLP(endpoint, signal string, body []byte) error {
	resp, err := http.Post("http://"+endpoint+"/v1/"+signal, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /v1/%s: %s: %s", signal, resp.Status, b)
	}
	return nil
}
