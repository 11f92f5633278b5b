package ingest

// deviceRef is a GPU on a host.
type deviceRef struct {
	host string
	dev  deviceKey
}

// rankRef is the (job, rank) a device was last seen serving.
type rankRef struct {
	job       string
	rank      int64
	localRank int64
	hasLocal  bool
	worldSize int64
	// ownNs is the wall-clock time of the owner's last own item (one that
	// named its rank and this host and device).
	ownNs int64
}

// deviceMap remembers, per (host, device), the (job, rank) that last
// reported telemetry carrying that host and device (contract §3.3), so that
// device-level points (DCGM, NVML) that carry no rank can be attributed.
//
// Only the owner's own telemetry keeps a mapping alive: it expires ttl after
// the owner's last own item, however often device points use it. Were joins
// to refresh it, a GPU's DCGM points would keep a finished job's mapping
// forever and recreate that job from them. And a device point that names its
// job is joined only to a mapping of that job: the GPU's last user being
// another job must not move its data there.
type deviceMap struct {
	m     map[deviceRef]*rankRef
	ttlNs int64
	max   int
	// full counts learn attempts refused because the map was at its bound.
	full uint64
	// last is the previous successful join: a device's points come in runs
	// (DCGM lists each GPU's points together), so most joins repeat it.
	last     deviceRef
	lastRef  *rankRef
	lastAtNs int64
	// version changes whenever a mapping is written or dropped, so that a
	// remembered join outcome (Converter.attrMemo) knows when it is stale.
	version uint64
}

func newDeviceMap(ttlNs int64, maxEntries int) *deviceMap {
	return &deviceMap{m: make(map[deviceRef]*rankRef), ttlNs: ttlNs, max: maxEntries}
}

// learn records that id (which has a rank) runs on its host and device(s).
func (d *deviceMap) learn(in *interner, id *identity, nowNs int64) {
	if id.host == "" || !id.hasRank {
		return
	}
	if id.devIndex >= 0 {
		d.put(in, deviceRef{host: id.host, dev: deviceKey{Index: id.devIndex}}, id, nowNs)
	}
	if id.devOpaque != "" {
		d.put(in, deviceRef{host: id.host, dev: deviceKey{Index: -1, Opaque: id.devOpaque}}, id, nowNs)
	}
}

func (d *deviceMap) put(in *interner, key deviceRef, id *identity, nowNs int64) {
	d.version++
	r, ok := d.m[key]
	if !ok {
		if len(d.m) >= d.max {
			d.full++
			return
		}
		key.host = in.intern(key.host)
		key.dev.Opaque = in.intern(key.dev.Opaque)
		r = &rankRef{}
		d.m[key] = r
		d.lastRef = nil // a new key may now win over the cached join
	}
	if r.job != id.job {
		r.job = in.intern(id.job)
	}
	r.rank, r.localRank, r.hasLocal, r.ownNs = id.rank, id.localRank, id.hasLocal, nowNs
	if id.worldSize > 0 {
		r.worldSize = id.worldSize
	}
}

// join fills id's job and rank from the mapping of its host and device (the
// index first, then the opaque id). It reports whether a mapping was found
// and taken: "" when it was, else why not (as a skip detail). A mapping of
// another job than the one id carries is not taken, and id is then left as
// it was. A join does not refresh the mapping.
func (d *deviceMap) join(id *identity, nowNs int64) (refused string) {
	const none = "no rank has reported this host and device within identity_ttl"
	if id.host == "" {
		return none
	}
	probe := deviceRef{host: id.host, dev: deviceKey{Index: id.devIndex, Opaque: id.devOpaque}}
	var r *rankRef
	if d.lastRef != nil && d.lastAtNs == nowNs && d.last == probe {
		r = d.lastRef
	} else {
		if id.devIndex >= 0 {
			r = d.lookup(deviceRef{host: id.host, dev: deviceKey{Index: id.devIndex}}, nowNs)
		}
		if r == nil && id.devOpaque != "" {
			r = d.lookup(deviceRef{host: id.host, dev: deviceKey{Index: -1, Opaque: id.devOpaque}}, nowNs)
		}
		if r == nil {
			return none
		}
		d.last, d.lastRef, d.lastAtNs = probe, r, nowNs
	}
	if id.hasJob && id.job != r.job {
		return "the point's job id is not the job of the rank last seen on this host and device"
	}
	id.job, id.hasJob = r.job, true
	id.rank, id.hasRank = r.rank, true
	id.localRank, id.hasLocal = r.localRank, r.hasLocal
	if id.worldSize == 0 {
		id.worldSize = r.worldSize
	}
	return ""
}

func (d *deviceMap) lookup(key deviceRef, nowNs int64) *rankRef {
	r, ok := d.m[key]
	if !ok || nowNs-r.ownNs > d.ttlNs {
		return nil
	}
	return r
}

// expire drops mappings whose owner sent no item of its own for longer than
// the TTL.
func (d *deviceMap) expire(nowNs int64) {
	d.lastRef = nil
	d.version++
	for k, r := range d.m {
		if nowNs-r.ownNs > d.ttlNs {
			delete(d.m, k)
		}
	}
}
