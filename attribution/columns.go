package attribution

// ColumnInput is Input with each rank's samples held as columns: a caller
// that buffers samples column by column (the streaming processor) hands
// them over without building one Sample per row.
type ColumnInput struct {
	Ranks             []ColumnSeries
	ExpectedWorldSize int64
	TraceStartNs      int64
}

// ColumnSeries is one rank's RankSeries as columns. TimestampsNs and
// GapBytes have one entry per sample, in time order (ties in input order);
// sample i's TotalBytes and SessionID are given by the runs that cover it.
// Markers are ascending, as in RankSeries.
type ColumnSeries struct {
	Rank         int64
	TimestampsNs []int64
	GapBytes     []int64
	// Totals are the samples' TotalBytes as runs: a run holds from its
	// sample index up to the next run's. No run (or a run starting after
	// sample 0) stands for 0, an unknown total, before the first run.
	Totals []Int64Run
	// Sessions are the samples' SessionID as runs, as Totals; "" before
	// the first run.
	Sessions []StringRun
	Markers  []int64
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

// AttributeColumns is AttributeInput on columnar input: the same results
// for the same samples, markers, world size and trace start. It neither
// retains nor modifies in's slices.
func AttributeColumns(in ColumnInput, cfg Config, resolver PhaseResolver) []Result {
	spikes := detectColumnSpikes(in, cfg)
	if len(spikes) == 0 {
		return nil
	}
	return resultsOfSpikes(spikes, len(in.Ranks), in.ExpectedWorldSize, in.TraceStartNs, cfg, resolver)
}

// detectColumnSpikes is detectSpikes (S4) over columns.
func detectColumnSpikes(in ColumnInput, cfg Config) []spike {
	maxN := 0
	for i := range in.Ranks {
		maxN = max(maxN, len(in.Ranks[i].TimestampsNs))
	}
	gaps := make([]float64, maxN)
	scratch := newStatsScratch(maxN)
	ids := make(map[int64]int32, len(in.Ranks))
	var spikes []spike
	for ri := range in.Ranks {
		rs := &in.Ranks[ri]
		n := len(rs.TimestampsNs)
		if int64(n) < cfg.MinSamplesPerRank || n == 0 {
			continue
		}
		var (
			st       rankStats
			haveStat bool
		)
		var totals totalCursor
		for i, g := range rs.GapBytes[:n] {
			total := totals.at(rs.Totals, i)
			gapBytes := max(0, g)
			var ratio float64
			hasRatio := total > 0
			significant := gapBytes >= cfg.MinGapBytes
			// As in detectSpikes: the quotient only when it can matter.
			if hasRatio && (significant || float64(gapBytes) >= cfg.MinGapRatio*float64(total)*(1-1e-9)) {
				ratio = pyDiv(gapBytes, total)
				significant = significant || ratio >= cfg.MinGapRatio
			}
			if !significant {
				continue
			}
			if !haveStat {
				gs := gaps[:n]
				for j, t := range rs.GapBytes[:n] {
					gs[j] = float64(max(0, t))
				}
				st = computeRankStats(gs, scratch)
				haveStat = true
			}
			z := st.zscore(float64(gapBytes))
			if z < cfg.RobustZscoreThreshold {
				continue
			}
			ts := rs.TimestampsNs[i]
			spikes = append(spikes, spike{
				rank:     rs.Rank,
				rankIdx:  rankID(ids, rs.Rank),
				ts:       ts,
				session:  sessionAt(rs.Sessions, i),
				gap:      gapBytes,
				ratio:    ratio,
				hasRatio: hasRatio,
				zRounded: pyRound(z, 4),
				markers:  markersNear(rs.Markers, ts, cfg.MarkerWindowNs),
			})
		}
	}
	return spikes
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
