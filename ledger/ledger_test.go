package ledger

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
	ms  = int64(1_000_000)
	sec = int64(1_000_000_000)
)

// rankOf builds a rank sampled every 100 ms from 0 with reserved 10 GiB and
// the given hidden memory per sample.
func rankOf(rank int64, hidden ...int64) RankInput {
	ri := RankInput{Rank: rank}
	for i, h := range hidden {
		ri.Samples.TimesNs = append(ri.Samples.TimesNs, int64(i)*100*ms)
		ri.Samples.ReservedBytes = append(ri.Samples.ReservedBytes, 10*gib)
		ri.Samples.UsedBytes = append(ri.Samples.UsedBytes, 10*gib+h)
	}
	return ri
}

func flat(n int, v int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func series(comm string, times []int64, bytes []int64) evidence.AccountingSeries {
	return evidence.AccountingSeries{CommID: comm, TimesNs: times, Bytes: bytes}
}

func rows(t *testing.T, in *Input) ([]Row, Stats) {
	t.Helper()
	l := New(in)
	var out []Row
	var r Row
	for l.Next(&r) {
		r.ByComm = append([]CommBytes(nil), r.ByComm...)
		out = append(out, r)
	}
	for _, r := range out {
		require.Equal(t, r.HiddenBytes, r.NCCLBytes+r.ContextBytes+r.UnexplainedBytes, "sum at rank %d t %d", r.Rank, r.TimestampNs)
		require.Equal(t, r.HiddenBytes, r.DeviceUsedBytes-r.AllocatorReservedBytes)
	}
	return out, l.Stats()
}

type want struct {
	nccl, context, unexplained int64
	source                     Source
}

func check(t *testing.T, got []Row, w []want) {
	t.Helper()
	require.Len(t, got, len(w))
	for i := range w {
		assert.Equal(t, w[i], want{got[i].NCCLBytes, got[i].ContextBytes, got[i].UnexplainedBytes, got[i].NCCLSource}, "row %d (t %d)", i, got[i].TimestampNs)
	}
}

func TestLedgerAccounting(t *testing.T) {
	// Context 500 MiB; NCCL holds 200 MiB then a 1 GiB spike at samples 6-7;
	// a 300 MiB non-collective spike at sample 9.
	hidden := []int64{700, 700, 700, 700, 700, 700, 1724, 1724, 700, 1000, 700}
	for i := range hidden {
		hidden[i] *= mib
	}
	ri := rankOf(0, hidden...)
	// Reports at 50, 150, ... ms: the nearer of the latest one at or before
	// each sample and the next one (a tie: the one before).
	var times, bytes []int64
	for k := range int64(11) {
		times = append(times, k*100*ms+50*ms)
		b := 200 * mib
		if k == 5 || k == 6 {
			b += gib
		}
		bytes = append(bytes, b)
	}
	ri.Accounting = []evidence.AccountingSeries{series("0xa", times, bytes)}
	got, st := rows(t, &Input{Ranks: []RankInput{ri}})
	w := make([]want, len(hidden))
	for i := range w {
		w[i] = want{200 * mib, 500 * mib, 0, SourceAccounting}
	}
	// Sample 0 precedes the first report by less than the reports'
	// interval: the communicator existed already.
	w[6].nccl, w[7].nccl = 1224*mib, 1224*mib
	w[9].unexplained = 300 * mib
	check(t, got, w)
	assert.Equal(t, []CommBytes{{"0xa", 1224 * mib}}, got[6].ByComm)
	assert.Equal(t, 1, st.TrackedRanks)
}

func TestLedgerSharedAndUntrackedAccounting(t *testing.T) {
	times := []int64{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms}
	moving := []int64{100 * mib, 100 * mib, 300 * mib, 100 * mib, 100 * mib, 100 * mib}
	hidden := []int64{600, 600, 800, 600, 600, 600}
	for i := range hidden {
		hidden[i] *= mib
	}
	tests := []struct {
		name   string
		series []evidence.AccountingSeries
		want   []want
		stats  Stats
	}{
		{
			name: "lock step counted once",
			series: []evidence.AccountingSeries{series("0xa", times, moving), series("0xb", times, moving),
				series("0xc", times, flat(6, 50*mib))},
			want: []want{{150 * mib, 450 * mib, 0, SourceAccounting}, {150 * mib, 450 * mib, 0, SourceAccounting},
				{350 * mib, 450 * mib, 0, SourceAccounting}, {150 * mib, 450 * mib, 0, SourceAccounting},
				{150 * mib, 450 * mib, 0, SourceAccounting}, {150 * mib, 450 * mib, 0, SourceAccounting}},
			stats: Stats{Rows: 6, TrackedRanks: 1, SharedComms: 1},
		},
		{
			name:   "cuMem off is untracked",
			series: []evidence.AccountingSeries{series("0xa", times, flat(6, evidence.UntrackedBytes))},
			want: []want{{0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 200 * mib, SourceNone},
				{0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}},
			stats: Stats{Rows: 6, UntrackedRanks: 1},
		},
		{
			name:   "flat zero is untracked",
			series: []evidence.AccountingSeries{series("0xa", times, flat(6, 0))},
			want: []want{{0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 200 * mib, SourceNone},
				{0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}},
			stats: Stats{Rows: 6, UntrackedRanks: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ri := rankOf(0, hidden...)
			ri.Accounting = tc.series
			got, st := rows(t, &Input{Ranks: []RankInput{ri}})
			check(t, got, tc.want)
			assert.Equal(t, tc.stats, st)
		})
	}
}

func TestLedgerAttributed(t *testing.T) {
	// Context 1 GiB. A transient collective spike of 512 MiB at samples 2-3
	// (the second sample 40 MiB higher: allocator noise on top), a
	// suspect spike at sample 5 (not counted), a persistent step of 2 GiB
	// from sample 7.
	hidden := []int64{1024, 1024, 1536, 1576, 1024, 1324, 1024, 3072, 3072, 3100}
	for i := range hidden {
		hidden[i] *= mib
	}
	pad := 50 * ms
	results := []attribution.Result{
		{Rank: 0, IntervalStartNs: 200*ms - pad, IntervalEndNs: uint64(300*ms + pad), Classification: attribution.CollectiveConfident,
			Mode: attribution.ModeEvidence, Kind: attribution.KindTransient, ExcessBytes: 552 * mib,
			Collective: &attribution.CollectiveMatch{CommID: "0xw"}},
		{Rank: 0, IntervalStartNs: 500*ms - pad, IntervalEndNs: uint64(500*ms + pad), Classification: attribution.CollectiveSuspect,
			Mode: attribution.ModeEvidence, Kind: attribution.KindTransient, ExcessBytes: 300 * mib},
		{Rank: 0, IntervalStartNs: 700*ms - pad, IntervalEndNs: uint64(700*ms + pad), Classification: attribution.CollectiveConfirmed,
			Mode: attribution.ModeEvidence, Kind: attribution.KindPersistent, ExcessBytes: 2 * gib},
		{Rank: 7, IntervalStartNs: 0, IntervalEndNs: uint64(sec), Classification: attribution.CollectiveConfirmed}, // no such rank
	}
	got, st := rows(t, &Input{Ranks: []RankInput{rankOf(0, hidden...)}, Results: results, PaddingNs: pad})
	check(t, got, []want{
		{0, gib, 0, SourceNone}, {0, gib, 0, SourceNone},
		{512 * mib, gib, 0, SourceAttributed}, {552 * mib, gib, 0, SourceAttributed},
		{0, gib, 0, SourceNone}, {0, gib, 300 * mib, SourceNone}, {0, gib, 0, SourceNone},
		{2 * gib, gib, 0, SourceAttributed}, {2 * gib, gib, 0, SourceAttributed}, {2 * gib, gib, 28 * mib, SourceAttributed},
	})
	assert.Equal(t, []CommBytes{{"0xw", 512 * mib}}, got[2].ByComm)
	assert.Equal(t, 0, st.TrackedRanks)
}

func TestLedgerRestartRebasesContext(t *testing.T) {
	// Session a: context 1 GiB and a persistent step of 1 GiB at sample 2;
	// session b (a restart): context 600 MiB, and the step is gone.
	hidden := []int64{1024, 1024, 2048, 2048, 600, 600, 600}
	for i := range hidden {
		hidden[i] *= mib
	}
	ri := rankOf(3, hidden...)
	ri.Samples.SessionIDs = []string{"a", "b"}
	ri.Samples.Session = []int32{0, 0, 0, 0, 1, 1, 1}
	results := []attribution.Result{{Rank: 3, IntervalStartNs: 200 * ms, IntervalEndNs: uint64(200 * ms), Classification: attribution.CollectiveConfident,
		Mode: attribution.ModeEvidence, Kind: attribution.KindPersistent, ExcessBytes: gib}}
	got, _ := rows(t, &Input{Ranks: []RankInput{ri}, Results: results})
	check(t, got, []want{
		{0, gib, 0, SourceNone}, {0, gib, 0, SourceNone}, {gib, gib, 0, SourceAttributed}, {gib, gib, 0, SourceAttributed},
		{0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone}, {0, 600 * mib, 0, SourceNone},
	})

	// With accounting, a report of the previous process does not count in
	// the new session: the new process's next one does.
	ri.Accounting = []evidence.AccountingSeries{series("0xa", []int64{0, 350 * ms, 450 * ms}, []int64{300 * mib, 300 * mib, 100 * mib})}
	got, _ = rows(t, &Input{Ranks: []RankInput{ri}})
	assert.Equal(t, int64(100*mib), got[4].NCCLBytes)
	assert.Equal(t, SourceAccounting, got[5].NCCLSource)
	assert.Equal(t, int64(500*mib), got[5].ContextBytes)
	// The new process reports first more than an interval (100 ms) after
	// its first sample.
	ri.Accounting = []evidence.AccountingSeries{series("0xa", []int64{0, 100 * ms, 200 * ms, 300 * ms, 350 * ms, 650 * ms}, flat(6, 100*mib))}
	got, _ = rows(t, &Input{Ranks: []RankInput{ri}})
	assert.Equal(t, SourceNone, got[4].NCCLSource)
}

func TestLedgerBadInput(t *testing.T) {
	hidden := []int64{500, 500, 500, 500, 500, 500}
	for i := range hidden {
		hidden[i] *= mib
	}
	ri := rankOf(0, hidden...)
	ri.Samples.NoReserved = []bool{false, false, true, false, false, false}
	ri.Samples.ReservedBytes[2] = 0
	ri.Samples.UsedBytes[3] = ri.Samples.ReservedBytes[3] - 100*mib // a late sample
	ri.Accounting = []evidence.AccountingSeries{series("0xa", []int64{0, 400 * ms}, []int64{100 * mib, 800 * mib})}
	got, st := rows(t, &Input{Ranks: []RankInput{ri}})
	check(t, got, []want{
		{100 * mib, 400 * mib, 0, SourceAccounting}, {100 * mib, 400 * mib, 0, SourceAccounting},
		{100 * mib, 400 * mib, 10*gib + 500*mib - 500*mib, SourceAccounting},
		{800 * mib, 400 * mib, -1300 * mib, SourceAccounting}, // the report at 400 ms is nearer
		{800 * mib, 400 * mib, -700 * mib, SourceAccounting}, {800 * mib, 400 * mib, -700 * mib, SourceAccounting},
	})
	assert.Equal(t, FlagNoReserved, got[2].Flags)
	assert.Equal(t, FlagNegativeHidden|FlagAccountingAboveHidden, got[3].Flags)
	assert.Equal(t, FlagAccountingAboveHidden, got[4].Flags)
	assert.Equal(t, Stats{Rows: 6, NoReserved: 1, NegativeHidden: 1, AccountingAboveHidden: 3, TrackedRanks: 1}, st)

	// A rank whose every sample lacks the reservation: context 0, all of
	// device used unexplained, nothing lost.
	ri = rankOf(1, 1, 2)
	ri.Samples.NoReserved = []bool{true, true}
	got, st = rows(t, &Input{Ranks: []RankInput{ri}})
	require.Len(t, got, 2)
	assert.Equal(t, got[0].DeviceUsedBytes, got[0].UnexplainedBytes)
	assert.Equal(t, 2, st.NoReserved)
}

func TestLedgerTimeOrder(t *testing.T) {
	a, b := rankOf(0, 1, 2, 3), rankOf(5, 1, 2)
	b.Samples.TimesNs = []int64{50 * ms, 100 * ms}
	got, _ := rows(t, &Input{Ranks: []RankInput{a, b, {Rank: 9}}})
	var order [][2]int64
	for _, r := range got {
		order = append(order, [2]int64{r.Rank, r.TimestampNs})
	}
	assert.Equal(t, [][2]int64{{0, 0}, {5, 50 * ms}, {0, 100 * ms}, {5, 100 * ms}, {0, 200 * ms}}, order)

	// Rank by rank: the same rows.
	l := New(&Input{Ranks: []RankInput{a, b, {Rank: 9}}})
	var byRank []Row
	var r Row
	for ri := range 3 {
		for l.NextOf(ri, &r) {
			byRank = append(byRank, r)
		}
	}
	assert.ElementsMatch(t, got, byRank)
	assert.Equal(t, 5, l.Stats().Rows)
}

// SeekOf gives the rows NextOf gives from the same sample on.
func TestLedgerSeekOf(t *testing.T) {
	in := benchInput(4)
	all, _ := rows(t, in)
	l := New(in)
	for ri := range in.Ranks {
		l.SeekOf(ri, 55*sec+50*ms)
		var want []Row
		for _, r := range all {
			if r.Rank == in.Ranks[ri].Rank && r.TimestampNs >= 55*sec+50*ms {
				want = append(want, r)
			}
		}
		var got []Row
		var r Row
		for l.NextOf(ri, &r) {
			r.ByComm = append([]CommBytes(nil), r.ByComm...)
			got = append(got, r)
		}
		require.Len(t, got, len(want))
		assert.Equal(t, want, got)
	}
}

// The sums hold on any input: random samples, reservations, sessions,
// accounting and results.
func TestLedgerSumsHoldOnRandomInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		in := randomInput(rng)
		got, st := rows(t, &in)
		n := 0
		for _, ri := range in.Ranks {
			n += ri.Samples.Len()
		}
		require.Len(t, got, n)
		require.Equal(t, n, st.Rows)
	}
}

