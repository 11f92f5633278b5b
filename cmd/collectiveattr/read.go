package main

import (
	"fmt"
	"io"
	"os"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/report"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// runInput is what `attribute` keeps of its input, built while the records
// stream in instead of from a slice of every event: the window of the
// selected mode (window.Stream: the processor's per-job window, unbounded;
// for `ledger` and `report` with the ledger's columns too), with --phases
// the phase boundaries, with --nccl-inspector the (host, pid) of every
// rank, and for `report` the page's lanes. Only the records of the selected job (--job) reach the
// builders; every record is counted in jobs.
type runInput struct {
	mode      string
	events    int
	window    *window.Stream
	phases    *phase.IndexBuilder // nil without --phases
	inspector *inspectorJoin      // nil without --nccl-inspector
	torch     *torchRun           // nil without --torch-profiler
	page      *report.Builder     // report only
	// worldSizeNote is the world sizes the ranks declare when they differ
	// (evidence mode, after attribute; "" when they agree).
	worldSizeNote string
	job           jobFlag
	jobs          *jobTally
	selected      []telemetry.Event // the chunk's records of the selected job
	// tail is FILE's truncated last line, dropped (Line 0: none).
	tail telemetry.DroppedTail
	// inspectorUnreadable counts the Inspector lines skipped as unreadable.
	inspectorUnreadable int
}

// readRun streams the records of r into the builders opts asks for.
func readRun(r io.Reader, opts attributeOptions) (*runInput, error) {
	ri := &runInput{mode: opts.mode, job: opts.job, jobs: newJobTally()}
	mode := window.ReferenceMode
	if opts.mode == attribution.ModeEvidence {
		mode = window.EvidenceMode
	}
	// The phase index is built from the stream itself (phases), not by the
	// window: PyTorch profiler ranges are phases without being records of
	// their ranks.
	ri.window = window.NewStream(mode, false)
	if opts.phases {
		ri.phases = &phase.IndexBuilder{}
	}
	if len(opts.inspector) > 0 {
		ri.inspector = newInspectorJoin(opts.inspector)
	}
	ri.torch = opts.sources.torch
	if opts.page {
		ri.page = report.NewBuilder(opts.phases)
	}
	if opts.ledger {
		ri.window.KeepLedger()
	}
	add := func(chunk []telemetry.Event) error {
		ri.add(chunk)
		return nil
	}
	if f, ok := r.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.IsDir() {
			if err := streamSinkDir(f.Name(), add); err != nil {
				return nil, err
			}
			return ri, nil
		}
	}
	err := telemetry.StreamNotingTail(r, add, func(t telemetry.DroppedTail) { ri.tail = t })
	if err != nil {
		return nil, err
	}
	return ri, nil
}

