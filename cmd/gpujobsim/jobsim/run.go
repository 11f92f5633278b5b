package jobsim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"
)

// Options says where a run sends what it simulates.
type Options struct {
	// Epoch is the wall-clock time of job time 0.
	Epoch time.Time
	// Realtime paces the run by the wall clock (the demo); otherwise it sends as fast as
	// the receiver takes it, with timestamps from Epoch on (tests).
	Realtime bool
	// FlushInterval is how much job time one batch covers (default 1 s): each rank's
	// exporter sends its samples and finished spans once per interval.
	FlushInterval time.Duration
	// OTLP, when set, receives the metrics and traces.
	OTLP   *OTLPSender
	Device DeviceMetrics
	// Stormlog, when set, receives stormlog TelemetryEvent JSON Lines.
	Stormlog io.Writer
	// Inspector, when set, receives the collectives as NCCL Inspector logs.
	Inspector *InspectorLogs
	// Requests, when set, receives the OTLP export requests framed (WriteRequest) instead
	// of a collector, each due at the end of its flush interval, to be replayed later.
	Requests io.Writer
	// RanksPerRequest splits each flush interval's metrics and spans written to Requests
	// into requests of at most that many ranks (0: one request per signal and interval).
	RanksPerRequest int
	// From and To bound the job time played (To 0: the job's duration); From is a multiple
	// of FlushInterval, so that runs over consecutive ranges together give the whole job's
	// batches (a job generated in shards).
	From, To time.Duration
}

// Stats counts what a run sent.
type Stats struct {
	Batches        int
	DataPoints     int
	Spans          int
	StormlogEvents int
}

// Run plays the scenario once, from job time 0 to its duration.
func (s *Scenario) Run(ctx context.Context, opts Options) (Stats, error) {
	var st Stats
	flush := opts.FlushInterval
	if flush <= 0 {
		flush = time.Second
	}
	end := s.Config.Duration
	if opts.To > 0 {
		end = min(end, opts.To)
	}
	if opts.From < 0 || opts.From%flush != 0 {
		return st, fmt.Errorf("job time range start %s is not a multiple of the flush interval %s", opts.From, flush)
	}
	var bw *bufio.Writer
	var cw *countingWriter
	if opts.Stormlog != nil {
		cw = &countingWriter{w: opts.Stormlog}
		// Large writes: a reader at the end of a pipe pays a system call per write.
		bw = bufio.NewWriterSize(cw, 1<<20)
	}
	for from := opts.From; from < end; from += flush {
		to := min(from+flush, end)
		if opts.Realtime {
			wait := time.Until(opts.Epoch.Add(to))
			if wait > 0 {
				select {
				case <-ctx.Done():
					return st, ctx.Err()
				case <-time.After(wait):
				}
			}
		} else if err := ctx.Err(); err != nil {
			return st, err
		}
		if opts.OTLP != nil {
			md := s.Metrics(from, to, opts.Epoch, opts.Device)
			if err := opts.OTLP.SendMetrics(ctx, md); err != nil {
				return st, fmt.Errorf("sending metrics for job time [%s, %s): %w", from, to, err)
			}
			st.DataPoints += md.DataPointCount()
			td := s.Traces(from, to, opts.Epoch)
			if err := opts.OTLP.SendTraces(ctx, td); err != nil {
				return st, fmt.Errorf("sending spans for job time [%s, %s): %w", from, to, err)
			}
			st.Spans += td.SpanCount()
		}
		if opts.Requests != nil {
			n, err := s.writeRequests(opts, from, to)
			if err != nil {
				return st, fmt.Errorf("writing requests for job time [%s, %s): %w", from, to, err)
			}
			st.DataPoints += n.DataPoints
			st.Spans += n.Spans
		}
		if bw != nil {
			if err := s.WriteStormlog(bw, from, to, opts.Epoch); err != nil {
				return st, err
			}
			if err := bw.Flush(); err != nil {
				return st, err
			}
		}
		if opts.Inspector != nil {
			if err := opts.Inspector.Write(from, to); err != nil {
				return st, err
			}
		}
		st.Batches++
	}
	if cw != nil {
		st.StormlogEvents = cw.lines
	}
	return st, nil
}

type countingWriter struct {
	w     io.Writer
	lines int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	return c.w.Write(p)
}

// writeRequests writes the metrics and spans of job time [from, to) to opts.Requests.
func (s *Scenario) writeRequests(opts Options, from, to time.Duration) (Stats, error) {
	var st Stats
	md := s.Metrics(from, to, opts.Epoch, opts.Device)
	st.DataPoints = md.DataPointCount()
	reqs, err := metricsRequests(md, opts.RanksPerRequest, to)
	if err != nil {
		return st, err
	}
	td := s.Traces(from, to, opts.Epoch)
	st.Spans = td.SpanCount()
	spans, err := tracesRequests(td, opts.RanksPerRequest, to)
	if err != nil {
		return st, err
	}
	for _, r := range append(reqs, spans...) {
		if err := WriteRequest(opts.Requests, r); err != nil {
			return st, err
		}
	}
	return st, nil
}
