package inspector

import (
	"math"
	"strings"

	"github.com/collectiveattr/collectiveattr/internal/jsonscan"
)

// maxUs is the largest µs timestamp whose ns value fits an int64 (year 2262).
const maxUs = math.MaxInt64 / 1000

// maxInterned bounds the Parser's string table: past it the table is
// dropped and rebuilt, so a stream of ever-new values cannot grow it.
const maxInterned = 4096

// Parser parses Inspector records. It remembers the short strings that
// repeat from record to record (host, communicator id and name, op name,
// timing source, version) so that each is allocated once. The zero value is
// ready to use; a Parser is not safe for concurrent use.
type Parser struct {
	s      jsonscan.Scanner
	intern map[string]string
	// ctx is the header and metadata of the last dump_stats line of format
	// v4.3 or later: the op lines that follow it carry neither and take them
	// from it, as many of each kind as the line announced (remaining).
	ctx       opContext
	hasCtx    bool
	remaining [3]uint64 // coll_records, p2p_records, proxy_records not yet read
	// incompleteDumps counts dumps whose announced lines did not all come
	// (a torn or truncated dump).
	incompleteDumps int
	// pairs numbers the file's P2P records per direction (Op.PairSeq).
	pairs pairCounter
}

// opContext is what a record's header and metadata say.
type opContext struct {
	commID, commName         string
	commRank, nRanks, nNodes int64
	host, version            string
	pid                      int64
	dump                     uint64
}

// ResetContext forgets the marker context and the P2P counts: call it
// between files (a Parser reads the lines of one file in order, from its
// beginning).
func (p *Parser) ResetContext() {
	p.endDump()
	p.pairs.reset()
}

// endDump forgets the dump_stats context, counting the dump as incomplete
// when lines it announced never came.
func (p *Parser) endDump() {
	if p.hasCtx && p.remaining != [3]uint64{} {
		p.incompleteDumps++
	}
	p.hasCtx = false
	p.remaining = [3]uint64{}
}

// IncompleteDumps is the number of dumps (v4.3 and later) whose announced
// op lines did not all come before the next dump_stats line, a line that
// does not parse, or the end of the file (see ResetContext).
func (p *Parser) IncompleteDumps() int { return p.incompleteDumps }

// Parse parses one Inspector record (one line of a <host>-pid<pid>.log
// file, without or with its trailing newline) with a fresh Parser.
func Parse(line []byte) (Op, error) {
	var p Parser
	return p.Parse(line)
}

// field presence bits of one record.
const (
	hasID = 1 << iota
	hasRank
	hasNRanks
	hasHost
	hasPID
	hasDump
	hasName
	hasSN
	hasSize
	hasExec
	hasPeer
	hasStartTs
	hasKernelStop
	hasHeader
	hasMetadata
	hasDumpStats
	hasProxyTrace
	hasCollRecords
	hasP2PRecords

	requiredAlways = hasID | hasRank | hasNRanks | hasHost | hasPID | hasDump | hasName | hasSize | hasExec
)

// record is the state of one Parse call.
type record struct {
	p       *Parser
	op      *Op
	seen    uint32
	size    uint64
	exec    uint64
	dump    uint64
	startTs uint64
	stopMax uint64
	// counts are a dump_stats line's coll_records, p2p_records and
	// proxy_records.
	counts [3]uint64
}

// Indexes of Parser.remaining and record.counts.
const (
	countColl = iota
	countP2P
	countProxy
)

// Parse parses one Inspector record of format v4 in either layout: the
// default one, whose op interval is estimated from the dump time and
// flagged (FlagApproximateTime), and the verbose one (event_trace_ts). Keys
// it does not know are skipped, so the additions of later format versions
// and of forks are tolerated; an inspector_output_format_version other
// than v4.x is a *VersionError. Malformed JSON is a *SyntaxError, a missing
// or mistyped field a *FieldError, an object without coll_perf or p2p_perf
// ErrNotOpRecord. Parse never panics.
//
// Format v4.3 writes a communicator's header and metadata once per dump, on
// a dump_stats line, and op lines without them: a line with header and
// metadata but no op becomes the context of the lines after it, and an op
// line without a header (or metadata) takes the context's.
//
// A P2P record is numbered among the records of its direction the Parser
// has read since its last ResetContext (Op.PairSeq).
func (p *Parser) Parse(line []byte) (Op, error) {
	var op Op
	r := record{p: p, op: &op}
	p.s.Reset(line)
	if err := r.parse(); err != nil {
		p.s.Release()
		if _, torn := err.(*SyntaxError); torn {
			// A torn line may have been the next dump's dump_stats line:
			// the op lines after it must not take the previous context.
			p.endDump()
		}
		return Op{}, err
	}
	p.s.Release()
	p.pairs.number(&op)
	return op, nil
}

