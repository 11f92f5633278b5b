package window

import "math"

// A job's event time (Job.newestNs), from which its window and settle
// delay are measured, is the second-newest of its ranks' newest event
// times; the newest while only one rank has data. One rank cannot move it:
// a rank whose clock runs ahead, or one bad timestamp, no longer makes the
// other ranks' data stale. The processor bounds how far ahead of the wall
// clock any timestamp may be (max_future_skew), which bounds what one
// outlier can do to a single-rank job. Ranks' newest times only grow, so
// the two newest are kept as they change, in constant time.
type watermark struct {
	// top is the rank with the newest time, topNs that time; secondNs is
	// the newest time of any other rank.
	top      *Rank
	topNs    int64
	secondNs int64
	// ranksWithTime counts the ranks that have a newest time.
	ranksWithTime int
}

func newWatermark() watermark {
	return watermark{topNs: math.MinInt64, secondNs: math.MinInt64}
}

// advance notes that rank rb received data at ts and moves the job's event
// time accordingly.
func (j *Job) advance(rb *Rank, ts int64) {
	if ts <= rb.newestNs {
		return
	}
	w := &j.wm
	if rb.newestNs == math.MinInt64 {
		w.ranksWithTime++
	}
	rb.newestNs = ts
	switch {
	case rb == w.top:
		w.topNs = ts
	case ts > w.topNs:
		w.secondNs = w.topNs
		w.top, w.topNs = rb, ts
	case ts > w.secondNs:
		w.secondNs = ts
	}
	if w.ranksWithTime < 2 {
		j.newestNs = w.topNs
	} else {
		j.newestNs = w.secondNs
	}
}

// RebuildWatermark recomputes the job's event time from its ranks' newest
// times (after a restore).
func (j *Job) RebuildWatermark() {
	j.wm = newWatermark()
	j.newestNs = math.MinInt64
	for _, rb := range j.ranks {
		ts := rb.newestNs
		rb.newestNs = math.MinInt64
		if ts != math.MinInt64 {
			j.advance(rb, ts)
		}
	}
}
