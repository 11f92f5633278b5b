package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/markers"
	"github.com/collectiveattr/collectiveattr/markers/kineto"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// markerSources are the PyTorch marker sources of `attribute`.
type markerSources struct {
	torchProfiler  pathList // --torch-profiler
	flightRecorder pathList // --flight-recorder
	// torch is what load read of them (nil without them).
	torch *torchRun
}

// load reads the sources before the run's records stream in: a trace's
// allocator figures fill the samples that lack them as they come.
func (s *markerSources) load(stderr io.Writer) error {
	var err error
	if s.torch, err = s.loadTorch(stderr); err != nil {
		return err
	}
	flight, err := loadFlightRecorder(s.flightRecorder, stderr)
	if err != nil || flight == nil {
		return err
	}
	if s.torch == nil {
		s.torch = &torchRun{}
	}
	s.torch.identify(flight)
	return nil
}

// identifyToleranceNs is how far outside a Flight Recorder entry's
// interval (enqueue to the watchdog seeing it complete) a trace's op may
// start and still be that entry: the two read one host's wall clock.
const identifyToleranceNs = 50_000_000

// identify gives each trace's bare markers the identity of the Flight
// Recorder entries of its rank, and keeps the entries no trace op took as
// markers of their own.
func (tr *torchRun) identify(flight map[int64][]markers.Marker) {
	for i := range tr.traces {
		t := tr.traces[i].trace
		if f, ok := flight[t.Rank]; ok {
			flight[t.Rank] = markers.Identify(t.Markers, f, identifyToleranceNs)
		}
	}
	tr.flight = flight
}

func (s *markerSources) register(fs *flag.FlagSet) {
	fs.Var(&s.torchProfiler, "torch-profiler", "")
	fs.Var(&s.flightRecorder, "flight-recorder", "")
}

// torchSuffixes are the names of profiler traces in a directory
// (export_chrome_trace and tensorboard_trace_handler write *.json, the
// handler *.pt.trace.json, optionally gzip-compressed).
var torchSuffixes = []string{".json"}

// rankFileName finds a rank in a file name ("rank3", "rank_3", "rank-3"),
// for traces and dumps that do not name their own.
var rankFileName = regexp.MustCompile(`rank[_-]?(\d+)`)

// rankTrace is one rank's profiler trace.
type rankTrace struct {
	file  string
	trace *kineto.Trace
}

// torchRun is what the PyTorch sources give a run: per global rank,
// markers, phases and allocator samples, and the owners learned from the
// run's own records to join them to.
type torchRun struct {
	traces []rankTrace
	// memory is each rank's [memory] samples per device, in time order.
	memory map[int64]map[int64][]kineto.MemorySample
	// flight are the Flight Recorder markers of each rank that no trace
	// op took the identity of.
	flight map[int64][]markers.Marker
	owners rankOwners
	// filled counts samples whose allocator figures came from a trace.
	filled int
}

// loadTorch reads the traces of --torch-profiler (nil without it).
func (s *markerSources) loadTorch(stderr io.Writer) (*torchRun, error) {
	if len(s.torchProfiler) == 0 {
		return nil, nil
	}
	files, err := inputFiles("--torch-profiler", s.torchProfiler, torchSuffixes)
	if err != nil {
		return nil, err
	}
	tr := &torchRun{memory: map[int64]map[int64][]kineto.MemorySample{}}
	ranks := map[int64]string{}
	for _, name := range files {
		t, err := readTrace(name)
		if err != nil {
			return nil, err
		}
		if !t.HasRank {
			m := rankFileName.FindStringSubmatch(filepath.Base(name))
			if m == nil {
				return nil, fmt.Errorf("--torch-profiler: %s: the trace names no rank (no distributedInfo, no op on default_pg) and neither does its file name (rank<N>)", name)
			}
			r, _ := strconv.ParseInt(m[1], 10, 64)
			t.Rank, t.HasRank = r, true
			for i := range t.Markers {
				t.Markers[i].Rank = r
			}
		}
		if prev, dup := ranks[t.Rank]; dup {
			return nil, fmt.Errorf("--torch-profiler: %s and %s are both traces of rank %d", prev, name, t.Rank)
		}
		ranks[t.Rank] = name
		if t.Stats.Skipped > 0 {
			fmt.Fprintf(stderr, "collectiveattr: --torch-profiler: %s: %d events skipped (first: line %d: %s)\n",
				name, t.Stats.Skipped, lineAt(name, t.Stats.FirstSkipOffset), t.Stats.FirstSkip)
		}
		tr.traces = append(tr.traces, rankTrace{file: name, trace: t})
		for _, m := range t.Memory {
			if tr.memory[t.Rank] == nil {
				tr.memory[t.Rank] = map[int64][]kineto.MemorySample{}
			}
			tr.memory[t.Rank][m.DeviceID] = append(tr.memory[t.Rank][m.DeviceID], m)
		}
	}
	return tr, nil
}

