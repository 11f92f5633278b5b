package otlpreplay

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// metricsSink is an OTLP/gRPC metrics service that counts the points it decoded and
// rejects the points of requests named "reject" (a partial success).
type metricsSink struct {
	pmetricotlp.UnimplementedGRPCServer
	points atomic.Int64
}

func (s *metricsSink) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	md := req.Metrics()
	s.points.Add(int64(md.DataPointCount()))
	resp := pmetricotlp.NewExportResponse()
	if md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name() == "reject" {
		resp.PartialSuccess().SetRejectedDataPoints(int64(md.DataPointCount()))
		resp.PartialSuccess().SetErrorMessage("not wanted")
	}
	return resp, nil
}

type tracesSink struct {
	ptraceotlp.UnimplementedGRPCServer
	spans atomic.Int64
}

func (s *tracesSink) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	s.spans.Add(int64(req.Traces().SpanCount()))
	return ptraceotlp.NewExportResponse(), nil
}

func metricsBody(t *testing.T, name string, points int) []byte {
	t.Helper()
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	g := m.SetEmptyGauge().DataPoints()
	for i := range points {
		g.AppendEmpty().SetIntValue(int64(i))
	}
	b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	return b
}

// The bodies gpujobsim writes go over OTLP/gRPC as they are and the receiver decodes them.
func TestGRPCSender(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	metrics, traces := &metricsSink{}, &tracesSink{}
	pmetricotlp.RegisterGRPCServer(srv, metrics)
	ptraceotlp.RegisterGRPCServer(srv, traces)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	send := GRPCSender(conn, 10*time.Second)

	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	spans.AppendEmpty().SetName("a")
	spans.AppendEmpty().SetName("b")
	traceBody, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)

	ctx := context.Background()
	require.NoError(t, send(ctx, jobsim.Request{Signal: jobsim.SignalMetrics, Body: metricsBody(t, "gpu.memory.device.used", 3)}))
	require.NoError(t, send(ctx, jobsim.Request{Signal: jobsim.SignalTraces, Body: traceBody}))
	assert.Equal(t, int64(3), metrics.points.Load())
	assert.Equal(t, int64(2), traces.spans.Load())

	err = send(ctx, jobsim.Request{Signal: jobsim.SignalMetrics, Body: metricsBody(t, "reject", 2)})
	assert.ErrorContains(t, err, "2 data points rejected: not wanted")
	assert.Error(t, send(ctx, jobsim.Request{Signal: jobsim.SignalMetrics, Body: []byte{0xff, 0xff}}), "not a request")
	assert.ErrorContains(t, send(ctx, jobsim.Request{Signal: 'l'}), "neither metrics nor traces")
}
