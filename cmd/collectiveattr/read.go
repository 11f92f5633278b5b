package main

import (
	"io"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// runInput is what `attribute` keeps of its input: the grouped samples and
// markers, and with --phases the phase boundaries, built while the records
// stream in instead of from a slice of every event.
type runInput struct {
	input  attribution.InputBuilder
	phases *phase.IndexBuilder // nil without --phases
}

// readRun streams the records of r into the builders.
func readRun(r io.Reader, phases bool) (*runInput, error) {
	ri := &runInput{}
	if phases {
		ri.phases = &phase.IndexBuilder{}
	}
	err := telemetry.Stream(r, func(chunk []telemetry.Event) error {
		ri.input.AddEvents(chunk)
		if ri.phases != nil {
			for i := range chunk {
				ri.phases.Add(&chunk[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ri, nil
}

// attribute is attribution.AttributeWithPreset on the streamed run: an empty
// run has no results whatever the configuration; otherwise the preset and
// overrides are resolved (a config error is returned) and the run attributed.
func (ri *runInput) attribute(preset string, overrides map[string]any) ([]attribution.Result, error) {
	if ri.input.Events() == 0 {
		return nil, nil
	}
	cfg, err := attribution.ResolveConfig(preset, overrides)
	if err != nil {
		return nil, err
	}
	var resolver attribution.PhaseResolver
	if ri.phases != nil {
		resolver = ri.phases.Index(nil)
	}
	return attribution.AttributeInput(ri.input.Input(), cfg, resolver), nil
}
