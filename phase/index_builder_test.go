package phase_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestIndexBuilderMatchesNewIndexOracle: an IndexBuilder fed a simulated
// job's decoded stream chunk by chunk (its records in time order, then
// shuffled, so that boundaries of one thread arrive out of order and scopes
// stay open) builds the index NewIndex as of 8c9c5f4 builds from all events.
func TestIndexBuilderMatchesNewIndexOracle(t *testing.T) {
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.Duration = 8, 40*time.Second
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Run(context.Background(), jobsim.Options{Epoch: time.Unix(1767225600, 0), Stormlog: &buf}); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	shuffled := append([][]byte{}, lines...)
	rand.New(rand.NewPCG(4, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// Drop a tenth of the lines so that some exits are missing.
	for name, ls := range map[string][][]byte{"in order": lines, "shuffled": shuffled, "gaps": shuffled[:len(shuffled)*9/10]} {
		data := bytes.Join(ls, nil)
		events, err := telemetry.DecodeJSONL(data)
		if err != nil {
			t.Fatal(err)
		}
		want := phase.OracleNewIndex(events, nil)
		if phase.GroupCount(want) == 0 {
			t.Fatal("no phase spans: the test would compare nothing")
		}
		var b phase.IndexBuilder
		err = telemetry.Stream(bytes.NewReader(data), func(chunk []telemetry.Event) error {
			for i := range chunk {
				b.Add(&chunk[i])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Index(nil); !reflect.DeepEqual(phase.Groups(got), phase.Groups(want)) {
			t.Fatalf("%s: the builder's index differs from NewIndex's", name)
		}
	}
}
