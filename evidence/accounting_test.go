package evidence

import (
	"encoding/json"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

func series(comm string, times []int64, bytes ...int64) AccountingSeries {
	return AccountingSeries{CommID: comm, TimesNs: times, Bytes: bytes}
}

func every(n int, step, phase int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = phase + int64(i)*step
	}
	return out
}

func TestAccountingTracked(t *testing.T) {
	ts := every(4, 100*ms, 0)
	tests := []struct {
		name   string
		series []AccountingSeries
		want   bool
	}{
		{"none", nil, false},
		{"flat 0 (cuMem off)", []AccountingSeries{series("a", ts, 0, 0, 0, 0), series("b", ts, 0, 0, 0, 0)}, false},
		{"a flat non-zero total", []AccountingSeries{series("a", ts, 0, 0, 0, 0), series("b", ts, 5, 5, 5, 5)}, true},
		{"rising from 0 at its first use", []AccountingSeries{series("a", ts, 0, 0, 8, 8)}, true},
		{"said untracked", []AccountingSeries{series("a", ts, 5, 5, UntrackedBytes, 5)}, false},
	}
	for _, tt := range tests {
		if got := AccountingTracked(tt.series); got != tt.want {
			t.Errorf("%s: tracked %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAccountingManagers(t *testing.T) {
	ts := every(6, 100*ms, 0)
	late := every(6, 100*ms, 30*ms) // read 30 ms after the others
	tests := []struct {
		name   string
		series []AccountingSeries
		want   []int
	}{
		{"one manager, read at the same instants", []AccountingSeries{
			series("world", ts, 5, 5, 9, 9, 5, 5), series("tp", ts, 5, 5, 9, 9, 5, 5)}, []int{0, 0}},
		{"one manager, read a little later", []AccountingSeries{
			series("world", ts, 5, 5, 9, 9, 5, 5), series("tp", late, 5, 5, 9, 9, 5, 5)}, []int{0, 0}},
		{"one manager, a change between two reads", []AccountingSeries{
			series("world", ts, 5, 5, 9, 9, 5, 5), series("tp", late, 5, 9, 9, 9, 5, 5)}, []int{0, 0}},
		{"separate managers moving apart", []AccountingSeries{
			series("world", ts, 5, 5, 9, 9, 5, 5), series("tp", ts, 5, 5, 5, 7, 7, 5)}, []int{0, 1}},
		{"equal flat totals stay apart", []AccountingSeries{
			series("a", ts, 5, 5, 5, 5, 5, 5), series("b", ts, 5, 5, 5, 5, 5, 5)}, []int{0, 1}},
		{"three, two sharing", []AccountingSeries{
			series("dp", ts, 3, 3, 3, 4, 4, 4), series("world", ts, 5, 5, 9, 9, 5, 5), series("tp", ts, 5, 5, 9, 9, 5, 5)}, []int{0, 1, 1}},
		{"no overlap in time", []AccountingSeries{
			series("a", ts, 5, 5, 9, 9, 5, 5), series("b", every(6, 100*ms, sec), 5, 5, 9, 9, 5, 5)}, []int{0, 1}},
	}
	for _, tt := range tests {
		got := AccountingManagers(tt.series)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

// accountingEvery adds NCCL reports of comm on the ranks every period, each
// rank at its own phase: base plus the bytes of the covered overlays.
func (j *simJob) accountingEvery(ranks []int, comm string, base int64, covered []overlay, period int64) {
	for i, r := range ranks {
		if j.acct[r] == nil {
			j.acct[r] = map[string][]acctPoint{}
		}
		phase := int64(i) * period / int64(len(ranks))
		for t := phase; t < j.duration; t += period {
			v := base
			for _, o := range covered {
				if t >= o.start && (o.end < 0 || t < o.end) {
					v += o.bytes
				}
			}
			j.acct[r][comm] = append(j.acct[r][comm], acctPoint{t0 + t + j.offset[r], v})
		}
	}
}

// At 4 Hz a spike the length of a collective is seen by one sample per rank:
// the possible window of the change, not the single sample, decides whether
// NCCL's reports would have shown it.
func TestAccountingSparseSampling(t *testing.T) {
	for _, period := range []int64{100 * ms, 300 * ms, 700 * ms} {
		j := trainingJob(8, 250*ms)
		j.worldAllReduces()
		caused := j.collectiveSpike(rankList(0, 8), 10, gib)
		j.collectiveSpike(rankList(0, 8), 25, gib) // co-timed, not NCCL's
		j.accountingEvery(rankList(0, 8), "world", 300<<20, []overlay{caused}, period)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := 0; r < 8; r++ {
			c := one(t, j, results, r, 10*sec+700*ms)
			if c.Classification != attribution.CollectiveConfirmed {
				t.Errorf("every %d ms, rank %d: covered spike %s %v, want confirmed", period/ms, r, c.Classification, c.ReasonCodes)
			}
			d := one(t, j, results, r, 25*sec+700*ms)
			if d.Classification != attribution.CollectiveSuspect {
				t.Errorf("every %d ms, rank %d: co-timed spike %s %v, want suspect", period/ms, r, d.Classification, d.ReasonCodes)
			}
		}
	}
}

// Reports too far apart to have seen a short change leave the timing's
// verdict standing.
func TestAccountingTooFewReports(t *testing.T) {
	j := trainingJob(2, 250*ms)
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 2), 25, gib) // not NCCL's
	j.accountingEvery(rankList(0, 2), "world", 300<<20, nil, 5*sec)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := 0; r < 2; r++ {
		d := one(t, j, results, r, 25*sec+700*ms)
		if d.Classification != attribution.CollectiveLikely || !hasCode(d, ReasonAccountingUnsampled) {
			t.Errorf("rank %d: %s %v, want likely with %s", r, d.Classification, d.ReasonCodes, ReasonAccountingUnsampled)
		}
	}
}

// A rank whose NCCL totals never move from 0, or that says cuMem is off,
// leaves the verdict to timing and says so: never a denial.
func TestAccountingUntracked(t *testing.T) {
	for _, base := range []int64{0, UntrackedBytes} {
		j := trainingJob(8, 100*ms)
		j.worldAllReduces()
		j.collectiveSpike(rankList(0, 8), 10, gib)
		j.accounting(rankList(0, 8), "world", base, nil)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := 0; r < 8; r++ {
			c := one(t, j, results, r, 10*sec+700*ms)
			if c.Classification != attribution.CollectiveLikely || !hasCode(c, ReasonAccountingUntracked) || c.NCCLAccountedBytes != nil {
				t.Errorf("base %d, rank %d: %s %v accounted %v, want likely, untracked, nothing accounted",
					base, r, c.Classification, c.ReasonCodes, c.NCCLAccountedBytes)
			}
		}
	}
}

// Communicators split with shared resources report one manager's total: the
// growth counts once.
func TestAccountingSharedManagerCountsOnce(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
	j.accounting(rankList(0, 8), "tp", 300<<20, []overlay{caused})
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := 0; r < 8; r++ {
		c := one(t, j, results, r, 10*sec+700*ms)
		if c.Classification != attribution.CollectiveConfirmed || c.NCCLAccountedBytes == nil || *c.NCCLAccountedBytes != gib {
			t.Errorf("rank %d: %s accounted %v, want confirmed with 1 GiB once", r, c.Classification, c.NCCLAccountedBytes)
		}
	}
}

// A record that says cuMem is off is read as an untracked point, whatever
// total it carries; one that says it is on, or says nothing, as its total;
// one without a total is no point.
func TestAccountingOfReadsCumemOff(t *testing.T) {
	tests := []struct {
		md        map[string]any
		wantBytes int64
		wantOK    bool
	}{
		{map[string]any{KeyCommID: "0xab", KeyMemoryTotal: json.Number("4096")}, 4096, true},
		{map[string]any{KeyCommID: "0xab", KeyMemoryTotal: json.Number("4096"), KeyCumemEnabled: true}, 4096, true},
		{map[string]any{KeyCommID: "0xab", KeyMemoryTotal: json.Number("0"), KeyCumemEnabled: false}, UntrackedBytes, true},
		{map[string]any{KeyCommID: "0xab", KeyCumemEnabled: false}, 0, false},
	}
	for _, tt := range tests {
		e := event(0, 100, AccountingEventType, tt.md)
		comm, total, ok := AccountingOf(&e)
		if ok != tt.wantOK || (ok && (comm != "0xab" || total != tt.wantBytes)) {
			t.Errorf("%v: %q %d %v, want 0xab %d %v", tt.md, comm, total, ok, tt.wantBytes, tt.wantOK)
		}
	}
}

// At 1 Hz only the members with a sample inside the collective can show its
// spike: synchrony is judged among them, not among every member.
func TestSynchronyAtSparseSampling(t *testing.T) {
	j := trainingJob(8, sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = int64(r) * 125 * ms
	}
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 8), 10, gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 5; r < 8; r++ { // samples at +625, +750, +875 ms
		x := one(t, j, results, r, 10*sec+int64(r)*125*ms)
		if x.Classification != attribution.CollectiveLikely || x.Collective == nil || x.Collective.SynchronizedCommRanks != 3 {
			t.Errorf("rank %d: %s %v, want likely with the 3 sampled members synchronized", r, x.Classification, x.ReasonCodes)
		}
	}
}

// NCCL allocates a collective's buffers on every member: the members whose
// samples missed a co-timed spike still deny it, over the op's interval.
func TestAccountingMembersWithoutSamples(t *testing.T) {
	j := trainingJob(8, sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = int64(r) * 125 * ms
	}
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 8), 10, gib) // not NCCL's
	j.accountingEvery(rankList(0, 8), "world", 300<<20, nil, 900*ms)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 5; r < 8; r++ {
		if got := j.resultsAt(results, r, 10*sec+int64(r)*125*ms); len(got) != 0 {
			t.Errorf("rank %d: %s %v, want nothing (suspect, below min_confidence)", r, got[0].Classification, got[0].ReasonCodes)
		}
	}
}

