package kineto

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/markers"
)

// commArgs are the args of record_param_comms ops and NCCL kernels that
// name a collective (the keys c10d and Kineto share).
type commArgs struct {
	ExternalID json.Number     `json:"External id"`
	Collective string          `json:"Collective name"`
	PGName     string          `json:"Process Group Name"`
	PGDesc     string          `json:"Process Group Description"`
	PGRanks    json.RawMessage `json:"Process Group Ranks"`
	GroupSize  json.Number     `json:"Group size"`
	InNelems   json.Number     `json:"In msg nelems"`
	OutNelems  json.Number     `json:"Out msg nelems"`
	DType      string          `json:"dtype"`
	Seq        json.Number     `json:"Seq"`
	Rank       json.Number     `json:"Rank"`
}

// memoryArgs are the args of a [memory] instant event.
type memoryArgs struct {
	DeviceType     json.Number `json:"Device Type"`
	DeviceID       json.Number `json:"Device Id"`
	TotalReserved  json.Number `json:"Total Reserved"`
	TotalAllocated json.Number `json:"Total Allocated"`
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
}

// cudaDeviceType is c10::DeviceType::CUDA.
const cudaDeviceType = 1

var errBadTime = errors.New("ts or dur is not a number of µs")

// add reads one event.
func (b *builder) add(ev *rawEvent) error {
	switch {
	case ev.Ph == "X" && ev.Name == "record_param_comms":
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		if err := decodeArgs(ev.Args, &s.args); err != nil {
			return err
		}
		if s.args.PGDesc == "default_pg" && !b.hasDefaultPGRank {
			if r, err := s.args.Rank.Int64(); err == nil && r >= 0 {
				b.defaultPGRank, b.hasDefaultPGRank = r, true
			}
		}
		b.cpuOps = append(b.cpuOps, s)
	case ev.Ph == "X" && strings.EqualFold(ev.Cat, "kernel") && strings.HasPrefix(ev.Name, "nccl"):
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		if err := decodeArgs(ev.Args, &s.args); err != nil {
			return err
		}
		b.kernels = append(b.kernels, s)
	case ev.Ph == "X" && (ev.Cat == "user_annotation" || strings.HasPrefix(ev.Name, "ProfilerStep#")) && ev.Cat != "gpu_user_annotation":
		s, err := b.timed(ev)
		if err != nil {
			return err
		}
		s.tid = tidOf(ev.Tid)
		b.annotations = append(b.annotations, s)
	case (ev.Ph == "i" || ev.Ph == "I") && ev.Name == "[memory]":
		var a memoryArgs
		if err := decodeArgs(ev.Args, &a); err != nil {
			return err
		}
		if dt, err := a.DeviceType.Int64(); err != nil || dt != cudaDeviceType {
			return nil
		}
		ts, err := micros(ev.Ts)
		if err != nil {
			return err
		}
		dev, err1 := a.DeviceID.Int64()
		reserved, err2 := a.TotalReserved.Int64()
		allocated, err3 := a.TotalAllocated.Int64()
		if err1 != nil || err2 != nil || err3 != nil || reserved < 0 || allocated < 0 {
			return errors.New("[memory] args Device Id, Total Reserved and Total Allocated must be integers >= 0")
		}
		b.note(ts)
		b.memory = append(b.memory, MemorySample{TimeNs: ts, DeviceID: dev, ReservedBytes: reserved, AllocatedBytes: allocated})
	case ev.Ph == "X" && legacyCollective(ev.Name):
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
func legacyCollective(name string) bool {
	return strings.HasPrefix(name, "c10d::") || strings.HasPrefix(name, "nccl:") || strings.HasPrefix(name, "gloo:")
}

func decodeArgs(raw json.RawMessage, dst any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// timed reads an event's interval.
func (b *builder) timed(ev *rawEvent) (span, error) {
	start, err := micros(ev.Ts)
	if err != nil {
		return span{}, err
	}
	dur := int64(0)
	if ev.Dur != "" {
		if dur, err = micros(ev.Dur); err != nil || dur < 0 {
			return span{}, errBadTime
		}
	}
	if start > math.MaxInt64-dur {
		return span{}, errBadTime
	}
	b.note(start)
	return span{startNs: start, endNs: start + dur, name: ev.Name}, nil
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
func micros(n json.Number) (int64, error) {
	s := string(n)
	if s == "" {
		return 0, errBadTime
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if us, err := strconv.ParseInt(intPart, 10, 64); err == nil && !strings.ContainsAny(frac, "eE") {
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
			if strings.HasPrefix(intPart, "-") {
				f = -f
			}
			ns += f
		}
		return ns, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > float64(maxMicros) {
		return 0, errBadTime
	}
	return int64(math.Round(f * 1000)), nil
}

func tidOf(raw json.RawMessage) int64 {
	v, err := strconv.ParseInt(strings.Trim(string(raw), `"`), 10, 64)
	if err != nil {
		return 0
	}
	return v
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
		if id := string(b.cpuOps[i].args.ExternalID); id != "" {
			byExternal[id] = i
		}
	}
	type gpuTime struct{ start, end int64 }
	gpu := make(map[int]gpuTime, len(b.cpuOps))
	for i := range b.kernels {
		k := &b.kernels[i]
		op, linked := byExternal[string(k.args.ExternalID)]
		if !linked || k.args.ExternalID == "" {
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
	name := a.Collective
	op := markers.OpName(name)
	if name == "" {
		name, op = s.name, kernelOp(s.name)
	}
	m := markers.Marker{StartNs: shift(start), EndNs: shift(end), Op: op, Name: name, CommID: a.PGName}
	if seq, err := a.Seq.Int64(); err == nil && seq >= 0 && !markers.IsP2P(op) {
		// c10d numbers P2P ops on their own counter, which its Seq does
		// not carry: only collectives have identity.
		m.Seq, m.HasSeq = seq, true
	}
	if n, err := a.GroupSize.Int64(); err == nil && n > 0 {
		m.NRanks = n
	}
	if ranks := ranksOf(a.PGRanks); len(ranks) > 0 && (m.NRanks == 0 || int64(len(ranks)) == m.NRanks) {
		m.Ranks = ranks
	}
	in, err1 := a.InNelems.Int64()
	out, err2 := a.OutNelems.Int64()
	if size := markers.DTypeSize(a.DType); size > 0 && err1 == nil && err2 == nil {
		n := min(in, out)
		if n <= 0 {
			n = max(in, out)
		}
		if n > 0 && n <= math.MaxInt64/size {
			m.MessageBytes = n * size
		}
	}
	return m
}

// ranksOf reads Process Group Ranks, a string "[0, 1]" or an array.
func ranksOf(raw json.RawMessage) []int64 {
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return markers.ParseRanks(s)
	}
	var ranks []int64
	if json.Unmarshal(raw, &ranks) != nil {
		return nil
	}
	return ranks
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