// randomInput is a job of random samples, reservations, sessions,
// accounting and results.
func randomInput(rng *rand.Rand) Input {
	var in Input
	for r := range int64(1 + rng.IntN(4)) {
		n := rng.IntN(30)
		ri := RankInput{Rank: r}
		ts := int64(0)
		for range n {
			ts += rng.Int64N(200 * ms)
			ri.Samples.TimesNs = append(ri.Samples.TimesNs, ts)
			ri.Samples.UsedBytes = append(ri.Samples.UsedBytes, rng.Int64N(20*gib))
			ri.Samples.ReservedBytes = append(ri.Samples.ReservedBytes, rng.Int64N(20*gib))
			ri.Samples.Session = append(ri.Samples.Session, int32(rng.IntN(2)))
		}
		if rng.IntN(3) == 0 {
			for i := range ri.Samples.ReservedBytes {
				missing := rng.IntN(4) == 0
				ri.Samples.NoReserved = append(ri.Samples.NoReserved, missing)
				if missing {
					ri.Samples.ReservedBytes[i] = 0
				}
			}
		}
		ri.Samples.SessionIDs = []string{"a", "b"}
		for c := range rng.IntN(3) {
			s := evidence.AccountingSeries{CommID: string(rune('a' + c))}
			at := int64(0)
			for range rng.IntN(20) {
				at += rng.Int64N(300 * ms)
				s.TimesNs = append(s.TimesNs, at)
				s.Bytes = append(s.Bytes, rng.Int64N(4*gib))
			}
			ri.Accounting = append(ri.Accounting, s)
		}
		for range rng.IntN(4) {
			st := rng.Int64N(ts + 1)
			kind := attribution.KindTransient
			if rng.IntN(3) == 0 {
				kind = attribution.KindPersistent
			}
			in.Results = append(in.Results, attribution.Result{Rank: r, IntervalStartNs: st, IntervalEndNs: uint64(st + rng.Int64N(sec)),
				Classification: attribution.CollectiveConfident, Mode: attribution.ModeEvidence, Kind: kind, ExcessBytes: rng.Int64N(2 * gib)})
		}
		in.Ranks = append(in.Ranks, ri)
	}
	in.PaddingNs = rng.Int64N(100 * ms)
	return in
}

