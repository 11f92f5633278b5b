package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// accountingOnlyAt returns the results of rank at true time at that say
// NCCL's accounting alone made them.
func accountingOnlyAt(j *simJob, results []attribution.Result, rank int, at int64) []attribution.Result {
	var out []attribution.Result
	for _, r := range j.resultsAt(results, rank, at) {
		if hasCode(r, ReasonAccountingOnly) {
			out = append(out, r)
		}
	}
	return out
}

// wantAccountingOnly checks ranks [0, n) each have one accounting-only
// result at the op at time at, accounting 1 GiB.
func wantAccountingOnly(t *testing.T, j *simJob, results []attribution.Result, n int, at int64) {
	t.Helper()
	for r := 0; r < n; r++ {
		got := accountingOnlyAt(j, results, r, at)
		if len(got) != 1 {
			t.Errorf("rank %d: %d accounting-only results at the op, want 1: %+v", r, len(got), j.resultsAt(results, r, at))
			continue
		}
		if got[0].NCCLAccountedBytes == nil || *got[0].NCCLAccountedBytes != gib {
			t.Errorf("rank %d: accounted %v, want 1 GiB", r, got[0].NCCLAccountedBytes)
		}
	}
}

// At 2 Hz a spike the length of a collective falls between two samples; NCCL's
// reports every 100 ms see its growth inside the op and the level back after it:
// the change is NCCL's, although no sample saw it (evidence-mode §2.4).
func TestAccountingOnlyUnsampledChange(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	j.collectiveSpike(rankList(0, 8), 20, gib) // not NCCL's, and unseen
	// NCCL's, and seen by the samples: 605 ms to 1.05 s.
	seen := overlay{30*sec + 605*ms, 31*sec + 50*ms, gib}
	j.change(rankList(0, 8), seen.start, seen.end, gib)
	j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused, seen})
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 8; r++ {
		got := accountingOnlyAt(j, results, r, 10*sec+700*ms)
		if len(got) != 1 {
			t.Fatalf("rank %d: %d accounting-only results at the unsampled NCCL spike, want 1: %+v", r, len(got), j.resultsAt(results, r, 10*sec+700*ms))
		}
		c := got[0]
		if c.Classification != attribution.CollectiveConfirmed || c.Kind != attribution.KindTransient {
			t.Errorf("rank %d: %s %s, want confirmed transient", r, c.Classification, c.Kind)
		}
		if c.NCCLAccountedBytes == nil || *c.NCCLAccountedBytes != gib || c.ExcessBytes != gib || c.Evidence.PeakGapBytes != 0 {
			t.Errorf("rank %d: accounted %v excess %d peak %d, want 1 GiB accounted and excess, no peak sample",
				r, c.NCCLAccountedBytes, c.ExcessBytes, c.Evidence.PeakGapBytes)
		}
		// The reports read NCCL's total 37 ms before their time stamp: raised
		// at 737, 837 and 937 ms, bracketed by 637 ms and 1037 ms; the op
		// (launched 3 ms later on each of ranks 1–3 of four) ended at 900 ms,
		// and the match tolerance is 50 ms.
		opEnd := t0 + 10*sec + 950*ms + int64(r%4)*3*ms
		if c.IntervalStartNs != t0+10*sec+637*ms || c.IntervalEndNs != uint64(opEnd) {
			t.Errorf("rank %d: interval [%d, %d] ms, want from the report before the raised ones to the op's end [10637, %d]", r,
				(c.IntervalStartNs-t0)/ms, (int64(c.IntervalEndNs)-t0)/ms, (opEnd-t0)/ms)
		}
		if c.Collective == nil || c.Collective.CommID != "world" || c.Collective.Seq != 10 {
			t.Errorf("rank %d: collective %+v, want world #10", r, c.Collective)
		}
		if n := len(j.resultsAt(results, r, 20*sec+700*ms)); n != 0 {
			t.Errorf("rank %d: %d results at the unseen spike NCCL did not report, want none", r, n)
		}
		if got := j.resultsAt(results, r, 30*sec+800*ms); len(got) != 1 || hasCode(got[0], ReasonAccountingOnly) ||
			got[0].Classification != attribution.CollectiveConfirmed {
			t.Errorf("rank %d: at the sampled spike %+v, want one result of the samples, confirmed", r, got)
		}
	}
}

