package jobsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Signal says which OTLP export service a request is for.
type Signal byte

const (
	SignalMetrics Signal = 'm'
	SignalTraces  Signal = 't'
)

// Request is one OTLP export request as a real-time run would send it: its protobuf body
// (ExportMetricsServiceRequest or ExportTraceServiceRequest) and the job time it is due,
// the end of the flush interval it covers. Written ahead of time, a run's requests can be
// replayed on schedule by a sender that does no simulation work (e2e TestScaleRealTime).
type Request struct {
	Due    time.Duration
	Signal Signal
	Body   []byte
}

// maxRequestBody bounds a framed body when reading, so that a corrupt length cannot ask
// for gigabytes: a step's spans of 512 ranks listing 16 384 members each stay far below.
const maxRequestBody = 1 << 30

// requestHeaderSize: due (int64 ns, big endian), signal (1 byte), body length (uint32).
const requestHeaderSize = 8 + 1 + 4

// WriteRequest writes r framed: its due job time, signal and body length, then the body.
func WriteRequest(w io.Writer, r Request) error {
	if r.Signal != SignalMetrics && r.Signal != SignalTraces {
		return fmt.Errorf("request signal %q is neither metrics nor traces", r.Signal)
	}
	if len(r.Body) > maxRequestBody {
		return fmt.Errorf("request body of %d bytes is over the %d-byte frame bound", len(r.Body), maxRequestBody)
	}
	var h [requestHeaderSize]byte
	binary.BigEndian.PutUint64(h[:8], uint64(r.Due))
	h[8] = byte(r.Signal)
	binary.BigEndian.PutUint32(h[9:], uint32(len(r.Body)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(r.Body)
	return err
}

// ReadRequest reads one request written by WriteRequest. It returns io.EOF at the end of
// the stream and io.ErrUnexpectedEOF when the stream ends inside a request.
func ReadRequest(rd io.Reader) (Request, error) {
	var h [requestHeaderSize]byte
	if _, err := io.ReadFull(rd, h[:]); err != nil {
		return Request{}, err
	}
	r := Request{Due: time.Duration(binary.BigEndian.Uint64(h[:8])), Signal: Signal(h[8])}
	if r.Signal != SignalMetrics && r.Signal != SignalTraces {
		return Request{}, fmt.Errorf("request signal %q is neither metrics nor traces", h[8])
	}
	if r.Due < 0 {
		return Request{}, fmt.Errorf("request due at negative job time %s", r.Due)
	}
	n := binary.BigEndian.Uint32(h[9:])
	if n > maxRequestBody {
		return Request{}, fmt.Errorf("request body of %d bytes is over the %d-byte frame bound", n, maxRequestBody)
	}
	r.Body = make([]byte, n)
	if _, err := io.ReadFull(rd, r.Body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Request{}, err
	}
	return r, nil
}

// metricsRequests marshals md into requests of at most ranksPerRequest resources (one
// resource per rank; 0: one request), emptying md.
func metricsRequests(md pmetric.Metrics, ranksPerRequest int, due time.Duration) ([]Request, error) {
	var out []Request
	for _, part := range splitMetrics(md, ranksPerRequest) {
		b, err := metricsMarshaler.MarshalMetrics(part)
		if err != nil {
			return nil, err
		}
		out = append(out, Request{Due: due, Signal: SignalMetrics, Body: b})
	}
	return out, nil
}

// tracesRequests is metricsRequests for spans.
func tracesRequests(td ptrace.Traces, ranksPerRequest int, due time.Duration) ([]Request, error) {
	var out []Request
	for _, part := range splitTraces(td, ranksPerRequest) {
		b, err := tracesMarshaler.MarshalTraces(part)
		if err != nil {
			return nil, err
		}
		out = append(out, Request{Due: due, Signal: SignalTraces, Body: b})
	}
	return out, nil
}

func splitMetrics(md pmetric.Metrics, n int) []pmetric.Metrics {
	all := md.ResourceMetrics()
	if all.Len() == 0 {
		return nil
	}
	if n <= 0 || all.Len() <= n {
		return []pmetric.Metrics{md}
	}
	var parts []pmetric.Metrics
	for i := 0; i < all.Len(); i += n {
		part := pmetric.NewMetrics()
		for j := i; j < min(i+n, all.Len()); j++ {
			all.At(j).MoveTo(part.ResourceMetrics().AppendEmpty())
		}
		parts = append(parts, part)
	}
	return parts
}

func splitTraces(td ptrace.Traces, n int) []ptrace.Traces {
	all := td.ResourceSpans()
	if all.Len() == 0 {
		return nil
	}
	if n <= 0 || all.Len() <= n {
		return []ptrace.Traces{td}
	}
	var parts []ptrace.Traces
	for i := 0; i < all.Len(); i += n {
		part := ptrace.NewTraces()
		for j := i; j < min(i+n, all.Len()); j++ {
			all.At(j).MoveTo(part.ResourceSpans().AppendEmpty())
		}
		parts = append(parts, part)
	}
	return parts
}
