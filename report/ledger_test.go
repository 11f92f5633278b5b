package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/ledger"
)

// The page stacks each rank's ledger on its lane (context, NCCL per
// communicator, the rest of NCCL, unexplained above 0) and lists every
// rank's average and peak of the three parts.
func TestRenderLedger(t *testing.T) {
	b := NewBuilder(false)
	for i := range int64(100) {
		for r := range int64(2) {
			e := sample(r, i*10_000_000, gib)
			b.Add(&e)
		}
	}
	job := b.Job()
	lb := NewLedgerBuilder(job, 100)
	for i := range int64(100) {
		// Rank 0: context 512 MiB, NCCL 256 MiB on comm 0xa (then 768 MiB
		// for the last 10 samples), the rest unexplained. Rank 1: no NCCL.
		nccl := 256 * mib
		if i >= 90 {
			nccl = 768 * mib
		}
		r0 := ledger.Row{Rank: 0, TimestampNs: i * 10_000_000, HiddenBytes: gib, NCCLBytes: nccl, NCCLSource: ledger.SourceAccounting,
			ContextBytes: 512 * mib, UnexplainedBytes: gib - nccl - 512*mib, ByComm: []ledger.CommBytes{{CommID: "0xa", Bytes: nccl}}}
		lb.Add(&r0)
		r1 := ledger.Row{Rank: 1, TimestampNs: i * 10_000_000, HiddenBytes: gib, ContextBytes: 900 * mib, UnexplainedBytes: gib - 900*mib}
		lb.Add(&r1)
	}
	job.Ledgers = lb.Lanes()
	out := render(t, job, nil, Options{Columns: 100})

	rows := regexp.MustCompile(`<tr><td>(\d+)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>`).FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("ledger table rows %v, want one per rank", rows)
	}
	want := [][]string{
		{"0", "307.2 MiB", "768.0 MiB", "512.0 MiB", "512.0 MiB", "204.8 MiB", "256.0 MiB", "accounting"},
		{"1", "0 B", "0 B", "900.0 MiB", "900.0 MiB", "124.0 MiB", "124.0 MiB", "none"},
	}
	for i, w := range want {
		if got := rows[i][1:]; strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("row %d: %v, want %v", i, got, w)
		}
	}
	lane0 := out[strings.Index(out, `data-rank="0"`):strings.Index(out, `data-rank="1"`)]
	for _, class := range []string{`class="lg lctx"`, `class="lg a0"`, `class="lg lunx"`} {
		if !strings.Contains(lane0, class) {
			t.Errorf("rank 0's lane has no %s band", class)
		}
	}
	// The unexplained band ends where NCCL took all of it (the last 10
	// columns: 512 + 768 MiB exceed 1 GiB, so unexplained is below 0).
	unx := regexp.MustCompile(`<path class="lg lunx" d="M0 \d+H(\d+)V`).FindStringSubmatch(lane0)
	if unx == nil || unx[1] != "90" {
		t.Errorf("rank 0's unexplained band %v, want columns 0-90", unx)
	}
	if strings.Contains(lane0, `class="lg lnccl"`) {
		t.Error("rank 0's NCCL is all on its communicator, yet an unknown-communicator band is drawn")
	}
	if strings.Count(out, `id="ledgertable"`) != 1 {
		t.Error("no ledger table")
	}
	bare := *job
	bare.Ledgers = nil
	if out := render(t, &bare, nil, Options{Columns: 100}); strings.Contains(out, "ledgertable") || strings.Contains(out, `class="lg`) {
		t.Error("a page without ledgers draws one")
	}
}
