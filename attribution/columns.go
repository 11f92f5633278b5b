package attribution

import "github.com/collectiveattr/collectiveattr/internal/parallel"

// ColumnInput is the grouped form of a run (steps S1–S3 and S6 already
// applied) with each rank's samples held as columns: the window, which
// buffers samples column by column, hands them over without building one
// row per sample.
type ColumnInput struct {
	Ranks             []ColumnSeries
	ExpectedWorldSize int64
	TraceStartNs      int64
}

// ColumnSeries is one rank's usable samples as columns, and its marker
// timestamps. TimestampsNs and GapBytes (max(0, device_used -
// allocator_reserved)) have one entry per sample, in time order (ties in
// input order); sample i's total (device_total_bytes, or <= 0 when null or
// not positive) and session id ("" when it has none, v2) are given by the
// runs that cover it. Markers are ascending.
type ColumnSeries struct {
	Rank         int64
	TimestampsNs []int64
	GapBytes     []int64
	// Totals are the samples' totals as runs: a run holds from its
	// sample index up to the next run's. No run (or a run starting after
	// sample 0) stands for 0, an unknown total, before the first run.
	Totals []Int64Run
	// Sessions are the samples' session ids as runs, as Totals; "" before
	// the first run.
	Sessions []StringRun
	Markers  []int64
	// SortedGaps, when not nil, are the gaps clamped at 0 (max(0, g)),
	// ascending: a caller that keeps them from one evaluation to the next
	// (the processor's window, updating them by the samples that came and
	// went) spares the engine selecting each rank's median and MAD anew
	// and scoring every sample. The results are the same with or without.
	SortedGaps []int64
}

// Int64Run is a value that holds from sample index From on.
type Int64Run struct {
	From  int
	Value int64
}

// StringRun is a value that holds from sample index From on.
type StringRun struct {
	From  int
	Value string
}

// AttributeColumns runs the reference's attribute_collective_memory (R2)
// on a run's grouped input (steps S4–S12; the grouping, S1–S3 and S6, is
// the window's); resolver may be nil (no phase attribution). Results are
// sorted by (rank, interval_start_ns), one per merged interval; nil when
// nothing is attributed. As in the reference, the input is one run (ranks
// pooled across jobs and sessions: callers partition first), and a spike
// is resolved to a phase only when its sample has a session id, so v2
// samples never get one. The order of the series does not matter, and one
// rank should have one series. It neither retains nor modifies in's
// slices; results own their memory except ReasonCodes, which share
// read-only backing arrays. MarkerTimesNs lists the contributing markers;
// a merged result carries the union (each timestamp once).
func AttributeColumns(in ColumnInput, cfg Config, resolver PhaseResolver) []Result {
	return AttributeColumnsParallel(in, cfg, resolver, 1)
}

// AttributeColumnsParallel is AttributeColumns with the per-rank work
// (each rank's statistics and spikes, most of a job's cost) spread over
// up to workers goroutines; the results are the same for any workers.
func AttributeColumnsParallel(in ColumnInput, cfg Config, resolver PhaseResolver, workers int) []Result {
	spikes := detectColumnSpikes(in, cfg, workers)
	if len(spikes) == 0 {
		return nil
	}
	return resultsOfSpikes(spikes, len(in.Ranks), in.ExpectedWorldSize, in.TraceStartNs, cfg, resolver)
}

// detectColumnSpikes is S4 over columns: each rank's spikes are found
// apart, on up to workers goroutines, and joined in input rank order. A
// rank's dense id is given in that order, by rank number, so that
// synchrony counts distinct ranks even if a caller splits one rank over
// several series.
func detectColumnSpikes(in ColumnInput, cfg Config, workers int) []spike {
	workers = max(1, min(workers, len(in.Ranks)))
	scratches := make([]rankScratch, workers)
	perRank := make([][]spike, len(in.Ranks))
	parallel.For(len(in.Ranks), workers, func(w, ri int) {
		perRank[ri] = columnRankSpikes(&in.Ranks[ri], cfg, &scratches[w])
	})
	n := 0
	for _, sp := range perRank {
		n += len(sp)
	}
	if n == 0 {
		return nil
	}
	spikes := make([]spike, 0, n)
	ids := make(map[int64]int32, len(in.Ranks))
	for _, sp := range perRank {
		for i := range sp {
			sp[i].rankIdx = rankID(ids, sp[i].rank)
		}
		spikes = append(spikes, sp...)
	}
	return spikes
}

