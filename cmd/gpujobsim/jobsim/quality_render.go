package jobsim

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// CommMemoryStatsEventType is the stormlog record of NCCL's own per-communicator memory
// accounting (evidence-mode §2.2). It carries none of the reference's marker tokens and
// is not a sample, so the reference mode reads it as neither.
const CommMemoryStatsEventType = "comm_memory_stats"

// KeyCommMemoryTotal is its metadata key for the bytes the communicator holds.
const KeyCommMemoryTotal = "nccl.comm.memory.total_bytes"

// KeyCumemEnabled is its metadata key saying whether NCCL allocates through cuMem
// (NCCL_CUMEM_ENABLE): false means its memory manager tracks none of its buffers.
const KeyCumemEnabled = "nccl.cumem_enabled"

// cumemAccounting is how NCCL's memory manager sees the job's buffers. NCCL's
// ncclCommMemStats counts only what it allocates through cuMem/VMM; with cuMem off
// (NCCL_CUMEM_ENABLE=0, still set by some stacks) its total stays at what little it
// still maps that way (NVLS buffers) while NCCL holds far more.
type cumemAccounting struct {
	off     bool  // the total does not follow NCCL's buffers
	flagged bool  // the records say so (nccl.cumem_enabled=false)
	tracked int64 // the constant the total reads
}

// commStatsIntervalNs is how often a rank reports NCCL's accounting (×its jitter).
const commStatsIntervalNs = 100 * msNs

// QualityCase is one generated job with known causes: its stormlog events in time order
// and the ground truth of what was injected.
type QualityCase struct {
	Events []telemetry.Event
	Truth  QualityTruth
}

// GenerateQualityCase builds family's job for seed on shape. The same arguments give
// the same case; ncclStats only adds comm_memory_stats records (every other event is
// identical with and without them).
func GenerateQualityCase(family string, seed int64, shape QualityShape, ncclStats bool) (*QualityCase, error) {
	fam, ok := QualityFamilyByName(family)
	if !ok {
		return nil, fmt.Errorf("unknown quality family %q", family)
	}
	if adjust, ok := familyShapes[family]; ok {
		shape = adjust(shape)
	}
	if err := shape.Validate(); err != nil {
		return nil, err
	}
	j := newQualityJob(family, seed, shape)
	fam.build(j)
	c := j.render(ncclStats)
	c.Truth.Description = fam.Description
	if fam.note != nil {
		c.Truth.VariantNote = fam.note(j)
	} else {
		c.Truth.VariantNote = fmt.Sprintf("%d steps", len(j.steps))
	}
	return c, nil
}

func (j *qualityJob) hiddenAt(r int, t int64) int64 {
	h := j.baseHidden[r]
	for _, o := range j.overlays[r] {
		if o.start <= t && (o.open || t < o.end) {
			h += o.bytes + int64(o.slope*float64(t-o.start))
		}
	}
	return h
}

// clockOffset is host's clock minus true time at true time t: a fixed offset plus
// a drift that grows with the time since the job's start.
func (j *qualityJob) clockOffset(host int, t int64) int64 {
	return j.hostOffset[host] + int64(j.driftPPM[host]*1e-6*float64(t-j.t0))
}

// process is the number of rank r's processes that have ended before true time t
// (0 while its first one runs); ok is false while none runs.
func (j *qualityJob) process(r int, t int64) (n int, ok bool) {
	for _, d := range j.dead[r] {
		if t >= d[1] {
			n++
		} else if t >= d[0] {
			return n, false
		}
	}
	return n, true
}

func (j *qualityJob) alive(r int, t int64) bool {
	_, ok := j.process(r, t)
	return ok
}

// sampleTimes draws the sampling instants (true time) at interval ×U(jitter) over the job.
func (j *qualityJob) sampleTimes(interval float64) []int64 {
	var times []int64
	for t := float64(j.t0) + j.uniform(0, interval); t < float64(j.tEnd); t += interval * j.uniform(j.jitter[0], j.jitter[1]) {
		times = append(times, int64(t))
	}
	return times
}

func (j *qualityJob) reservedAt(r int, t int64) int64 {
	v := j.baseReserved[r]
	for _, g := range j.reservedSteps[r] {
		if g[0] <= t {
			v += g[1]
		}
	}
	return v
}

// renderItem is one record of a rank before its memory fields are filled in.
type renderItem struct {
	t     int64
	order int // samples before markers before step events at the same time
	m     *qualityMarker
	step  int
}