// The accounting alone makes a result only where it follows NCCL's buffers,
// counts a shared memory manager once, and shows a transient above the level
// on both sides inside an op of the communicator.
func TestAccountingOnlyGuards(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(j *simJob)
		want  int   // accounting-only results per rank at 10.7 s
		bytes int64 // their accounted bytes
	}{
		{"a shared manager counts once", func(j *simJob) {
			caused := j.collectiveSpike(rankList(0, 8), 10, gib)
			j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
			j.accounting(rankList(0, 8), "tp", 300<<20, []overlay{caused})
		}, 1, gib},
		{"untracked (cuMem off)", func(j *simJob) {
			caused := j.collectiveSpike(rankList(0, 8), 10, gib)
			j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
			j.accountingAt(rankList(0, 8), "tp", UntrackedBytes, nil, []int64{39 * sec}) // says cuMem is off
		}, 0, 0},
		{"a step at the op that stays", func(j *simJob) {
			// NCCL's total rises inside the op and holds: no transient.
			j.accounting(rankList(0, 8), "world", 300<<20, []overlay{{10*sec + 605*ms, -1, gib}})
		}, 0, 0},
		{"a rise outside any op of the communicator", func(j *simJob) {
			j.accounting(rankList(0, 8), "world", 300<<20, []overlay{{10*sec + 100*ms, 10*sec + 400*ms, gib}})
		}, 0, 0},
		{"growth below the rank's spike threshold", func(j *simJob) {
			caused := overlay{10*sec + 605*ms, 10*sec + 920*ms, 1 << 20}
			j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
		}, 0, 0},
	} {
		j := trainingJob(8, 500*ms)
		j.worldAllReduces()
		tt.setup(j)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := 0; r < 8; r++ {
			at := 10*sec + 700*ms
			if tt.name == "a rise outside any op of the communicator" {
				at = 10*sec + 250*ms
			}
			got := accountingOnlyAt(j, results, r, at)
			if len(got) != tt.want {
				t.Errorf("%s, rank %d: %d accounting-only results, want %d: %+v", tt.name, r, len(got), tt.want, got)
				continue
			}
			for _, c := range got {
				if c.NCCLAccountedBytes == nil || *c.NCCLAccountedBytes != tt.bytes {
					t.Errorf("%s, rank %d: accounted %v, want %d", tt.name, r, c.NCCLAccountedBytes, tt.bytes)
				}
			}
		}
	}
}

// A result only NCCL's reports saw begins after the rank's transient results
// before it end and ends before those after it begin, holding its raised
// reports; where a result of the samples holds them, it is dropped. The
// processor reads a transient that starts inside one it emitted as that one
// grown.
func TestPlaceAccountingOnly(t *testing.T) {
	transient := func(rank, start, end int64) attribution.Result {
		return attribution.Result{Rank: rank, IntervalStartNs: start, IntervalEndNs: uint64(end), Kind: attribution.KindTransient}
	}
	cand := func(rank, start, end, raisedFrom, raisedTo int64) accountingCandidate {
		r := transient(rank, start, end)
		r.ReasonCodes = []string{ReasonAccountingOnly}
		return accountingCandidate{result: r, raisedFrom: raisedFrom, raisedTo: raisedTo}
	}
	step := transient(1, 240, 2000)
	step.Kind = attribution.KindPersistent
	results := []attribution.Result{transient(0, 100, 200), transient(1, 100, 200), step, transient(1, 400, 500)}
	got := placeAccountingOnly(results, []accountingCandidate{
		cand(0, 150, 300, 250, 260), // after rank 0's spike: begins at 201
		cand(1, 150, 450, 250, 260), // between rank 1's spikes, a step aside: [201, 399]
		cand(1, 420, 480, 430, 440), // inside rank 1's second spike: dropped
		cand(2, 100, 200, 150, 160), // alone: as it is
		cand(2, 120, 220, 170, 180), // its raised reports inside the one before: dropped
	})
	type span struct{ rank, start, end int64 }
	var only []span
	for _, r := range got {
		if hasCode(r, ReasonAccountingOnly) {
			only = append(only, span{r.Rank, r.IntervalStartNs, r.EndNs()})
		}
	}
	want := []span{{0, 201, 300}, {1, 201, 399}, {2, 100, 200}}
	if len(only) != len(want) {
		t.Fatalf("placed %v, want %v", only, want)
	}
	for i := range want {
		if only[i] != want[i] {
			t.Errorf("placed %v, want %v", only, want)
			break
		}
	}
	if len(got) != len(results)+len(want) {
		t.Errorf("%d results, want the %d of the samples and %d placed", len(got), 4, len(want))
	}
}