// Back-to-back ops of a pipeline communicator: the change belongs to the op
// launched in its rise gap, and NCCL's reports after its last sample do not
// have to stay raised: the change may have ended there.
func TestAccountingBackToBackOps(t *testing.T) {
	j := newSim(2, 100*ms, 20*sec)
	j.collective("pp", 0, "send", []int{0, 1}, 5*sec, 300*ms, false)
	j.collective("pp", 1, "send", []int{0, 1}, 10*sec+610*ms, 300*ms, false)
	j.collective("pp", 2, "send", []int{0, 1}, 10*sec+740*ms, 260*ms, false)
	caused := overlay{10*sec + 615*ms, 10*sec + 920*ms, gib}
	j.change([]int{0, 1}, caused.start, caused.end, gib)
	j.accounting([]int{0, 1}, "pp", 300<<20, []overlay{caused})
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := range 2 {
		x := one(t, j, results, r, 10*sec+800*ms)
		if x.Classification != attribution.CollectiveConfirmed || x.Collective == nil || x.Collective.Seq != 1 {
			t.Errorf("rank %d: %s %v %+v, want confirmed on seq 1", r, x.Classification, x.ReasonCodes, x.Collective)
		}
	}
}

// hostPolledJob is 8 ranks on two hosts polled host-wide at 1 Hz (ranks
// 0-3 at +700 ms, inside every world all_reduce at k.6-k.9 s; ranks 4-7 at
// phaseB), with NCCL's reports of every rank each second at reportPhase.
func hostPolledJob(phaseB, reportPhase int64) *simJob {
	j := trainingJob(8, sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 700 * ms
		if r >= 4 {
			j.phase[r] = phaseB
		}
	}
	j.worldAllReduces()
	return j
}