func (j *qualityJob) render(ncclStats bool) *QualityCase {
	n := j.shape.Ranks
	events := make([]telemetry.Event, 0, j.eventEstimate())
	sampleTimes := make([][]int64, n)
	sampleIdx := make([][]int, n) // index in events of each sample, per rank
	rankInfo := map[string]QualityRankInfo{}
	sampleMeta := map[string]any{"backend": "cuda", "sampling_source": "nvml"}
	if j.hostPollHz > 0 {
		sampleMeta = map[string]any{"backend": "cuda", "sampling_source": "dcgm"}
	}
	hostTimes := make([][]int64, j.hosts)
	for r := range n {
		host := j.hostOf(r)
		var times []int64
		switch {
		case j.hostPollHz <= 0:
			times = j.sampleTimes(float64(secNs) / j.sampleHz[r])
		case hostTimes[host] != nil:
			times = slices.Clone(hostTimes[host])
		default:
			hostTimes[host] = j.sampleTimes(float64(secNs) / j.hostPollHz)
			times = slices.Clone(hostTimes[host])
		}
		times = slices.DeleteFunc(times, func(t int64) bool { return !j.alive(r, t) })
		sampleTimes[r] = times
		items := make([]renderItem, 0, len(times)+len(j.markers[r])+len(j.steps))
		for _, t := range times {
			items = append(items, renderItem{t: t, order: 0})
		}
		for i := range j.markers[r] {
			if j.alive(r, j.markers[r][i].t) {
				items = append(items, renderItem{t: j.markers[r][i].t, order: 1, m: &j.markers[r][i]})
			}
		}
		for _, s := range j.steps {
			if j.alive(r, s.start) {
				items = append(items, renderItem{t: s.start, order: 2, step: s.k})
			}
		}
		slices.SortStableFunc(items, func(a, b renderItem) int {
			return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.order, b.order))
		})
		session, hostName := fmt.Sprintf("%s-r%02d", j.jobID, r), fmt.Sprintf("node-%d", host)
		sigma := math.Hypot(j.noiseSigma[r], j.churn[r])
		intervalMs := int64(math.Round(1000 / j.sampleHz[r]))
		var prevAlloc int64
		first := true
		for _, it := range items {
			var noise float64
			if it.order == 0 {
				noise = j.rng.NormFloat64() * sigma
			}
			reserved := j.reservedAt(r, it.t)
			gap := max(0, int64(math.Round((float64(j.hiddenAt(r, it.t))+noise)/float64(pageSz)))*pageSz)
			used := min(j.shape.DeviceTotal, reserved+gap)
			alloc := reserved - int64(float64(reserved)*j.uniform(0.03, 0.12))/512*512
			var change int64
			if !first {
				change = alloc - prevAlloc
			}
			first, prevAlloc = false, alloc
			sess, pid := session, int64(20000+17*r)
			if k, _ := j.process(r, it.t); k > 0 {
				sess, pid = fmt.Sprintf("%s-%d", session, k), pid+int64(1000*k)
			}
			e := telemetry.Event{
				SchemaVersion: 3, SessionID: sess, TimestampNs: it.t + j.clockOffset(host, it.t),
				Collector: "stormlog.cuda_tracker", SamplingIntervalMs: intervalMs, PID: pid,
				Host: hostName, JobID: j.jobID, Rank: int64(r), LocalRank: int64(r % j.shape.RanksPerHost),
				WorldSize: int64(n), DeviceID: int64(r % j.shape.RanksPerHost),
				AllocatorAllocatedBytes: telemetry.Int(alloc), AllocatorReservedBytes: telemetry.Int(reserved),
				AllocatorActiveBytes: telemetry.Int(alloc), AllocatorInactiveBytes: telemetry.Int(reserved - alloc),
				AllocatorChangeBytes: telemetry.Int(change), DeviceUsedBytes: telemetry.Int(used),
				DeviceFreeBytes: telemetry.Int(j.shape.DeviceTotal - used), DeviceTotalBytes: telemetry.Int(j.shape.DeviceTotal),
			}
			switch {
			case it.order == 0:
				e.EventType, e.Metadata = "sample", sampleMeta
				sampleIdx[r] = append(sampleIdx[r], len(events))
			case it.m != nil:
				id := it.m.id
				e.EventType = "nccl:" + id.Op
				e.Context, e.HasContext = markerContext(id), true
				e.Metadata = id.Metadata(it.m.duration)
				e.Metadata["marker_source"] = "nccl_profiler"
			default:
				e.EventType = "step_begin"
				e.Context, e.HasContext = fmt.Sprintf("train step %d", it.step), true
				e.Metadata = map[string]any{"step": jsonInt(int64(it.step))}
			}
			events = append(events, e)
		}
		rankInfo[fmt.Sprint(r)] = QualityRankInfo{
			Host: hostName, ClockOffsetNs: j.hostOffset[host], ClockDriftPPM: j.driftPPM[host], SamplingHz: math.Round(j.sampleHz[r]*1000) / 1000,
			NSamples: len(times), FirstSampleNs: times[0] + j.clockOffset(host, times[0]), LastSampleNs: times[len(times)-1] + j.clockOffset(host, times[len(times)-1]),
			NMarkers: len(j.markers[r]), BaselineHiddenBytes: j.baseHidden[r], NoiseSigmaBytes: int64(sigma),
		}
	}
	baselines := j.commBaselines()
	stats := 0
	if ncclStats {
		extra := j.renderCommStats(events, sampleIdx, baselines)
		stats = len(extra)
		events = append(events, extra...)
	}
	// By (time, rank), then as built: at equal (time, rank) samples and markers keep
	// their order and stats come last. Sorting indices moves 4 bytes instead of an Event.
	order := make([]int32, len(events))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ea, eb := &events[a], &events[b]
		return cmp.Or(cmp.Compare(ea.TimestampNs, eb.TimestampNs), cmp.Compare(ea.Rank, eb.Rank), cmp.Compare(a, b))
	})
	sorted := make([]telemetry.Event, len(events))
	for i, ix := range order {
		sorted[i] = events[ix]
	}
	events = sorted
	for r := range n {
		info := rankInfo[fmt.Sprint(r)]
		info.CommBaselineBytes = baselines[r]
		for c, freed := range j.commFreed {
			if t, ok := freed[r]; ok {
				if info.CommFreedNs == nil {
					info.CommFreedNs = map[string]int64{}
				}
				info.CommFreedNs[c] = t + j.clockOffset(j.hostOf(r), t)
			}
		}
		rankInfo[fmt.Sprint(r)] = info
	}
	return &QualityCase{Events: events, Truth: j.truth(rankInfo, sampleTimes, ncclStats, stats)}
}