// A change the samples saw before the op, ending before its launch, may
// have ended anywhere up to the next sample, after the op: its possible end
// spans the op, but NCCL's buffers of the op live within the op, and no
// sample of the rank saw them there. NCCL's reports inside the op still make
// their result (evidence-mode §2.4).
func TestAccountingOnlyBesideAnEarlierChange(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	j.change([]int{7}, 10*sec+300*ms, 10*sec+580*ms, gib/2) // seen at 10.5 s only
	j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
	results := Attribute(j.input(), mediumConfig(t), nil)
	wantAccountingOnly(t, j, results, 8, 10*sec+700*ms)
}

// NCCL's reports polled about once a step fall inside the ops of the steps
// around: a report taken while another op of the communicator ran may hold
// that op's buffers and is no level. With changes of NCCL's at two
// consecutive all_reduces that no sample saw, the report inside the second
// op does not hide the first's growth (nor the first's the second's); a rise
// that stays is still no transient however the reports fall (evidence-mode
// §2.4).
func TestAccountingOnlyLevelBesideOtherOps(t *testing.T) {
	reports := make([]int64, 0, 40)
	for k := int64(0); k < 40; k++ {
		reports = append(reports, k*sec+700*ms) // inside every op (.6–.9 s)
	}
	for _, tt := range []struct {
		name    string
		changes []overlay
		want    int // accounting-only results per rank at each of the two ops
	}{
		{"transients at two consecutive ops", []overlay{{10*sec + 605*ms, 10*sec + 920*ms, gib}, {11*sec + 605*ms, 11*sec + 920*ms, gib}}, 1},
		// The reports inside ops 11–13 all hold their buffers: the level
		// after op 10 is the first report past that run (14.7 s), more than
		// the 2 s lookback after it.
		{"transients at four consecutive ops", []overlay{{10*sec + 605*ms, 10*sec + 920*ms, gib}, {11*sec + 605*ms, 11*sec + 920*ms, gib},
			{12*sec + 605*ms, 12*sec + 920*ms, gib}, {13*sec + 605*ms, 13*sec + 920*ms, gib}}, 1},
		{"a rise at the op that stays", []overlay{{10*sec + 605*ms, -1, gib}}, 0},
	} {
		j := trainingJob(8, 500*ms) // samples at .0 and .5 s: no sample inside an op
		j.worldAllReduces()
		for _, o := range tt.changes {
			if o.end > 0 {
				j.change(rankList(0, 8), o.start, o.end, o.bytes)
			}
		}
		j.accountingAt(rankList(0, 8), "world", 300<<20, tt.changes, reports)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := 0; r < 8; r++ {
			for _, at := range []int64{10*sec + 700*ms, 11*sec + 700*ms} {
				got := accountingOnlyAt(j, results, r, at)
				if len(got) != tt.want {
					t.Errorf("%s, rank %d at %d ms: %d accounting-only results, want %d: %+v", tt.name, r, at/ms, len(got), tt.want, j.resultsAt(results, r, at))
					continue
				}
				for _, c := range got {
					if c.NCCLAccountedBytes == nil || *c.NCCLAccountedBytes != gib {
						t.Errorf("%s, rank %d at %d ms: accounted %v, want 1 GiB", tt.name, r, at/ms, c.NCCLAccountedBytes)
					}
				}
			}
		}
	}
}

// A step the samples first see after an op, whose possible onset spans the
// op, does not hide NCCL's transient inside it: NCCL's reports fell back
// after the op, so what they show is no step (evidence-mode §2.4).
func TestAccountingOnlyBesideAStepSeenAfterTheOp(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 11, gib)
	j.change(rankList(0, 8), 11*sec+970*ms, -1, gib/2) // first sampled at 12.0 s
	j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
	results := Attribute(j.input(), mediumConfig(t), nil)
	wantAccountingOnly(t, j, results, 8, 11*sec+700*ms)
}

