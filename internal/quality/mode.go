package quality

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strconv"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// Mode attributes one job's events with a preset and returns its results reduced to
// what the scorer reads.
type Mode func(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error)

// ReferenceMode is the reference attribution in process (window.AttributeReference
// with the preset and no overrides), as `collectiveattr attribute --preset P`
// does: an empty run has no results whatever the preset.
func ReferenceMode(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
	if len(events) == 0 {
		return nil, nil
	}
	cfg, err := attribution.ResolveConfig(preset, nil)
	if err != nil {
		return nil, err
	}
	results := window.AttributeReference(events, cfg, nil)
	out := make([]jobsim.QualityResult, len(results))
	for i := range results {
		r := &results[i]
		out[i] = jobsim.QualityResult{Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: r.EndNs(),
			Classification: r.Classification, Confidence: r.Confidence}
	}
	return out, nil
}

// CLIMode runs a built collectiveattr binary: `BIN attribute ARGS... --preset P -` with
// the events as JSON Lines on stdin (ARGS e.g. "--mode", "evidence").
func CLIMode(ctx context.Context, bin string, args ...string) Mode {
	return func(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
		var in, out, stderr bytes.Buffer
		if err := jobsim.WriteEvents(&in, events); err != nil {
			return nil, err
		}
		argv := append(append([]string{"attribute"}, args...), "--preset", preset, "-")
		cmd := exec.CommandContext(ctx, bin, argv...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &out, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s %v: %w: %s", bin, argv, err, bytes.TrimSpace(stderr.Bytes()))
		}
		return ParseResultsJSON(out.Bytes())
	}
}

// cliResult is the part of a CLI result object the scorer reads.
type cliResult struct {
	Rank            int64       `json:"rank"`
	IntervalStartNs int64       `json:"interval_start_ns"`
	IntervalEndNs   json.Number `json:"interval_end_ns"`
	Classification  string      `json:"classification"`
	Confidence      float64     `json:"confidence"`
	Kind            string      `json:"kind"`
}

// ParseResultsJSON reads the CLI's JSON array of results. An interval end past the
// int64 range (the reference never clamps it) is saturated.
func ParseResultsJSON(data []byte) ([]jobsim.QualityResult, error) {
	var rs []cliResult
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	out := make([]jobsim.QualityResult, len(rs))
	for i, r := range rs {
		end, err := strconv.ParseUint(r.IntervalEndNs.String(), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("result %d: interval_end_ns %q: %w", i, r.IntervalEndNs, err)
		}
		out[i] = jobsim.QualityResult{Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: int64(min(end, math.MaxInt64)),
			Classification: r.Classification, Confidence: r.Confidence, Kind: r.Kind}
	}
	return out, nil
}
