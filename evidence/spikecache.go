package evidence

// keptSpike is a strong spike of a rank's last analysis, which its
// BaselineCache keeps for the next one: a spike whose samples, baselines
// and side medians did not change, with the same levels, is the same
// spike, and taking it spares reading those samples again (most of a
// round's spikes lie in the middle of the window, where nothing changes).
// Its indices are the cache's column indices.
type keptSpike struct {
	// start and end are the run the spike scan found, [start, end]: it
	// read the samples from start-1 to end+1.
	start, end int
	ep         episode
	peakNs     int64
	// moved: the side medians at the peak differ by the weak level or
	// more, so the spike is creep unless a cut lies near the peak.
	moved bool
}

// spikeLevels are what a spike's judgement depends on besides its samples.
type spikeLevels struct {
	weakLevel, threshold int64
	sigma                float64
}

// beginSpikes starts taking the last analysis's spikes, at the levels lv
// of this one; rebased are the stretches of samples whose baseline this
// analysis recomputed.
func (c *BaselineCache) beginSpikes(lv spikeLevels, rebased [][2]int) {
	// What the last sync and sides kept is relative to the samples the
	// spikes were found on only when nothing synced in between.
	c.spikesOK = c.spikesKept && c.spikeLevels == lv && c.syncs == c.spikesSynced+1
	c.spikeLevels, c.spikesKept = lv, true
	c.spikeAt, c.rebased, c.rebasedAt = 0, rebased, 0
	c.spikesNext = c.spikesNext[:0]
}

// takeSpike returns the spike whose run began at sample i last time, when
// it read nothing that changed: every sample from i-1 to the sample after
// its run kept, the baseline of the run and that sample not recomputed,
// the side medians at its peak kept. It points into the cache, valid until
// endSpikes; its indices are column indices, which a kept sample keeps.
func (c *BaselineCache) takeSpike(i int) *keptSpike {
	if !c.spikesOK {
		return nil
	}
	for c.spikeAt < len(c.spikes) && c.spikes[c.spikeAt].start-c.off < i {
		c.spikeAt++
	}
	if c.spikeAt == len(c.spikes) || c.spikes[c.spikeAt].start-c.off != i {
		return nil
	}
	ks := &c.spikes[c.spikeAt]
	end, peak := ks.end-c.off, ks.ep.peak-c.off
	if i < 1 || end+1 >= c.m || peak < c.p || peak >= c.q {
		return nil
	}
	for c.rebasedAt < len(c.rebased) && c.rebased[c.rebasedAt][1] <= i {
		c.rebasedAt++
	}
	if c.rebasedAt < len(c.rebased) && c.rebased[c.rebasedAt][0] <= end+1 {
		return nil
	}
	return ks
}

// keepSpike keeps spike ks (sample indices) for the next analysis.
func (c *BaselineCache) keepSpike(ks keptSpike) {
	ks.start, ks.end = ks.start+c.off, ks.end+c.off
	ks.ep = shiftEpisode(ks.ep, c.off)
	c.spikesNext = append(c.spikesNext, ks)
}

// keepTaken keeps spike ks, taken from the last analysis, for the next.
func (c *BaselineCache) keepTaken(ks *keptSpike) { c.spikesNext = append(c.spikesNext, *ks) }

// endSpikes makes the spikes kept by this analysis the next one's.
func (c *BaselineCache) endSpikes() {
	c.spikes, c.spikesNext = c.spikesNext, c.spikes
	c.spikesSynced = c.syncs
	c.rebased = nil
}

// shiftEpisode moves a spike's sample indices by k.
func shiftEpisode(ep episode, k int) episode {
	ep.first += k
	ep.last += k
	ep.peak += k
	return ep
}
