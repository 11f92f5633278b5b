package window_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/racebuild"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

var update = flag.Bool("update", false, "rewrite testdata/stream/ from the window's results")

// TestStreamGoldens: a job streamed into the window attributes, in both
// modes, as testdata/stream/<family>.txt records, for every quality family
// with and without NCCL's accounting, and with every record sent twice (a
// file that holds each line twice: both count, as stormlog counts them).
// The goldens were first written while the engines still had readers of
// their own (attribution.BuildInput, evidence.Builder), and equalled
// theirs; -update rewrites them from the window.
func TestStreamGoldens(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{20 * time.Second, 25 * time.Second}
	refCfg, err := attribution.ResolveConfig("medium", nil)
	require.NoError(t, err)
	evCfg, err := evidence.ResolveConfig("medium", nil, nil)
	require.NoError(t, err)
	for _, fam := range streamFamilies() {
		t.Run(fam.Name, func(t *testing.T) {
			var got bytes.Buffer
			for _, stats := range []bool{false, true} {
				for _, twice := range []bool{false, true} {
					if twice && !stats {
						continue // sent twice: once per family is enough
					}
					c, err := jobsim.GenerateQualityCase(fam.Name, 1, shape, stats)
					require.NoError(t, err)
					events := c.Events
					if twice {
						events = make([]telemetry.Event, 0, 2*len(c.Events))
						for _, e := range c.Events {
							events = append(events, e, e)
						}
					}
					writeSection(&got, fmt.Sprintf("reference nccl_stats=%v twice=%v", stats, twice),
						window.AttributeReference(events, refCfg, nil))
					writeSection(&got, fmt.Sprintf("evidence nccl_stats=%v twice=%v", stats, twice),
						window.AttributeEvidence(events, evCfg, nil))
				}
			}
			path := filepath.Join("testdata", "stream", fam.Name+".txt")
			if *update {
				require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("results differ from %s (go test -run TestStreamGoldens -update rewrites it):\n%s", path, got.String())
			}
		})
	}
}

// writeSection writes a heading line and one result per line, as the CLI
// serialises results.
func writeSection(w *bytes.Buffer, heading string, results []attribution.Result) {
	fmt.Fprintf(w, "# %s: %d results\n", heading, len(results))
	for i := range results {
		w.Write(attribution.AppendResultJSON(nil, &results[i], false))
		w.WriteByte('\n')
	}
}

// streamFamilies are the quality families the stream is compared on:
// every one, or in a -race binary one of each kind (the engines are
// single-threaded: the race detector finds nothing more on the others and
// multiplies their time).
func streamFamilies() []jobsim.QualityFamily {
	if !racebuild.Enabled {
		return jobsim.QualityFamilies
	}
	var fams []jobsim.QualityFamily
	for _, name := range []string{"easy", "pipeline", "no_collective", "restart", "early_first_use"} {
		f, ok := jobsim.QualityFamilyByName(name)
		if !ok {
			panic("no quality family " + name)
		}
		fams = append(fams, f)
	}
	return fams
}
