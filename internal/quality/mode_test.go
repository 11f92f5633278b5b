package quality

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

func TestParseResultsJSON(t *testing.T) {
	got, err := ParseResultsJSON([]byte(`[
		{"rank": 3, "interval_start_ns": 10, "interval_end_ns": 20, "classification": "collective_likely",
		 "confidence": 0.7, "reason_codes": [], "evidence": {}},
		{"rank": 4, "interval_start_ns": 9223372036854775000, "interval_end_ns": 18446744073709551000,
		 "classification": "collective_confirmed", "confidence": 1, "kind": "persistent", "mode": "evidence"}]`))
	require.NoError(t, err)
	assert.Equal(t, []jobsim.QualityResult{
		{Rank: 3, StartNs: 10, EndNs: 20, Classification: jobsim.ClassLikely, Confidence: 0.7},
		{Rank: 4, StartNs: 9223372036854775000, EndNs: math.MaxInt64, Classification: jobsim.ClassConfirmed, Confidence: 1, Kind: jobsim.ResultPersistent},
	}, got, "an end past int64 saturates")

	_, err = ParseResultsJSON([]byte(`{"not": "an array"}`))
	assert.Error(t, err)
	_, err = ParseResultsJSON([]byte(`[{"rank": 1, "interval_end_ns": -5}]`))
	assert.ErrorContains(t, err, "interval_end_ns")
}

func TestReferenceModeRejectsUnknownPreset(t *testing.T) {
	c, err := jobsim.GenerateQualityCase("easy", 1, jobsim.DefaultQualityShape(), false)
	require.NoError(t, err)
	_, err = ReferenceMode(c.Events, "extreme")
	assert.Error(t, err)
	_, err = Evaluate(ReferenceMode, Plan{Shape: "huge", Families: []string{"easy"}, Seeds: []int64{1}, Presets: []string{"medium"}, NCCLStats: []bool{false}})
	assert.ErrorContains(t, err, "unknown shape")
}

// CLIMode runs `BIN attribute ARGS --preset P -` with the events on stdin.
func TestCLIMode(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-collectiveattr")
	script := "#!/bin/sh\necho \"$@\" > " + filepath.Join(dir, "args") + "\nwc -l > " + filepath.Join(dir, "lines") +
		"\necho '[{\"rank\": 1, \"interval_start_ns\": 5, \"interval_end_ns\": 6, \"classification\": \"collective_suspect\", \"confidence\": 0.2}]'\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	c, err := jobsim.GenerateQualityCase("easy", 1, jobsim.DefaultQualityShape(), false)
	require.NoError(t, err)
	got, err := CLIMode(t.Context(), bin, "--mode", "evidence")(c.Events, "high")
	require.NoError(t, err)
	assert.Equal(t, []jobsim.QualityResult{{Rank: 1, StartNs: 5, EndNs: 6, Classification: jobsim.ClassSuspect, Confidence: 0.2}}, got)
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	assert.Equal(t, "attribute --mode evidence --preset high -\n", string(args))
	lines, err := os.ReadFile(filepath.Join(dir, "lines"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(len(c.Events)), strings.TrimSpace(string(lines)), "one JSON line per event on stdin")

	_, err = CLIMode(t.Context(), filepath.Join(dir, "missing"))(c.Events, "medium")
	assert.Error(t, err)
}
