package jobsim

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/collectiveattr/collectiveattr/inspector"
)

// PID is the process id every output of rank r names: stormlog records'
// pid, OTLP resources' process.pid, the Inspector log's file name and
// metadata.pid.
func (s *Scenario) PID(r int) int64 { return int64(4000 + r) }

// inspectorNames are the NCCL function names the plugin prints for the
// simulator's collectives. A barrier is NCCL's all-reduce of one float
// (PyTorch's barrier); the plugin records it only with
// NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES at or below its 4 bytes.
var inspectorNames = map[string]string{
	AllReduce:     "AllReduce",
	AllGather:     "AllGather",
	ReduceScatter: "ReduceScatter",
	Broadcast:     "Broadcast",
	Barrier:       "AllReduce",
}

// barrierBytes is the size of the float a barrier reduces.
const barrierBytes = 4

// InspectorLogs writes the job's collectives as the NCCL Inspector plugin
// writes them: one file per process, <dir>/<host>-pid<pid>.log, one JSON
// line per completed op, all ranks in the world communicator. The dump
// thread runs with interval 0, so a record is written when its op ends and
// its dump_timestamp_us is the op's end: the default layout's estimate
// dump − exec_time … dump is then the op's interval too (to the µs).
type InspectorLogs struct {
	s      *Scenario
	dir    string
	writer inspector.RecordWriter
	epoch  time.Time
	files  map[int]*inspectorFile
	// Records counts the records written.
	Records int
}

type inspectorFile struct {
	f *os.File
	w *bufio.Writer
}

// NewInspectorLogs writes into dir (created if missing); verbose selects the
// plugin's verbose layout (NCCL_INSPECTOR_DUMP_VERBOSE=1), which carries the
// op's start and end.
func (s *Scenario) NewInspectorLogs(dir string, verbose bool, epoch time.Time) (*InspectorLogs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &InspectorLogs{
		s: s, dir: dir, epoch: epoch,
		writer: inspector.RecordWriter{GitRev: "v2.30.7-1", Verbose: verbose},
		files:  map[int]*inspectorFile{},
	}, nil
}

// InspectorFileName is the log of rank r's process.
func (s *Scenario) InspectorFileName(r int) string {
	return fmt.Sprintf("%s-pid%d.log", s.Ranks[r].Host, s.PID(r))
}

// InspectorCommID is the communicator hash as the plugin prints it: "0x%lx"
// into a 17-byte buffer, so at most 14 hex digits.
func (s *Scenario) InspectorCommID() string {
	v, err := strconv.ParseUint(s.CommID, 16, 64)
	if err != nil {
		return "0x0"
	}
	id := "0x" + strconv.FormatUint(v, 16)
	return id[:min(len(id), 16)]
}

// InspectorOps returns the Inspector ops of rank r whose collective ends in [from,
// to), in the order the plugin writes them (completion order). Steps that
// start before the rank reports are not recorded, as for its spans.
func (s *Scenario) InspectorOps(r int, from, to time.Duration, epoch time.Time) []inspector.Op {
	var ops []inspector.Op
	hosts := (s.Config.Ranks + s.Config.GPUsPerHost - 1) / s.Config.GPUsPerHost
	callsPerStep := map[string]int64{}
	for _, t := range stepCollectives {
		callsPerStep[inspectorNames[t.op]]++
	}
	for step := range s.Steps {
		if !s.reportsAt(r, time.Duration(step)*s.Config.StepPeriod) {
			continue
		}
		perFunc := map[string]int64{} // coll_sn counts per NCCL function
		for c := range stepCollectives {
			call := s.collectiveOn(r, step, c)
			name := inspectorNames[call.Op]
			index := perFunc[name]
			perFunc[name]++
			if call.End < from || call.End >= to {
				continue
			}
			bytes := call.MsgBytes
			if call.Op == Barrier {
				bytes = barrierBytes
			}
			startUs := s.UnixNano(epoch, r, call.Start) / 1000
			endUs := s.UnixNano(epoch, r, call.End) / 1000
			execUs := endUs - startUs
			algbw, busbw := inspectorBandwidths(name, bytes, execUs, int64(s.Config.Ranks))
			ops = append(ops, inspector.Op{
				Host: s.Ranks[r].Host, PID: s.PID(r),
				CommID: s.InspectorCommID(), CommName: "default_pg",
				CommRank: int64(r), NRanks: int64(s.Config.Ranks), NNodes: int64(hosts),
				Kind: inspector.Collective, Name: name, Op: inspector.OpName(name),
				Seq: int64(step)*callsPerStep[name] + index, HasSeq: true, MessageBytes: bytes,
				StartNs: startUs * 1000, EndNs: endUs * 1000,
				ExecTimeUs: execUs, TimingSource: "kernel_gpu", AlgoBWGBs: algbw, BusBWGBs: busbw,
				DumpTimestampUs: endUs, Version: "v4.0",
			})
		}
	}
	return ops
}

// inspectorBandwidths computes the plugin's algorithm and bus bandwidths
// (GB/s) of an op of n ranks.
func inspectorBandwidths(name string, bytes, execUs, n int64) (algbw, busbw float64) {
	if execUs <= 0 {
		return 0, 0
	}
	b := float64(bytes)
	if name == "AllGather" || name == "ReduceScatter" {
		b *= float64(n)
	}
	algbw = b / 1e9 / (float64(execUs) / 1e6)
	factor := 1.0
	switch name {
	case "AllReduce":
		factor = 2 * float64(n-1) / float64(n)
	case "AllGather", "ReduceScatter":
		factor = float64(n-1) / float64(n)
	}
	return algbw, algbw * factor
}

// Write writes the records of the ops that end in [from, to) on every
// reporting rank.
func (l *InspectorLogs) Write(from, to time.Duration) error {
	for r := range l.s.Ranks {
		ops := l.s.InspectorOps(r, from, to, l.epoch)
		if len(ops) == 0 {
			continue
		}
		f, err := l.file(r)
		if err != nil {
			return err
		}
		var line []byte
		for i := range ops {
			line = l.writer.Append(line[:0], &ops[i])
			if _, err := f.w.Write(line); err != nil {
				return err
			}
			l.Records++
		}
		// A tailing reader sees whole records as soon as the batch is done.
		if err := f.w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// file opens rank r's log on its first record, truncating it as the
// plugin does.
func (l *InspectorLogs) file(r int) (*inspectorFile, error) {
	if f := l.files[r]; f != nil {
		return f, nil
	}
	f, err := os.Create(filepath.Join(l.dir, l.s.InspectorFileName(r)))
	if err != nil {
		return nil, err
	}
	lf := &inspectorFile{f: f, w: bufio.NewWriter(f)}
	l.files[r] = lf
	return lf, nil
}

// Close flushes and closes every log.
func (l *InspectorLogs) Close() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.w.Flush(), f.f.Close())
	}
	return errors.Join(errs...)
}
