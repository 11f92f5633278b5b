package otlpreplay

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// The OTLP/gRPC export methods (opentelemetry-proto collector/*/v1).
const (
	metricsExport = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
	tracesExport  = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
)

// GRPCSender sends each request's body as it is (it is already the export request's
// protobuf) over conn, so that sending costs no encoding, with timeout per request.
// A partial success (points or spans the receiver rejected) is an error.
func GRPCSender(conn *grpc.ClientConn, timeout time.Duration) Sender {
	return func(ctx context.Context, r jobsim.Request) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var method string
		switch r.Signal {
		case jobsim.SignalMetrics:
			method = metricsExport
		case jobsim.SignalTraces:
			method = tracesExport
		default:
			return fmt.Errorf("request signal %q is neither metrics nor traces", r.Signal)
		}
		body, resp := r.Body, []byte(nil)
		if err := conn.Invoke(ctx, method, &body, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
			return err
		}
		switch r.Signal {
		case jobsim.SignalMetrics:
			er := pmetricotlp.NewExportResponse()
			if err := er.UnmarshalProto(resp); err != nil {
				return fmt.Errorf("metrics export response: %w", err)
			}
			if n := er.PartialSuccess().RejectedDataPoints(); n > 0 {
				return fmt.Errorf("%d data points rejected: %s", n, er.PartialSuccess().ErrorMessage())
			}
		default:
			er := ptraceotlp.NewExportResponse()
			if err := er.UnmarshalProto(resp); err != nil {
				return fmt.Errorf("traces export response: %w", err)
			}
			if n := er.PartialSuccess().RejectedSpans(); n > 0 {
				return fmt.Errorf("%d spans rejected: %s", n, er.PartialSuccess().ErrorMessage())
			}
		}
		return nil
	}
}

// rawCodec passes protobuf bytes through: a request is sent as the *[]byte it is, and the
// response is kept as bytes.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot send %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot receive into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}
