package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// checkMode normalises --mode (case and surrounding spaces ignored) and
// refuses --evidence outside evidence mode.
func checkMode(o *attributeOptions) error {
	switch strings.ToLower(strings.TrimSpace(o.mode)) {
	case attribution.ModeReference:
		o.mode = attribution.ModeReference
		if strings.TrimSpace(o.evidence) != "" {
			return errors.New("--evidence needs --mode evidence")
		}
	case attribution.ModeEvidence:
		o.mode = attribution.ModeEvidence
	default:
		return fmt.Errorf("unknown --mode %q (known: reference, evidence)", o.mode)
	}
	return nil
}

// runEvidence attributes the events in evidence mode and prints the
// results. As in the reference mode, an empty input prints [] before the
// configuration is resolved.
func runEvidence(events []telemetry.Event, opts attributeOptions, overrides map[string]any,
	resolver attribution.PhaseResolver, stdout, stderr io.Writer) int {
	if len(events) == 0 {
		return writeResults(nil, opts.phases, stdout, stderr)
	}
	keys, _ := parseOverrides(opts.evidence) // checked before the input was read
	cfg, err := evidence.ResolveConfig(opts.preset, overrides, keys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	b := evidence.NewBuilder()
	for i := range events {
		b.Add(&events[i])
	}
	results := evidence.Attribute(b.Input(), cfg, resolver)
	return writeResults(results, opts.phases, stdout, stderr)
}