// eventEstimate is about the number of events render writes without NCCL's accounting.
func (j *qualityJob) eventEstimate() int {
	n := 0
	for r := range j.shape.Ranks {
		n += int(float64(j.duration)/float64(secNs)*j.sampleHz[r]*1.1) + len(j.markers[r]) + len(j.steps)
	}
	return n
}

func markerContext(id MarkerIdentity) string {
	if id.Peer >= 0 {
		return fmt.Sprintf("NCCL %s peer %d seq %d (%d bytes)", id.Op, id.Peer, id.Seq, id.MessageBytes)
	}
	return fmt.Sprintf("NCCL %s comm %s seq %d (%d bytes)", id.Op, id.CommID, id.Seq, id.MessageBytes)
}

// commBaselines draws NCCL's persistent memory per (rank, communicator), by comm name,
// from its own random stream. It is part of the rank's baseline hidden memory: when the
// draws exceed 60 % of that baseline they are scaled down.
func (j *qualityJob) commBaselines() []map[string]int64 {
	rng := seededRand("collectiveattr-quality", j.family, fmt.Sprint(j.seed), "comm-baseline")
	lo, hi := j.shape.CommBaseline[0]/pageSz, j.shape.CommBaseline[1]/pageSz
	var comms []string
	for c := range j.members {
		comms = append(comms, c)
	}
	slices.Sort(comms)
	out := make([]map[string]int64, j.shape.Ranks)
	for r := range out {
		draws := map[string]int64{}
		var total int64
		for _, c := range comms {
			if slices.Contains(j.members[c], r) {
				draws[c] = (lo + rng.Int64N(hi-lo+1)) * pageSz
				if j.manager[c] == "" {
					total += draws[c]
				}
			}
		}
		if limit := int64(0.6*float64(j.baseHidden[r])) / pageSz * pageSz; total > limit {
			for c, v := range draws {
				draws[c] = v * limit / total / pageSz * pageSz
			}
		}
		// A communicator created during the run holds nothing before it: its memory is
		// a true persistent episode. A size the family's physics fixed stays.
		for c := range draws {
			if life, ok := j.commLife[c]; ok && life[0] > j.t0 {
				draws[c] = 0
			}
			if v, ok := j.commBase[c][r]; ok {
				draws[c] = v
			}
		}
		// A communicator split with shared resources reports its parent's manager.
		for c := range draws {
			if m := j.manager[c]; m != "" {
				draws[c] = draws[m]
			}
		}
		out[r] = draws
	}
	return out
}

// managerOf is the communicator whose memory manager c's accounting reads.
func (j *qualityJob) managerOf(c string) string {
	if m := j.manager[c]; m != "" {
		return m
	}
	return c
}

