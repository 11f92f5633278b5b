package ingest

// deviceRef is a GPU on a host as one side of the join names it: by index
// (index >= 0, uuid ""), or by UUID (index -1), optionally narrowed to one
// MIG GPU instance of that GPU (instance >= 0).
type deviceRef struct {
	host     string
	index    int64
	uuid     string
	instance int64
}

// claimant is a (job, rank) whose own telemetry named a device.
type claimant struct {
	job       string
	rank      int64
	localRank int64
	hasLocal  bool
	worldSize int64
	// uuid is the GPU UUID the rank reported with an index claim ("" when
	// none): a point naming another UUID is not this rank's GPU, whatever
	// the index says (ranks in containers all see their GPU as index 0).
	uuid string
	// firstNs and ownNs are the wall-clock times of the claimant's first
	// and last own items naming the device.
	firstNs, ownNs int64
}

// claims are the ranks that named one device, and for a GPU (index -1,
// instance -1) when a rank last named one of its MIG instances.
type claims struct {
	ranks []claimant
	// instanceNs is the newest own item naming a MIG instance of this GPU,
	// when hasInstances.
	instanceNs   int64
	hasInstances bool
}

// maxClaimants bounds the ranks remembered per device: beyond two the
// device is shared whoever the others are, so the oldest is replaced.
const maxClaimants = 4

// handoverGapNs is how long a claimant must have been silent before a new
// one's first item for the device to have changed hands rather than be
// shared: more than the identity memo's refresh period, which is how stale
// a claimant's last-item time may be.
const handoverGapNs = int64(2 * learnRefresh)

// deviceMap remembers, per device, the ranks whose own telemetry named it
// (contract §3.3), so that device-level points (DCGM, NVML) that carry no
// rank can be attributed, and attributed only when that is unambiguous
// (docs/gpu-metrics-join.md):
//
//   - by GPU UUID first (and MIG instance, when the point names one);
//   - by (host, index) only when exactly one live rank claims it and that
//     rank reported no other UUID than the point's;
//   - a device claimed by two live ranks (of one job or of several) is
//     shared: its device-wide memory belongs to none of them alone.
//
// A rank is live for a device until identity_ttl after its last own item
// naming it, or until another rank claims the device having started after
// it went silent (a handover: the next job on the GPU).
//
// Only the claimants' own telemetry keeps a claim alive: were joins to
// refresh it, a GPU's DCGM points would keep a finished job's claim forever.
// And a device point that names its job is joined only to a claim of that
// job: the GPU's user being another job must not move its data there.
type deviceMap struct {
	m     map[deviceRef]*claims
	ttlNs int64
	max   int
	// full counts learn attempts refused because the map was at its bound.
	full uint64
	// version changes whenever a claim is written or dropped, so that a
	// remembered join outcome (identityResolver.attrMemo, last) knows when it is
	// stale.
	version uint64
	// last is the previous join: a device's points come in runs (DCGM
	// lists each GPU's points together), so most joins repeat it.
	last        deviceRef
	lastOut     joinOutcome
	lastAtNs    int64
	lastVersion uint64
	lastValid   bool
	// live is scratch for the live claimants of one lookup.
	live []*claimant
}

// joinOutcome is the result of a join: the claimant joined, or why none.
type joinOutcome struct {
	owner  *claimant
	reason SkipReason
	detail string
}

func newDeviceMap(ttlNs int64, maxEntries int) *deviceMap {
	return &deviceMap{m: make(map[deviceRef]*claims), ttlNs: ttlNs, max: maxEntries}
}

// learn records that id (which has a rank) runs on its host and device(s).
func (d *deviceMap) learn(in *interner, id *identity, nowNs int64) {
	if id.host == "" || !id.hasRank {
		return
	}
	if id.devIndex >= 0 && id.migInstance < 0 {
		d.put(in, deviceRef{host: id.host, index: id.devIndex, uuid: "", instance: -1}, id, nowNs)
	}
	if id.devOpaque != "" {
		d.put(in, deviceRef{host: id.host, index: -1, uuid: id.devOpaque, instance: id.migInstance}, id, nowNs)
		if id.migInstance >= 0 {
			if c := d.entry(in, deviceRef{host: id.host, index: -1, uuid: id.devOpaque, instance: -1}); c != nil {
				c.instanceNs, c.hasInstances = nowNs, true
			}
		}
	}
}