// Reporting that begins inside an op (a job's first seconds: the rank's
// first NCCL report falls in the op, before any report to read the level
// from) shows the op's transient against the level after it alone: a
// transient of NCCL's leaves its total where it was. A step that stays is
// in the level after, so it shows no growth.
func TestAccountingOnlyFirstReportInsideTheOp(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change overlay
		want   int // accounting-only results per rank at the op
	}{
		{"a transient of the op", overlay{2*sec + 605*ms, 2*sec + 920*ms, gib}, 1},
		{"a step at the op that stays", overlay{2*sec + 605*ms, -1, gib}, 0},
	} {
		j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
		j.worldAllReduces()
		var times []int64 // once a second from inside op #2 on
		for k := int64(2); k < 40; k++ {
			times = append(times, k*sec+700*ms)
		}
		j.accountingAt(rankList(0, 8), "world", 300<<20, []overlay{tt.change}, times)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := range 8 {
			got := accountingOnlyAt(j, results, r, 2*sec+750*ms)
			if len(got) != tt.want {
				t.Errorf("%s, rank %d: %d accounting-only results at the op, want %d: %+v", tt.name, r, len(got), tt.want,
					j.resultsAt(results, r, 2*sec+750*ms))
				continue
			}
			if tt.want == 1 && (got[0].NCCLAccountedBytes == nil || *got[0].NCCLAccountedBytes != gib ||
				got[0].Collective == nil || got[0].Collective.Seq != 2) {
				t.Errorf("%s, rank %d: accounted %v collective %+v, want 1 GiB at world #2", tt.name, r,
					got[0].NCCLAccountedBytes, got[0].Collective)
			}
		}
	}
}

// Reporting that ends inside an op (the job's end: the rank's last NCCL
// report falls in its last op, before any report to read the level after
// from) shows the op's transient against the level before it alone, where
// the rank's samples after the op read no higher than before it: NCCL's
// memory is part of the hidden memory they measure, so a step at the op
// that stayed would have raised them.
func TestAccountingOnlyLastReportInsideTheOp(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change overlay
		want   int // accounting-only results per rank at the op
	}{
		{"a transient of the op", overlay{37*sec + 605*ms, 37*sec + 920*ms, gib}, 1},
		{"a step at the op that stays", overlay{37*sec + 605*ms, -1, gib}, 0},
	} {
		j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
		j.worldAllReduces()
		if tt.change.end < 0 {
			j.change(rankList(0, 8), tt.change.start, tt.change.end, tt.change.bytes)
		}
		var times []int64 // once a second up to inside op #37
		for k := int64(0); k <= 37; k++ {
			times = append(times, k*sec+700*ms)
		}
		j.accountingAt(rankList(0, 8), "world", 300<<20, []overlay{tt.change}, times)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := range 8 {
			got := accountingOnlyAt(j, results, r, 37*sec+750*ms)
			if len(got) != tt.want {
				t.Errorf("%s, rank %d: %d accounting-only results at the op, want %d: %+v", tt.name, r, len(got), tt.want,
					j.resultsAt(results, r, 37*sec+750*ms))
				continue
			}
			// No report before the raised one inside the op, none after it:
			// the op's interval widened by the match tolerance.
			from := t0 + 37*sec + 550*ms + int64(r%4)*3*ms
			if tt.want == 1 && (got[0].NCCLAccountedBytes == nil || *got[0].NCCLAccountedBytes != gib || got[0].Collective == nil ||
				got[0].Collective.Seq != 37 || got[0].IntervalStartNs != from || got[0].IntervalEndNs != uint64(from+400*ms)) {
				t.Errorf("%s, rank %d: accounted %v at world #%d over [%d, %d] ms, want 1 GiB at world #37 over the widened op", tt.name, r,
					got[0].NCCLAccountedBytes, got[0].Collective.Seq, (got[0].IntervalStartNs-t0)/ms, (int64(got[0].IntervalEndNs)-t0)/ms)
			}
		}
	}
}