func (r *record) str(b []byte) string {
	p := r.p
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	if p.intern == nil || len(p.intern) >= maxInterned {
		p.intern = make(map[string]string, 64)
	}
	s := string(b)
	p.intern[s] = s
	return s
}

func (r *record) stringField(path string) (string, error) {
	s := &r.p.s
	if s.Peek() != '"' {
		return "", s.TypeError(path, jsonscan.WantString)
	}
	b, err := s.StringBytes()
	if err != nil {
		return "", err
	}
	return r.str(b), nil
}

func (r *record) parse() error {
	s := &r.p.s
	if c := s.Peek(); c != '{' {
		if c == 0 {
			return s.Fail("empty record")
		}
		if err := s.SkipValue(); err != nil {
			return err
		}
		return ErrNotOpRecord
	}
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "header":
			r.seen |= hasHeader
			return r.header()
		case "metadata":
			r.seen |= hasMetadata
			return r.metadata()
		case "coll_perf":
			return r.perf(Collective, &collPaths)
		case "p2p_perf":
			return r.perf(P2P, &p2pPaths)
		case "dump_stats":
			r.seen |= hasDumpStats
			return r.dumpStats()
		case "proxy_trace":
			r.seen |= hasProxyTrace
		}
		return s.SkipValue()
	})
	if err != nil {
		return err
	}
	if !s.AtEnd() {
		return s.Fail("unexpected data after the record")
	}
	return r.finish()
}

func (r *record) header() error {
	s, op := &r.p.s, r.op
	if s.Peek() != '{' {
		return s.TypeError("header", "an object")
	}
	return s.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "id":
			op.CommID, err = r.stringField("header.id")
			r.seen |= hasID
		case "comm_name":
			op.CommName, err = r.stringField("header.comm_name")
		case "rank":
			op.CommRank, err = s.IntField("header.rank")
			r.seen |= hasRank
		case "n_ranks":
			op.NRanks, err = s.IntField("header.n_ranks")
			r.seen |= hasNRanks
		case "nnodes":
			op.NNodes, err = s.IntField("header.nnodes")
		default:
			err = s.SkipValue()
		}
		return err
	})
}

func (r *record) metadata() error {
	s, op := &r.p.s, r.op
	if s.Peek() != '{' {
		return s.TypeError("metadata", "an object")
	}
	return s.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "inspector_output_format_version":
			op.Version, err = r.stringField("metadata.inspector_output_format_version")
		case "dump_timestamp_us":
			r.dump, err = s.UintField("metadata.dump_timestamp_us")
			r.seen |= hasDump
		case "hostname":
			op.Host, err = r.stringField("metadata.hostname")
			r.seen |= hasHost
		case "pid":
			op.PID, err = s.IntField("metadata.pid")
			r.seen |= hasPID
		default:
			err = s.SkipValue()
		}
		return err
	})
}

// dumpStats reads the record counts of a dump_stats line.
func (r *record) dumpStats() error {
	s := &r.p.s
	if s.Peek() != '{' {
		return s.TypeError("dump_stats", "an object")
	}
	return s.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "coll_records":
			r.counts[countColl], err = s.UintField("dump_stats.coll_records")
			r.seen |= hasCollRecords
		case "p2p_records":
			r.counts[countP2P], err = s.UintField("dump_stats.p2p_records")
			r.seen |= hasP2PRecords
		case "proxy_records":
			r.counts[countProxy], err = s.UintField("dump_stats.proxy_records")
		default:
			err = s.SkipValue()
		}
		return err
	})
}

// sectionPaths are the keys and error paths of coll_perf or p2p_perf, whose
// keys carry the prefix ("coll_sn", "p2p_sn") except in the verbose traces.
type sectionPaths struct {
	section, prefix                    string
	name, sn, peer, size, exec, source string
	algobw, busbw, trace, startKey     string
	start, kernelEvents, kernelEvent   string
	kernelStop                         string
	// keys inside the section
	keySN, keyPeer, keySize, keyExec, keySource, keyAlgoBW, keyBusBW string
}