// renderCommStats writes NCCL's accounting: every rank, every statsIntervalNs (×its
// jitter), one record per communicator it belongs to while it exists, holding the
// baseline plus every true collective episode of that rank on any communicator of the
// same memory manager while it is active (with cuMem off: the constant the manager
// tracks). Decoys never change it. The memory fields are copied from the rank's latest
// sample.
func (j *qualityJob) renderCommStats(events []telemetry.Event, sampleIdx [][]int, baselines []map[string]int64) []telemetry.Event {
	rng := seededRand("collectiveattr-quality", j.family, fmt.Sprint(j.seed), "nccl-stats")
	var out []telemetry.Event
	for r := range j.shape.Ranks {
		host := j.hostOf(r)
		off := j.hostOffset[host]
		var comms []string
		for c := range baselines[r] {
			comms = append(comms, c)
		}
		slices.Sort(comms)
		idx := sampleIdx[r]
		if len(comms) == 0 || len(idx) == 0 {
			continue
		}
		i := 0
		for t := float64(events[idx[0]].TimestampNs-off) + rng.Float64()*float64(j.statsIntervalNs); t < float64(j.tEnd); t += float64(j.statsIntervalNs) * (j.jitter[0] + (j.jitter[1]-j.jitter[0])*rng.Float64()) {
			ts := int64(t)
			off = j.clockOffset(host, ts)
			for i+1 < len(idx) && events[idx[i+1]].TimestampNs-j.clockOffset(host, events[idx[i+1]].TimestampNs) <= ts {
				i++
			}
			if !j.alive(r, ts) {
				continue
			}
			for _, c := range comms {
				if life, ok := j.commLife[c]; ok && (ts < life[0] || ts >= life[1]) {
					continue
				}
				m := j.managerOf(c)
				total := baselines[r][c]
				for _, e := range j.truthCollective {
					if e.Rank == r && j.managerOf(e.Comm) == m && e.start <= ts && (e.open || ts < e.end) {
						total += e.Bytes
					}
				}
				if j.cumem.off {
					total = j.cumem.tracked
				}
				x := events[idx[i]]
				x.TimestampNs, x.EventType, x.SamplingIntervalMs = ts+off, CommMemoryStatsEventType, j.statsIntervalNs/msNs
				x.AllocatorChangeBytes = telemetry.Int(0)
				x.Context, x.HasContext = "", false
				x.Metadata = map[string]any{KeyCommID: j.commID(c), KeyCommMemoryTotal: jsonInt(total)}
				if j.cumem.flagged {
					x.Metadata[KeyCumemEnabled] = false
				}
				out = append(out, x)
			}
		}
	}
	return out
}

func (j *qualityJob) truth(ranks map[string]QualityRankInfo, sampleTimes [][]int64, ncclStats bool, stats int) QualityTruth {
	comms := map[string]QualityComm{}
	for name, m := range j.members {
		comms[name] = QualityComm{ID: j.commID(name), NRanks: len(m), Ranks: slices.Clone(m), Manager: j.manager[name]}
	}
	toRankClock := func(es []episode) []QualityEpisode {
		out := make([]QualityEpisode, 0, len(es))
		for _, e := range es {
			q := e.QualityEpisode
			host := j.hostOf(e.Rank)
			for _, t := range sampleTimes[e.Rank] {
				if e.start <= t && (e.open || t < e.end) {
					q.SamplesObserved++
				}
			}
			q.StartNs = e.start + j.clockOffset(host, e.start)
			if e.open {
				q.EndNs = ranks[fmt.Sprint(e.Rank)].LastSampleNs
				q.RecallEndNs = q.StartNs + int64(PersistentRecallWindow)
			} else {
				q.EndNs = e.end + j.clockOffset(host, e.end)
			}
			out = append(out, q)
		}
		return out
	}
	return QualityTruth{
		Family: j.family, Seed: j.seed, Variant: j.variant, JobID: j.jobID,
		WorldSize: j.shape.Ranks, Hosts: j.hosts, DeviceTotalBytes: j.shape.DeviceTotal, DurationNs: j.duration,
		Steps: len(j.steps), StepMeanNs: j.stepMean, Params: j.params, Ranks: ranks,
		PersistentRecallWindowNs: int64(PersistentRecallWindow), Comms: comms,
		NCCLStats:  QualityStatsInfo{Written: ncclStats, Records: stats, EventType: CommMemoryStatsEventType, IntervalNs: j.statsIntervalNs},
		Collective: toRankClock(j.truthCollective), Decoys: toRankClock(j.decoys),
	}
}
