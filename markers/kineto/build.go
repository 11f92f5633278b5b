package kineto

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/internal/jsonscan"
	"github.com/collectiveattr/collectiveattr/markers"
)

// commArgs are the args of record_param_comms ops and NCCL kernels that
// name a collective (the keys c10d and Kineto share).
type commArgs struct {
	externalID          string // "" when absent
	collective          string
	pgName, pgDesc      string
	ranks               []int64
	groupSize           int64
	inNelems, outNelems int64
	dtype               string
	seq, rank           int64
	hasSeq, hasRank     bool
}

// memoryArgs are the args of a [memory] instant event.
type memoryArgs struct {
	deviceType, deviceID, reserved, allocated int64
	has                                       int // how many of the four were read
}

// span is one timed event, its times in ns from the trace's base.
type span struct {
	startNs, endNs int64
	name           string
	args           commArgs
	tid            int64
}

// builder collects the events of interest as they are read.
type builder struct {
	cpuOps      []span // record_param_comms
	kernels     []span // NCCL kernels
	legacyOps   []span // legacy-format collective ranges
	annotations []span
	memory      []MemorySample
	// minTs is the smallest time seen (ns from the base), to tell
	// epoch-based times from profiler-relative ones.
	minTs int64
	seen  bool
	// defaultPGRank is the Rank of the trace's ops on default_pg.
	defaultPGRank    int64
	hasDefaultPGRank bool
	// strings holds the args' short strings that repeat from op to op
	// (collective, group name and description, dtype), each allocated
	// once; ranksText and ranks are the last Process Group Ranks string
	// read and its list, shared by the ops that repeat it.
	strings   map[string]string
	ranksText string
	ranks     []int64
}

// maxInterned bounds the string table against a trace of ever-new values.
const maxInterned = 1024

// intern is v as a string, allocated once per distinct value.
func (b *builder) intern(v []byte) string {
	if s, ok := b.strings[string(v)]; ok {
		return s
	}
	if b.strings == nil || len(b.strings) >= maxInterned {
		b.strings = make(map[string]string, 16)
	}
	s := string(v)
	b.strings[s] = s
	return s
}

// cudaDeviceType is c10::DeviceType::CUDA.
const cudaDeviceType = 1

var errBadTime = errors.New("ts or dur is not a number of µs")

// add reads one event; args scans its args when it needs them.
func (b *builder) add(ev *rawEvent, args *jsonscan.Scanner) error {
	ph, name := string(ev.ph), ev.name
	switch {
	case ph == "X" && string(name) == "record_param_comms":
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		if err := b.readCommArgs(args, ev.args, &s.args); err != nil {
			return err
		}
		if s.args.pgDesc == "default_pg" && s.args.hasRank && !b.hasDefaultPGRank && s.args.rank >= 0 {
			b.defaultPGRank, b.hasDefaultPGRank = s.args.rank, true
		}
		b.cpuOps = append(b.cpuOps, s)
	case ph == "X" && bytes.HasPrefix(name, []byte("nccl")) && bytes.EqualFold(ev.cat, []byte("kernel")):
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		if err := b.readCommArgs(args, ev.args, &s.args); err != nil {
			return err
		}
		b.kernels = append(b.kernels, s)
	case ph == "X" && (string(ev.cat) == "user_annotation" || bytes.HasPrefix(name, []byte("ProfilerStep#"))) && string(ev.cat) != "gpu_user_annotation":
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		s.tid = ev.tid
		b.annotations = append(b.annotations, s)
	case (ph == "i" || ph == "I") && string(name) == "[memory]":
		var a memoryArgs
		if err := readMemoryArgs(args, ev.args, &a); err != nil {
			return err
		}
		if a.deviceType != cudaDeviceType {
			return nil
		}
		if a.has != 4 || a.reserved < 0 || a.allocated < 0 {
			return errors.New("[memory] args Device Id, Total Reserved and Total Allocated must be integers >= 0")
		}
		ts, err := micros(ev.ts)
		if err != nil {
			return err
		}
		b.note(ts)
		b.memory = append(b.memory, MemorySample{TimeNs: ts, DeviceID: a.deviceID, ReservedBytes: a.reserved, AllocatedBytes: a.allocated})
	case ph == "X" && legacyCollective(name):
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		b.legacyOps = append(b.legacyOps, s)
	}
	return nil
}

