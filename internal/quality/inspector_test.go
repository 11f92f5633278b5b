package quality

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// p2pFamilies are the families whose spikes lie on point-to-point ops.
var p2pFamilies = []string{"pipeline"}

type inspectorVariant struct {
	name string
	mode Mode
	// goals are what the markers of this variant must still reach.
	goals []Goal
}

var (
	// verboseGoals: verbose records carry every identity field; a
	// point-to-point op's comes from counting, per file, the transfers of
	// its direction (p2p_sn does not line up across ranks), so a pipeline
	// send/recv pair's spike is judged on both sides without NCCL's
	// accounting too.
	verboseGoals = []Goal{
		atLeast(Recall, 0.95, "Inspector markers: recall as with stormlog markers", Rows{}),
		atLeast(Recall, 0.95, "Inspector markers: P2P without accounting, identified by pair counts",
			Rows{Families: p2pFamilies, NCCLStats: withoutStats}),
		atLeast(ConfidentPrecision, 0.95, "Inspector markers: confident means right", Rows{}),
		atMost(DecoysConfident, 0.05, "Inspector markers: decoys confident", Rows{}),
		atLeast(Precision, 0.90, "Inspector markers: claim precision where decoys are not co-timed",
			Rows{NCCLStats: withoutStats, Except: []string{"ddp_decoy", "no_collective"}},
			Rows{NCCLStats: withStats, Except: []string{"no_collective"}}),
	}
	// approximateGoals add that approximate timing alone never makes a
	// result confident (the default layout has no op start).
	approximateGoals = []Goal{
		atLeast(Recall, 0.95, "Inspector default layout: recall as with stormlog markers", Rows{}),
		atLeast(ConfidentPrecision, 0.95, "Inspector default layout: confident means right", Rows{}),
		atMost(DecoysConfident, 0.05, "Inspector default layout: decoys confident", Rows{}),
		atLeast(Precision, 0.90, "Inspector default layout: claim precision where decoys are not co-timed",
			Rows{NCCLStats: withoutStats, Except: []string{"ddp_decoy", "no_collective"}},
			Rows{NCCLStats: withStats, Except: []string{"no_collective"}}),
		atMost(ConfidentClaims, 0, "approximate timing is never enough for confident", Rows{NCCLStats: withoutStats}),
	}
)

func inspectorVariants() []inspectorVariant {
	second := map[string]any{"approximate_tolerance_ns": int64(time.Second)}
	return []inspectorVariant{
		{"stormlog markers", EvidenceMode, nil},
		{"Inspector verbose", ViaInspector(EvidenceMode, InspectorLayout{Verbose: true}), verboseGoals},
		{"Inspector default, dump interval 0", ViaInspector(EvidenceMode, InspectorLayout{}), approximateGoals},
		{"Inspector default, dump interval 100 ms", ViaInspector(EvidenceMode, InspectorLayout{DumpInterval: 100 * time.Millisecond, Seed: 1}), approximateGoals},
		{"Inspector default, dump interval 1 s", ViaInspector(EvidenceMode, InspectorLayout{DumpInterval: time.Second, Seed: 1}), nil},
		{"Inspector default, dump interval 1 s, approximate_tolerance_ns 1 s", ViaInspector(EvidenceModeWith(second), InspectorLayout{DumpInterval: time.Second, Seed: 1}), approximateGoals},
	}
}

// TestInspectorLayoutQuality measures what evidence mode keeps when its
// markers come from NCCL Inspector logs instead of stormlog markers: the
// verbose layout, and the default layout (no op start; the record's write
// time, late by up to the dump interval, and the execution time) at three
// dump intervals. Seed 1 by default; COLLECTIVEATTR_QUALITY_INSPECTOR=full
// runs seeds 1-3 (the README's table).
func TestInspectorLayoutQuality(t *testing.T) {
	skipUnderRace(t)
	if testing.Short() {
		t.Skip("six marker sources × every family: skipped with -short")
	}
	seeds := []int64{1}
	if os.Getenv("COLLECTIVEATTR_QUALITY_INSPECTOR") == "full" {
		seeds = []int64{1, 2, 3}
	}
	var b strings.Builder
	b.WriteString("| markers | family | NCCL stats | recall | claim precision | confident precision | decoys confident |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n")
	var failures []string
	for _, v := range inspectorVariants() {
		tab, err := Evaluate(v.mode, Plan{Shape: "default", Families: familyNames(), Seeds: seeds,
			Presets: medium, NCCLStats: []bool{false, true}})
		require.NoError(t, err, v.name)
		for _, k := range tab.Keys() {
			s := tab[k]
			fmt.Fprintf(&b, "| %s | %s | %t | %s | %s | %s | %d/%d |\n", v.name, k.Family, k.NCCLStats,
				fmtRatio(s.Recall()), fmtRatio(s.Precision()), fmtRatio(s.ConfidentPrecision()), s.DecoysConfident, s.Decoys)
		}
		for _, f := range Check(tab, v.goals) {
			failures = append(failures, v.name+": "+f)
		}
	}
	reportFailures(t, Table{}, failures)
	t.Logf("\n%s", b.String())
}

// TestInspectorMisalignedP2P measures what a wrong P2P pairing costs: each
// process's Inspector file loses its first Recv records (a collector that
// resumed the files at saved offsets, or a ring that overwrote them), so the
// per-file counts pair a direction's sends with later transfers' recvs. A
// spike on the pair is then judged at the receiver's marker of another
// transfer: while that marker still overlaps the receiver's change (here the
// transfers last longer than the micro-batches are apart) synchrony holds;
// past it the pair's synchrony is insufficient and the result suspect. The
// wrong pairing never makes a result confident; NCCL's accounting confirms
// on its own.
func TestInspectorMisalignedP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("the pipeline family through Inspector logs: skipped with -short")
	}
	var b strings.Builder
	b.WriteString("| recvs lost per file | NCCL stats | recall | claim precision | confident precision | results | confident claims |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: |\n")
	var failures []string
	for _, lost := range []int{1, 10, 40} {
		mode := ViaInspector(EvidenceMode, InspectorLayout{Verbose: true, LostRecvs: lost})
		tab, err := Evaluate(mode, Plan{Shape: "default", Families: p2pFamilies, Seeds: []int64{1},
			Presets: medium, NCCLStats: []bool{false, true}})
		require.NoError(t, err)
		for _, k := range tab.Keys() {
			s := tab[k]
			fmt.Fprintf(&b, "| %d | %t | %s | %s | %s | %d | %d |\n", lost, k.NCCLStats,
				fmtRatio(s.Recall()), fmtRatio(s.Precision()), fmtRatio(s.ConfidentPrecision()), s.Results, s.ConfidentClaims)
		}
		for _, f := range Check(tab, misalignedGoals) {
			failures = append(failures, fmt.Sprintf("%d recvs lost: %s", lost, f))
		}
	}
	reportFailures(t, Table{}, failures)
	t.Logf("\n%s", b.String())
}

var misalignedGoals = []Goal{
	atLeast(ConfidentPrecision, 0.95, "misaligned P2P: confident means right", Rows{}),
	atMost(ConfidentClaims, 0, "misaligned P2P without accounting: never confident", Rows{NCCLStats: withoutStats}),
}