// readTrace reads one trace file; a malformed one is an error naming the
// file and the line where reading stopped.
func readTrace(name string) (*kineto.Trace, error) {
	f, err := openInput(name)
	if err != nil {
		return nil, fmt.Errorf("--torch-profiler: %w", err)
	}
	t, err := kineto.Read(f)
	f.Close()
	var syntax *kineto.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("--torch-profiler: %s: line %d: %v", name, lineAt(name, syntax.Offset), syntax.Err)
	case err != nil:
		return nil, fmt.Errorf("--torch-profiler: %s: %w", name, err)
	}
	return t, nil
}

// lineAt is the 1-based line of a byte offset of a (possibly compressed)
// file: read again only to report an error.
func lineAt(name string, offset int64) int {
	f, err := openInput(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, offset))
	line := 1
	for {
		b, err := br.ReadByte()
		if err != nil {
			return line
		}
		if b == '\n' {
			line++
		}
	}
}

// rankOwners maps a global rank to the owner the run's records name for
// it; a rank that records of several jobs claim is ambiguous.
type rankOwners struct {
	owners    map[int64]inspector.Owner
	ambiguous map[int64]bool
}

func (ro *rankOwners) learn(e *telemetry.Event) {
	if ro.owners == nil {
		ro.owners, ro.ambiguous = map[int64]inspector.Owner{}, map[int64]bool{}
	}
	o, ok := ro.owners[e.Rank]
	switch {
	case !ok:
		ro.owners[e.Rank] = inspector.OwnerOf(e)
	case o.Job() != jobOf(e):
		ro.ambiguous[e.Rank] = true
	case o.SessionID == "" && e.SessionID != "":
		ro.owners[e.Rank] = inspector.OwnerOf(e)
	}
}

func jobOf(e *telemetry.Event) string {
	if e.JobID != "" {
		return e.JobID
	}
	return e.SessionID
}

// fill gives a sample without allocator figures (a v4 record of a
// device-only sampler) the latest figures its rank's trace recorded for
// its device at or before it.
func (tr *torchRun) fill(e *telemetry.Event) {
	if e.AllocatorReservedBytes.Valid || !e.DeviceUsedBytes.Valid {
		return
	}
	devices := tr.memory[e.Rank]
	samples, ok := devices[e.DeviceID]
	if !ok && len(devices) == 1 {
		for _, s := range devices {
			samples = s
		}
	}
	i := sortSearchMemory(samples, e.TimestampNs)
	if i < 0 {
		return
	}
	e.AllocatorReservedBytes = telemetry.Int(samples[i].ReservedBytes)
	if !e.AllocatorAllocatedBytes.Valid {
		e.AllocatorAllocatedBytes = telemetry.Int(samples[i].AllocatedBytes)
	}
	tr.filled++
}