// entry returns the claims of key, created within the bound; nil when the
// map is full.
func (d *deviceMap) entry(in *interner, key deviceRef) *claims {
	d.version++
	c, ok := d.m[key]
	if !ok {
		if len(d.m) >= d.max {
			d.full++
			return nil
		}
		key.host = in.intern(key.host)
		key.uuid = in.intern(key.uuid)
		c = &claims{}
		d.m[key] = c
	}
	return c
}

func (d *deviceMap) put(in *interner, key deviceRef, id *identity, nowNs int64) {
	c := d.entry(in, key)
	if c == nil {
		return
	}
	var r *claimant
	for i := range c.ranks {
		if c.ranks[i].rank == id.rank && c.ranks[i].job == id.job {
			r = &c.ranks[i]
			break
		}
	}
	if r == nil {
		if len(c.ranks) < maxClaimants {
			c.ranks = append(c.ranks, claimant{})
			r = &c.ranks[len(c.ranks)-1]
		} else {
			r = &c.ranks[0]
			for i := range c.ranks {
				if c.ranks[i].ownNs < r.ownNs {
					r = &c.ranks[i]
				}
			}
		}
		*r = claimant{job: in.intern(id.job), rank: id.rank, firstNs: nowNs}
	}
	r.localRank, r.hasLocal, r.ownNs = id.localRank, id.hasLocal, nowNs
	if id.worldSize > 0 {
		r.worldSize = id.worldSize
	}
	if key.index >= 0 && id.devOpaque != r.uuid {
		r.uuid = in.intern(id.devOpaque)
	}
}

// liveClaimants returns the claimants of c that are live at nowNs: within
// the TTL of their last own item, and not handed over to a claimant that
// started after they went silent. The slice is scratch.
func (d *deviceMap) liveClaimants(c *claims, nowNs int64) []*claimant {
	live := d.live[:0]
	for i := range c.ranks {
		r := &c.ranks[i]
		if nowNs-r.ownNs > d.ttlNs {
			continue
		}
		handedOver := false
		for j := range c.ranks {
			if j != i && c.ranks[j].firstNs-r.ownNs > handoverGapNs {
				handedOver = true
				break
			}
		}
		if !handedOver {
			live = append(live, r)
		}
	}
	d.live = live
	return live
}

const (
	detailNoClaim    = "no rank has reported this host and device within identity_ttl"
	detailOtherJob   = "the point's job id is not the job of the rank using this host and device"
	detailOtherUUID  = "the only rank claiming this host and GPU index reported another GPU UUID (ranks in containers see their GPU as index 0): join by UUID"
	detailShared     = "GPU used by several live ranks (time-slicing, MPS, or several jobs): its device-wide memory is no one rank's"
	detailAmbiguous  = "host and GPU index claimed by several live ranks and the GPU UUID joined none: send gpu.uuid from the ranks"
	detailMIGNoInst  = "MIG instance point of a GPU its rank names without a MIG instance: send gpu.mig.instance_id from the ranks"
	detailMIGWhole   = "whole-GPU point of a MIG-partitioned GPU: its memory is no one instance's"
	detailNoInstance = "no rank has reported this MIG instance within identity_ttl"
)

