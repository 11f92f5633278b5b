package ingest

import (
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// idField is one identity field of contract §2.
type idField uint8

const (
	fieldJob idField = iota
	fieldRank
	fieldLocalRank
	fieldWorldSize
	fieldHost
	fieldDevice
	fieldMIGInstance
	fieldProcess
	fieldProcessStart
	numFields
)

// keySlot says which field an attribute key feeds and its priority (lower
// wins: the key's position in the configured list).
type keySlot struct {
	field idField
	prio  uint16
}

// keyIndex maps every configured identity key to its slots, so that one
// pass over an attribute map finds every field instead of one linear Map.Get
// per configured key. A bitset of (length, first byte) of the keys rejects
// most other attribute keys (DCGM's modelName, pci_bus_id, device, ...)
// before any hashing; the rest are looked up in a small open-addressing
// table hashed on the key's length and three of its bytes, which costs a
// fraction of a map lookup's full-string hash.
type keyIndex struct {
	table []keyEntry // a power of two long, at most a quarter full
	maybe namePrefilter
}

// namePrefilter is a set of names as one bit per (length mod 64, first
// byte): a name it holds no bit for is not in the set, which most names
// asked about are not, and telling costs two loads, no hashing.
type namePrefilter [64][4]uint64

// add sets the bit of a non-empty name.
func (p *namePrefilter) add(name string) {
	b := name[0]
	p[len(name)&63][b>>6] |= 1 << (b & 63)
}

// mayHold reports whether name may be in the set: false for "" and for
// most names not added, cheaply enough to inline at every attribute.
func (p *namePrefilter) mayHold(name string) bool {
	return name != "" && p[len(name)&63][name[0]>>6]&(1<<(name[0]&63)) != 0
}

type keyEntry struct {
	key   string // "": empty slot
	slots []keySlot
}

// keySlots returns the slots of every configured key and the keys in the
// order they were first configured.
func keySlots(keys IdentityKeys) (slots map[string][]keySlot, order []string) {
	slots = map[string][]keySlot{}
	add := func(f idField, list []string) {
		for i, k := range list {
			if i > math.MaxUint16 || k == "" {
				continue
			}
			if _, ok := slots[k]; !ok {
				order = append(order, k)
			}
			slots[k] = append(slots[k], keySlot{field: f, prio: uint16(i)})
		}
	}
	add(fieldJob, keys.JobID)
	add(fieldRank, keys.Rank)
	add(fieldLocalRank, keys.LocalRank)
	add(fieldWorldSize, keys.WorldSize)
	add(fieldHost, keys.Host)
	add(fieldDevice, keys.Device)
	add(fieldMIGInstance, keys.MIGInstance)
	add(fieldProcess, keys.Process)
	add(fieldProcessStart, keys.ProcessStart)
	return slots, order
}

func newKeyIndex(keys IdentityKeys) *keyIndex {
	slots, order := keySlots(keys)
	n := 8
	for n < 4*len(order) {
		n *= 2
	}
	idx := &keyIndex{table: make([]keyEntry, n)}
	for _, k := range order {
		idx.maybe.add(k)
		h := keyHash(k) & uint32(n-1)
		for idx.table[h].key != "" {
			h = (h + 1) & uint32(n-1)
		}
		idx.table[h] = keyEntry{key: k, slots: slots[k]}
	}
	return idx
}

// keyHash mixes a non-empty key's length and first, middle and last bytes.
func keyHash(k string) uint32 {
	n := len(k)
	return uint32(n)*0x9E3779B1 ^ uint32(k[0])*0x85EBCA77 ^ uint32(k[n/2])*0xC2B2AE3D ^ uint32(k[n-1])*0x27D4EB2F
}

// mayHold reports whether k may be a configured key: false for most other
// keys, cheaply enough to inline at every attribute.
func (idx *keyIndex) mayHold(k string) bool { return idx.maybe.mayHold(k) }

// lookup returns the slots of an attribute key, or nil.
func (idx *keyIndex) lookup(k string) []keySlot {
	if !idx.mayHold(k) {
		return nil
	}
	mask := uint32(len(idx.table) - 1)
	for h := keyHash(k) & mask; ; h = (h + 1) & mask {
		e := &idx.table[h]
		if e.key == k {
			return e.slots
		}
		if e.key == "" {
			return nil
		}
	}
}

// rawIdentity holds, per field, the highest-priority value found in one
// attribute map. Device keeps two candidates: the best index-valued one and
// the best opaque (string) one.
type rawIdentity struct {
	// anyFound says some field or the opaque device was found.
	anyFound bool
	found    [numFields]bool
	prio     [numFields]uint16
	val      [numFields]pcommon.Value
	// opaque device candidate (e.g. a GPU UUID).
	opaqueFound bool
	opaquePrio  uint16
	opaque      string
}

// reset forgets every field; the values and priorities are read only where
// found, so they are left as they are.
func (r *rawIdentity) reset() {
	r.found = [numFields]bool{}
	r.opaqueFound, r.anyFound = false, false
}

// drop forgets every field and the values found, which belong to the
// input.
func (r *rawIdentity) drop() {
	*r = rawIdentity{}
}

// any reports whether any identity key was found.
func (r *rawIdentity) any() bool { return r.anyFound }

// scan records the identity keys of m. Empty strings count as absent.
func (r *rawIdentity) scan(idx *keyIndex, m pcommon.Map) {
	if m.Len() == 0 {
		return
	}
	for k, v := range m.All() {
		if idx.mayHold(k) {
			for _, s := range idx.lookup(k) {
				r.offer(s, v)
			}
		}
	}
}

func (r *rawIdentity) offer(s keySlot, v pcommon.Value) {
	if v.Type() == pcommon.ValueTypeStr && strings.TrimSpace(v.Str()) == "" {
		return
	}
	if s.field == fieldDevice {
		if _, ok := deviceIndex(v); !ok {
			if v.Type() != pcommon.ValueTypeStr {
				return
			}
			if !r.opaqueFound || s.prio < r.opaquePrio {
				r.opaqueFound, r.opaquePrio, r.opaque, r.anyFound = true, s.prio, v.Str(), true
			}
			return
		}
	}
	if !r.found[s.field] || s.prio < r.prio[s.field] {
		r.found[s.field], r.prio[s.field], r.val[s.field], r.anyFound = true, s.prio, v, true
	}
}

// identity is the resolved identity of one item.
type identity struct {
	job       string
	hasJob    bool
	rank      int64
	hasRank   bool
	localRank int64
	hasLocal  bool
	worldSize int64 // 0 = unknown
	host      string
	devIndex  int64 // -1 = unknown
	devOpaque string
	// migInstance is the MIG GPU instance id within the GPU devOpaque
	// names, -1 when none.
	migInstance int64
	// viaDevice says job and rank came from the device map (a device-level
	// point), not from the item's own attributes.
	viaDevice bool
	// pid is the id of the process that sent the item (-1: unknown) and
	// procStart its start time as sent ("": unknown).
	pid       int64
	procStart string
}

func (id *identity) hasDevice() bool { return id.devIndex >= 0 || id.devOpaque != "" }

// resolve merges the item's raw identity over its resource's (contract §2:
// the item's attributes first, then the resource's; per field the first key
// present wins) and parses the values. A present value of the wrong form is
// an error (invalid_value), never silently replaced by a lower-priority one.
func resolve(item, res *rawIdentity, out *identity) (detail string) {
	*out = identity{devIndex: -1, migInstance: -1, pid: -1}
	pick := func(f idField) (pcommon.Value, bool) {
		if item.found[f] {
			return item.val[f], true
		}
		if res.found[f] {
			return res.val[f], true
		}
		return pcommon.Value{}, false
	}
	if v, ok := pick(fieldJob); ok {
		s, ok := jobValue(v)
		if !ok {
			return "job id is not a string or integer"
		}
		out.job, out.hasJob = s, true
	}
	if v, ok := pick(fieldRank); ok {
		n, ok := intValue(v)
		if !ok || n < 0 {
			return "rank is not a non-negative integer"
		}
		out.rank, out.hasRank = n, true
	}
	if v, ok := pick(fieldLocalRank); ok {
		n, ok := intValue(v)
		if !ok || n < 0 {
			return "local rank is not a non-negative integer"
		}
		out.localRank, out.hasLocal = n, true
	}
	if v, ok := pick(fieldWorldSize); ok {
		n, ok := intValue(v)
		if !ok || n < 1 {
			return "world size is not a positive integer"
		}
		out.worldSize = n
	}
	if out.worldSize > 0 {
		if out.hasRank && out.rank >= out.worldSize {
			return "rank is not below world size"
		}
		if out.hasLocal && out.localRank >= out.worldSize {
			return "local rank is not below world size"
		}
	}
	if v, ok := pick(fieldHost); ok && v.Type() == pcommon.ValueTypeStr {
		out.host = strings.TrimSpace(v.Str())
	}
	if v, ok := pick(fieldDevice); ok {
		out.devIndex, _ = deviceIndex(v)
	}
	if v, ok := pick(fieldMIGInstance); ok {
		n, ok := intValue(v)
		if !ok || n < 0 {
			return "MIG instance id is not a non-negative integer"
		}
		out.migInstance = n
	}
	if v, ok := pick(fieldProcess); ok {
		if n, ok := intValue(v); ok && n >= 0 {
			out.pid = n
		}
	}
	if v, ok := pick(fieldProcessStart); ok {
		out.procStart = processStart(v)
	}
	switch {
	case item.opaqueFound:
		out.devOpaque = item.opaque
	case res.opaqueFound:
		out.devOpaque = res.opaque
	}
	return ""
}

// processStart reads a process start time: a string as sent (ISO 8601
// for process.creation.time) or an integer (a Unix time) as its decimal
// text; anything else counts as absent.
func processStart(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return strings.TrimSpace(v.Str())
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10)
	default:
		return ""
	}
}