// sortSearchMemory is the index of the last sample at or before ts (-1:
// none).
func sortSearchMemory(s []kineto.MemorySample, ts int64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s[mid].TimeNs <= ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

// events converts the traces' markers (and, with phases, their ranges) to
// the run's records, joined to the owners of their ranks.
func (tr *torchRun) events(mode string, withPhases bool, stderr io.Writer) []telemetry.Event {
	convert := markers.ReferenceEvents
	if mode == attribution.ModeEvidence {
		convert = markers.EvidenceEvents
	}
	var out []telemetry.Event
	unjoined := map[string]int{}
	for _, rt := range tr.traces {
		t := rt.trace
		owner, ok := tr.owners.owners[t.Rank]
		switch {
		case !ok:
			unjoined[fmt.Sprintf("%s (rank %d: no record of FILE has it)", rt.file, t.Rank)] += len(t.Markers)
			continue
		case tr.owners.ambiguous[t.Rank]:
			unjoined[fmt.Sprintf("%s (rank %d: records of several jobs have it)", rt.file, t.Rank)] += len(t.Markers)
			continue
		}
		for i := range t.Markers {
			out = convert(out, &t.Markers[i], &owner, "torch_profiler")
		}
		if withPhases && owner.SessionID != "" {
			out = appendPhaseEvents(out, t, &owner)
		}
	}
	for _, rank := range slices.Sorted(maps.Keys(tr.flight)) {
		owner, ok := tr.owners.owners[rank]
		switch {
		case !ok:
			unjoined[fmt.Sprintf("Flight Recorder dumps (rank %d: no record of FILE has it)", rank)] += len(tr.flight[rank])
			continue
		case tr.owners.ambiguous[rank]:
			unjoined[fmt.Sprintf("Flight Recorder dumps (rank %d: records of several jobs have it)", rank)] += len(tr.flight[rank])
			continue
		}
		for i := range tr.flight[rank] {
			out = convert(out, &tr.flight[rank][i], &owner, "flight_recorder")
		}
	}
	for what, n := range unjoined {
		fmt.Fprintf(stderr, "collectiveattr: %d markers of %s left out\n", n, what)
	}
	if tr.filled > 0 {
		fmt.Fprintf(stderr, "collectiveattr: --torch-profiler: %d samples took their allocator figures from [memory] events\n", tr.filled)
	}
	return out
}

// addTorchMarkers gives the samples of events that lack allocator figures
// those of the traces, and appends the sources' markers (with phases, the
// traces' ranges) joined to the ranks events name: `report`'s form of what
// `attribute` does as its records stream in.
func addTorchMarkers(events []telemetry.Event, tr *torchRun, mode string, withPhases bool, stderr io.Writer) []telemetry.Event {
	if tr == nil {
		return events
	}
	for i := range events {
		tr.fill(&events[i])
		tr.owners.learn(&events[i])
	}
	return append(events, tr.events(mode, withPhases, stderr)...)
}

// appendPhaseEvents gives a trace's ranges as the phase_enter/phase_exit
// boundaries of the owner's session.
func appendPhaseEvents(dst []telemetry.Event, t *kineto.Trace, o *inspector.Owner) []telemetry.Event {
	for i, p := range t.Phases {
		path := make([]any, len(p.Path))
		for j, s := range p.Path {
			path[j] = s
		}
		scope := "torch-profiler:" + strconv.FormatInt(t.Rank, 10) + ":" + strconv.Itoa(i)
		for _, b := range []struct {
			typ, action string
			ts          int64
		}{{phase.EnterEvent, "enter", p.StartNs}, {phase.ExitEvent, "exit", p.EndNs}} {
			zero := telemetry.Int(0)
			dst = append(dst, telemetry.Event{
				SchemaVersion: 3, SessionID: o.SessionID, TimestampNs: b.ts, EventType: b.typ,
				Collector: "torch_profiler", SamplingIntervalMs: o.SamplingIntervalMs, PID: -1, JobID: o.JobID,
				Rank: o.Rank, LocalRank: o.LocalRank, WorldSize: o.WorldSize, DeviceID: o.DeviceID,
				AllocatorAllocatedBytes: zero, AllocatorReservedBytes: zero, AllocatorChangeBytes: zero, DeviceUsedBytes: zero,
				Metadata: map[string]any{"phase_scope": map[string]any{
					"action": b.action, "name": p.Name, "scope_id": scope, "thread_name": "",
					"path": path, "sequence": jsonNumber(int64(i)), "thread_id": jsonNumber(p.ThreadID),
				}},
			})
		}
	}
	return dst
}

func jsonNumber(v int64) any { return json.Number(strconv.FormatInt(v, 10)) }
