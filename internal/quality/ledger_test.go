package quality

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

const mib = int64(1) << 20

// ledgerRows runs evidence mode at preset and the ledger over events, as
// `collectiveattr ledger --preset P` does, and returns every row.
func ledgerRows(t *testing.T, events []telemetry.Event, preset string) []ledger.Row {
	t.Helper()
	cfg, err := evidence.ResolveConfig(preset, nil, nil)
	require.NoError(t, err)
	s := window.NewStream(window.EvidenceMode, false)
	s.KeepLedger()
	s.AddEvents(events)
	var sc window.Scratch
	var es window.EvidenceScratch
	snap := s.Job().EvidenceSnapshot(&sc, &es)
	in := ledger.Input{Ranks: s.LedgerRanks(), Results: evidence.Attribute(&snap.Input, cfg, nil), PaddingNs: cfg.IntervalPaddingNs}
	l := ledger.New(&in)
	var rows []ledger.Row
	var r ledger.Row
	for l.Next(&r) {
		r.ByComm = nil
		rows = append(rows, r)
	}
	return rows
}

// truthEpisodes are, per rank, the bytes of the true collective episodes
// active at a time of that rank's clock (a persistent step from its onset
// on), as the generator put them in hidden memory and NCCL's accounting.
type truthEpisodes map[int64][]jobsim.QualityEpisode

func episodesOf(tr *jobsim.QualityTruth) truthEpisodes {
	out := truthEpisodes{}
	for _, e := range tr.Collective {
		out[int64(e.Rank)] = append(out[int64(e.Rank)], e)
	}
	return out
}

func (te truthEpisodes) at(rank, t int64) int64 {
	var b int64
	for _, e := range te[rank] {
		if e.StartNs <= t && (e.Persistent || t < e.EndNs) {
			b += e.Bytes
		}
	}
	return b
}

// firstLevel is, per rank, the bytes of the true persistent episodes
// already in place at the rank's first row: without NCCL's accounting they
// are in the rank's first level (no sample shows them rise), and the
// issue's goal judges the attributed delta over that level.
func (te truthEpisodes) firstLevel(rows []ledger.Row) map[int64]int64 {
	out := map[int64]int64{}
	for _, r := range rows {
		if _, seen := out[r.Rank]; seen {
			continue
		}
		var b int64
		for _, e := range te[r.Rank] {
			if e.Persistent && e.StartNs <= r.TimestampNs {
				b += e.Bytes
			}
		}
		out[r.Rank] = b
	}
	return out
}

// commBaseline is NCCL's persistent memory of a rank at time t (its clock)
// in the truth: its communicators' baselines until freed, a memory manager
// that split communicators share once.
func commBaseline(tr *jobsim.QualityTruth, rank, t int64) int64 {
	info := tr.Ranks[strconv.FormatInt(rank, 10)]
	var b int64
	for c, v := range info.CommBaselineBytes {
		if tr.Comms[c].Manager != "" {
			continue
		}
		if freed, ok := info.CommFreedNs[c]; !ok || t < freed {
			b += v
		}
	}
	return b
}

func within(got, want, floor int64, share float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= max(floor, int64(share*float64(max(want, -want))))
}

func checkSums(t *testing.T, name string, rows []ledger.Row) {
	t.Helper()
	for _, r := range rows {
		if r.HiddenBytes != r.NCCLBytes+r.ContextBytes+r.UnexplainedBytes {
			t.Fatalf("%s: rank %d t %d: hidden %d != %d + %d + %d", name, r.Rank, r.TimestampNs, r.HiddenBytes, r.NCCLBytes, r.ContextBytes, r.UnexplainedBytes)
		}
	}
}

// ledgerPlans run every family (the first ones, the physics and the
// cadence ones) on every shape: seeds 1-3 on the default shape, seed 1 on
// the others.
var ledgerPlans = []struct {
	shape string
	seeds []int64
}{{"default", []int64{1, 2, 3}}, {"small", []int64{1}}, {"wide", []int64{1}}}

// ledgerGoal counts a family's samples on which the ledger meets the
// issue's goal: with NCCL's accounting (cuMem on), nccl_bytes within
// max(64 MiB, 2 %) of the truth (communicator baselines plus the true
// episodes active); without (or with cuMem off, whose totals do not follow
// NCCL's buffers), nccl_source never accounting and the NCCL bytes, the
// delta over the rank's first level, within max(128 MiB, 10 %) of the true
// episodes' since that level (firstLevel). The sums hold on every sample.
// want is the share of samples the goal needs: 0.95 with accounting, 0.90
// without.
func ledgerGoal(t *testing.T, name, family string, shape jobsim.QualityShape, seed int64, stats bool, preset string) (good, total int, want float64) {
	t.Helper()
	c, err := jobsim.GenerateQualityCase(family, seed, shape, stats)
	require.NoError(t, err)
	return ledgerCaseGoal(t, name, c, stats, preset)
}