func (j *simJob) reportsEverySecond(comm string, base int64, covered []overlay, phase int64) {
	for r := range j.ranks {
		if j.acct[r] == nil {
			j.acct[r] = map[string][]acctPoint{}
		}
		for t := phase; t < j.duration; t += sec {
			v := base
			for _, o := range covered {
				if t >= o.start && t < o.end {
					v += o.bytes
				}
			}
			j.acct[r][comm] = append(j.acct[r][comm], acctPoint{t0 + t + j.offset[r], v})
		}
	}
}

// NCCL's spikes of two consecutive ops, polled host-wide at 1 Hz, are seen
// by two consecutive samples as one change; a report between the ops lies
// where NCCL's memory may have fallen back (the later sample may be the
// next op's) and does not deny the change.
func TestAccountingReportsThatCouldNotSeeTheChange(t *testing.T) {
	j := hostPolledJob(300*ms, 450*ms)
	a := j.collectiveSpike(rankList(0, 8), 10, gib)
	b := j.collectiveSpike(rankList(0, 8), 11, gib)
	j.reportsEverySecond("world", 300<<20, []overlay{a, b}, 450*ms)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := range 4 {
		x := one(t, j, results, r, 10*sec+700*ms)
		if x.Classification == attribution.CollectiveSuspect {
			t.Errorf("rank %d: %s %v, want a claim: no report could have seen NCCL's buffers", r, x.Classification, x.ReasonCodes)
		}
	}
}

