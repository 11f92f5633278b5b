package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/inspector"
)

// With --job, NCCL Inspector records join the selected job's ranks by
// (host, pid) and no other job's: two jobs in one file, the same pids on
// two hosts and a spike on every rank of both at the same instant; the
// Inspector ran on node0 only, where job-src runs.
func TestJobFlagJoinsInspectorMarkersToThatJobOnly(t *testing.T) {
	const spikeNs = 20_000_000_000
	job := sourceRun{ranks: 4, spikes: []sourceSpike{{atNs: spikeNs, ranks: []int{0, 1, 2, 3}}}}
	events := job.samples()
	for _, e := range job.samples() {
		e.JobID, e.Host = "job-other", "node1"
		events = append(events, e)
	}
	path := tempPath(t, "two-jobs.jsonl")
	writeEvents(t, path, sortedByTime(events))
	dir := filepath.Join(t.TempDir(), "insp")
	var ops []inspector.Op
	for r := 0; r < 4; r++ {
		ops = append(ops, inspectorOp(r, 4, spikeNs, "0xfeed", "AllReduce", 0))
	}
	writeInspectorLogs(t, dir, ops)

	// Evidence mode reports job-other's spikes, which no marker explains, as
	// nothing: its results at the spike would be the Inspector's had the
	// records joined it.
	for _, tc := range []struct {
		job             string
		spiked, matched int
	}{{"job-src", 4, 4}, {"job-other", 0, 0}} {
		results, _ := attributeRun(t, "--mode", "evidence", "--job", tc.job, "--nccl-inspector", dir, path)
		spiked, matched := 0, 0
		for _, r := range results {
			if r.StartNs-sourceT0Ns < spikeNs-1_000_000_000 || r.StartNs-sourceT0Ns > spikeNs+1_000_000_000 {
				continue
			}
			spiked++
			if r.Collective != nil {
				matched++
				if r.Collective.CommID != "0xfeed" || r.Collective.CommRanks != 4 {
					t.Errorf("%s rank %d: collective %+v, want 0xfeed of 4 ranks", tc.job, r.Rank, *r.Collective)
				}
			}
		}
		if spiked != tc.spiked || matched != tc.matched {
			t.Errorf("--job %s: %d results at the spike, %d naming the Inspector's collective; want %d and %d: %+v",
				tc.job, spiked, matched, tc.spiked, tc.matched, results)
		}
	}
}

// Evidence mode takes the world size most ranks declare, and says on
// stderr when they disagree; the results are those of the agreeing job.
func TestEvidenceWorldSizeDisagreementIsShown(t *testing.T) {
	job := sourceRun{ranks: 4, spikes: []sourceSpike{{atNs: 20_000_000_000, ranks: []int{0, 1, 2, 3}}}}
	events := job.samples()
	path := tempPath(t, "agreed.jsonl")
	writeEvents(t, path, events)
	want, stderr := attributeRun(t, "--mode", "evidence", path)
	if strings.Contains(stderr, "world sizes") {
		t.Fatalf("agreeing ranks: %s", stderr)
	}
	bent := job.samples()
	bent[len(bent)-3].WorldSize = 64 // one record of rank 1
	if bent[len(bent)-3].Rank != 1 {
		t.Fatalf("record of rank %d", bent[len(bent)-3].Rank)
	}
	writeEvents(t, path, bent)
	got, stderr := attributeRun(t, "--mode", "evidence", path)
	if !strings.Contains(stderr, "the ranks declare different world sizes (4 by 3 ranks, 64 by 1 rank); evidence mode uses 4") {
		t.Errorf("stderr %q", stderr)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("results differ:\n%+v\n%+v", want, got)
	}
}