// ledgerCaseGoal is ledgerGoal on a generated case.
func ledgerCaseGoal(t *testing.T, name string, c *jobsim.QualityCase, stats bool, preset string) (good, total int, want float64) {
	t.Helper()
	rows := ledgerRows(t, c.Events, preset)
	checkSums(t, name, rows)
	te := episodesOf(&c.Truth)
	_, cumemOff := c.Truth.Params["cumem_flagged"]
	accounting := stats && !cumemOff
	want = 0.90
	if accounting {
		want = 0.95
	}
	first := te.firstLevel(rows)
	for _, r := range rows {
		truth := te.at(r.Rank, r.TimestampNs)
		var ok bool
		if accounting {
			ok = within(r.NCCLBytes, commBaseline(&c.Truth, r.Rank, r.TimestampNs)+truth, 64*mib, 0.02)
		} else {
			require.NotEqual(t, ledger.SourceAccounting, r.NCCLSource, name)
			ok = within(r.NCCLBytes, truth-first[r.Rank], 128*mib, 0.10)
		}
		if ok {
			good++
		}
	}
	return good, len(rows), want
}

// With NCCL's accounting, nccl_bytes follows the truth within max(64 MiB,
// 2 %) in at least 95 % of each family's samples; the sums hold on every
// sample. Without, nccl_source is never accounting and the attributed NCCL
// bytes follow the true episodes' within max(128 MiB, 10 %) in at least
// 90 % (ledgerGoal).
func TestLedgerQuality(t *testing.T) {
	skipUnderRace(t)
	for _, plan := range ledgerPlans {
		shape, ok := jobsim.QualityShapeByName(plan.shape)
		require.True(t, ok)
		for _, f := range jobsim.QualityFamilies {
			for _, stats := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/stats=%v", plan.shape, f.Name, stats)
				good, total, want := 0, 0, 0.0
				for _, seed := range plan.seeds {
					g, n, w := ledgerGoal(t, name, f.Name, shape, seed, stats, "medium")
					good, total, want = good+g, total+n, w
				}
				share := float64(good) / float64(total)
				t.Logf("%-40s %6d samples, %.4f within", name, total, share)
				if share < want {
					t.Errorf("%s: nccl_bytes within tolerance in %.4f of %d samples, want >= %.2f", name, share, total, want)
				}
			}
		}
	}
}

// heldOutSeeds are seeds no goal was tuned on, one per variant of the
// families that have three (variant = seed mod 3): TestLedgerQualityHeldOut
// judges the ledger on them, every family, shape and preset.
var heldOutSeeds = []int64{10, 11, 12}

// heldOutShape is a shape no goal was tuned on: 12 ranks on 3 hosts x 4,
// sampled at 4 Hz, short steps, 256 MiB spikes and 384 MiB lazy steps (near
// the goals' floors), communicator baselines up to 512 MiB, 48 GiB devices.
func heldOutShape() jobsim.QualityShape {
	s := jobsim.DefaultQualityShape()
	s.Ranks, s.RanksPerHost, s.DeviceTotal = 12, 4, 48<<30
	s.Duration = [2]time.Duration{50 * time.Second, 90 * time.Second}
	s.Step = [2]time.Duration{300 * time.Millisecond, 700 * time.Millisecond}
	s.SampleHz = 4
	s.BaseHidden = [2]int64{600 * mib, 1400 * mib}
	// The reservation grows during the run: it stays well inside the device.
	s.Reserved = [2]int64{8 << 30, 28 << 30}
	s.CommBaseline = [2]int64{32 * mib, 512 * mib}
	s.SpikeBytes, s.StepUpBytes = 256*mib, 384*mib
	s.DecoyBytes = [2]int64{128 * mib, 512 * mib}
	return s
}