// Host-wide polling matches a change to an earlier op of the communicator
// that the members agree on, while the op it is (launched just before the
// first high sample) lacks synchrony: a host polled 30 ms before its launch
// counts as a member that missed it. A report between the earlier op's end
// and that launch saw NCCL's memory between the two ops, not the change.
func TestAccountingReportBeforeTheNextOp(t *testing.T) {
	j := newSim(8, sec, 40*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 650 * ms // inside op 2
		if r >= 4 {
			j.phase[r] = 570 * ms // 30 ms before op 2's launch
		}
	}
	for k := int64(0); k < 30; k += 3 {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+900*ms, 200*ms, false)
		j.collective("world", k+1, "all_reduce", rankList(0, 8), (k+1)*sec+600*ms, 300*ms, false)
	}
	caused := overlay{10*sec + 605*ms, 10*sec + 900*ms, gib} // op 10, after op 9 at 9.9-10.1 s
	j.change(rankList(0, 8), caused.start, caused.end, gib)
	j.reportsEverySecond("world", 300<<20, []overlay{caused}, 450*ms)
	cfg, err := ResolveConfig("low", map[string]any{"min_confidence": 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	results := Attribute(j.input(), cfg, nil)
	for r := range 4 {
		x := one(t, j, results, r, 10*sec+650*ms)
		if x.Classification == attribution.CollectiveSuspect {
			t.Errorf("rank %d: %s %v %+v, want a claim", r, x.Classification, x.ReasonCodes, x.Collective)
		}
	}
}

// NCCL allocates a collective's buffers when the op begins: a report 100
// ms into a 300 ms op, before the change's first sample at 1 Hz, would
// have shown a change of NCCL's, and its flat total denies a spike
// co-timed with the op.
func TestAccountingReportInsideTheOp(t *testing.T) {
	j := trainingJob(2, sec)
	j.phase = map[int]int64{0: 800 * ms, 1: 800 * ms}
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 2), 10, gib) // not NCCL's
	j.reportsEverySecond("world", 300<<20, nil, 700*ms)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := range 2 {
		x := one(t, j, results, r, 10*sec+800*ms)
		if x.Classification != attribution.CollectiveSuspect || !hasCode(x, ReasonAccountingUncovered) {
			t.Errorf("rank %d: %s %v, want suspect with %s", r, x.Classification, x.ReasonCodes, ReasonAccountingUncovered)
		}
	}
}

