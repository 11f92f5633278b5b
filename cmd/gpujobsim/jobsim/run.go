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
	var bw *bufio.Writer
	var cw *countingWriter
	if opts.Stormlog != nil {
		cw = &countingWriter{w: opts.Stormlog}
		// Large writes: a reader at the end of a pipe pays a system call per write.
		bw = bufio.NewWriterSize(cw, 1<<20)
	}
	for from := time.Duration(0); from < s.Config.Duration; from += flush {
		to := min(from+flush, s.Config.Duration)
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