// intValue reads an int, a double with an integral value, or a decimal
// string (surrounding spaces allowed).
func intValue(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), true
	case pcommon.ValueTypeDouble:
		d := v.Double()
		if math.IsNaN(d) || math.IsInf(d, 0) || d != math.Trunc(d) || math.Abs(d) > 1<<53 {
			return 0, false
		}
		return int64(d), true
	case pcommon.ValueTypeStr:
		return parseDecimal(strings.TrimSpace(v.Str()))
	default:
		return 0, false
	}
}

// parseDecimal parses an optionally signed decimal integer. It checks the
// form first so that the common non-numeric case (a GPU UUID offered as a
// device key) costs no error allocation.
func parseDecimal(s string) (int64, bool) {
	digits := s
	if len(digits) > 0 && (digits[0] == '-' || digits[0] == '+') {
		digits = digits[1:]
	}
	if digits == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(digits[i]-'0')
	}
	if len(digits) > 18 { // may not fit: ParseInt says
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil
	}
	if s[0] == '-' {
		n = -n
	}
	return n, true
}

// deviceIndex reads a non-negative device index.
func deviceIndex(v pcommon.Value) (int64, bool) {
	n, ok := intValue(v)
	if !ok || n < 0 {
		return -1, false
	}
	return n, true
}

// jobValue reads a job id: a non-empty string, or an integer (SLURM ids are
// sometimes exported as numbers).
func jobValue(v pcommon.Value) (string, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return strings.TrimSpace(v.Str()), true
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10), true
	default:
		return "", false
	}
}
