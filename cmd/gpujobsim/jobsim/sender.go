package jobsim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// MetricsData and TracesData share the wire layout of the OTLP export requests (field 1:
// the resource list), so pdata's plain protobuf marshalers produce valid request bodies
// without pulling in the gRPC stack of pmetricotlp / ptraceotlp.
var (
	metricsMarshaler pmetric.ProtoMarshaler
	tracesMarshaler  ptrace.ProtoMarshaler
)

// OTLPSender posts OTLP/HTTP protobuf requests (the collector's otlp receiver, port 4318
// by default). It needs nothing but pdata and net/http.
type OTLPSender struct {
	endpoint string
	client   *http.Client
}

// NewOTLPSender sends to endpoint, e.g. "http://127.0.0.1:4318" (a bare host:port gets
// http://).
func NewOTLPSender(endpoint string) *OTLPSender {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	return &OTLPSender{endpoint: strings.TrimRight(endpoint, "/"), client: &http.Client{Timeout: 10 * time.Second}}
}

// SendMetrics posts md to /v1/metrics.
func (o *OTLPSender) SendMetrics(ctx context.Context, md pmetric.Metrics) error {
	if md.DataPointCount() == 0 {
		return nil
	}
	body, err := metricsMarshaler.MarshalMetrics(md)
	if err != nil {
		return err
	}
	return o.post(ctx, "/v1/metrics", body)
}

// SendTraces posts td to /v1/traces.
func (o *OTLPSender) SendTraces(ctx context.Context, td ptrace.Traces) error {
	if td.SpanCount() == 0 {
		return nil
	}
	body, err := tracesMarshaler.MarshalTraces(td)
	if err != nil {
		return err
	}
	return o.post(ctx, "/v1/traces", body)
}

// post retries what OTLP/HTTP calls retryable (429, 502, 503, 504, connection errors) a
// few times with a short backoff: a collector that is still starting is normal.
func (o *OTLPSender) post(ctx context.Context, path string, body []byte) error {
	var lastErr error
	backoff := 100 * time.Millisecond
	for attempt := range 8 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := o.client.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return nil
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			lastErr = fmt.Errorf("POST %s%s: %s", o.endpoint, path, resp.Status)
		default:
			return fmt.Errorf("POST %s%s: %s: %s", o.endpoint, path, resp.Status, bytes.TrimSpace(msg))
		}
	}
	return lastErr
}
