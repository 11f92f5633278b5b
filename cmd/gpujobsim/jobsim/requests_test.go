package jobsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestRequestFraming(t *testing.T) {
	want := []Request{
		{Due: 3 * time.Second, Signal: SignalMetrics, Body: []byte("metrics body")},
		{Due: 3 * time.Second, Signal: SignalTraces, Body: []byte{}},
		{Due: 4 * time.Second, Signal: SignalTraces, Body: []byte{0, 1, 2}},
	}
	var buf bytes.Buffer
	for _, r := range want {
		require.NoError(t, WriteRequest(&buf, r))
	}
	stream := buf.Bytes()
	rd := bytes.NewReader(stream)
	for _, w := range want {
		got, err := ReadRequest(rd)
		require.NoError(t, err)
		assert.Equal(t, w, got)
	}
	_, err := ReadRequest(rd)
	assert.ErrorIs(t, err, io.EOF, "a clean end")

	// Cut inside the last body and inside the last header: not a clean end.
	for _, cut := range []int{len(stream) - 1, len(stream) - 3 - 5} {
		rd := bytes.NewReader(stream[:cut])
		var err error
		for err == nil {
			_, err = ReadRequest(rd)
		}
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d of %d", cut, len(stream))
	}

	assert.ErrorContains(t, WriteRequest(io.Discard, Request{Signal: 'x'}), "neither metrics nor traces")
	bad := bytes.Clone(stream)
	bad[8] = 'l'
	_, err = ReadRequest(bytes.NewReader(bad))
	assert.ErrorContains(t, err, "neither metrics nor traces")
	huge := bytes.Clone(stream)
	copy(huge[9:13], []byte{0xff, 0xff, 0xff, 0xff})
	_, err = ReadRequest(bytes.NewReader(huge))
	assert.ErrorContains(t, err, "over the")
}

// readRequests reads every request of a stream.
func readRequests(t *testing.T, stream []byte) []Request {
	t.Helper()
	var out []Request
	rd := bytes.NewReader(stream)
	for {
		r, err := ReadRequest(rd)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

func TestWrittenRequestsAreTheJob(t *testing.T) {
	s := newScenario(t, func(c *Config) { c.Ranks = 24; c.Duration = 12 * time.Second; c.MissingRanks, c.LateRanks = 0, 0 })
	write := func(from, to time.Duration, ranksPerRequest int) ([]byte, Stats) {
		var buf bytes.Buffer
		st, err := s.Run(context.Background(), Options{Epoch: testEpoch, Requests: &buf, RanksPerRequest: ranksPerRequest, From: from, To: to})
		require.NoError(t, err)
		return buf.Bytes(), st
	}
	whole, st := write(0, 0, 0)
	reqs := readRequests(t, whole)

	// One metrics and one traces request per flush interval (when it has spans), due at
	// its end, holding what Metrics and Traces give for it.
	var points, spans int
	var um pmetric.ProtoUnmarshaler
	var ut ptrace.ProtoUnmarshaler
	var pm pmetric.ProtoMarshaler
	var pt ptrace.ProtoMarshaler
	for i, r := range reqs {
		from := r.Due - time.Second
		switch r.Signal {
		case SignalMetrics:
			want, err := pm.MarshalMetrics(s.Metrics(from, r.Due, testEpoch, DeviceFromOTLP))
			require.NoError(t, err)
			assert.Equal(t, want, r.Body, "request %d", i)
			md, err := um.UnmarshalMetrics(r.Body)
			require.NoError(t, err)
			points += md.DataPointCount()
		case SignalTraces:
			want, err := pt.MarshalTraces(s.Traces(from, r.Due, testEpoch))
			require.NoError(t, err)
			assert.Equal(t, want, r.Body, "request %d", i)
			td, err := ut.UnmarshalTraces(r.Body)
			require.NoError(t, err)
			spans += td.SpanCount()
		}
	}
	assert.Equal(t, 12, countSignal(reqs, SignalMetrics))
	assert.Positive(t, countSignal(reqs, SignalTraces))
	assert.Equal(t, st.DataPoints, points)
	assert.Equal(t, st.Spans, spans)
	assert.Equal(t, 24*10*12*7, points, "24 ranks, 10 Hz, 12 s, seven gauges")

	// Shards of consecutive job time are the whole job.
	first, _ := write(0, 5*time.Second, 0)
	rest, _ := write(5*time.Second, 0, 0)
	assert.Equal(t, whole, append(bytes.Clone(first), rest...))

	// Split by ranks: no request holds more than 5 ranks, together they hold the same.
	split := readRequests(t, func() []byte { b, _ := write(0, 0, 5); return b }())
	var splitPoints, splitSpans int
	for _, r := range split {
		switch r.Signal {
		case SignalMetrics:
			md, err := um.UnmarshalMetrics(r.Body)
			require.NoError(t, err)
			assert.LessOrEqual(t, md.ResourceMetrics().Len(), 5)
			splitPoints += md.DataPointCount()
		case SignalTraces:
			td, err := ut.UnmarshalTraces(r.Body)
			require.NoError(t, err)
			assert.LessOrEqual(t, td.ResourceSpans().Len(), 5)
			splitSpans += td.SpanCount()
		}
	}
	assert.Equal(t, 12*5, countSignal(split, SignalMetrics), "24 ranks in 5 requests a second")
	assert.Equal(t, points, splitPoints)
	assert.Equal(t, spans, splitSpans)

	_, err := s.Run(context.Background(), Options{Epoch: testEpoch, Requests: io.Discard, From: 1500 * time.Millisecond})
	assert.ErrorContains(t, err, "not a multiple of the flush interval")
}

func countSignal(reqs []Request, sig Signal) int {
	n := 0
	for _, r := range reqs {
		if r.Signal == sig {
			n++
		}
	}
	return n
}