// TestLedgerResetEqualsNew: a Ledger reset for input after input (more
// ranks, fewer, other accounting) reads the rows a new one reads.
func TestLedgerResetEqualsNew(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var reused Ledger
	for range 300 {
		in := randomInput(rng)
		want, wantStats := rows(t, &in)
		reused.Reset(&in)
		var got []Row
		var r Row
		for reused.Next(&r) {
			r.ByComm = append([]CommBytes(nil), r.ByComm...)
			got = append(got, r)
		}
		require.Equal(t, want, got)
		require.Equal(t, wantStats, reused.Stats())
		for ri := range in.Ranks {
			require.Equal(t, New(&in).Contexts(ri), reused.Contexts(ri))
		}
	}
}

func TestAppendRowJSON(t *testing.T) {
	r := Row{Rank: 2, TimestampNs: 5, DeviceUsedBytes: 30, HiddenBytes: 30, NCCLBytes: 10, NCCLSource: SourceAccounting,
		ContextBytes: 15, UnexplainedBytes: 5, ByComm: []CommBytes{{"0xa", 4}, {`q"é`, 6}}, Flags: FlagNoReserved | FlagAccountingAboveHidden}
	out := AppendRowJSON(nil, &r)
	assert.Equal(t, `{"rank":2,"timestamp_ns":5,"device_used_bytes":30,"allocator_reserved_bytes":null,"hidden_bytes":30,`+
		`"nccl_bytes":10,"nccl_source":"accounting","context_bytes":15,"unexplained_bytes":5,"nccl_by_comm":{"0xa":4,"q\"é":6},`+
		`"flags":["no_allocator_reserved","accounting_above_hidden"]}`, string(out))
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v))
	r = Row{Rank: 0, AllocatorReservedBytes: 7, NCCLSource: SourceAttributed}
	assert.Equal(t, `{"rank":0,"timestamp_ns":0,"device_used_bytes":0,"allocator_reserved_bytes":7,"hidden_bytes":0,`+
		`"nccl_bytes":0,"nccl_source":"attributed","context_bytes":0,"unexplained_bytes":0}`, string(AppendRowJSON(nil, &r)))
}