// streamSinkDir streams the segments of a stormlog sink directory in
// write order; an error names the segment (and, for a bad record, its
// line).
func streamSinkDir(dir string, add func([]telemetry.Event) error) error {
	segments, err := telemetry.SinkSegments(dir)
	if err != nil {
		return err
	}
	for _, name := range segments {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = telemetry.Stream(f, add)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// add feeds the records of the selected job to every builder of the run;
// the Inspector join learns every rank's (host, pid), whatever its job.
func (ri *runInput) add(events []telemetry.Event) {
	if ri.inspector != nil {
		for i := range events {
			ri.inspector.learn(&events[i])
		}
	}
	for i := range events {
		ri.jobs.add(&events[i])
	}
	if ri.job.set {
		ri.selected = ri.selected[:0]
		for i := range events {
			if events[i].JobID == ri.job.id {
				ri.selected = append(ri.selected, events[i])
			}
		}
		events = ri.selected
	}
	ri.events += len(events)
	if ri.torch != nil {
		for i := range events {
			ri.torch.fill(&events[i])
			ri.torch.owners.learn(&events[i])
		}
	}
	ri.window.AddEvents(events)
	for i := range events {
		e := &events[i]
		if ri.phases != nil {
			ri.phases.Add(e)
		}
		if ri.page != nil {
			ri.page.Add(e)
		}
	}
}

// checkJobs returns the error of a run that does not hold exactly the one
// job it attributes: several jobs without --job, or a --job that names none.
// An input without records is no error (its result is []).
func (ri *runInput) checkJobs(file string) error {
	switch {
	case ri.job.set && ri.jobs.jobs[ri.job.id] == nil && len(ri.jobs.jobs) > 0:
		return ri.jobs.missingJobError(file, ri.job.id)
	case !ri.job.set && len(ri.jobs.jobs) > 1:
		return ri.jobs.severalJobsError(file)
	}
	return nil
}

// addInspectorMarkers reads the run's NCCL Inspector files and adds the
// markers of every record joined to one of its ranks, converted as the
// run's mode reads them. They come after the run's own records, as if
// appended to its input.
func (ri *runInput) addInspectorMarkers(stderr io.Writer) error {
	if ri.inspector == nil {
		return nil
	}
	markers := inspector.ReferenceMarkers
	if ri.mode == attribution.ModeEvidence {
		markers = inspector.EvidenceMarker
	}
	events, err := ri.inspector.appendMarkers(nil, markers, stderr)
	if err != nil {
		return err
	}
	ri.inspectorUnreadable = ri.inspector.unreadable
	ri.inspector = nil // the markers are not (host, pid) telemetry
	ri.add(events)
	return nil
}

// addSourceMarkers adds the markers of every marker source of the run:
// NCCL Inspector logs, then PyTorch profiler traces (and, with --phases,
// their ranges as phases of their ranks' sessions).
func (ri *runInput) addSourceMarkers(stderr io.Writer) error {
	if err := ri.addInspectorMarkers(stderr); err != nil {
		return err
	}
	if ri.torch == nil {
		return nil
	}
	torch := ri.torch
	ri.torch = nil // the markers are no telemetry of their ranks
	events := torch.events(ri.mode, ri.phases != nil, stderr)
	var marks []telemetry.Event
	for i := range events {
		if t := events[i].EventType; t == phase.EnterEvent || t == phase.ExitEvent {
			ri.phases.Add(&events[i])
		} else {
			marks = append(marks, events[i])
		}
	}
	ri.add(marks)
	return nil
}

// attribute attributes the run in its mode, as the reference's
// attribute_collective_memory does: an empty run has no results whatever the
// configuration; otherwise the preset and overrides (and in evidence mode
// the evidence keys) are resolved, a config error is returned, and the run
// is attributed.
func (ri *runInput) attribute(preset string, overrides, evidenceKeys map[string]any) ([]attribution.Result, error) {
	if ri.events == 0 {
		return nil, nil
	}
	var resolver attribution.PhaseResolver
	if ri.phases != nil {
		resolver = ri.phases.Index(nil)
	}
	var sc window.Scratch
	if ri.mode == attribution.ModeEvidence {
		cfg, err := evidence.ResolveConfig(preset, overrides, evidenceKeys)
		if err != nil {
			return nil, err
		}
		var es window.EvidenceScratch
		snap := ri.window.Job().EvidenceSnapshot(&sc, &es)
		if snap.WorldSizeDisagreement != "" {
			ri.worldSizeNote = fmt.Sprintf("the ranks declare different world sizes (%s); evidence mode uses %d, the size most of them declare",
				snap.WorldSizeDisagreement, snap.Input.ExpectedWorldSize)
		}
		return evidence.Attribute(&snap.Input, cfg, resolver), nil
	}
	cfg, err := attribution.ResolveConfig(preset, overrides)
	if err != nil {
		return nil, err
	}
	return attribution.AttributeColumns(ri.window.Job().Snapshot(&sc).Input, cfg, resolver), nil
}
