package jobsim

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

type rankTime struct {
	rank int64
	ns   int64
}

// TestInspectorLogsParseAndJoin runs a job writing stormlog records and
// Inspector logs in both layouts: every record parses, joins by (host, pid)
// to the rank that wrote it, marks the same times (to the µs) as the
// stormlog collective events, and attributes as the design says once the
// stormlog markers are replaced by the Inspector ones.
func TestInspectorLogsParseAndJoin(t *testing.T) {
	for _, verbose := range []bool{true, false} {
		t.Run(map[bool]string{true: "verbose", false: "default"}[verbose], func(t *testing.T) {
			s := newScenario(t, func(c *Config) { c.LateRanks, c.MissingRanks = 1, 1 })
			dir := t.TempDir()
			logs, err := s.NewInspectorLogs(dir, verbose, testEpoch)
			require.NoError(t, err)
			var buf bytes.Buffer
			_, err = s.Run(t.Context(), Options{Epoch: testEpoch, Stormlog: &buf, Inspector: logs})
			require.NoError(t, err)
			require.NoError(t, logs.Close())
			events, err := telemetry.ReadJSONL(&buf)
			require.NoError(t, err)

			joiner := inspector.NewJoiner(time.Minute, 0, func() time.Time { return testEpoch })
			var kept []telemetry.Event
			var stormlogMarks []rankTime
			for i := range events {
				e := &events[i]
				joiner.LearnEvent(e)
				if e.EventType == "collective" {
					stormlogMarks = append(stormlogMarks, rankTime{e.Rank, e.TimestampNs / 1000 * 1000})
					continue
				}
				kept = append(kept, *e)
			}

			files, err := filepath.Glob(filepath.Join(dir, "*.log"))
			require.NoError(t, err)
			assert.Len(t, files, 15, "one file per reporting process (rank 15 never reports)")
			var inspectorMarks []rankTime
			var rd inspector.Reader
			for _, name := range files {
				f, err := os.Open(name)
				require.NoError(t, err)
				require.NoError(t, rd.Read(f, func(op *inspector.Op) {
					owner, err := joiner.Join(op.Host, op.PID)
					if !assert.NoError(t, err, "%s: %s pid %d", name, op.Host, op.PID) {
						return
					}
					assert.Equal(t, owner.Rank, op.CommRank, "the world communicator's rank is the global rank")
					assert.Equal(t, filepath.Base(name), s.InspectorFileName(int(owner.Rank)))
					assert.Equal(t, verbose, !op.Approximate())
					assert.Equal(t, int64(16), op.NRanks)
					inspectorMarks = append(inspectorMarks, rankTime{owner.Rank, op.StartNs}, rankTime{owner.Rank, op.EndNs})
					kept = inspector.ReferenceMarkers(kept, &inspector.Joined{Op: op, Owner: owner})
				}))
				f.Close()
			}
			assert.Nil(t, rd.FirstError)
			assert.Zero(t, rd.Stats.Malformed)
			assert.Equal(t, len(files)*len(stepCollectives)*s.Steps-2*len(stepCollectives), rd.Stats.Ops,
				"every collective of every step of every reporting rank but the late rank's first two steps")
			assert.Equal(t, rd.Stats.Ops, logs.Records)
			cmp := func(a, b rankTime) int {
				if a.rank != b.rank {
					return int(a.rank - b.rank)
				}
				return int(a.ns - b.ns)
			}
			slices.SortFunc(stormlogMarks, cmp)
			slices.SortFunc(inspectorMarks, cmp)
			assert.Equal(t, stormlogMarks, inspectorMarks, "Inspector ops start and end where the stormlog collective events are")

			cfg, err := attribution.ResolveConfig("medium", nil)
			require.NoError(t, err)
			var got []Result
			for _, r := range window.AttributeReference(kept, cfg, phase.NewIndex(kept, nil)) {
				got = append(got, Result{JobID: s.Config.JobID, Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: r.EndNs(), Classification: r.Classification})
			}
			truth := s.Truth(testEpoch)
			if v := Compare(truth, got); !v.OK {
				var b strings.Builder
				_ = v.WriteVerdict(&b, truth)
				t.Errorf("with Inspector markers:\n%s", b.String())
			}
		})
	}
}

func TestInspectorIdentityMatchesTheOtherOutputs(t *testing.T) {
	s := newScenario(t, nil)
	md := s.Metrics(0, time.Second, testEpoch, DeviceFromOTLP)
	require.Positive(t, md.ResourceMetrics().Len())
	for _, rm := range md.ResourceMetrics().All() {
		a := rm.Resource().Attributes()
		rank, _ := a.Get("training.rank")
		host, _ := a.Get("host.name")
		pid, ok := a.Get("process.pid")
		require.True(t, ok, "OTLP resources carry process.pid")
		r := int(rank.Int())
		assert.Equal(t, s.PID(r), pid.Int())
		assert.Equal(t, host.Str()+"-pid"+pid.AsString()+".log", s.InspectorFileName(r))
	}
	assert.Regexp(t, `^0x[0-9a-f]{1,14}$`, s.InspectorCommID(), "the plugin prints at most 14 hex digits")
	assert.True(t, strings.HasPrefix(strings.TrimLeft(s.CommID, "0"), strings.TrimPrefix(s.InspectorCommID(), "0x")),
		"%s is the leading digits of the hash %s", s.InspectorCommID(), s.CommID)
}

func TestInspectorSequenceNumbersPerFunction(t *testing.T) {
	s := newScenario(t, func(c *Config) { c.LateRanks = 0 })
	ops := s.InspectorOps(0, 0, s.Config.Duration, testEpoch)
	next := map[string]int64{}
	for _, op := range ops {
		assert.Equal(t, next[op.Name], op.Seq, "%s: coll_sn counts the calls of each function", op.Name)
		next[op.Name]++
	}
	assert.Equal(t, int64(2*s.Steps), next["AllReduce"], "all_reduce and the barrier are both AllReduce")
	assert.Equal(t, int64(s.Steps), next["Broadcast"])
}