func newSectionPaths(section, prefix string) sectionPaths {
	f := func(k string) string { return section + "." + prefix + "_" + k }
	trace := section + ".event_trace_ts"
	return sectionPaths{
		section: section, prefix: prefix,
		name: section + "." + prefix, sn: f("sn"), peer: f("peer"), size: f("msg_size_bytes"),
		exec: f("exec_time_us"), source: f("timing_source"), algobw: f("algobw_gbs"), busbw: f("busbw_gbs"),
		trace: trace, startKey: prefix + "_start_ts", start: trace + "." + prefix + "_start_ts",
		kernelEvents: trace + ".kernel_events", kernelEvent: trace + ".kernel_events[]",
		kernelStop: trace + ".kernel_events[].kernel_stop_ts",
		keySN:      prefix + "_sn", keyPeer: prefix + "_peer", keySize: prefix + "_msg_size_bytes",
		keyExec: prefix + "_exec_time_us", keySource: prefix + "_timing_source",
		keyAlgoBW: prefix + "_algobw_gbs", keyBusBW: prefix + "_busbw_gbs",
	}
}

var (
	collPaths = newSectionPaths("coll_perf", "coll")
	p2pPaths  = newSectionPaths("p2p_perf", "p2p")
)

// perf parses coll_perf or p2p_perf.
func (r *record) perf(kind Kind, paths *sectionPaths) error {
	s, op := &r.p.s, r.op
	if op.Kind != 0 {
		return &FieldError{Field: paths.section, Msg: "must not appear with the other of coll_perf and p2p_perf"}
	}
	if s.Peek() != '{' {
		return s.TypeError(paths.section, "an object")
	}
	op.Kind = kind
	return s.Object(func(key []byte) error {
		var err error
		switch {
		case string(key) == paths.prefix:
			op.Name, err = r.stringField(paths.name)
			r.seen |= hasName
		case string(key) == "event_trace_ts":
			err = r.traceTs(paths)
		case string(key) == paths.keySN:
			if kind == Collective {
				op.Seq, err = s.IntField(paths.sn)
				op.HasSeq = true
				r.seen |= hasSN
			} else {
				op.P2PSeq, err = s.IntField(paths.sn)
			}
		case string(key) == paths.keyPeer && kind == P2P:
			op.Peer, err = s.IntField(paths.peer)
			op.HasPeer = true
			r.seen |= hasPeer
		case string(key) == paths.keySize:
			r.size, err = s.UintField(paths.size)
			r.seen |= hasSize
		case string(key) == paths.keyExec:
			// A fork writes it as a double: read rounded down to the µs.
			r.exec, err = s.FloorUintField(paths.exec, maxUs)
			r.seen |= hasExec
		case kind == Collective && string(key) == "coll_algo":
			op.Algo, err = r.stringField("coll_perf.coll_algo")
		case kind == Collective && string(key) == "coll_proto":
			op.Proto, err = r.stringField("coll_perf.coll_proto")
		case string(key) == "events":
			err = r.childEvents(paths)
		case string(key) == paths.keySource:
			op.TimingSource, err = r.stringField(paths.source)
		case string(key) == paths.keyAlgoBW:
			op.AlgoBWGBs, err = s.FloatField(paths.algobw)
			r.nanCheck(op.AlgoBWGBs)
		case string(key) == paths.keyBusBW:
			op.BusBWGBs, err = s.FloatField(paths.busbw)
			r.nanCheck(op.BusBWGBs)
		default:
			err = s.SkipValue()
		}
		return err
	})
}

func (r *record) nanCheck(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.op.Flags |= FlagNaNBandwidth
	}
}

// traceTs reads the verbose event_trace_ts: the op's start callback time and
// the latest kernel stop over the channels.
func (r *record) traceTs(paths *sectionPaths) error {
	s := &r.p.s
	if s.Peek() != '{' {
		return s.TypeError(paths.trace, "an object")
	}
	return s.Object(func(key []byte) error {
		switch string(key) {
		case paths.startKey:
			v, err := s.UintField(paths.start)
			r.startTs = v
			r.seen |= hasStartTs
			return err
		case "kernel_events":
			if s.Peek() != '[' {
				return s.TypeError(paths.kernelEvents, "an array")
			}
			return s.Array(func() error {
				if s.Peek() != '{' {
					return s.TypeError(paths.kernelEvent, "an object")
				}
				return s.Object(func(key []byte) error {
					if string(key) != "kernel_stop_ts" {
						return s.SkipValue()
					}
					v, err := s.UintField(paths.kernelStop)
					r.kernelStop(v)
					return err
				})
			})
		}
		return s.SkipValue()
	})
}