// accountingAt adds NCCL reports of comm on the ranks at the given times:
// base plus the bytes of the covered overlays active then.
func (j *simJob) accountingAt(ranks []int, comm string, base int64, covered []overlay, times []int64) {
	for _, r := range ranks {
		if j.acct[r] == nil {
			j.acct[r] = map[string][]acctPoint{}
		}
		for _, t := range times {
			v := base
			for _, o := range covered {
				if t >= o.start && (o.end < 0 || t < o.end) {
					v += o.bytes
				}
			}
			j.acct[r][comm] = append(j.acct[r][comm], acctPoint{t0 + t + j.offset[r], v})
		}
	}
}

// A co-timed change that too few reports could have seen is judged by what
// NCCL's reports said of the communicator's other co-timed changes in the
// job: where they denied them, it is more likely not NCCL's either; where
// they confirmed them, the timing's verdict stands. Reports outside the op
// cannot see its buffers, so one in the tolerance around it decides no more
// than none near it.
func TestAccountingCommunicatorRecord(t *testing.T) {
	for _, tt := range []struct {
		name  string
		nccl  bool
		phase int64 // of the reports after 20 s, in each second
		want  string
	}{
		{"NCCL's, a report in the launch's tolerance", true, 580 * ms, attribution.CollectiveLikely},
		{"not NCCL's, a report in the launch's tolerance", false, 580 * ms, attribution.CollectiveSuspect},
		{"not NCCL's, no report near", false, 100 * ms, attribution.CollectiveSuspect},
	} {
		j := trainingJob(8, 250*ms)
		j.worldAllReduces()
		var checked []overlay
		for _, k := range []int64{4, 7, 10, 13} {
			checked = append(checked, j.collectiveSpike(rankList(0, 8), k, gib))
		}
		j.collectiveSpike(rankList(0, 8), 25, gib) // NCCL's exactly when the others are
		// Reports inside the ops (k s + 700 ms) for the first 20 s, then at
		// the phase: at 580 ms every member's report lies in the launch's
		// tolerance (each misses a change of NCCL's with probability 0.7,
		// all of them 0.06); at 100 ms none lies where the change could
		// have been.
		var times []int64
		for k := int64(0); k < 20; k++ {
			times = append(times, k*sec+700*ms)
		}
		for k := int64(20); k < 40; k++ {
			times = append(times, k*sec+tt.phase)
		}
		var covered []overlay
		if tt.nccl {
			covered = append(checked, overlay{25*sec + 605*ms, 25*sec + 920*ms, gib})
		}
		j.accountingAt(rankList(0, 8), "world", 300<<20, covered, times)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := 0; r < 8; r++ {
			c := one(t, j, results, r, 4*sec+750*ms)
			u := one(t, j, results, r, 25*sec+750*ms)
			wantChecked := attribution.CollectiveSuspect
			if tt.nccl {
				wantChecked = attribution.CollectiveConfirmed
			}
			wantCode := ReasonAccountingUnsampled
			if tt.want == attribution.CollectiveSuspect {
				wantCode = ReasonAccountingCommUncovered
			}
			if c.Classification != wantChecked || u.Classification != tt.want || !hasCode(u, wantCode) {
				t.Errorf("%s, rank %d: checked %s, unchecked %s %v; want %s, and %s with %s",
					tt.name, r, c.Classification, u.Classification, u.ReasonCodes, wantChecked, tt.want, wantCode)
			}
		}
	}
}

