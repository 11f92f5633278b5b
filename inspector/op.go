package inspector

import "strings"

// Kind says which section of a record described the op.
type Kind uint8

const (
	// Collective is a coll_perf record.
	Collective Kind = iota + 1
	// P2P is a p2p_perf record (Send or Recv).
	P2P
)

func (k Kind) String() string {
	switch k {
	case Collective:
		return "collective"
	case P2P:
		return "p2p"
	}
	return "unknown"
}

// Flags mark what about an op is unusual; each is counted by Stats.
type Flags uint8

const (
	// FlagApproximateTime: the record has no usable verbose trace, so the
	// op's interval is dump_timestamp_us − exec_time_us … dump_timestamp_us:
	// it ends when the dump thread wrote the record, not when the op did.
	FlagApproximateTime Flags = 1 << iota
	// FlagInvalidOp: the plugin printed "Invalid" for an NCCL function it
	// has no name for (all-to-all, gather, scatter in current releases).
	FlagInvalidOp
	// FlagWrappedSize: the message size is above 2^63, the plugin's
	// typeSize −1 (uint8 data) times the count wrapped around 2^64.
	// MessageBytes holds the count, which is the size in bytes of uint8 data.
	FlagWrappedSize
	// FlagNaNBandwidth: a bandwidth was "nan" (or infinite).
	FlagNaNBandwidth
)

// Op is one completed NCCL operation as one process's Inspector record
// describes it. Ranks are ranks within the communicator, not global ranks.
type Op struct {
	// Host and PID are metadata.hostname and metadata.pid: the process that
	// wrote the record, the key the record is joined to a rank by.
	Host string
	PID  int64

	// CommID is header.id as written ("0x7f8c496ae9f661"): NCCL's
	// communicator hash, equal on every member, at most 14 hex digits
	// because the plugin prints it into a 17-byte buffer.
	CommID string
	// CommName is header.comm_name ("unknown" when the job set none; ""
	// when the record has no such key, as before NCCL 2.30).
	CommName string
	// CommRank is header.rank, the writer's rank within the communicator;
	// NRanks its size (header.n_ranks) and NNodes header.nnodes (0 when
	// absent).
	CommRank int64
	NRanks   int64
	NNodes   int64

	Kind Kind
	// Name is the operation as written ("AllReduce", "Send", "Invalid");
	// Op is its normalised name (all_reduce, send, invalid; see OpName).
	Name string
	Op   string

	// Seq is coll_sn, the per-communicator, per-function sequence number
	// that matches across ranks; HasSeq is false for P2P records, whose
	// p2p_sn counts only the plugin's tracked ops of one process and does
	// not line up across ranks (it is kept in P2PSeq).
	Seq    int64
	HasSeq bool
	P2PSeq int64
	// PairSeq numbers a P2P record among the records of its direction
	// (PairRanks) on its communicator in the file the Parser reads, from 0:
	// the k-th Send from a to b and the k-th Recv at b from a are one
	// transfer (see PairCommID). HasPairSeq is false for collectives and
	// when the Parser's count table is full.
	PairSeq    int64
	HasPairSeq bool

	// MessageBytes is the message size per rank in bytes (see
	// FlagWrappedSize for the uint8 case).
	MessageBytes int64
	// Peer is p2p_peer, the peer's rank within the communicator (P2P only).
	Peer    int64
	HasPeer bool

	// StartNs and EndNs bound the op, in ns since the Unix epoch on the
	// writer's wall clock (the records are in µs). Verbose records: the op
	// start callback (host-side enqueue) to the last kernel stop. Default
	// records: see FlagApproximateTime.
	StartNs int64
	EndNs   int64

	// ExecTimeUs is the GPU execution time (µs, truncated); TimingSource
	// says how it was measured ("kernel_gpu" with the plugin's defaults).
	ExecTimeUs   int64
	TimingSource string
	// Algo and Proto are coll_algo and coll_proto (format v4.2 and later:
	// NCCL's algorithm and protocol names, e.g. "RING", "LL"); "" when the
	// record has none.
	Algo, Proto string
	// AlgoBWGBs and BusBWGBs are the bandwidths in GB/s; NaN for "nan".
	AlgoBWGBs float64
	BusBWGBs  float64

	// DumpTimestampUs is when the dump thread wrote the record.
	DumpTimestampUs int64
	// Version is metadata.inspector_output_format_version ("" if absent).
	Version string

	Flags Flags
}

// Approximate reports whether the op's interval is only the dump-time
// estimate of the default (non-verbose) layout.
func (o *Op) Approximate() bool { return o.Flags&FlagApproximateTime != 0 }

// DurationNs is EndNs − StartNs.
func (o *Op) DurationNs() int64 { return o.EndNs - o.StartNs }

// opNames maps the names the plugin and its forks print to the operation
// names of collective identity (nccl.op).
var opNames = map[string]string{
	"AllReduce":     "all_reduce",
	"AllGather":     "all_gather",
	"AllGatherV":    "all_gather",
	"ReduceScatter": "reduce_scatter",
	"Broadcast":     "broadcast",
	"Reduce":        "reduce",
	"Send":          "send",
	"Recv":          "recv",
	"All2All":       "all_to_all",
	"AllToAll":      "all_to_all",
	"AlltoAll":      "all_to_all",
	"Invalid":       "invalid",
}

// OpName normalises an operation name as the plugin prints it: the known
// names map to all_reduce, all_gather, reduce_scatter, broadcast, reduce,
// send, recv, all_to_all and invalid; any other CamelCase name becomes
// snake_case ("SendRecv" → "send_recv").
func OpName(name string) string {
	if n, ok := opNames[name]; ok {
		return n
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			if i > 0 && name[i-1] != '_' {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}