// rankScratch is one worker's memory for a rank's statistics, grown to
// the largest rank it computes them of in sample order.
type rankScratch struct {
	gaps  []float64
	stats *statsScratch
}

// columnRankSpikes is S4 on one rank's columns: its spikes in sample
// order, without their dense rank id.
func columnRankSpikes(rs *ColumnSeries, cfg Config, sc *rankScratch) []spike {
	n := len(rs.TimestampsNs)
	if int64(n) < cfg.MinSamplesPerRank || n == 0 {
		return nil
	}
	var (
		st       rankStats
		haveStat bool
		spikes   []spike
		totals   totalCursor
		// floor: with SortedGaps, no sample whose clamped gap is below
		// it can be a spike (spikeFloor); 0 lets every sample through.
		floor  int64
		zRound = roundMemo{n: 4}
	)
	if rs.SortedGaps != nil {
		var ok bool
		if st, ok = sortedRankStats(rs.SortedGaps); !ok {
			st = sc.sampleOrderStats(rs.GapBytes[:n])
		}
		haveStat = true
		var any bool
		if floor, any = spikeFloor(&st, rs.SortedGaps, cfg.RobustZscoreThreshold); !any {
			return nil
		}
	}
	for i, g := range rs.GapBytes[:n] {
		if max(0, g) < floor {
			continue
		}
		total := totals.at(rs.Totals, i)
		gapBytes := max(0, g)
		var ratio float64
		hasRatio := total > 0
		significant := gapBytes >= cfg.MinGapBytes
		// The quotient is only needed for a significant sample or when it
		// could reach min_gap_ratio: gap < ratio·total·(1-1e-9) rules that
		// out with a wide margin over the product's rounding error, so
		// most baseline samples skip the division.
		if hasRatio && (significant || float64(gapBytes) >= cfg.MinGapRatio*float64(total)*(1-1e-9)) {
			ratio = pyDiv(gapBytes, total)
			significant = significant || ratio >= cfg.MinGapRatio
		}
		if !significant {
			continue
		}
		if !haveStat {
			st = sc.sampleOrderStats(rs.GapBytes[:n])
			haveStat = true
		}
		z := st.zscore(float64(gapBytes))
		if z < cfg.RobustZscoreThreshold {
			continue
		}
		ts := rs.TimestampsNs[i]
		spikes = append(spikes, spike{
			rank:     rs.Rank,
			ts:       ts,
			session:  sessionAt(rs.Sessions, i),
			gap:      gapBytes,
			ratio:    ratio,
			hasRatio: hasRatio,
			zRounded: zRound.round(z),
			markers:  markersNear(rs.Markers, ts, cfg.MarkerWindowNs),
		})
	}
	return spikes
}

// sampleOrderStats is computeRankStats of gaps, clamped at 0, in sample
// order.
func (sc *rankScratch) sampleOrderStats(gaps []int64) rankStats {
	n := len(gaps)
	if len(sc.gaps) < n {
		sc.gaps, sc.stats = make([]float64, n), newStatsScratch(n)
	}
	gs := sc.gaps[:n]
	for j, t := range gaps {
		gs[j] = float64(max(0, t))
	}
	return computeRankStats(gs, sc.stats)
}

// totalCursor reads total runs in sample order: next is the first run
// not yet reached.
type totalCursor struct {
	next  int
	value int64
}

// at returns the total of sample i; i must not decrease between calls.
func (c *totalCursor) at(runs []Int64Run, i int) int64 {
	for c.next < len(runs) && runs[c.next].From <= i {
		c.value = runs[c.next].Value
		c.next++
	}
	return c.value
}

// sessionAt returns the session of sample i: the value of the last run
// starting at or before it.
func sessionAt(runs []StringRun, i int) string {
	lo, hi := 0, len(runs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if runs[m].From <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return ""
	}
	return runs[lo-1].Value
}