// NCCL's reports that begin during a transient change (reporting started
// after the communicator was created) hold their total after it: the total
// was there before the first report, and is no growth of the change. A
// communicator created at a step is read from 0 (TestFirstUse…).
func TestAccountingFirstReportInsideATransient(t *testing.T) {
	j := trainingJob(8, 250*ms)
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 8), 1, gib) // not NCCL's
	var times []int64
	for at := 1*sec + 700*ms; at < j.duration; at += 100 * ms {
		times = append(times, at)
	}
	j.accountingAt(rankList(0, 8), "world", 300<<20, nil, times)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := range 8 {
		x := one(t, j, results, r, 1*sec+750*ms)
		if x.Classification != attribution.CollectiveSuspect || !hasCode(x, ReasonAccountingUncovered) {
			t.Errorf("rank %d: %s %v, want suspect with %s", r, x.Classification, x.ReasonCodes, ReasonAccountingUncovered)
		}
	}
}

// At 1 Hz a change's possible window spans the ops before and after it;
// NCCL's growth at one of those, before this op's launch or after its end
// and the change's last high sample, is not this change's.
func TestAccountingGrowthOfAnotherOp(t *testing.T) {
	for _, at := range []int64{10*sec + 100*ms, 11*sec + 200*ms} { // before, after
		j := newSim(8, sec, 40*sec)
		j.phase = map[int]int64{}
		for r := range 8 {
			j.phase[r] = 700 * ms
		}
		j.worldAllReduces()
		j.collectiveSpike(rankList(0, 8), 10, gib) // not NCCL's
		j.collective("world", 0, "all_gather", rankList(0, 8), at, 200*ms, false)
		caused := overlay{at + 5*ms, at + 190*ms, gib} // between two samples
		j.change(rankList(0, 8), caused.start, caused.end, gib)
		j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := range 8 {
			x := one(t, j, results, r, 10*sec+700*ms)
			if x.Classification != attribution.CollectiveSuspect || !hasCode(x, ReasonAccountingUncovered) {
				t.Errorf("NCCL's change at %d ms, rank %d: %s %v, want suspect with %s", at/ms, r, x.Classification, x.ReasonCodes, ReasonAccountingUncovered)
			}
		}
	}
}

// NCCL frees an op's buffers at its end: a report just after the end of
// the op whose change a 0.2 Hz poll saw at its last instants reads the
// level after the change, and denies nothing; the end of a change of
// NCCL's lies within the op's tolerance, not anywhere in the 5 s to the
// next sample.
func TestAccountingReportJustAfterTheOp(t *testing.T) {
	j := newSim(8, 5*sec, 60*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 890 * ms // 10 ms before the op's end
	}
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	var times []int64
	for k := int64(0); k < 60; k++ {
		times = append(times, k*sec+930*ms) // 30 ms after the op's end
	}
	j.accountingAt(rankList(0, 8), "world", 300<<20, []overlay{caused}, times)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := range 8 {
		x := one(t, j, results, r, 10*sec+890*ms)
		if x.Classification == attribution.CollectiveSuspect {
			t.Errorf("rank %d: %s %v, want a claim", r, x.Classification, x.ReasonCodes)
		}
	}
}

