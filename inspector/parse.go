package inspector

import (
	"math"
	"strings"
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
	s      scanner
	intern map[string]string
	// ctx is the header and metadata of the last line that carried both
	// without an op (a dump_stats marker of format v4.3): the op lines that
	// follow such a marker carry neither and take them from it.
	ctx    opContext
	hasCtx bool
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
	p.hasCtx = false
	p.pairs.reset()
}

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
}

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
	p.s = scanner{data: line, buf: p.s.buf[:0]}
	if err := r.parse(); err != nil {
		p.s.data = nil
		return Op{}, err
	}
	p.s.data = nil
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
	if s.peek() != '"' {
		return "", s.typeError(path, wantString)
	}
	b, err := s.stringBytes()
	if err != nil {
		return "", err
	}
	return r.str(b), nil
}

func (r *record) parse() error {
	s := &r.p.s
	if c := s.peek(); c != '{' {
		if c == 0 {
			return s.fail("empty record")
		}
		if err := s.skipValue(); err != nil {
			return err
		}
		return ErrNotOpRecord
	}
	err := s.object(func(key []byte) error {
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
		}
		return s.skipValue()
	})
	if err != nil {
		return err
	}
	if s.skipWS(); s.pos != len(s.data) {
		return s.fail("unexpected data after the record")
	}
	return r.finish()
}

func (r *record) header() error {
	s, op := &r.p.s, r.op
	if s.peek() != '{' {
		return s.typeError("header", "an object")
	}
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "id":
			op.CommID, err = r.stringField("header.id")
			r.seen |= hasID
		case "comm_name":
			op.CommName, err = r.stringField("header.comm_name")
		case "rank":
			op.CommRank, err = s.intField("header.rank")
			r.seen |= hasRank
		case "n_ranks":
			op.NRanks, err = s.intField("header.n_ranks")
			r.seen |= hasNRanks
		case "nnodes":
			op.NNodes, err = s.intField("header.nnodes")
		default:
			err = s.skipValue()
		}
		return err
	})
}

func (r *record) metadata() error {
	s, op := &r.p.s, r.op
	if s.peek() != '{' {
		return s.typeError("metadata", "an object")
	}
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "inspector_output_format_version":
			op.Version, err = r.stringField("metadata.inspector_output_format_version")
		case "dump_timestamp_us":
			r.dump, err = s.uintField("metadata.dump_timestamp_us")
			r.seen |= hasDump
		case "hostname":
			op.Host, err = r.stringField("metadata.hostname")
			r.seen |= hasHost
		case "pid":
			op.PID, err = s.intField("metadata.pid")
			r.seen |= hasPID
		default:
			err = s.skipValue()
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
	if s.peek() != '{' {
		return s.typeError(paths.section, "an object")
	}
	op.Kind = kind
	return s.object(func(key []byte) error {
		var err error
		switch {
		case string(key) == paths.prefix:
			op.Name, err = r.stringField(paths.name)
			r.seen |= hasName
		case string(key) == "event_trace_ts":
			err = r.traceTs(paths)
		case string(key) == paths.keySN:
			if kind == Collective {
				op.Seq, err = s.intField(paths.sn)
				op.HasSeq = true
				r.seen |= hasSN
			} else {
				op.P2PSeq, err = s.intField(paths.sn)
			}
		case string(key) == paths.keyPeer && kind == P2P:
			op.Peer, err = s.intField(paths.peer)
			op.HasPeer = true
			r.seen |= hasPeer
		case string(key) == paths.keySize:
			r.size, err = s.uintField(paths.size)
			r.seen |= hasSize
		case string(key) == paths.keyExec:
			r.exec, err = s.uintField(paths.exec)
			r.seen |= hasExec
		case string(key) == paths.keySource:
			op.TimingSource, err = r.stringField(paths.source)
		case string(key) == paths.keyAlgoBW:
			op.AlgoBWGBs, err = s.floatField(paths.algobw)
			r.nanCheck(op.AlgoBWGBs)
		case string(key) == paths.keyBusBW:
			op.BusBWGBs, err = s.floatField(paths.busbw)
			r.nanCheck(op.BusBWGBs)
		default:
			err = s.skipValue()
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
	if s.peek() != '{' {
		return s.typeError(paths.trace, "an object")
	}
	return s.object(func(key []byte) error {
		switch string(key) {
		case paths.startKey:
			v, err := s.uintField(paths.start)
			r.startTs = v
			r.seen |= hasStartTs
			return err
		case "kernel_events":
			if s.peek() != '[' {
				return s.typeError(paths.kernelEvents, "an array")
			}
			return s.array(func() error {
				if s.peek() != '{' {
					return s.typeError(paths.kernelEvent, "an object")
				}
				return s.object(func(key []byte) error {
					if string(key) != "kernel_stop_ts" {
						return s.skipValue()
					}
					v, err := s.uintField(paths.kernelStop)
					if err == nil && (r.seen&hasKernelStop == 0 || v > r.stopMax) {
						r.stopMax = v
					}
					r.seen |= hasKernelStop
					return err
				})
			})
		}
		return s.skipValue()
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

// finish checks the required fields and derives the op's interval.
func (r *record) finish() error {
	op, p := r.op, r.p
	if op.Kind == 0 {
		if r.seen&(hasHeader|hasMetadata) == hasHeader|hasMetadata {
			p.ctx = opContext{
				commID: op.CommID, commName: op.CommName, commRank: op.CommRank, nRanks: op.NRanks, nNodes: op.NNodes,
				host: op.Host, version: op.Version, pid: op.PID, dump: r.dump,
			}
			p.hasCtx = r.seen&(hasID|hasRank|hasNRanks|hasHost|hasPID|hasDump) == hasID|hasRank|hasNRanks|hasHost|hasPID|hasDump
		}
		return ErrNotOpRecord
	}
	if p.hasCtx && r.seen&hasHeader == 0 {
		c := &p.ctx
		op.CommID, op.CommName, op.CommRank, op.NRanks, op.NNodes = c.commID, c.commName, c.commRank, c.nRanks, c.nNodes
		r.seen |= hasID | hasRank | hasNRanks
	}
	if p.hasCtx && r.seen&hasMetadata == 0 {
		c := &p.ctx
		op.Host, op.PID, op.Version, r.dump = c.host, c.pid, c.version, c.dump
		r.seen |= hasHost | hasPID | hasDump
	}
	if op.Version != "" && op.Version != "v4" && !strings.HasPrefix(op.Version, "v4.") {
		return &VersionError{Version: op.Version}
	}
	paths := &collPaths
	need := uint32(requiredAlways | hasSN)
	if op.Kind == P2P {
		paths, need = &p2pPaths, requiredAlways|hasPeer
	}
	if r.seen&need != need {
		return r.missing(need, paths)
	}
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
	case r.seen&hasStartTs != 0:
		if r.startTs > maxUs || r.stopMax > maxUs {
			return &FieldError{Field: paths.trace, Msg: "has a timestamp beyond the year 2262"}
		}
		op.StartNs = int64(r.startTs) * 1000
		if r.seen&hasKernelStop != 0 {
			op.EndNs = int64(max(r.stopMax, r.startTs)) * 1000
		} else {
			// A trace without kernel events: the GPU time after the start
			// is the best estimate of the end.
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