// TestLedgerQualityHeldOut: the goals of TestLedgerQuality on held-out
// jobs (heldOutSeeds on every named shape and on heldOutShape), at every
// preset (the ledger's attributed part follows the preset's results).
func TestLedgerQualityHeldOut(t *testing.T) {
	skipUnderRace(t)
	shapes := map[string]jobsim.QualityShape{"heldout": heldOutShape()}
	for _, name := range jobsim.QualityShapeNames() {
		s, ok := jobsim.QualityShapeByName(name)
		require.True(t, ok)
		shapes[name] = s
	}
	presets := []string{"low", "medium", "high"}
	for _, shapeName := range append(jobsim.QualityShapeNames(), "heldout") {
		t.Run(shapeName, func(t *testing.T) {
			shape := shapes[shapeName]
			for _, f := range jobsim.QualityFamilies {
				for _, stats := range []bool{true, false} {
					good, total, want := make([]int, len(presets)), make([]int, len(presets)), 0.0
					for _, seed := range heldOutSeeds {
						c, err := jobsim.GenerateQualityCase(f.Name, seed, shape, stats)
						require.NoError(t, err)
						for pi, preset := range presets {
							g, n, w := ledgerCaseGoal(t, fmt.Sprintf("%s/%s/stats=%v/%s/seed=%d", shapeName, f.Name, stats, preset, seed), c, stats, preset)
							good[pi], total[pi], want = good[pi]+g, total[pi]+n, w
						}
					}
					for pi, preset := range presets {
						name := fmt.Sprintf("%s/%s/stats=%v/%s", shapeName, f.Name, stats, preset)
						share := float64(good[pi]) / float64(total[pi])
						t.Logf("%-48s %6d samples, %.4f within", name, total[pi], share)
						if share < want {
							t.Errorf("%s: nccl_bytes within tolerance in %.4f of %d samples, want >= %.2f", name, share, total[pi], want)
						}
					}
				}
			}
		})
	}
}

// A leak (hidden memory outside the allocator creeping for minutes, no
// collective's doing) shows as unexplained growth, never as NCCL: with
// accounting NCCL's part stays on the truth, without it no attributed step
// takes the creep for a collective's buffers.
func TestLedgerLeakIsUnexplained(t *testing.T) {
	shape, _ := jobsim.QualityShapeByName("small")
	shape.Duration = [2]time.Duration{4 * time.Minute, 4 * time.Minute}
	const leakPerSec = 8 * mib // 1.7 GiB after 3.7 minutes
	for _, stats := range []bool{true, false} {
		t.Run(fmt.Sprintf("stats=%v", stats), func(t *testing.T) {
			c, err := jobsim.GenerateQualityCase("easy", 1, shape, stats)
			require.NoError(t, err)
			start := c.Events[0].TimestampNs + 20*int64(time.Second)
			leak := func(rank, t int64) int64 {
				if rank%2 == 1 || t < start {
					return 0
				}
				return (t - start) / int64(time.Second) * leakPerSec
			}
			for i := range c.Events {
				e := &c.Events[i]
				if e.EventType == "sample" {
					e.DeviceUsedBytes.Value += leak(e.Rank, e.TimestampNs)
					e.DeviceFreeBytes.Value -= leak(e.Rank, e.TimestampNs)
				}
			}
			rows := ledgerRows(t, c.Events, "medium")
			checkSums(t, "leak", rows)
			te := episodesOf(&c.Truth)
			end := c.Events[len(c.Events)-1].TimestampNs
			good := 0
			late := map[int64][]ledger.Row{}
			for _, r := range rows {
				truth := te.at(r.Rank, r.TimestampNs)
				if stats {
					truth += commBaseline(&c.Truth, r.Rank, r.TimestampNs)
				}
				if within(r.NCCLBytes, truth, 64*mib, 0.02) {
					good++
				}
				if r.TimestampNs > end-10*int64(time.Second) {
					late[r.Rank] = append(late[r.Rank], r)
				}
			}
			share := float64(good) / float64(len(rows))
			t.Logf("nccl_bytes on the truth in %.4f of %d samples", share, len(rows))
			require.GreaterOrEqual(t, share, 0.95)
			for rank, rs := range late {
				// The last 10 s: the median unexplained is the leak (within the
				// noise), the median NCCL part holds none of it.
				unexplained, leaked := make([]int64, len(rs)), make([]int64, len(rs))
				for i, r := range rs {
					unexplained[i] = r.UnexplainedBytes
					leaked[i] = leak(rank, r.TimestampNs)
				}
				slices.Sort(unexplained)
				slices.Sort(leaked)
				mu, ml := unexplained[len(rs)/2], leaked[len(rs)/2]
				if !within(mu, ml, 64*mib, 0) {
					t.Errorf("rank %d: median unexplained %d MiB over the last 10 s, leak %d MiB", rank, mu/mib, ml/mib)
				}
			}
		})
	}
}