// A communicator that connected its buffers at its first use a second or two
// before a change holds them after the change too: its step is no growth of
// the change, whose level is the higher of NCCL's before and after it. Held-out
// small/early_first_use (seed 11): two single-rank decoys after the shard and
// replica communicators' first use were confirmed by the steps' 476 and 790 MiB.
func TestAccountingStepBeforeTransient(t *testing.T) {
	const step, spike = 486 << 20, 300 << 20
	j := newSim(8, 50*ms, 12*sec)
	all := rankList(0, 8)
	j.collective("shard", 0, "all_gather", all, 2*sec, 100*ms, false)
	j.change(all, 2*sec+20*ms, -1, step)
	// NCCL's, on the raised level: a later all_gather's buffers.
	j.collective("shard", 1, "all_gather", all, 6*sec, 200*ms, false)
	caused := overlay{6*sec + 10*ms, 6*sec + 190*ms, spike}
	j.change(all, caused.start, caused.end, spike)
	j.accounting(all, "shard", 0, []overlay{{2*sec + 20*ms, -1, step}, caused})
	// Not NCCL's: a workspace on one rank 1.8 s after the step, no marker near.
	j.change([]int{6}, 3*sec+800*ms, 5*sec, 590<<20)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	d := one(t, j, results, 6, 4*sec)
	if d.Classification == attribution.CollectiveConfirmed || hasCode(d, ReasonAccountingCovers) {
		t.Errorf("workspace after the step: %s %v accounted %d, want not confirmed by the step", d.Classification, d.ReasonCodes, *d.NCCLAccountedBytes)
	}
	for r := range 8 {
		c := one(t, j, results, r, 6*sec+100*ms)
		if c.Classification != attribution.CollectiveConfirmed || c.NCCLAccountedBytes == nil || *c.NCCLAccountedBytes != spike {
			t.Errorf("rank %d: all_gather on the raised level %s %v accounted %v, want confirmed with its 300 MiB", r, c.Classification, c.ReasonCodes, c.NCCLAccountedBytes)
		}
	}
}

// The communicator's record is read by size: NCCL sizes an op's buffers the
// same from op to op, a co-timed workspace by its own needs. NCCL's reports
// confirmed its 1 GiB changes at 4 and 7 s and denied 600 MiB workspaces at
// 10, 13 and 16 s, so the record leans not; an unchecked change at 25 s is
// judged by the changes of its size: of NCCL's size, the timing's verdict
// stands (a report 11–20 ms after the op's end saw nothing of its buffers,
// which were freed), of the workspaces' size it is denied, with no report
// near as with one.
func TestAccountingCommunicatorRecordBySize(t *testing.T) {
	for _, tt := range []struct {
		name  string
		nccl  bool
		bytes int64
		phase int64 // of the reports after 20 s, in each second
		want  string
	}{
		{"NCCL's size, a report just after the op", true, gib, 920 * ms, attribution.CollectiveLikely},
		{"NCCL's size, no report near", true, gib, 100 * ms, attribution.CollectiveLikely},
		{"a workspace's size, a report just after the op", false, 600 << 20, 920 * ms, attribution.CollectiveSuspect},
		{"a workspace's size, no report near", false, 600 << 20, 100 * ms, attribution.CollectiveSuspect},
	} {
		j := trainingJob(8, 250*ms)
		j.worldAllReduces()
		covered := []overlay{j.collectiveSpike(rankList(0, 8), 4, gib), j.collectiveSpike(rankList(0, 8), 7, gib)}
		for _, k := range []int64{10, 13, 16} {
			j.collectiveSpike(rankList(0, 8), k, 600<<20) // not NCCL's
		}
		unchecked := j.collectiveSpike(rankList(0, 8), 25, tt.bytes)
		if tt.nccl {
			covered = append(covered, unchecked)
		}
		var times []int64 // inside the ops for the first 20 s, then at the phase
		for k := int64(0); k < 20; k++ {
			times = append(times, k*sec+700*ms)
		}
		for k := int64(20); k < 40; k++ {
			times = append(times, k*sec+tt.phase)
		}
		j.accountingAt(rankList(0, 8), "world", 300<<20, covered, times)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := range 8 {
			u := one(t, j, results, r, 25*sec+750*ms)
			wantCode := ReasonAccountingUnsampled
			if tt.want == attribution.CollectiveSuspect {
				wantCode = ReasonAccountingCommUncovered
			}
			if u.Classification != tt.want || !hasCode(u, wantCode) {
				t.Errorf("%s, rank %d: %s %v; want %s with %s", tt.name, r, u.Classification, u.ReasonCodes, tt.want, wantCode)
			}
		}
	}
}