// legacyCollective reports a collective range of the legacy format:
// c10d's enqueue ops (c10d::allreduce_) and the backends' execution
// ranges (nccl:all_reduce, gloo:all_reduce).
func legacyCollective(name []byte) bool {
	return bytes.HasPrefix(name, []byte("c10d::")) || bytes.HasPrefix(name, []byte("nccl:")) || bytes.HasPrefix(name, []byte("gloo:"))
}

// readCommArgs reads the collective keys of an args object.
func (b *builder) readCommArgs(s *jsonscan.Scanner, text []byte, a *commArgs) error {
	if len(text) == 0 {
		return nil
	}
	s.Reset(text)
	defer s.Release()
	var bad error
	more, err := s.OpenObject()
	for more && err == nil {
		var key []byte
		if key, err = s.Key(); err != nil {
			break
		}
		switch string(key) {
		case "External id":
			var id int64
			var ok bool
			if err = commInt(s, &id, &ok, "External id", &bad); ok {
				a.externalID = strconv.FormatInt(id, 10)
			}
		case "Collective name":
			err = b.commString(s, &a.collective, "Collective name", &bad)
		case "Process Group Name":
			err = b.commString(s, &a.pgName, "Process Group Name", &bad)
		case "Process Group Description":
			err = b.commString(s, &a.pgDesc, "Process Group Description", &bad)
		case "Process Group Ranks":
			err = b.readRanks(s, &a.ranks)
		case "Group size":
			err = commInt(s, &a.groupSize, nil, "Group size", &bad)
		case "In msg nelems":
			err = commInt(s, &a.inNelems, nil, "In msg nelems", &bad)
		case "Out msg nelems":
			err = commInt(s, &a.outNelems, nil, "Out msg nelems", &bad)
		case "dtype":
			err = b.commString(s, &a.dtype, "dtype", &bad)
		case "Seq":
			err = commInt(s, &a.seq, &a.hasSeq, "Seq", &bad)
		case "Rank":
			err = commInt(s, &a.rank, &a.hasRank, "Rank", &bad)
		default:
			err = s.SkipValue()
		}
		if err == nil {
			more, err = s.NextMember()
		}
	}
	if err != nil {
		return err
	}
	return bad
}

// commString reads a string arg into dst; one of another type sets *bad.
func (b *builder) commString(s *jsonscan.Scanner, dst *string, key string, bad *error) error {
	if s.Peek() != '"' {
		*bad = errors.New(key + " is not a string")
		return s.SkipValue()
	}
	v, err := s.StringBytes()
	*dst = b.intern(v)
	return err
}

// commInt reads an integer arg (a number or a string of digits) into dst;
// anything else sets *bad.
func commInt(s *jsonscan.Scanner, dst *int64, has *bool, key string, bad *error) error {
	v, ok, err := intOrDigits(s)
	if err == nil && !ok {
		*bad = errors.New(key + " is not an integer")
	}
	*dst = v
	if has != nil {
		*has = ok
	}
	return err
}

// readRanks reads Process Group Ranks: a string "[0, 1]" (c10d) or an
// array of integers.
func (b *builder) readRanks(s *jsonscan.Scanner, dst *[]int64) error {
	switch s.Peek() {
	case '"':
		text, err := s.StringBytes()
		if string(text) != b.ranksText || b.ranks == nil {
			b.ranksText, b.ranks = string(text), markers.ParseRanks(string(text))
		}
		*dst = b.ranks
		return err
	case '[':
		var ranks []int64
		ok := true
		err := s.Array(func() error {
			v, good, err := intOrDigits(s)
			ok = ok && good && v >= 0
			ranks = append(ranks, v)
			return err
		})
		if ok && len(ranks) > 0 {
			*dst = ranks
		}
		return err
	}
	return s.SkipValue()
}

