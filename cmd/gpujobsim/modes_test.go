package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// writeResultLogs writes one file exporter line of result log records: every
// rank of every injection with the class classFor gives it ("" for none), of
// kind persistent for the step up.
func writeResultLogs(t *testing.T, path string, truth jobsim.Truth, classFor func(jobsim.TruthInjection) string) {
	t.Helper()
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, in := range truth.Injections {
		class := classFor(in)
		if class == "" {
			continue
		}
		kind := "transient"
		if in.Kind == jobsim.KindStepUp {
			kind = "persistent"
		}
		for _, w := range in.PerRank {
			body, err := json.Marshal(map[string]any{"job_id": truth.JobID, "rank": w.Rank, "interval_start_ns": w.StartNs,
				"interval_end_ns": w.EndNs, "classification": class, "confidence": 0.9, "reason_codes": []string{"r"}, "kind": kind})
			require.NoError(t, err)
			lr := lrs.AppendEmpty()
			lr.Attributes().PutStr("collective_attribution.classification", class)
			lr.Body().SetStr(string(body))
		}
	}
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
}

func TestModesCheck(t *testing.T) {
	cfg := jobsim.DefaultConfig()
	cfg.CotimedDecoys = 1
	s, err := jobsim.NewScenario(cfg)
	require.NoError(t, err)
	truth := s.Truth(time.Unix(1767225600, 0))
	dir := t.TempDir()
	b, err := json.Marshal(truth)
	require.NoError(t, err)
	truthPath := filepath.Join(dir, "truth.json")
	require.NoError(t, os.WriteFile(truthPath, b, 0o644))

	ref := filepath.Join(dir, "reference.json")
	writeResultLogs(t, ref, truth, func(in jobsim.TruthInjection) string {
		if in.Kind == jobsim.KindUnrelatedSpike {
			return ""
		}
		return in.Expected
	})
	for _, tc := range []struct {
		name      string
		decoy     string
		wantError bool
	}{
		{"decoy likely", "collective_likely", false},
		{"decoy confident", "collective_confident", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := filepath.Join(dir, tc.name+".json")
			writeResultLogs(t, ev, truth, func(in jobsim.TruthInjection) string {
				switch {
				case in.Kind == jobsim.KindCotimedDecoy:
					return tc.decoy
				case jobsim.IsCollectiveCaused(in.Kind):
					return "collective_likely"
				}
				return ""
			})
			var out bytes.Buffer
			err := modes([]string{"-check", "-truth", truthPath, "-reference", ref, "-evidence", ev}, &out)
			assert.Equal(t, tc.wantError, err != nil, "%v\n%s", err, out.String())
			assert.Contains(t, out.String(), "cotimed_decoy @ all_reduce")
			assert.Contains(t, out.String(), "<- differs")
			assert.Contains(t, out.String(), "\nverdict, reference mode: as expected on ")
			assert.Contains(t, out.String(), "\nverdict, evidence mode (without NCCL's accounting): ")
			assert.Contains(t, out.String(), "\nwhich to trust: ")
		})
	}
}

func TestModesUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-truth", "t.json", "-reference", "r.json"},
		{"-truth", "t.json", "-evidence", "e.json"},
		{"-truth", "t.json", "-reference", "r.json", "-evidence", "e.json", "extra"},
	} {
		err := modes(args, &bytes.Buffer{})
		var ue usageError
		assert.True(t, errors.As(err, &ue), "%q: %v", args, err)
	}
}