// kernelStop records one channel's kernel stop time. A zero is no time:
// the plugin writes 0 for a channel whose stop it never saw (possible with
// NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING=0).
func (r *record) kernelStop(v uint64) {
	if v == 0 {
		return
	}
	if r.seen&hasKernelStop == 0 || v > r.stopMax {
		r.stopMax = v
	}
	r.seen |= hasKernelStop
}

// childEvents reads the verbose "events" list of format v4.1's proxy
// variant: one object per kernel channel (event_type "KernelCh", its times
// under event_trace_ts) and per proxy operation. The kernel channels'
// stops end the op, as kernel_events' do in the other layouts.
func (r *record) childEvents(paths *sectionPaths) error {
	s := &r.p.s
	path := paths.section + ".events"
	if s.Peek() != '[' {
		return s.TypeError(path, "an array")
	}
	return s.Array(func() error {
		if s.Peek() != '{' {
			return s.TypeError(path+"[]", "an object")
		}
		var kernel, hasType bool
		var stop uint64
		err := s.Object(func(key []byte) error {
			switch string(key) {
			case "event_type":
				if s.Peek() != '"' {
					return s.TypeError(path+"[].event_type", jsonscan.WantString)
				}
				b, err := s.StringBytes()
				kernel, hasType = string(b) == "KernelCh", true
				return err
			case "event_trace_ts":
				if s.Peek() != '{' {
					return s.TypeError(path+"[].event_trace_ts", "an object")
				}
				return s.Object(func(key []byte) error {
					if string(key) != "kernel_stop_ts" {
						return s.SkipValue()
					}
					var err error
					stop, err = s.UintField(path + "[].event_trace_ts.kernel_stop_ts")
					return err
				})
			}
			return s.SkipValue()
		})
		if err == nil && hasType && kernel {
			r.kernelStop(stop)
		}
		return err
	})
}

// missing names the first required field (in record order) not seen.
func (r *record) missing(need uint32, paths *sectionPaths) error {
	for _, f := range []struct {
		bit  uint32
		path string
	}{
		{hasID, "header.id"}, {hasRank, "header.rank"}, {hasNRanks, "header.n_ranks"},
		{hasDump, "metadata.dump_timestamp_us"}, {hasHost, "metadata.hostname"}, {hasPID, "metadata.pid"},
		{hasName, paths.name}, {hasSN, paths.sn}, {hasPeer, paths.peer}, {hasSize, paths.size}, {hasExec, paths.exec},
	} {
		if need&f.bit != 0 && r.seen&f.bit == 0 {
			return missing(f.path)
		}
	}
	return nil
}

// contextFields are the header and metadata fields a dump_stats line of
// format v4.3 or later must carry for the op lines after it.
const contextFields = hasID | hasRank | hasNRanks | hasHost | hasPID | hasDump

// contextLine handles a line without coll_perf or p2p_perf: a dump_stats
// line (format v4.3 and later: the context of the op lines after it, as
// many as it announces, the way NVIDIA's inspector_json_reader.py restores
// it), a proxy_trace line, or anything else. It always returns an error:
// ErrNotOpRecord, or why the line breaks the dump's structure.
func (r *record) contextLine() error {
	op, p := r.op, r.p
	switch {
	case r.seen&hasDumpStats != 0:
		p.endDump()
		if !dumpContextVersion(op.Version) {
			return ErrNotOpRecord // v4.2: every op line carries its own header
		}
		if r.seen&contextFields != contextFields {
			return r.missing(contextFields, &collPaths)
		}
		if r.seen&hasCollRecords == 0 {
			return missing("dump_stats.coll_records")
		}
		if r.seen&hasP2PRecords == 0 {
			return missing("dump_stats.p2p_records")
		}
		if err := checkContext(op); err != nil {
			return err
		}
		p.ctx = opContext{
			commID: op.CommID, commName: op.CommName, commRank: op.CommRank, nRanks: op.NRanks, nNodes: op.NNodes,
			host: op.Host, version: op.Version, pid: op.PID, dump: r.dump,
		}
		p.hasCtx, p.remaining = true, r.counts
	case r.seen&hasProxyTrace != 0 && r.seen&(hasHeader|hasMetadata) == 0 && p.hasCtx:
		if p.remaining[countProxy] == 0 {
			return beyondCounts("proxy_trace")
		}
		p.remaining[countProxy]--
	}
	return ErrNotOpRecord
}