// readMemoryArgs reads the allocator keys of a [memory] event's args.
func readMemoryArgs(s *jsonscan.Scanner, text []byte, a *memoryArgs) error {
	a.deviceType = -1
	if len(text) == 0 {
		return nil
	}
	s.Reset(text)
	defer s.Release()
	read := func(dst *int64) error {
		v, ok, err := intOrDigits(s)
		if ok {
			*dst = v
			a.has++
		}
		return err
	}
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "Device Type":
			return read(&a.deviceType)
		case "Device Id":
			return read(&a.deviceID)
		case "Total Reserved":
			return read(&a.reserved)
		case "Total Allocated":
			return read(&a.allocated)
		}
		return s.SkipValue()
	})
}

// timed reads an event's interval.
func (b *builder) timed(ev *rawEvent) (span, error) {
	start, err := micros(ev.ts)
	if err != nil {
		return span{}, err
	}
	dur := int64(0)
	if len(ev.dur) > 0 {
		if dur, err = micros(ev.dur); err != nil || dur < 0 {
			return span{}, errBadTime
		}
	}
	if start > math.MaxInt64-dur {
		return span{}, errBadTime
	}
	b.note(start)
	return span{startNs: start, endNs: start + dur, name: string(ev.name)}, nil
}

func (b *builder) note(ts int64) {
	if !b.seen || ts < b.minTs {
		b.minTs = ts
	}
	b.seen = true
}

// maxMicros bounds a time in µs so that its ns fit an int64.
const maxMicros = math.MaxInt64 / 1000

// micros reads a time in µs as Kineto writes it ("123.456": µs and ns) or
// as any JSON number, into ns.
func micros(tok []byte) (int64, error) {
	if len(tok) == 0 {
		return 0, errBadTime
	}
	intPart, frac, hasFrac := bytes.Cut(tok, []byte("."))
	if us, ok := parseInt(intPart); ok && bytes.IndexAny(frac, "eE") < 0 {
		if us > maxMicros || us < -maxMicros {
			return 0, errBadTime
		}
		ns := us * 1000
		if hasFrac {
			var f int64
			for i := 0; i < 3; i++ {
				f *= 10
				if i < len(frac) {
					c := frac[i]
					if c < '0' || c > '9' {
						return 0, errBadTime
					}
					f += int64(c - '0')
				}
			}
			if intPart[0] == '-' {
				f = -f
			}
			ns += f
		}
		return ns, nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > float64(maxMicros) {
		return 0, errBadTime
	}
	return int64(math.Round(f * 1000)), nil
}

// parseInt reads an optionally negative decimal integer of at most 18
// digits.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// build places everything on the epoch (base ns) and makes the trace's
// markers, phases and memory samples.
func (b *builder) build(t *Trace, base int64) {
	shift := func(ns int64) int64 { return base + ns }
	t.Stats.CPUOps, t.Stats.Kernels = len(b.cpuOps), len(b.kernels)

	// A kernel launched inside a record_param_comms op names it by
	// External id: the op gets the kernels' GPU times.
	byExternal := make(map[string]int, len(b.cpuOps))
	for i := range b.cpuOps {
		if id := b.cpuOps[i].args.externalID; id != "" {
			byExternal[id] = i
		}
	}
	type gpuTime struct{ start, end int64 }
	gpu := make(map[int]gpuTime, len(b.cpuOps))
	for i := range b.kernels {
		k := &b.kernels[i]
		op, linked := byExternal[k.args.externalID]
		if !linked || k.args.externalID == "" {
			t.Markers = append(t.Markers, markerOf(k, &k.args, k.startNs, k.endNs, shift))
			continue
		}
		g, ok := gpu[op]
		if !ok {
			g = gpuTime{k.startNs, k.endNs}
		}
		g.start, g.end = min(g.start, k.startNs), max(g.end, k.endNs)
		gpu[op] = g
	}
	for i := range b.cpuOps {
		c := &b.cpuOps[i]
		start, end := c.startNs, c.endNs
		if g, ok := gpu[i]; ok {
			start, end = g.start, g.end
		}
		t.Markers = append(t.Markers, markerOf(c, &c.args, start, end, shift))
	}
	if len(t.Markers) == 0 {
		t.Markers = legacyMarkers(b.legacyOps, shift)
	}
	slices.SortStableFunc(t.Markers, func(a, b markers.Marker) int { return cmp.Compare(a.StartNs, b.StartNs) })
	if t.HasRank {
		for i := range t.Markers {
			t.Markers[i].Rank = t.Rank
		}
	}

	t.Phases = phasesOf(b.annotations, shift)
	t.Memory = b.memory
	for i := range t.Memory {
		t.Memory[i].TimeNs = shift(t.Memory[i].TimeNs)
	}
}

// markerOf is the marker of a collective span with args a.
func markerOf(s *span, a *commArgs, start, end int64, shift func(int64) int64) markers.Marker {
	name := a.collective
	op := markers.OpName(name)
	if name == "" {
		name, op = s.name, kernelOp(s.name)
	}
	m := markers.Marker{StartNs: shift(start), EndNs: shift(end), Op: op, Name: name, CommID: a.pgName}
	if a.hasSeq && a.seq >= 0 && !markers.IsP2P(op) {
		// c10d numbers P2P ops on their own counter, which its Seq does
		// not carry: only collectives have identity.
		m.Seq, m.HasSeq = a.seq, true
	}
	if a.groupSize > 0 {
		m.NRanks = a.groupSize
	}
	if len(a.ranks) > 0 && (m.NRanks == 0 || int64(len(a.ranks)) == m.NRanks) {
		m.Ranks = a.ranks
	}
	if size := markers.DTypeSize(a.dtype); size > 0 {
		n := min(a.inNelems, a.outNelems)
		if n <= 0 {
			n = max(a.inNelems, a.outNelems)
		}
		if n > 0 && n <= math.MaxInt64/size {
			m.MessageBytes = n * size
		}
	}
	return m
}

// kernelOp is the op an NCCL kernel's name gives
// ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)" → all_reduce).
func kernelOp(name string) string {
	_, rest, ok := strings.Cut(name, "_")
	if !ok {
		return "unknown"
	}
	fn, _, _ := strings.Cut(rest, "_")
	fn, _, _ = strings.Cut(fn, "(")
	if fn == "" {
		return "unknown"
	}
	return inspector.OpName(fn)
}

// legacyMarkers are the bare markers of a legacy trace: the backends'
// execution ranges when it has them, else c10d's enqueue ops.
func legacyMarkers(ops []span, shift func(int64) int64) []markers.Marker {
	exec := false
	for i := range ops {
		if !strings.HasPrefix(ops[i].name, "c10d::") {
			exec = true
			break
		}
	}
	var out []markers.Marker
	for i := range ops {
		s := &ops[i]
		if exec == strings.HasPrefix(s.name, "c10d::") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(s.name, "c10d::"), "_")
		out = append(out, markers.Marker{StartNs: shift(s.startNs), EndNs: shift(s.endNs), Op: markers.OpName(name), Name: s.name})
	}
	return out
}