// join fills id's job and rank from the claims on its host and device. It
// returns "" when it did, else the skip reason and detail, leaving id as
// it was. A join does not refresh a claim.
func (d *deviceMap) join(id *identity, nowNs int64) (SkipReason, string) {
	if id.host == "" {
		return SkipUnjoinable, detailNoClaim
	}
	probe := deviceRef{host: id.host, index: id.devIndex, uuid: id.devOpaque, instance: id.migInstance}
	out := d.lastOut
	if !d.lastValid || d.lastAtNs != nowNs || d.lastVersion != d.version || d.last != probe {
		out = d.lookup(probe, nowNs)
		d.last, d.lastOut, d.lastAtNs, d.lastVersion, d.lastValid = probe, out, nowNs, d.version, true
	}
	if out.owner == nil {
		return out.reason, out.detail
	}
	r := out.owner
	if id.hasJob && id.job != r.job {
		return SkipUnjoinable, detailOtherJob
	}
	id.job, id.hasJob = r.job, true
	id.rank, id.hasRank = r.rank, true
	id.localRank, id.hasLocal = r.localRank, r.hasLocal
	if id.worldSize == 0 {
		id.worldSize = r.worldSize
	}
	id.viaDevice = true
	return "", ""
}

// lookup decides the join of a device point (see deviceMap).
func (d *deviceMap) lookup(p deviceRef, nowNs int64) joinOutcome {
	if p.uuid != "" {
		if p.instance >= 0 {
			if out, ok := d.unique(deviceRef{host: p.host, index: -1, uuid: p.uuid, instance: p.instance}, nowNs, SkipSharedDevice, detailShared); ok {
				return out
			}
			if c := d.m[deviceRef{host: p.host, index: -1, uuid: p.uuid, instance: -1}]; c != nil && len(d.liveClaimants(c, nowNs)) > 0 {
				return joinOutcome{reason: SkipMIGUnmapped, detail: detailMIGNoInst}
			}
			// A MIG instance point's index is its parent GPU's: no index
			// fallback.
			return joinOutcome{reason: SkipUnjoinable, detail: detailNoInstance}
		}
		whole := deviceRef{host: p.host, index: -1, uuid: p.uuid, instance: -1}
		if out, ok := d.unique(whole, nowNs, SkipSharedDevice, detailShared); ok {
			return out
		}
		if c := d.m[whole]; c != nil && c.hasInstances && nowNs-c.instanceNs <= d.ttlNs {
			return joinOutcome{reason: SkipMIGUnmapped, detail: detailMIGWhole}
		}
	}
	if p.index < 0 {
		return joinOutcome{reason: SkipUnjoinable, detail: detailNoClaim}
	}
	if p.instance >= 0 {
		// An instance point without the GPU's UUID: which instance is whose
		// cannot be told.
		return joinOutcome{reason: SkipMIGUnmapped, detail: detailMIGNoInst}
	}
	out, ok := d.unique(deviceRef{host: p.host, index: p.index, instance: -1}, nowNs, SkipAmbiguousDevice, detailAmbiguous)
	if !ok {
		return joinOutcome{reason: SkipUnjoinable, detail: detailNoClaim}
	}
	if out.owner != nil && p.uuid != "" && out.owner.uuid != "" && out.owner.uuid != p.uuid {
		return joinOutcome{reason: SkipUnjoinable, detail: detailOtherUUID}
	}
	return out
}

// unique returns the one live claimant of key, or the refusal (reason,
// detail) when there are several; ok is false when there is none.
func (d *deviceMap) unique(key deviceRef, nowNs int64, reason SkipReason, detail string) (joinOutcome, bool) {
	c := d.m[key]
	if c == nil {
		return joinOutcome{}, false
	}
	switch live := d.liveClaimants(c, nowNs); len(live) {
	case 0:
		return joinOutcome{}, false
	case 1:
		return joinOutcome{owner: live[0]}, true
	default:
		return joinOutcome{reason: reason, detail: detail}, true
	}
}

// expire drops claimants silent for longer than the TTL, and devices left
// with none.
func (d *deviceMap) expire(nowNs int64) {
	d.lastValid = false
	d.version++
	for k, c := range d.m {
		kept := c.ranks[:0]
		for _, r := range c.ranks {
			if nowNs-r.ownNs <= d.ttlNs {
				kept = append(kept, r)
			}
		}
		clear(c.ranks[len(kept):])
		c.ranks = kept
		if len(kept) == 0 && (!c.hasInstances || nowNs-c.instanceNs > d.ttlNs) {
			delete(d.m, k)
		}
	}
}