// A member whose first sample caught a co-timed change sees only its fall (a
// step down from its first sample), and a communicator whose first report
// comes after it reads as created there: over that fall NCCL's total seems
// to grow from 0 by all it holds. A fall shows nothing of NCCL's growth at
// the op: such a member is judged over the op's interval, as one whose
// samples missed the change, and confirms nothing.
func TestAccountingMemberFallDoesNotConfirm(t *testing.T) {
	j := newSim(8, 500*ms, 40*sec)
	j.phase = map[int]int64{0: 700 * ms} // its first sample inside the change
	for r := 1; r < 8; r++ {
		j.phase[r] = 200 * ms // samples at 0.2 and 0.7 s: one inside the change
		if r >= 4 {
			j.phase[r] = 450 * ms // samples at 0.45 and 0.95 s: none inside
		}
	}
	j.worldAllReduces()
	j.change(rankList(0, 8), 605*ms, 920*ms, gib) // co-timed with op 0, not NCCL's
	var every, late []int64
	for t := int64(0); t < j.duration; t += sec {
		every = append(every, t)
		if t > 0 {
			late = append(late, t)
		}
	}
	j.accountingAt(rankList(1, 8), "world", 300<<20, nil, every)
	j.accountingAt([]int{0}, "world", 300<<20, nil, late) // rank 0 reports from 1 s on
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	claims := 0
	for r := 1; r < 4; r++ {
		for _, x := range j.resultsAt(results, r, 700*ms) {
			claims++
			if x.Classification == attribution.CollectiveConfirmed {
				t.Errorf("rank %d: %s %v, want no confirmation: no report of any member shows NCCL's growth", r, x.Classification, x.ReasonCodes)
			}
		}
	}
	if claims == 0 {
		t.Error("no result for the change on the ranks sampled inside it")
	}
}

// A co-timed change on both members of a 2-rank group, which their reports
// (100 ms apart, just before the launch and just after the op) miss with
// probability about 0.15 together, above rule 4's 0.01: its communicator ran
// 159 other ops of its kind, 80 of them with a report inside on both members
// (each would have shown NCCL's buffers with probability 0.85) that never
// moved, so NCCL does not allocate at such an op: odds about 1/69, times
// 0.15, and the change is denied (rule 7). The same change at an op of
// another size, of which the record holds none, keeps the timing's verdict.
func TestAccountingCommunicatorFlatOps(t *testing.T) {
	for _, tt := range []struct {
		name  string
		bytes int64 // of the op the change is co-timed with
		want  string
	}{
		{"at an op like the flat ones", 32 << 20, attribution.CollectiveSuspect},
		{"at an op of another size", 512 << 20, attribution.CollectiveLikely},
	} {
		j := trainingJob(4, 200*ms)
		at := int64(25*sec + 350*ms)
		for k := int64(0); k < 40; k++ {
			for i, off := range []int64{100, 350, 600, 850} {
				j.collective("tp", 4*k+int64(i), "all_reduce", []int{0, 1}, k*sec+off*ms, 60*ms, false)
				c := &j.in.Collectives[len(j.in.Collectives)-1]
				c.MessageBytes = 32 << 20
				if k*sec+off*ms == at {
					c.MessageBytes = tt.bytes
				}
			}
		}
		j.change([]int{0, 1}, at+10*ms, at+210*ms, 1536<<20) // a recompute workspace
		j.accounting([]int{0, 1}, "tp", 300<<20, nil)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := range 2 {
			u := one(t, j, results, r, at+50*ms)
			wantCode := ReasonAccountingUnsampled
			if tt.want == attribution.CollectiveSuspect {
				wantCode = ReasonAccountingCommUncovered
			}
			if u.Classification != tt.want || !hasCode(u, wantCode) {
				t.Errorf("%s, rank %d: %s %v; want %s with %s", tt.name, r, u.Classification, u.ReasonCodes, tt.want, wantCode)
			}
		}
	}
}