// phasesOf nests the annotation ranges of each thread: a range's path is
// the names of the ranges that contain it, then its own.
func phasesOf(spans []span, shift func(int64) int64) []Phase {
	slices.SortStableFunc(spans, func(a, b span) int {
		if c := cmp.Compare(a.tid, b.tid); c != 0 {
			return c
		}
		if c := cmp.Compare(a.startNs, b.startNs); c != 0 {
			return c
		}
		return cmp.Compare(b.endNs, a.endNs) // the outer range first
	})
	phases := make([]Phase, 0, len(spans))
	var stack []int // indexes into phases of the open ranges
	for i := range spans {
		s := &spans[i]
		for len(stack) > 0 {
			top := &phases[stack[len(stack)-1]]
			if top.ThreadID == s.tid && shift(s.startNs) < top.EndNs && shift(s.endNs) <= top.EndNs {
				break
			}
			stack = stack[:len(stack)-1]
		}
		path := []string{s.name}
		if len(stack) > 0 {
			parent := phases[stack[len(stack)-1]].Path
			path = append(slices.Clip(parent), s.name)
		}
		phases = append(phases, Phase{Name: s.name, Path: path, ThreadID: s.tid, StartNs: shift(s.startNs), EndNs: shift(s.endNs)})
		stack = append(stack, len(phases)-1)
	}
	slices.SortStableFunc(phases, func(a, b Phase) int { return cmp.Compare(a.StartNs, b.StartNs) })
	return phases
}
