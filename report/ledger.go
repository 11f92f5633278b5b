package report

import (
	"strconv"

	"github.com/collectiveattr/collectiveattr/ledger"
)

// Ledger parts, in the order the page stacks and lists them.
const (
	partNCCL = iota
	partContext
	partUnexplained
	numParts
)

// LaneLedger is a rank's hidden-memory ledger (docs/evidence-mode.md §6)
// as the page draws it: per pixel column the sums of each part over the
// column's samples, and the rank's average and peak of each part over
// every sample.
type LaneLedger struct {
	// N counts the samples of each column; Sums[c][p] sums part p over
	// column c's samples.
	N    []int32
	Sums [][numParts]int64
	// Comms are the communicators whose part is known, in order of first
	// appearance; CommSums[c][k] sums communicator k's bytes over column
	// c's samples (nil without communicators).
	Comms    []string
	CommSums [][]int64
	Samples  int64
	Total    [numParts]int64 // over every sample, for the averages
	Peak     [numParts]int64
	Sources  map[string]bool // nccl_source values seen
}

// LedgerBuilder collects ledger rows into the lanes' ledgers on the
// page's time scale. The zero value is not usable: call NewLedgerBuilder.
type LedgerBuilder struct {
	scale TimeScale
	lanes map[int64]*LaneLedger
	last  *LaneLedger
	rank  int64
}

// NewLedgerBuilder returns a builder for job's page of the given number of
// columns (Options.Columns; 0 for the default).
func NewLedgerBuilder(job *Job, columns int) *LedgerBuilder {
	if columns <= 0 {
		columns = DefaultColumns
	}
	return &LedgerBuilder{scale: TimeScale{StartNs: job.StartNs, EndNs: job.EndNs, Columns: columns}, lanes: map[int64]*LaneLedger{}}
}

// Add takes one row.
func (b *LedgerBuilder) Add(r *ledger.Row) {
	ll := b.last
	if ll == nil || b.rank != r.Rank {
		ll = b.lanes[r.Rank]
		if ll == nil {
			ll = &LaneLedger{N: make([]int32, b.scale.Columns), Sums: make([][numParts]int64, b.scale.Columns), Sources: map[string]bool{}}
			b.lanes[r.Rank] = ll
		}
		b.last, b.rank = ll, r.Rank
	}
	c := b.scale.Column(r.TimestampNs)
	parts := [numParts]int64{r.NCCLBytes, r.ContextBytes, r.UnexplainedBytes}
	ll.N[c]++
	for p, v := range parts {
		ll.Sums[c][p] += v
		ll.Total[p] += v
		if ll.Samples == 0 || v > ll.Peak[p] {
			ll.Peak[p] = v
		}
	}
	ll.Samples++
	ll.Sources[r.NCCLSource.String()] = true
	for _, cb := range r.ByComm {
		k := ll.comm(cb.CommID, b.scale.Columns)
		ll.CommSums[c][k] += cb.Bytes
	}
}

func (ll *LaneLedger) comm(id string, columns int) int {
	for k, c := range ll.Comms {
		if c == id {
			return k
		}
	}
	ll.Comms = append(ll.Comms, id)
	if ll.CommSums == nil {
		ll.CommSums = make([][]int64, columns)
	}
	for c := range ll.CommSums {
		ll.CommSums[c] = append(ll.CommSums[c], 0)
	}
	return len(ll.Comms) - 1
}

// Lanes returns the ledgers by rank, for Job.Ledgers.
func (b *LedgerBuilder) Lanes() map[int64]*LaneLedger { return b.lanes }

// ledgerPaths draws a lane's ledger as stacked bands of the per-column
// means, bottom up: context, NCCL per communicator, the rest of NCCL, and
// unexplained memory above 0 (below 0 it is not drawn; the table has it).
func ledgerPaths(ll *LaneLedger, commClass map[string]string, legend *[]legendItem, g laneGeometry) []pathView {
	cols := len(ll.N)
	nBands := 2 + len(ll.Comms) + 1
	bands := make([][]Column, nBands)
	for k := range bands {
		bands[k] = make([]Column, cols)
	}
	for c := range cols {
		n := int64(ll.N[c])
		if n == 0 {
			continue
		}
		mean := func(v int64) int64 { return v / n }
		level := int64(0)
		put := func(k int, v int64) {
			v = max(v, 0)
			bands[k][c] = Column{Min: level, Max: level + v, N: int32(n)}
			level += v
		}
		put(0, mean(ll.Sums[c][partContext]))
		rest := ll.Sums[c][partNCCL]
		for k := range ll.Comms {
			put(1+k, mean(ll.CommSums[c][k]))
			rest -= ll.CommSums[c][k]
		}
		put(1+len(ll.Comms), mean(rest))
		put(nBands-1, mean(ll.Sums[c][partUnexplained]))
	}
	var out []pathView
	add := func(k int, class, tip string) {
		if d := bandPath(bands[k], g); len(d) > 0 {
			out = append(out, pathView{D: string(d), Class: "lg " + class, Tip: tip})
		}
	}
	add(0, "lctx", "context (CUDA context, libraries)")
	for k, id := range ll.Comms {
		c, ok := commClass[id]
		if !ok {
			c = "a" + strconv.Itoa(len(commClass)%accountingPalette)
			commClass[id] = c
			*legend = append(*legend, legendItem{Name: "NCCL, comm " + id, Class: "lg " + c})
		}
		add(1+k, c, "NCCL · comm "+id)
	}
	add(1+len(ll.Comms), "lnccl", "NCCL (communicator unknown)")
	add(nBands-1, "lunx", "unexplained")
	return out
}

// bandPath draws the region between each column's Min and Max.
func bandPath(cols []Column, g laneGeometry) []byte {
	var d []byte
	for a := 0; a < len(cols); {
		if cols[a].N == 0 || cols[a].Max == cols[a].Min {
			a++
			continue
		}
		b := a
		for b < len(cols) && cols[b].N != 0 && cols[b].Max != cols[b].Min {
			b++
		}
		d = append(d, stepPath(nil, cols, a, b, func(c Column) int { return g.y(c.Max) })...)
		d = append(d, stepBack(cols, a, b, func(c Column) int { return g.y(c.Min) })...)
		d = append(d, 'Z')
		a = b
	}
	return d
}

// ledgerRow is a rank's line of the page's ledger table.
type ledgerRow struct {
	Rank    int64
	Avg     [numParts]string
	Peak    [numParts]string
	Sources string
}

func ledgerRows(lanes []Lane, ledgers map[int64]*LaneLedger) []ledgerRow {
	var rows []ledgerRow
	for i := range lanes {
		ll := ledgers[lanes[i].Rank]
		if ll == nil || ll.Samples == 0 {
			continue
		}
		row := ledgerRow{Rank: lanes[i].Rank}
		for p := range numParts {
			row.Avg[p] = fmtBytes(ll.Total[p] / ll.Samples)
			row.Peak[p] = fmtBytes(ll.Peak[p])
		}
		for _, s := range []string{"accounting", "attributed", "none"} {
			if ll.Sources[s] {
				if row.Sources != "" {
					row.Sources += ", "
				}
				row.Sources += s
			}
		}
		rows = append(rows, row)
	}
	return rows
}