// A sliding window keeps the session's first level: a leak that fills the
// window later is unexplained, not context.
func TestLedgerKeepsSettledContexts(t *testing.T) {
	hidden := make([]int64, 100) // 10 s at 10 Hz: 1 GiB, then +10 MiB a sample from 5 s on
	for i := range hidden {
		hidden[i] = gib + int64(max(0, i-50))*10*mib
	}
	ri := rankOf(0, hidden...)
	ri.Samples.SessionIDs = []string{"s"}
	l := New(&Input{Ranks: []RankInput{ri}})
	assert.Equal(t, []SessionLevel{{"s", gib}}, l.Contexts(0))

	// The window has slid past the start: only the leak is left in it.
	late := ri
	late.Samples.TimesNs, late.Samples.UsedBytes, late.Samples.ReservedBytes = ri.Samples.TimesNs[80:], ri.Samples.UsedBytes[80:], ri.Samples.ReservedBytes[80:]
	got, _ := rows(t, &Input{Ranks: []RankInput{late}})
	assert.Greater(t, got[0].ContextBytes, int64(gib+300*mib), "without the kept level the leak is context")
	assert.Empty(t, New(&Input{Ranks: []RankInput{late}}).Contexts(0), "2 s of a session settle no level")
	late.Contexts = l.Contexts(0)
	got, _ = rows(t, &Input{Ranks: []RankInput{late}})
	assert.Equal(t, int64(gib), got[0].ContextBytes)
	assert.Equal(t, int64(30*10*mib), got[0].UnexplainedBytes)
}

