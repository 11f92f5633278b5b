package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

func TestQualityWritesCases(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, quality([]string{"-out", dir, "-families", "easy,pipeline", "-seeds", "2", "-shape", "small", "-nccl-stats"}, &out))
	for _, name := range []string{"easy-s2", "pipeline-s2"} {
		b, err := os.ReadFile(filepath.Join(dir, name, "truth.json"))
		require.NoError(t, err, name)
		var truth jobsim.QualityTruth
		require.NoError(t, json.Unmarshal(b, &truth))
		assert.Equal(t, 8, truth.WorldSize, "the small shape")
		assert.True(t, truth.NCCLStats.Written)
		assert.FileExists(t, filepath.Join(dir, name, "events.jsonl"))
		assert.Contains(t, out.String(), name)
	}
}

func TestQualityUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-out", t.TempDir(), "-families", "nope"},
		{"-out", t.TempDir(), "-seeds", "x"},
		{"-out", t.TempDir(), "-shape", "huge"},
		{"-out", t.TempDir(), "extra"},
	} {
		err := quality(args, &bytes.Buffer{})
		var ue usageError
		assert.True(t, errors.As(err, &ue), "%v: %v", args, err)
	}
}
