package attribution

// The engine on row input: one Sample per row, as the reference groups a
// run. The engine itself reads columns (AttributeColumns, which the window
// hands over); this plain form of S4 is the oracle its columns and its
// parallel split are tested against (columns_test.go), fed by the
// reference's grouping (oracle_input_test.go).

// Sample is one usable `sample` event of a rank, reduced to what the
// algorithm reads.
type Sample struct {
	TimestampNs int64
	// GapBytes is max(0, device_used - allocator_reserved).
	GapBytes int64
	// TotalBytes is device_total_bytes, or <= 0 when null or not positive.
	TotalBytes int64
	// SessionID is "" when the sample has none (v2).
	SessionID string
}

// RankSeries is one rank's samples (time order, ties in input order) and its
// marker timestamps (ascending).
type RankSeries struct {
	Rank    int64
	Samples []Sample
	Markers []int64
}

// Input is the grouped form of a run (steps S1–S3 and S6 already
// applied), one Sample per row.
type Input struct {
	Ranks             []RankSeries
	ExpectedWorldSize int64
	TraceStartNs      int64
}

// AttributeInput is AttributeColumns on row input: the same results for
// the same samples, markers, world size and trace start. Each series'
// Samples must be in time order and its Markers ascending.
func AttributeInput(in Input, cfg Config, resolver PhaseResolver) []Result {
	spikes := detectSpikes(in, cfg)
	if len(spikes) == 0 {
		return nil
	}
	return resultsOfSpikes(spikes, len(in.Ranks), in.ExpectedWorldSize, in.TraceStartNs, cfg, resolver)
}

// detectSpikes is S4 over every rank, in input rank order and sample order.
func detectSpikes(in Input, cfg Config) []spike {
	maxN := 0
	for _, rs := range in.Ranks {
		maxN = max(maxN, len(rs.Samples))
	}
	gaps := make([]float64, maxN)
	scratch := newStatsScratch(maxN)
	// Synchrony counts distinct rank numbers; a dense id per rank number
	// keeps that right even if a caller splits one rank over several series.
	ids := make(map[int64]int32, len(in.Ranks))
	var spikes []spike
	for _, rs := range in.Ranks {
		n := len(rs.Samples)
		if int64(n) < cfg.MinSamplesPerRank || n == 0 {
			continue
		}
		var (
			st       rankStats
			haveStat bool
		)
		for _, s := range rs.Samples {
			gapBytes := max(0, s.GapBytes)
			var ratio float64
			hasRatio := s.TotalBytes > 0
			significant := gapBytes >= cfg.MinGapBytes
			// The quotient is only needed for a significant sample or when it
			// could reach min_gap_ratio: gap < ratio·total·(1-1e-9) rules that
			// out with a wide margin over the product's rounding error, so
			// most baseline samples skip the division.
			if hasRatio && (significant || float64(gapBytes) >= cfg.MinGapRatio*float64(s.TotalBytes)*(1-1e-9)) {
				ratio = pyDiv(gapBytes, s.TotalBytes)
				significant = significant || ratio >= cfg.MinGapRatio
			}
			if !significant {
				continue
			}
			if !haveStat {
				g := gaps[:n]
				for j, t := range rs.Samples {
					g[j] = float64(max(0, t.GapBytes))
				}
				st = computeRankStats(g, scratch)
				haveStat = true
			}
			z := st.zscore(float64(gapBytes))
			if z < cfg.RobustZscoreThreshold {
				continue
			}
			spikes = append(spikes, spike{
				rank:     rs.Rank,
				rankIdx:  rankID(ids, rs.Rank),
				ts:       s.TimestampNs,
				session:  s.SessionID,
				gap:      gapBytes,
				ratio:    ratio,
				hasRatio: hasRatio,
				zRounded: pyRound(z, 4),
				markers:  markersNear(rs.Markers, s.TimestampNs, cfg.MarkerWindowNs),
			})
		}
	}
	return spikes
}