// dumpContextVersion reports whether a format version writes op lines
// without header and metadata after a dump_stats line: v4.3 and later.
func dumpContextVersion(v string) bool {
	minor, ok := strings.CutPrefix(v, "v4.")
	if !ok || minor == "" {
		return false
	}
	n := 0
	for i := 0; i < len(minor); i++ {
		if !jsonscan.IsDigit(minor[i]) || n > 1000 {
			return false
		}
		n = n*10 + int(minor[i]-'0')
	}
	return n >= 3
}

func beyondCounts(section string) error {
	return &FieldError{Field: section, Msg: "is beyond the record counts of its dump_stats line"}
}

// checkContext checks the header and metadata values every record needs.
func checkContext(op *Op) error {
	switch {
	case op.CommID == "":
		return &FieldError{Field: "header.id", Msg: "must not be empty"}
	case op.Host == "":
		return &FieldError{Field: "metadata.hostname", Msg: "must not be empty"}
	case op.PID < 0:
		return &FieldError{Field: "metadata.pid", Msg: "must be >= 0"}
	case op.NRanks < 1:
		return &FieldError{Field: "header.n_ranks", Msg: "must be >= 1"}
	case op.CommRank < 0 || op.CommRank >= op.NRanks:
		return &FieldError{Field: "header.rank", Msg: "must be in [0, header.n_ranks)"}
	}
	return nil
}

// finish checks the required fields and derives the op's interval.
func (r *record) finish() error {
	op, p := r.op, r.p
	if op.Kind == 0 {
		return r.contextLine()
	}
	paths, count := &collPaths, countColl
	if op.Kind == P2P {
		paths, count = &p2pPaths, countP2P
	}
	if p.hasCtx && r.seen&(hasHeader|hasMetadata) == 0 {
		if p.remaining[count] == 0 {
			return beyondCounts(paths.section)
		}
		p.remaining[count]--
		c := &p.ctx
		op.CommID, op.CommName, op.CommRank, op.NRanks, op.NNodes = c.commID, c.commName, c.commRank, c.nRanks, c.nNodes
		op.Host, op.PID, op.Version, r.dump = c.host, c.pid, c.version, c.dump
		r.seen |= contextFields
	}
	if op.Version != "" && op.Version != "v4" && !strings.HasPrefix(op.Version, "v4.") {
		return &VersionError{Version: op.Version}
	}
	need := uint32(requiredAlways | hasSN)
	if op.Kind == P2P {
		need = requiredAlways | hasPeer
	}
	if r.seen&need != need {
		return r.missing(need, paths)
	}
	if err := checkContext(op); err != nil {
		return err
	}
	switch {
	case op.HasPeer && (op.Peer < 0 || op.Peer >= op.NRanks):
		return &FieldError{Field: "p2p_perf.p2p_peer", Msg: "must be in [0, header.n_ranks)"}
	case op.Seq < 0:
		return &FieldError{Field: "coll_perf.coll_sn", Msg: "must be >= 0"}
	}

	op.Op = OpName(op.Name)
	if op.Name == "Invalid" {
		op.Flags |= FlagInvalidOp
	}
	if r.size > math.MaxInt64 {
		op.MessageBytes = int64(-r.size) // two's complement: the element count
		op.Flags |= FlagWrappedSize
	} else {
		op.MessageBytes = int64(r.size)
	}

	if r.dump > maxUs {
		return &FieldError{Field: "metadata.dump_timestamp_us", Msg: "is beyond the year 2262"}
	}
	if r.exec > maxUs {
		return &FieldError{Field: paths.exec, Msg: "is out of range"}
	}
	op.DumpTimestampUs, op.ExecTimeUs = int64(r.dump), int64(r.exec)
	switch {
	case r.seen&hasStartTs != 0 && r.startTs != 0:
		if r.startTs > maxUs || r.stopMax > maxUs {
			return &FieldError{Field: paths.trace, Msg: "has a timestamp beyond the year 2262"}
		}
		op.StartNs = int64(r.startTs) * 1000
		if r.seen&hasKernelStop != 0 {
			op.EndNs = int64(max(r.stopMax, r.startTs)) * 1000
		} else {
			// A trace without a kernel stop (none listed, or all zero):
			// the GPU time after the start is the best estimate of the end.
			op.EndNs = int64(min(r.startTs+r.exec, maxUs)) * 1000
			op.Flags |= FlagApproximateTime
		}
	default:
		if r.exec > r.dump {
			return &FieldError{Field: paths.exec, Msg: "exceeds metadata.dump_timestamp_us"}
		}
		op.StartNs = int64(r.dump-r.exec) * 1000
		op.EndNs = int64(r.dump) * 1000
		op.Flags |= FlagApproximateTime
	}
	return nil
}