// A communicator that stops reporting was destroyed: its last report stops
// counting once five of its usual intervals (at least 1 s) have passed.
// Without any counting report NCCL's part is unknown (none).
func TestLedgerStaleCommunicator(t *testing.T) {
	hidden := flat(40, 700*mib) // 4 s at 10 Hz
	ri := rankOf(0, hidden...)
	var times []int64
	for k := range int64(10) { // reports every 100 ms for the first second
		times = append(times, k*100*ms)
	}
	ri.Accounting = []evidence.AccountingSeries{series("0xa", times, flat(10, 200*mib)), series("0xb", []int64{0, 3 * sec}, []int64{50 * mib, 50 * mib})}
	got, _ := rows(t, &Input{Ranks: []RankInput{ri}})
	for _, r := range got {
		// 0xa's last report (0.9 s) counts until 1.9 s; 0xb reports every
		// 3 s, so its report at 0 s counts throughout.
		want := 50 * mib
		if r.TimestampNs <= 1900*ms {
			want += 200 * mib
		}
		require.Equal(t, want, r.NCCLBytes, "t %d", r.TimestampNs)
	}
	ri.Accounting = ri.Accounting[:1]
	got, _ = rows(t, &Input{Ranks: []RankInput{ri}})
	assert.Equal(t, SourceAccounting, got[19].NCCLSource)
	assert.Equal(t, SourceNone, got[20].NCCLSource, "at 2.0 s")
}

// Between two reports that differ, the sample's hidden memory tells which
// NCCL state it saw: reports every second, a 1 GiB collective spike from
// 1.3 s to 1.8 s that only the report at 1.5 s shows.
func TestLedgerReportsAroundAChange(t *testing.T) {
	hidden := []int64{600, 600, 600, 1624, 1624, 600, 600} // samples at 0.9, 1.1, 1.2, 1.4, 1.6, 1.9, 2.1 s
	times := []int64{900, 1100, 1200, 1400, 1600, 1900, 2100}
	ri := rankOf(0, hidden...)
	for i := range hidden {
		ri.Samples.UsedBytes[i] = 10*gib + hidden[i]*mib
		ri.Samples.TimesNs[i] = times[i] * ms
	}
	ri.Accounting = []evidence.AccountingSeries{series("0xa", []int64{0, 500 * ms, 1500 * ms, 2500 * ms}, []int64{100 * mib, 100 * mib, 1124 * mib, 100 * mib})}
	got, _ := rows(t, &Input{Ranks: []RankInput{ri}})
	var nccl []int64
	for _, r := range got {
		nccl = append(nccl, r.NCCLBytes/mib)
	}
	// 1.1 and 1.2 s lie nearer the report at 1.5 s, 1.9 and 2.1 s nearer the
	// one at 2.5 s: their hidden memory says which state held.
	assert.Equal(t, []int64{100, 100, 100, 1124, 1124, 100, 100}, nccl, "%+v", got)
	assert.Equal(t, int64(500*mib), got[0].ContextBytes)
}

// A likely persistent step counts as NCCL; a likely transient spike does
// not (it could be a co-timed non-collective spike).
func TestLedgerLikelyResults(t *testing.T) {
	hidden := []int64{1024, 1536, 1024, 2048, 2048}
	for i := range hidden {
		hidden[i] *= mib
	}
	results := []attribution.Result{
		{Rank: 0, IntervalStartNs: 100 * ms, IntervalEndNs: uint64(100 * ms), Classification: attribution.CollectiveLikely,
			Mode: attribution.ModeEvidence, Kind: attribution.KindTransient, ExcessBytes: 512 * mib},
		{Rank: 0, IntervalStartNs: 300 * ms, IntervalEndNs: uint64(300 * ms), Classification: attribution.CollectiveLikely,
			Mode: attribution.ModeEvidence, Kind: attribution.KindPersistent, ExcessBytes: gib},
	}
	got, _ := rows(t, &Input{Ranks: []RankInput{rankOf(0, hidden...)}, Results: results})
	check(t, got, []want{
		{0, gib, 0, SourceNone}, {0, gib, 512 * mib, SourceNone}, {0, gib, 0, SourceNone},
		{gib, gib, 0, SourceAttributed}, {gib, gib, 0, SourceAttributed},
	})
}

// The context level is the rank's memory before its first collective when
// samples precede it: a step at the first use a second later is not
// context, whether or not the attribution found it.
func TestLedgerContextBeforeFirstMarker(t *testing.T) {
	hidden := make([]int64, 60) // 6 s at 10 Hz: 1 GiB, then 3 GiB from 0.5 s on
	for i := range hidden {
		hidden[i] = gib
		if i >= 5 {
			hidden[i] = 3 * gib
		}
	}
	ri := rankOf(0, hidden...)
	got, _ := rows(t, &Input{Ranks: []RankInput{ri}})
	assert.Equal(t, int64(3*gib), got[0].ContextBytes, "without markers: the first 5 s, mostly after the step")
	ri.MarkersNs = []int64{450 * ms, 2 * sec}
	got, _ = rows(t, &Input{Ranks: []RankInput{ri}})
	assert.Equal(t, int64(gib), got[0].ContextBytes)
	assert.Equal(t, int64(2*gib), got[59].UnexplainedBytes)
	ri.MarkersNs = []int64{0} // no sample before it
	got, _ = rows(t, &Input{Ranks: []RankInput{ri}})
	assert.Equal(t, int64(3*gib), got[0].ContextBytes)
}

// A step down NCCL's release explains (comm_released) lowers NCCL's part:
// back to 0 after the step it undoes, below 0 for buffers held since before
// the context level.
func TestLedgerRelease(t *testing.T) {
	hidden := []int64{1024, 2048, 2048, 1024, 768}
	for i := range hidden {
		hidden[i] *= mib
	}
	step := func(at int64, excess int64) attribution.Result {
		return attribution.Result{Rank: 0, IntervalStartNs: at, IntervalEndNs: uint64(at), Classification: attribution.CollectiveConfident,
			Mode: attribution.ModeEvidence, Kind: attribution.KindPersistent, ExcessBytes: excess}
	}
	results := []attribution.Result{step(100*ms, gib), step(300*ms, -gib), step(400*ms, -256*mib)}
	got, _ := rows(t, &Input{Ranks: []RankInput{rankOf(0, hidden...)}, Results: results})
	check(t, got, []want{
		{0, gib, 0, SourceNone}, {gib, gib, 0, SourceAttributed}, {gib, gib, 0, SourceAttributed},
		{0, gib, 0, SourceAttributed}, {-256 * mib, gib, 0, SourceAttributed},
	})
}

// ReadOf reads a rank's rows from where SeekOf put it, as NextOf reads
// them: the growth detector gets the same rows, the last row and the
// counts are the same.
func TestLedgerReadOfEqualsNextOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 300 {
		in := randomInput(rng)
		byNext, byRead := New(&in), New(&in)
		for ri := range in.Ranks {
			times := in.Ranks[ri].Samples.TimesNs
			if len(times) > 0 && rng.IntN(2) == 0 {
				from := times[rng.IntN(len(times))]
				byNext.SeekOf(ri, from)
				byRead.SeekOf(ri, from)
			}
			var (
				want, got Row
				wantG     GrowthDetector
				gotG      GrowthDetector
				rows      int
			)
			for byNext.NextOf(ri, &want) {
				want.ByComm = slices.Clone(want.ByComm)
				wantG.Add(&want)
				rows++
			}
			ok := byRead.ReadOf(ri, &gotG, &got)
			require.Equal(t, rows > 0, ok)
			require.Equal(t, wantG.times, gotG.times)
			require.Equal(t, wantG.values, gotG.values)
			if ok {
				if len(got.ByComm) == 0 {
					got.ByComm = nil
				}
				if len(want.ByComm) == 0 {
					want.ByComm = nil
				}
				require.Equal(t, want, got)
			}
			wantG.Detect()
			gotG.Detect()
		}
		require.Equal(t, byNext.Stats(), byRead.Stats())
	}
}
